"""Sensor messages read from their bytes (ros/cdr.py) against rclpy's own deserialisation of
the same bytes: every field, on joint states with names of every length (so every padding),
empty and NaN arrays, a name list that changes, and IMU samples; bytes cut short refused."""
import math

import numpy as np
import pytest
from rclpy.serialization import serialize_message
from sensor_msgs.msg import Imu, JointState

from hybrid_dynamics.ros.cdr import ImuReader, JointStateReader, MalformedMessage


def _joint_state(rng, names, empty_velocity=False, frame=""):
    m = JointState()
    m.header.stamp.sec, m.header.stamp.nanosec = int(rng.integers(0, 2 ** 31)), int(rng.integers(0, 10 ** 9))
    m.header.frame_id = frame
    m.name = names
    m.position = rng.standard_normal(len(names)).tolist()
    m.velocity = [] if empty_velocity else rng.standard_normal(len(names)).tolist()
    m.effort = rng.standard_normal(len(names)).tolist() if len(names) % 2 else []
    return m


def _same_joint_state(got, m):
    assert (got.header.stamp.sec, got.header.stamp.nanosec, got.header.frame_id) == \
        (m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id)
    assert got.name == list(m.name)
    for field in ("position", "velocity", "effort"):
        a, b = getattr(got, field), np.asarray(getattr(m, field), dtype=float)
        assert a.dtype == np.float64 and a.flags.writeable and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=True)


def test_joint_states_as_rclpy_reads_them():
    rng = np.random.default_rng(1)
    reader = JointStateReader()
    names = ["j" * k for k in range(1, 9)] + ["leg1_femur_joint", "ünï"]
    for k in range(40):
        sub = names[: 1 + k % len(names)] if k % 3 else names          # changes, and repeats
        m = _joint_state(rng, sub, empty_velocity=k % 4 == 0, frame="base" * (k % 3))
        if k % 5 == 0:
            m.position[0] = math.nan
        _same_joint_state(reader(serialize_message(m)), m)
    same = serialize_message(_joint_state(rng, names))
    first = reader(same)
    assert reader(same).name is first.name                 # the same names: the list reused


def test_imu_as_rclpy_reads_it():
    rng = np.random.default_rng(2)
    reader = ImuReader()
    for k in range(10):
        m = Imu()
        m.header.stamp.sec, m.header.frame_id = k, "imu_link" * (k % 2)
        m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w = rng.standard_normal(4)
        m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = rng.standard_normal(3)
        m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = rng.standard_normal(3)
        m.orientation_covariance = rng.standard_normal(9).tolist()
        m.angular_velocity_covariance = rng.standard_normal(9).tolist()
        m.linear_acceleration_covariance = rng.standard_normal(9).tolist()
        got = reader(serialize_message(m))
        assert (got.header.stamp.sec, got.header.stamp.nanosec, got.header.frame_id) == (k, 0, m.header.frame_id)
        for f, keys in (("orientation", "xyzw"), ("angular_velocity", "xyz"), ("linear_acceleration", "xyz")):
            assert [getattr(getattr(got, f), c) for c in keys] == [getattr(getattr(m, f), c) for c in keys]
        for f in ("orientation_covariance", "angular_velocity_covariance", "linear_acceleration_covariance"):
            assert list(getattr(got, f)) == list(getattr(m, f))


def test_bytes_cut_short_are_refused():
    rng = np.random.default_rng(3)
    js = serialize_message(_joint_state(rng, ["a", "bb", "ccc"]))
    imu = serialize_message(Imu())
    for cut in (8, 20, len(js) - 8):
        with pytest.raises(MalformedMessage):
            JointStateReader()(js[:cut])
    with pytest.raises(MalformedMessage):
        ImuReader()(imu[:100])

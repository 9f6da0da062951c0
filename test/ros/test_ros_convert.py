"""Message validation without DDS: name matching with subsets and reordering, length
mismatch, NaN/inf, out-of-order stamps, IMU quaternion checks."""
import math

import numpy as np
import pytest
from sensor_msgs.msg import Imu, JointState

from hybrid_dynamics.runtime.inputs import (JointStateBuffer, Rejected, parse_imu, sec_to_stamp,
                                         stamp_to_sec)

JOINTS = ["a", "b", "c", "d"]


def js(names, pos, vel=(), eff=(), t=1.0):
    m = JointState()
    sec_to_stamp(t, m.header.stamp)
    m.name = list(names)
    m.position = [float(x) for x in pos]
    m.velocity = [float(x) for x in vel]
    m.effort = [float(x) for x in eff]
    return m


def imu(quat=(0, 0, 0, 1), t=1.0, cov0=0.0):
    m = Imu()
    sec_to_stamp(t, m.header.stamp)
    m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w = map(float, quat)
    m.orientation_covariance[0] = cov0
    m.linear_acceleration.z = 9.81
    return m


def test_subsets_and_reordering_merge_by_name():
    buf = JointStateBuffer(JOINTS)
    assert buf.add(js(["c", "a"], [3, 1], [30, 10], t=1.0)) is None
    assert not buf.ready and buf.missing == ["b", "d"]
    assert buf.add(js(["d", "b", "zz"], [4, 2, 99], t=1.1)) is None
    assert buf.ready and buf.unknown == ("zz",)
    assert np.allclose(buf.q, [1, 2, 3, 4])
    assert np.allclose(buf.v, [10, 0, 30, 0])


@pytest.mark.parametrize("msg,kind", [
    (js(["a", "b"], [1]), "length_mismatch"),
    (js(["a", "b"], [1, 2], [1]), "length_mismatch"),
    (js(["a", "b"], [1, 2], (), [1, 2, 3]), "length_mismatch"),
    (js(["a", "b"], [1, math.nan]), "non_finite"),
    (js(["a", "b"], [1, 2], [math.inf, 0]), "non_finite"),
    (js(["a", "a"], [1, 2]), "duplicate_names"),
    (js(["x", "y"], [1, 2]), "unknown_joints"),
])
def test_bad_joint_states_are_rejected_and_state_kept(msg, kind):
    buf = JointStateBuffer(JOINTS)
    assert buf.add(js(JOINTS, [1, 2, 3, 4], t=0.5)) is None
    out = buf.add(msg)
    assert isinstance(out, Rejected) and out.kind == kind
    assert np.allclose(buf.q, [1, 2, 3, 4]) and np.all(np.isfinite(buf.v))


def test_out_of_order_is_dropped():
    buf = JointStateBuffer(JOINTS)
    assert buf.add(js(JOINTS, [1, 2, 3, 4], t=2.0)) is None
    out = buf.add(js(JOINTS, [9, 9, 9, 9], t=1.0))
    assert out.kind == "out_of_order"
    assert np.allclose(buf.q, [1, 2, 3, 4])
    assert stamp_to_sec(js(JOINTS, [0] * 4, t=2.25).header.stamp) == pytest.approx(2.25)


@pytest.mark.parametrize("quat,kind", [((0, 0, 0, 0), "bad_quaternion"), ((0, 0, 0, 2), "bad_quaternion"),
                                       ((0, 0, math.nan, 1), "non_finite")])
def test_bad_imu_is_rejected(quat, kind):
    out = parse_imu(imu(quat))
    assert isinstance(out, Rejected) and out.kind == kind


def test_imu_without_orientation_and_rounding():
    assert parse_imu(imu(cov0=-1.0)).kind == "no_orientation"
    t, sample = parse_imu(imu((0, 0, 0, 1.001), t=3.5))
    assert t == pytest.approx(3.5)
    assert np.linalg.norm(sample.orientation) == pytest.approx(1.0)

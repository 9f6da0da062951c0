"""runtime/inputs.py builds message-shaped inputs for callers without ROS: they pass the same
validation as a message from the wire and carry the same values and stamp."""
import numpy as np

from hybrid_dynamics.estimation.base_estimator import ImuSample
from hybrid_dynamics.runtime.inputs import (JointStateBuffer, Rejected, imu_sample, joint_state_sample, parse_imu,
                                            stamp_to_sec)


def test_joint_state_sample_is_accepted_by_name_with_its_stamp():
    buf = JointStateBuffer(["a", "b", "c"])
    t = 12.345678901
    assert buf.add(joint_state_sample(t, ["c", "a"], [0.3, 0.1], [3.0, 1.0], [30.0, 10.0])) is None
    assert abs(buf.stamp - t) < 1e-9
    assert np.allclose(buf.q, [0.1, 0.0, 0.3]) and np.allclose(buf.v, [1.0, 0.0, 3.0])
    assert list(buf.has_effort) == [True, False, True] and buf.missing == ["b"]
    bad = buf.add(joint_state_sample(t + 1, ["a"], [np.nan], [0.0]))
    assert isinstance(bad, Rejected) and bad.kind == "non_finite"


def test_efforts_are_unknown_once_a_message_comes_without_them():
    """A message without efforts makes its joints' efforts unknown (the others keep theirs):
    an older message's efforts must not stand for the present (force-based contact detection
    read stale zeros as "no foot on the ground" in the graph flood)."""
    buf = JointStateBuffer(["a", "b", "c"])
    assert buf.add(joint_state_sample(1.0, ["a", "b", "c"], [0.1, 0.2, 0.3], [0.0] * 3, [5.0, 6.0, 7.0])) is None
    assert buf.has_effort.all()
    assert buf.add(joint_state_sample(1.001, ["a", "c"], [0.1, 0.3], [0.0, 0.0])) is None
    assert list(buf.has_effort) == [False, True, False] and buf.tau[1] == 6.0


def test_imu_sample_round_trips_through_the_parser():
    rng = np.random.default_rng(3)
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    reading = ImuSample(q, rng.normal(size=3), rng.normal(size=3))
    msg = imu_sample(2.5, reading)
    stamp, parsed = parse_imu(msg)
    assert stamp == stamp_to_sec(msg.header.stamp) == 2.5
    assert np.allclose(parsed.orientation, q) and np.array_equal(parsed.angular_velocity, reading.angular_velocity)
    assert np.array_equal(parsed.linear_acceleration, reading.linear_acceleration)
    assert isinstance(parse_imu(imu_sample(2.5, ImuSample(2 * q, reading.angular_velocity, reading.linear_acceleration))),
                      Rejected)

"""Plausibility limits (estimation/plausibility.py) against the robot description read
independently (the URDF's <limit> tags through ElementTree, not Pinocchio), the stamp gate,
and the field every rejection names."""
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from sensor_msgs.msg import Imu, JointState

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.estimation.plausibility import InputLimits, PlausibilityConfig, StampGate
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.runtime.inputs import JointStateBuffer, parse_imu, sec_to_stamp


@pytest.fixture(scope="module")
def robot():
    return load_robot("jethexa")


def urdf_limits(robot):
    """name -> (lower, upper, velocity, effort) from the URDF text."""
    root = ET.parse(robot.urdf).getroot()
    out = {}
    for j in root.iter("joint"):
        lim = j.find("limit")
        if lim is not None and j.get("type") in ("revolute", "prismatic"):
            out[j.get("name")] = tuple(float(lim.get(k)) for k in ("lower", "upper", "velocity", "effort"))
    return out


def js(names, pos, vel=(), eff=(), t=1.0):
    m = JointState()
    sec_to_stamp(t, m.header.stamp)
    m.name = list(names)
    m.position, m.velocity, m.effort = ([float(x) for x in a] for a in (pos, vel, eff))
    return m


def imu(w=(0.0, 0.0, 0.0), a=(0.0, 0.0, 9.81), t=1.0):
    m = Imu()
    sec_to_stamp(t, m.header.stamp)
    m.orientation.w = 1.0
    m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = map(float, w)
    m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = map(float, a)
    return m


def test_joint_limits_come_from_the_urdf_with_margin_and_factors(robot):
    cfg = PlausibilityConfig()
    ref = urdf_limits(robot)
    assert set(ref) == set(robot.joint_names)
    limits = InputLimits(robot, robot.joint_names, cfg)
    checked = 0
    for k, name in enumerate(robot.joint_names):
        lo, hi, vel, eff = ref[name]
        buf = JointStateBuffer(robot.joint_names, robot.q_stand[7:], limits)
        cases = [  # (position, velocity, effort, expected field or None)
            (hi + 0.99 * cfg.position_margin, 0.0, 0.0, None),
            (hi + 1.01 * cfg.position_margin, 0.0, 0.0, "joint_state.position"),
            (lo - 1.01 * cfg.position_margin, 0.0, 0.0, "joint_state.position"),
            (lo, -0.99 * cfg.velocity_factor * vel, 0.0, None),
            (lo, -1.01 * cfg.velocity_factor * vel, 0.0, "joint_state.velocity"),
            (lo, 1e308, 0.0, "joint_state.velocity"),
            (lo, 0.0, 0.99 * cfg.effort_factor * eff, None),
            (lo, 0.0, -1.01 * cfg.effort_factor * eff, "joint_state.effort"),
        ]
        for i, (p, v, e, field) in enumerate(cases):
            out = buf.add(js([name], [p], [v], [e], t=1.0 + 1e-3 * i), now=1.0 + 1e-3 * i)
            if field is None:
                assert out is None, (name, p, v, e, out)
                assert buf.q[k] == p
            else:
                assert out.kind == "implausible" and out.field == field, (name, out)
                assert name in out.detail          # the joint and the value are named
                checked += 1
    assert checked == 5 * len(robot.joint_names)


def out_value(w, a):
    """The one out-of-range value of a case (every other entry is within range)."""
    return next(x for x in (*w, *a) if abs(x) > 50.0 and abs(x) != 9.81)


def test_imu_range_and_fields(robot):
    cfg = PlausibilityConfig()
    limits = InputLimits(robot, robot.joint_names, cfg)
    for w, a, field in [((0, 0, 1e6), (0, 0, 9.81), "imu.angular_velocity"),
                        ((-1.01 * cfg.max_angular_velocity, 0, 0), (0, 0, 9.81), "imu.angular_velocity"),
                        ((0, 0, 0), (0, 0, 1e308), "imu.linear_acceleration"),
                        ((0, 0, 0), (0, -1.01 * cfg.max_linear_acceleration, 0), "imu.linear_acceleration")]:
        out = parse_imu(imu(w, a), limits)
        assert out.kind == "implausible" and out.field == field, out
        assert f"{out_value(w, a):.6g}" in out.detail           # the value is named
    ok = parse_imu(imu((0, 0, 0.99 * cfg.max_angular_velocity), (0, 0, 0.99 * cfg.max_linear_acceleration)), limits)
    assert ok[1].angular_velocity[2] == 0.99 * cfg.max_angular_velocity
    # without limits (a caller that wants only the format checks) the values pass
    assert parse_imu(imu(a=(0, 0, 1e308)))[1].linear_acceleration[2] == 1e308


def test_every_format_rejection_names_its_field(robot):
    names = robot.joint_names[:3]
    buf = JointStateBuffer(robot.joint_names)
    cases = [(js(names, [0, 0]), "joint_state.position"), (js(names, [0] * 3, [0]), "joint_state.velocity"),
             (js(names, [0] * 3, [], [0]), "joint_state.effort"), (js(names[:1] * 2, [0, 0]), "joint_state.name"),
             (js(["x"], [0]), "joint_state.name"), (js(names, [0, math.nan, 0]), "joint_state.position"),
             (js(names, [0] * 3, [0, math.inf, 0]), "joint_state.velocity")]
    for msg, field in cases:
        assert buf.add(msg, now=1.0).field == field
    m = imu()
    m.orientation.w = 0.0
    assert parse_imu(m).field == "imu.orientation"
    m = imu(a=(0, math.nan, 0))
    assert parse_imu(m).field == "imu.linear_acceleration"
    m = imu(w=(math.inf, 0, 0))
    assert parse_imu(m).field == "imu.angular_velocity"


def test_stamp_gate_refuses_old_and_far_ahead_stamps_then_reanchors():
    cfg = PlausibilityConfig()
    n = int(cfg.reanchor_after)
    gate = StampGate(cfg)
    assert gate.admit(10.0, 100.0) is None
    assert gate.admit(10.002, 100.002) is None
    assert gate.admit(10.001, 100.003).bound.startswith("older")
    # a stamp a day ahead is refused; one that leads the receive clock by less than stamp_lead is not
    assert "ahead" in gate.admit(10.002 + 86400.0, 100.004).bound
    assert gate.admit(10.005 + 0.9 * cfg.stamp_lead, 100.005) is None
    # that wild stamp got in: the honest clock is accepted again after reanchor_after
    # consistent refusals, whatever random wild stamps come between them
    refused, t, wild = 0, 10.006, iter([-5.0, 1e6, 3.0, -1e3, 7e4, 0.5])
    while gate.admit(t, 100.0 + (t - 10.0)) is not None:
        refused += 1
        assert gate.admit(next(wild), 100.0 + (t - 10.0)) is not None
        t += 0.002
    assert refused == n - 1 and gate.stamp == t
    # random wild stamps alone never re-anchor the stream
    for k, s in enumerate([1e6, -3.0, 5e5, 2e6, -1e4, 9e5, 7.0, 4e7]):
        assert gate.admit(s, 100.1 + 1e-3 * k) is not None
    # a restarted source (its clock consistent with itself, from 0) is followed after n samples
    outs = [gate.admit(0.001 * k, 100.2 + 0.001 * k) for k in range(n)]
    assert all(o is not None for o in outs[:-1]) and outs[-1] is None and gate.stamp == 0.001 * (n - 1)


def test_bad_settings_are_an_input_error(robot):
    with pytest.raises(InputError, match="velocity_factr"):
        InputLimits(robot, robot.joint_names, {"velocity_factr": 2.0})
    limits = InputLimits(robot, robot.joint_names, {"velocity_factor": 2.0})
    assert np.allclose(limits.v_max, 2.0 * robot.model.velocityLimit[6:])


def test_first_violation_is_the_numpy_one(robot):
    """The compiled check against the numpy comparisons it replaced, on random messages
    (subsets of joints in any order, values near and beyond every limit, missing fields)."""
    lim = InputLimits(robot, list(robot.joint_names))
    rng = np.random.default_rng(11)
    kinds = set()
    for _ in range(300):
        dst = rng.permutation(len(lim.joints))[:rng.integers(1, len(lim.joints) + 1)]
        pos = rng.uniform(lim.q_lo[dst] - 0.05, lim.q_hi[dst] + 0.05)
        vel = rng.uniform(-1.02, 1.02, len(dst)) * lim.v_max[dst] if rng.random() < 0.8 else None
        eff = rng.uniform(-1.02, 1.02, len(dst)) * lim.tau_max[dst] if rng.random() < 0.8 else None
        want = None
        lo, hi = lim.q_lo[dst], lim.q_hi[dst]
        bad = (pos < lo) | (pos > hi)
        if bad.any():
            want = ("position", int(np.flatnonzero(bad)[0]))
        else:
            for label, values, bound in (("velocity", vel, lim.v_max), ("effort", eff, lim.tau_max)):
                if values is not None and (np.abs(values) > bound[dst]).any():
                    want = (label, int(np.flatnonzero(np.abs(values) > bound[dst])[0]))
                    break
        got = lim.check_joints(dst, pos, vel, eff)
        if want is None:
            assert got is None
        else:
            kinds.add(want[0])
            assert (got.field, got.name) == (want[0], lim.joints[dst[want[1]]])
    assert kinds == {"position", "velocity", "effort"}

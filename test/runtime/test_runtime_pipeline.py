"""runtime.Pipeline, without ROS: one cycle per joint state; the command obeys the rigid-body
dynamics of the robot (Pinocchio's RNEA, independent of the QP's own formulation); a removed
leg gets no torque from the very next cycle; stale inputs give the damping command."""
from types import SimpleNamespace

import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.model.morphology import Morphology
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.ros import params as P
from hybrid_dynamics.runtime.control import live_command
from hybrid_dynamics.runtime.pipeline import Pipeline

ROBOT = "jethexa"


def _stamp(t):
    return SimpleNamespace(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))


def _imu(t):
    return SimpleNamespace(header=SimpleNamespace(stamp=_stamp(t)),
                           orientation=SimpleNamespace(x=0.0, y=0.0, z=0.0, w=1.0),
                           orientation_covariance=[0.0] * 9,
                           angular_velocity=SimpleNamespace(x=0.0, y=0.0, z=0.0),
                           linear_acceleration=SimpleNamespace(x=0.0, y=0.0, z=9.81))


def _joint_state(t, names, q, v):
    return SimpleNamespace(header=SimpleNamespace(stamp=_stamp(t)), name=list(names),
                           position=[float(x) for x in q], velocity=[float(x) for x in v], effort=[])


@pytest.fixture(scope="module")
def robot():
    return load_robot(ROBOT)


def _pipeline(robot, **overrides):
    flat = P.defaults("whole_body_controller")
    flat.update(robot=ROBOT, **overrides)
    return Pipeline(robot, P.nested(flat))


def _standing(robot):
    q = robot.q_stand.copy()
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    q[2] -= min(data.oMf[robot.model.getFrameId(c.frame)].translation[2] for c in robot.contacts)
    return q


def _run(pipe, robot, q, steps, t0=1.0, v=None):
    names = robot.actuated_joints
    idx = [robot.joint_names.index(n) for n in names]
    v = np.zeros(len(robot.joint_names)) if v is None else v
    cycles = []
    for k in range(steps):
        t = t0 + 2e-3 * k
        cycles.append(pipe.step(t, _joint_state(t, names, q[7:][idx], v[idx]), _imu(t), use_stamps=True))
    return cycles


def test_command_satisfies_the_rigid_body_dynamics(robot):
    pipe = _pipeline(robot)
    cycles = _run(pipe, robot, _standing(robot), 5)
    last = cycles[-1]
    assert last.safe_mode is None and last.error is None and last.output is not None
    out, est = last.output, last.estimate
    assert np.all(np.isfinite(last.command)) and np.abs(last.command).max() > 0.05   # it holds the robot up
    # M dv + h = S^T tau + sum_c J_c^T f_c (contact points, world-aligned linear Jacobians)
    model = robot.model
    data = model.createData()
    q, v = est.q, est.v
    rhs = pin.rnea(model, data, q, v, out.dv)
    pin.computeJointJacobians(model, data, q)
    pin.framesForwardKinematics(model, data, q)
    contact_sum = np.zeros(model.nv)
    for c in robot.contacts:
        fid = model.getFrameId(c.frame)
        J = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)[:3]
        contact_sum += J.T @ out.contact_forces.get(c.frame, np.zeros(3))
    tau = np.zeros(model.nv)
    for name, value in out.tau.items():
        tau[model.joints[model.getJointId(name)].idx_v] = value
    residual = rhs - contact_sum - tau
    assert np.linalg.norm(rhs) > 1.0
    assert np.abs(residual).max() < 1e-6 * max(1.0, np.abs(rhs).max())
    # the command is the QP's torque, in the order of the ``joints`` parameter
    assert np.allclose(last.command, [out.tau.get(n, 0.0) for n in pipe.control.joints])


def test_removed_leg_gets_no_torque_from_the_next_cycle(robot):
    pipe = _pipeline(robot)
    q = _standing(robot)
    _run(pipe, robot, q, 3)
    leg = robot.legs[2]
    pipe.set_morphology(Morphology.healthy(robot).remove_leg(leg.name), 1.01)
    cycle, = _run(pipe, robot, q, 1, t0=1.01)
    assert cycle.safe_mode is None
    leg_joints = {robot.model.names[j] for j in leg.joints}
    lost = [i for i, n in enumerate(pipe.control.joints) if n in leg_joints]
    kept = [i for i in range(len(pipe.control.joints)) if i not in lost]
    assert lost and np.all(cycle.command[lost] == 0.0)
    assert np.abs(cycle.command[kept]).max() > 0.05
    assert leg.contact_frame not in cycle.stance or not cycle.stance[leg.contact_frame]


def test_stale_inputs_give_the_damping_command(robot):
    pipe = _pipeline(robot)
    names = robot.actuated_joints
    v = np.linspace(-1.0, 1.0, len(names))
    q = _standing(robot)[7:][[robot.joint_names.index(n) for n in names]]
    cycle = pipe.step(1.0, _joint_state(1.0, names, q, v))          # no IMU yet
    assert cycle.safe_mode == "no IMU received" and cycle.output is None
    kd = pipe.control.kd_safe
    assert kd > 0
    expected = [-kd * v[names.index(n)] for n in pipe.control.joints]
    assert np.allclose(cycle.command, expected) and np.abs(cycle.command).max() > 0


def test_a_cycle_on_the_same_joint_state_adds_no_evidence_to_the_detector(robot):
    """A timer-driven cycle that comes before the next joint state runs on the last one again:
    the detector in the cycle (runtime/detection.py) takes that sample once. The IMU reads 0.3 g
    (a body losing its support): one such sample is no fall for the fall monitor (it needs two
    in a row), whatever the number of cycles on it; the next sample makes two, and the fall's
    onset is the first."""
    from hybrid_dynamics.runtime.detection import CycleDetector

    def low_imu(t):
        msg = _imu(t)
        msg.linear_acceleration.z = 3.0
        return msg

    pipe = _pipeline(robot)
    detection = CycleDetector(robot, pipe)
    observed = []
    observe = detection.detector.update
    detection.detector.update = lambda t, *a, **k: observed.append(t) or observe(t, *a, **k)
    q = _standing(robot)
    _run(pipe, robot, q, 3)                                   # 1.000 .. 1.004
    names = robot.actuated_joints
    idx = [robot.joint_names.index(n) for n in names]
    js = _joint_state(1.006, names, q[7:][idx], np.zeros(len(idx)))
    for cycle in (pipe.step(1.006, js, low_imu(1.006), use_stamps=True),
                  pipe.step(1.007, use_stamps=True), pipe.step(1.008, use_stamps=True)):   # no new sample
        assert cycle.estimate is not None and cycle.safe_mode is None
    assert observed == [1.0, 1.002, 1.004, 1.006]
    assert detection.fall_monitor.since is None and detection.fall_monitor.below == 1
    js = _joint_state(1.01, names, q[7:][idx], np.zeros(len(idx)))
    pipe.step(1.01, js, low_imu(1.01), use_stamps=True)
    assert detection.fall_monitor.since == pytest.approx(1.006)


def test_the_command_is_the_qp_torques_clipped_and_counted(robot, monkeypatch):
    """The command mapping (runtime/control.py ``live_command``): the QP's torques put in the
    ``joints`` order, clipped to the effort limits when one is beyond (the cycle counted as
    saturated), exactly as numpy's gather and ``clip``; a non-finite torque sends the damping
    command instead (counted), and a removed leg's joints stay at zero."""
    pipe = _pipeline(robot)
    core = pipe.control
    core.set_morphology(Morphology.healthy(robot).remove_leg(robot.legs[2].name))
    lost = [i for i in range(len(core.joints)) if i not in set(core.live_idx)]
    assert lost
    rng = np.random.default_rng(3)
    state = SimpleNamespace(q=_standing(robot), v=np.concatenate([np.zeros(6), rng.standard_normal(robot.nv - 6)]))
    n = len(core.controller.joint_names)
    tau = np.zeros(n)
    monkeypatch.setattr(core.controller, "update", lambda *a, **k: SimpleNamespace(tau_vector=tau, fallback=True))
    for scale, beyond in ((0.5, False), (3.0, True)):
        tau[:] = scale * rng.uniform(-1, 1, n) * np.where(np.isfinite(core.tau_max[:n]), core.tau_max[:n], 1.0)
        expected = np.zeros(len(core.joints))
        live = tau[core.live_src]
        expected[core.live_idx] = np.clip(live, -core.live_limit, core.live_limit)
        saturated = core.saturated
        cmd = core.cycle(state, {})
        np.testing.assert_array_equal(cmd, expected)
        assert core.saturated == saturated + beyond
        assert np.any(np.abs(live) > core.live_limit) == beyond
    assert np.abs(cmd).max() > 0.1 and np.all(cmd[lost] == 0.0)
    tau[core.live_src[0]] = np.nan
    nonfinite = core.nonfinite
    cmd = core.cycle(state, {})
    expected = np.zeros(len(core.joints))
    expected[core.live_idx] = np.clip(-core.kd_safe * state.v[6:][core.live_v], -core.live_limit, core.live_limit)
    np.testing.assert_array_equal(cmd, expected)
    assert core.nonfinite == nonfinite + 1 and np.abs(cmd).max() > 0.01
    # the kernel itself: a non-finite value is reported and nothing is clipped
    values = np.array([5.0, -7.0, np.inf])
    out = np.full(5, 9.0)
    assert live_command(out, np.array([4, 0, 2], np.intp), values, np.array([1, 0, 2], np.intp),
                        np.array([1.0, 1.0, 1.0])) == -1
    np.testing.assert_array_equal(out, [5.0, 0.0, np.inf, 0.0, -7.0])

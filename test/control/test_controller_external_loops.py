"""The whole-body QP (projected form, [Mingo Hoffman 2024, Appendix B]) on closed-loop robots
written outside this project (test/data/*/SOURCE), checked against Pinocchio's own
constrained dynamics: the actuator forces and contact forces the controller outputs, applied in
``constraintDynamics`` (one ``RigidConstraintModel`` per cut, nothing else constrained),
reproduce the controller's base and actuated accelerations, keep every stance contact point at
rest and every cut closed at acceleration level; RNEA of that motion minus the applied forces
lies in the span of the loop constraint forces, so the base rows carry no actuation; the contact
forces lie inside their friction cones.

Floating base, standing on their feet: Digit-like (two legs, 6 loops), Cassie-like (one leg,
two loops with rod spins left free), Agility's Cassie from MuJoCo Menagerie (two legs, 4
connects; rod spins and the shin and heel springs left free by the loops: the springs carry
inertia and are dynamic coordinates of the QP), the Kangaroo-like pair (24 loops, 12 linear
actuators, 28 free internal motions). Fixed base (five-bars, delta): joint-space
tracking of a moving actuator reference, simulated with constraintDynamics.
"""
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.analysis.closed_loop_checks import sinusoid
from hybrid_dynamics.control import References, WholeBodyController
from hybrid_dynamics.control.references import OrientationTarget, Target
from hybrid_dynamics.dynamics.closed_chain import ClosedChainInverseDynamics
from hybrid_dynamics.errors import DescriptionWarning
from hybrid_dynamics.model.robot import Contact, load_robot
from loop_reference import constraint_dynamics

DATA = Path(__file__).parents[1] / "data"
LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
# the community URDFs give every joint effort="1" (a placeholder): torque limits off
NO_TORQUE_LIMITS = {"limits": {"torque": False}}


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DescriptionWarning)
        return fn(*args, **kw)


def _cassie_mjcf():
    """Menagerie's Cassie, floating; its foot bodies share their names with their joints, so
    the contacts are frames added at the foot bodies' origins."""
    robot = _quiet(load_robot, DATA / "cassie_mjcf" / "cassie.xml")
    m = robot.model
    contacts = []
    for side in ("left", "right"):
        body = m.frames[m.getFrameId(f"{side}-foot", pin.FrameType.BODY)]
        m.addFrame(pin.Frame(f"{side}-sole", body.parentJoint, body.parentFrame, body.placement,
                             pin.FrameType.OP_FRAME))
        contacts.append(Contact(f"{side}-sole", "point", np.zeros((1, 3)), side))
    robot.contacts = contacts
    return robot


def _kangaroo_like():
    """The Kangaroo-like leg pair (its ball joints substituted, our stand pose) floating, on a
    point contact under each foot."""
    robot = _quiet(load_robot, DATA / "kangaroo_like_2legs" / "manifest.yaml", base="floating")
    robot.contacts = [Contact(frame, "point", np.zeros((1, 3)), frame) for frame in ("foot_left", "foot_right")]
    return robot


FLOATING = {"digit_like_2legs": lambda: _quiet(load_robot, DATA / "digit_like_2legs" / "standing.yaml"),
            "cassie_like": lambda: _quiet(load_robot, DATA / "cassie_like" / "standing.yaml"),
            "cassie_mjcf": _cassie_mjcf, "kangaroo_like_2legs": _kangaroo_like}


def _pinocchio_motion(robot, kin, q, v, tau_a, point_forces):
    """ddq of the tree under the actuator forces, the contact point forces (world) and the loop
    constraints alone (constraintDynamics), and the generalized force applied."""
    m = robot.model
    d = m.createData()
    pin.computeJointJacobians(m, d, q)
    pin.framesForwardKinematics(m, d, q)
    tau = kin.spring_forces(q, v)                      # Cassie's shin and heel springs (MJCF stiffness)
    tau[kin.ia] = tau_a
    for frame, forces in point_forces.items():
        fid = m.getFrameId(frame)
        J = pin.getFrameJacobian(m, d, fid, LWA)
        for p, f in zip(robot.contacts[[c.frame for c in robot.contacts].index(frame)].points, forces):
            r = d.oMf[fid].rotation @ p
            tau += (J[:3] - pin.skew(r) @ J[3:]).T @ f
    return constraint_dynamics(robot, q, v, tau), tau


def _loop_and_contact_accelerations(robot, q, v, ddq, frames):
    m = robot.model
    d = m.createData()
    pin.forwardKinematics(m, d, q, v, ddq)
    pin.updateFramePlacements(m, d)
    acc = lambda name: pin.getFrameClassicalAcceleration(m, d, m.getFrameId(name), LWA)   # noqa: E731
    loops = []
    for loop in robot.loops.loops:
        a, b = acc(loop.frame_a), acc(loop.frame_b)
        loops.append(b.linear - a.linear)
        if loop.kind == "6d":
            loops.append(b.angular - a.angular)
    return np.concatenate(loops), np.concatenate([acc(f).linear for f in frames])


@pytest.mark.parametrize("name", sorted(FLOATING))
def test_standing_qp_reproduced_by_pinocchio_constraint_dynamics(name):
    robot = FLOATING[name]()
    assert robot.floating and len(robot.contacts) >= 1
    ctrl = WholeBodyController(robot, NO_TORQUE_LIMITS)
    kin = ctrl.projection
    m = robot.model
    mu = robot.friction
    frames = [c.frame for c in robot.contacts]
    d = m.createData()
    rng = np.random.default_rng(5)
    worst = {"acc": 0.0, "contact": 0.0, "loop": 0.0, "rnea": 0.0}
    # actuators moved by 0.01 (rad or m) or a tenth of their stroke if that is less (the
    # Kangaroo-like linear actuators have strokes of a few mm)
    stroke = m.upperPositionLimit[kin.qa] - m.lowerPositionLimit[kin.qa]
    amplitude = np.minimum(0.01, 0.1 * stroke)
    for k in range(4):
        # a closed pose near the stand and a consistent velocity (free motions included)
        q = kin.close(kin.with_actuated(robot.q_stand, robot.q_stand[kin.qa] + amplitude * rng.uniform(-1, 1, kin.n_act)))[0]
        G, _ = kin.projection(q)
        v = G @ (0.1 * rng.uniform(-1, 1, G.shape[1]))
        if kin.n_free:
            kin.factor(kin.compute(q).J.T)
            v[kin.iu] += kin.last_null @ (0.1 * rng.uniform(-1, 1, kin.n_free))
        pin.framesForwardKinematics(m, d, q)
        com = pin.centerOfMass(m, d, q)
        refs = References(com=Target(com + 0.01 * rng.standard_normal(3)),
                          base_orientation=OrientationTarget(pin.Quaternion(d.oMi[1].rotation).coeffs()))
        out = ctrl.update(q, v, {f: True for f in frames}, refs)
        assert not out.fallback and not out.infeasible, (name, k, out.status)
        nb, na = 6, kin.n_act
        dv_base, dv_act = out.dv[:nb], out.dv[nb:nb + na]
        # friction cones (true cone, the QP's pyramid is inside it) and the weight carried
        fz = 0.0
        tol = 1e-7 * robot.total_mass() * 9.81                          # the QP's tolerance, in N
        for frame in frames:
            for f in out.point_forces[frame]:
                assert f[2] >= -tol and np.hypot(f[0], f[1]) <= mu * f[2] + tol, (name, frame, f)
                fz += f[2]
        # the feet push (Cassie's keyframe has its springs near rest, unloaded: the QP lets the
        # legs compress rather than accelerate the springs, and the feet carry part of the weight)
        assert fz > 0.02 * robot.total_mass() * 9.81, (name, fz)
        assert np.abs(out.tau_vector).max() > 1e-3                       # the actuators work
        ddq, tau_applied = _pinocchio_motion(robot, kin, q, v, out.tau_vector, out.point_forces)
        scale = max(1.0, np.abs(ddq).max())
        worst["acc"] = max(worst["acc"], np.abs(ddq[:nb] - dv_base).max() / scale,
                           np.abs(ddq[kin.ia] - dv_act).max() / scale)
        loop_acc, foot_acc = _loop_and_contact_accelerations(robot, q, v, ddq, frames)
        worst["loop"] = max(worst["loop"], np.abs(loop_acc).max() / scale)
        worst["contact"] = max(worst["contact"], np.abs(foot_acc).max() / scale)
        # RNEA: what the applied forces leave is a loop constraint force J_l^T lambda (base rows included)
        residual = pin.rnea(m, m.createData(), q, v, ddq) - tau_applied
        J_l = kin.compute(q).J
        lam = np.linalg.lstsq(J_l.T, residual, rcond=None)[0]
        worst["rnea"] = max(worst["rnea"], np.abs(residual - J_l.T @ lam).max() / max(1.0, np.abs(residual).max()))
    assert max(np.abs(ddq).max(), 0) > 1e-3                               # something moves
    assert worst["acc"] < 1e-8 and worst["contact"] < 1e-8 and worst["loop"] < 1e-8 and worst["rnea"] < 1e-8, \
        (name, worst)


@pytest.mark.parametrize("name", ["delta", "five_bar", "five_bar_3d", "five_bar_6d"])
def test_fixed_base_joint_tracking_simulated_by_constraint_dynamics(name):
    """Fixed base (no base rows, no contacts): the posture task tracks a moving actuator
    reference, dv_a = kp (q_ref - q_a) - kd v_a. 0.5 s at 1 kHz of Pinocchio's constraintDynamics
    under the controller's actuator forces: each step the actuated accelerations are the
    commanded ones, and the actuators follow the reference."""
    robot = _quiet(load_robot, DATA / name / "robot.yaml")
    assert not robot.floating
    # stiff gains: the task has no feed-forward, its lag at 0.4 Hz is |s^2 + kd s| / |s^2 + kd s + kp| = 0.1
    ctrl = WholeBodyController(robot, dict(NO_TORQUE_LIMITS, tasks={"posture": {"kp": 2500.0, "kd": 100.0}}))
    kin = ctrl.projection
    assert ctrl.formulation.state.n == kin.n_act + kin.n_inertial and not ctrl.contact_frames
    gains = ctrl.config["tasks"]["posture"]
    dt, q, v = 1e-3, robot.q_stand.copy(), np.zeros(robot.nv)
    worst_law, worst_track, moved = 0.0, 0.0, 0.0
    for k in range(500):
        target, _, _ = sinusoid(kin, k * dt, scale=0.5)
        out = ctrl.update(q, v, {}, References(posture=dict(zip(kin.actuated_joints, target))))
        assert not out.fallback and not out.infeasible, (name, k, out.status)
        ddq, _ = _pinocchio_motion(robot, kin, q, v, out.tau_vector, {})
        law = gains["kp"] * (target - q[kin.qa]) - gains["kd"] * v[kin.ia]
        worst_law = max(worst_law, np.abs(ddq[kin.ia] - law).max() / max(1.0, np.abs(law).max()))
        v = v + dt * ddq
        q = kin.close(pin.integrate(robot.model, q, dt * v))[0]      # the passive joints re-closed
        G, _ = kin.projection(q)
        v_free = kin.last_null @ (kin.last_null.T @ v[kin.iu])
        v = G @ v[kin.ia]
        v[kin.iu] += v_free
        if k >= 250:
            worst_track = max(worst_track, np.abs(q[kin.qa] - target).max())
        moved = max(moved, np.abs(q[kin.qa] - robot.q_stand[kin.qa]).max())
    amplitude = np.abs(sinusoid(kin, 0.625, scale=0.5)[0] - robot.q_stand[kin.qa]).max()
    assert moved > 0.3 * amplitude > 0, (name, moved, amplitude)
    assert worst_law < 1e-5, (name, worst_law)           # regularisation 1e-6 vs posture weight 1
    assert worst_track < 0.15 * amplitude, (name, worst_track, amplitude)


@pytest.mark.parametrize("form", ["projected", "three-step"])
def test_floating_constrained_id_counts_cassies_springs(form):
    """ClosedChainInverseDynamics (the floating-base ID with contacts, both forms) on
    Menagerie's Cassie standing: the free motions with inertia (springs, rod spins) keep their
    own dynamics, so its actuator forces and contact forces, with the springs' forces, applied
    in constraintDynamics give its accelerations, and its feet stay at rest."""
    robot = _cassie_mjcf()
    cid = ClosedChainInverseDynamics(robot, force_limits=False)
    kin = cid.kin
    q = robot.q_stand
    v = np.zeros(robot.nv)
    res = cid.solve(q, v, form=form)
    assert res.status == "solved" and res.forces.reshape(-1, 3)[:, 2].sum() > 1.0
    assert np.abs(kin.spring_forces(q, v)).max() > 1.0                  # the springs are loaded
    forces = {c.frame: res.forces.reshape(-1, 3)[[i]] for i, c in enumerate(robot.contacts)}
    ddq, _ = _pinocchio_motion(robot, kin, q, v, res.tau, forces)
    scale = max(1.0, np.abs(res.dv).max())
    assert np.abs(ddq[:6] - res.dv[:6]).max() < 1e-8 * scale and np.abs(ddq[kin.ia] - res.dv[kin.ia]).max() < 1e-8 * scale
    _, foot_acc = _loop_and_contact_accelerations(robot, q, v, ddq, [c.frame for c in robot.contacts])
    assert np.abs(foot_acc).max() < 1e-8 * scale

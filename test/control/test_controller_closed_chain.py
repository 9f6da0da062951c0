"""Closed chains (hybrid_biped): the QP in the projected form of [Mingo Hoffman 2024, Appendix B].

Checked with the tree's own dynamics (Pinocchio RNEA on the spanning tree) and the loop
kinematics: the full acceleration a = G_f dv_m + drift closes the loops, and
G_f^T (M a + h - J^T f) = (0, tau_actuated) - the base rows vanish and the actuated rows are
the output actuator forces, which respect the ball-screw limits."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control import References, WholeBodyController
from hybrid_dynamics.control import tsid_peer as tp
from hybrid_dynamics.control.tsid_peer import workloads as wl
from hybrid_dynamics.control.references import OrientationTarget, Target
from hybrid_dynamics.dynamics.closed_chain import LoopClosureKinematics
from hybrid_dynamics.model.robot import load_robot
from loop_reference import constraint_dynamics


@pytest.mark.parametrize("solver", ["proxsuite", "daqp", "goldfarb_idnani"])
def test_hybrid_biped_projected_dynamics(solver):
    robot = load_robot("hybrid_biped")
    m = robot.model
    kin = LoopClosureKinematics(robot)
    ctrl = WholeBodyController(robot, {"solver": solver})
    q = robot.q_stand.copy()
    d = m.createData()
    pin.framesForwardKinematics(m, d, q)
    pin.centerOfMass(m, d, q)
    rng = np.random.default_rng(2)
    checked = 0
    for k in range(6):
        # a consistent velocity: random base and actuated rates through the projection
        G, _ = kin.projection(q)
        v = G @ (0.1 * rng.standard_normal(G.shape[1]))
        stance = {"l_sole": True, "r_sole": k % 3 != 2}
        refs = References(com=Target(d.com[0] + 0.01 * rng.standard_normal(3)),
                          base_orientation=OrientationTarget([0, 0, 0, 1]),
                          swing_feet={"r_sole": Target(d.oMf[m.getFrameId("r_sole")].translation + [0, 0, 0.02])})
        out = ctrl.update(q, v, stance, refs)
        assert not out.fallback, out.status
        G, drift = kin.projection(q, v)
        a = G @ out.dv + drift
        loops = kin.compute(q, v)
        assert np.abs(loops.J @ a + loops.drift_acc).max() < 1e-6 * max(1.0, np.abs(a).max())
        tau_tree = pin.rnea(m, pin.Data(m), q, v, a)
        pin.computeJointJacobians(m, d, q)
        pin.updateFramePlacements(m, d)
        for c in robot.contacts:
            fid = m.getFrameId(c.frame)
            J = pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED)
            R = d.oMf[fid].rotation
            for p, f in zip(c.points, out.point_forces[c.frame]):
                tau_tree -= (J[:3] - pin.skew(R @ p) @ J[3:]).T @ f
        proj = G.T @ tau_tree
        scale = max(1.0, np.abs(proj).max(), np.abs(out.tau_vector).max())
        assert np.abs(proj[:6]).max() < 1e-6 * scale
        assert np.allclose(proj[6:], out.tau_vector, atol=1e-6 * scale)
        assert out.actuator_forces and set(out.actuator_forces) == set(robot.actuated_joints)
        assert np.all(np.abs(out.tau_vector) <= kin.force_limits() * (1 + 1e-6))
        checked += 1
    assert checked == 6


def test_dense_backends_agree_on_the_closed_walking_states():
    """The bench's hybrid_biped walk (loops closed to 1e-12, stance alternating, actuator
    forces against their limits): DAQP and the compiled dual active set agree to 1e-6 on the
    states with an active inequality, and those are most of them."""
    robot = load_robot("hybrid_biped")
    samples = wl.workload(robot, "walk", 400)[::8]
    assert wl.closure_residual(robot, samples) < 1e-10
    frames = [c.frame for c in robot.contacts]
    runs = {}
    for solver in ("daqp", "goldfarb_idnani"):
        ctrl = WholeBodyController(robot, {"solver": solver})
        outs = []
        for s in samples:
            out = ctrl.update(s.q, s.v, dict(zip(frames, s.stance)), tp.references_for(s))
            assert not out.fallback, f"{solver}: {out.status}"
            outs.append((out, tp.active_rows(ctrl.last_problem, ctrl.last_solution) > 0))
        runs[solver] = outs
    active = [on for _, on in runs["daqp"]]
    assert sum(active) >= len(samples) // 2
    for (a, on), (b, _) in zip(runs["daqp"], runs["goldfarb_idnani"]):
        if on:
            assert np.abs(a.tau_vector - b.tau_vector).max() <= 1e-6 * max(1.0, np.abs(a.tau_vector).max())
            assert np.abs(a.dv - b.dv).max() <= 1e-6 * max(1.0, np.abs(a.dv).max())


def test_walking_accelerations_reproduced_by_pinocchio_constraint_dynamics():
    """The bench's closed walking states (loops closed to 1e-10, stance alternating): the model
    update's projection (one compiled call writing G_f's passive rows and the drift in place)
    equals the loop kinematics' own (1e-12), its reduced M, h, contact Jacobians and drifts
    (another call, over G_f's non-zeros) those formed in numpy from Pinocchio's terms (1e-12), and the actuator and contact forces the controller
    outputs, applied in Pinocchio's constraintDynamics (the loops alone constrained), give the
    controller's base and actuated accelerations to 1e-9, with the loops closed at acceleration
    level."""
    robot = load_robot("hybrid_biped")
    m = robot.model
    samples = wl.workload(robot, "walk", 400)[::25]
    assert wl.closure_residual(robot, samples) < 1e-10
    frames = [c.frame for c in robot.contacts]
    ctrl = WholeBodyController(robot, {"solver": "goldfarb_idnani"})
    st = ctrl.formulation.state
    assert st._loops_fused                       # hybrid_biped takes the one-call projection
    kin = LoopClosureKinematics(robot)
    d = m.createData()
    worst = {"G": 0.0, "M": 0.0, "acc": 0.0, "loop": 0.0}
    moving = 0.0
    for s in samples:
        out = ctrl.update(s.q, s.v, dict(zip(frames, s.stance)), tp.references_for(s))
        assert not out.fallback, out.status
        G0, d0 = kin.projection(s.q, s.v)
        worst["G"] = max(worst["G"], np.abs(st.G - G0).max() / np.abs(G0).max(),
                         np.abs(st.d - d0).max() / max(1.0, np.abs(d0).max()))
        pin.computeAllTerms(m, d, s.q, s.v)                 # the reduction, in numpy from Pinocchio's terms
        M0, h0 = G0.T @ d.M @ G0, G0.T @ (d.nle + d.M @ d0)
        worst["M"] = max(worst["M"], np.abs(st.M - M0).max() / np.abs(M0).max(), np.abs(st.h - h0).max() / np.abs(h0).max())
        for i, c in enumerate(robot.contacts):
            fid = m.getFrameId(c.frame)
            J = pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED)
            a0 = pin.getFrameClassicalAcceleration(m, d, fid, pin.LOCAL_WORLD_ALIGNED).vector + J @ d0
            worst["M"] = max(worst["M"], np.abs(st.J6[i] - J @ G0).max() / np.abs(J @ G0).max(),
                             np.abs(st.drift[i] - a0).max() / max(1.0, np.abs(a0).max()))
        tau = np.zeros(m.nv)
        tau[kin.ia] = out.tau_vector
        pin.computeJointJacobians(m, d, s.q)
        pin.updateFramePlacements(m, d)
        for c in robot.contacts:
            fid = m.getFrameId(c.frame)
            J = pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED)
            for p, f in zip(c.points, out.point_forces[c.frame]):
                tau += (J[:3] - pin.skew(d.oMf[fid].rotation @ p) @ J[3:]).T @ f
        ddq = constraint_dynamics(robot, s.q, s.v, tau)
        scale = max(1.0, np.abs(ddq).max())
        worst["acc"] = max(worst["acc"], np.abs(ddq[:6] - out.dv[:6]).max() / scale,
                           np.abs(ddq[kin.ia] - out.dv[6:]).max() / scale)
        loops = kin.compute(s.q, s.v)
        worst["loop"] = max(worst["loop"], np.abs(loops.J @ ddq + loops.drift_acc).max() / scale)
        moving = max(moving, np.abs(out.dv).max())
    assert moving > 1e-2                         # the controller accelerates something
    assert worst["G"] <= 1e-12 and worst["M"] <= 1e-12 and worst["acc"] <= 1e-9 and worst["loop"] <= 1e-9, worst

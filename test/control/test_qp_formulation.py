"""Whole-body QP: the output obeys the floating-base dynamics, the friction cones and the
limits, checked against Pinocchio evaluated independently of the controller."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control import References, Target, WholeBodyController
from hybrid_dynamics.control.constraints import pyramid
from hybrid_dynamics.control.references import OrientationTarget
from hybrid_dynamics.model.robot import load_robot

ROBOTS = {}


def robot(name):
    if name not in ROBOTS:
        ROBOTS[name] = load_robot(name)
    return ROBOTS[name]


def random_case(r, rng, min_stance):
    """A random state near standing, random references and a random stance subset."""
    m = r.model
    q = r.q_stand.copy()
    q[7:] += 0.15 * rng.standard_normal(m.nq - 7)
    q[7:] = np.clip(q[7:], m.lowerPositionLimit[7:] + 1e-3, m.upperPositionLimit[7:] - 1e-3)
    rpy = 0.1 * rng.standard_normal(3)
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(rpy)).coeffs()
    q[:3] = rng.standard_normal(3) * 0.05
    v = 0.3 * rng.standard_normal(m.nv)
    names = [c.frame for c in r.contacts]
    while True:
        stance = {f: bool(rng.random() < 0.7) for f in names}
        if sum(stance.values()) >= min_stance:
            break
    d = m.createData()
    pin.centerOfMass(m, d, q)
    refs = References(com=Target(d.com[0] + 0.02 * rng.standard_normal(3), 0.05 * rng.standard_normal(3)),
                      base_orientation=OrientationTarget(pin.Quaternion(pin.rpy.rpyToMatrix(0.05 * rng.standard_normal(3))).coeffs()),
                      swing_feet={f: Target(rng.standard_normal(3) * 0.1) for f, s in stance.items() if not s})
    return q, v, stance, refs


def independent_check(r, ctrl, q, v, stance, out, tol_dyn, tol_cone):
    """Pinocchio RNEA and frame Jacobians, computed here, against the controller's output."""
    m = r.model
    d = m.createData()
    tau_gen = pin.rnea(m, d, q, v, out.dv)           # M dv + h
    pin.computeJointJacobians(m, d, q)
    pin.forwardKinematics(m, d, q, v, 0 * v)
    pin.updateFramePlacements(m, d)
    ext = np.zeros(m.nv)
    cfg = ctrl.config["contacts"]
    facets = cfg["cone_facets"]
    for c in r.contacts:
        fid = m.getFrameId(c.frame)
        J = pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED)
        R = d.oMf[fid].rotation
        pf = out.point_forces[c.frame]
        for p, fp in zip(c.points, pf):
            r_w = R @ p
            Jp = J[:3] - pin.skew(r_w) @ J[3:]
            ext += Jp.T @ fp
        if not stance[c.frame]:
            assert np.abs(pf).max() < tol_cone, "a swing contact carries force"
            continue
        # contact acceleration (classical) is zero
        a = pin.getFrameClassicalAcceleration(m, d, fid, pin.LOCAL_WORLD_ALIGNED)
        acc = J @ out.dv + a.vector
        rows = 6 if c.kind == "surface" else 3
        assert np.abs(acc[:rows]).max() < 1e-5 * max(1.0, np.abs(out.dv).max())
        P = pyramid(np.array(cfg["normal"]), r.friction, facets, cfg["cone_approximation"])
        for fp in pf:
            assert (P[:-1] @ fp).max() <= tol_cone, "force outside its friction pyramid"
            fn = P[-1] @ fp
            assert cfg["min_normal_force"] - tol_cone <= fn <= cfg["max_normal_force"] + tol_cone
            # inner pyramid: inside the true cone too
            ft = np.linalg.norm(fp[:2])
            assert ft <= r.friction * fn + tol_cone
    residual = tau_gen - ext
    scale = max(1.0, np.abs(tau_gen).max())
    assert np.abs(residual[:6]).max() < tol_dyn * scale, "floating-base rows violated"
    tau = np.array([out.tau[n] for n in ctrl.joint_names])
    idx = [m.joints[m.getJointId(n)].idx_v for n in ctrl.joint_names]
    assert np.allclose(residual[idx], tau, atol=tol_dyn * scale), "torques are not the actuated rows"
    limit = m.effortLimit[idx]
    assert np.all(np.abs(tau) <= limit + 1e-6 * scale), "torque limit violated"


@pytest.mark.parametrize("name,min_stance,solver", [
    ("jethexa", 3, "proxsuite"), ("solo12", 2, "proxsuite"), ("talos", 1, "proxsuite"),
    ("jethexa", 3, "osqp"), ("solo12", 2, "osqp")])
def test_dynamics_cones_limits_random(name, min_stance, solver):
    r = robot(name)
    ctrl = WholeBodyController(r, {"solver": solver})
    rng = np.random.default_rng(7)
    solved = 0
    for _ in range(25):
        q, v, stance, refs = random_case(r, rng, min_stance)
        out = ctrl.update(q, v, stance, refs)
        assert np.all(np.isfinite(out.tau_vector)) and np.all(np.isfinite(out.dv))
        if out.fallback:
            continue
        solved += 1
        independent_check(r, ctrl, q, v, stance, out, tol_dyn=1e-6,
                          tol_cone=1e-6 if solver == "proxsuite" else 1e-4)
    assert solved >= 20, f"only {solved}/25 random cases solved"


def test_outer_cone_and_facets():
    """N facets, outer approximation: forces stay inside the N-gon pyramid of mu."""
    r = robot("solo12")
    ctrl = WholeBodyController(r, {"contacts": {"cone_facets": 8, "cone_approximation": "outer",
                                                "min_normal_force": 1.0, "max_normal_force": 40.0}})
    rng = np.random.default_rng(3)
    for _ in range(10):
        q, v, stance, refs = random_case(r, rng, 3)
        out = ctrl.update(q, v, stance, refs)
        if out.fallback:
            continue
        P = pyramid(np.array([0, 0, 1.0]), r.friction, 8, "outer")
        for f, s in stance.items():
            if s:
                fp = out.contact_forces[f]
                assert (P[:-1] @ fp).max() <= 1e-6
                assert 1.0 - 1e-6 <= fp[2] <= 40.0 + 1e-6


def test_fallback_never_nan():
    r = robot("jethexa")
    ctrl = WholeBodyController(r)
    stance = {c.frame: True for c in r.contacts}
    q = r.q_stand.copy()
    q[10] = np.nan
    out = ctrl.update(q, np.zeros(r.nv), stance, References.hold(com=[0, 0, 0.1]))
    assert out.fallback and np.all(np.isfinite(out.tau_vector))
    # torque limits far too small to carry the robot: still physics (the robot folds), finite
    weak = WholeBodyController(r, {"limits": {"torque_scale": 1e-3}})
    out = weak.update(r.q_stand, np.zeros(r.nv), stance, References.hold(com=[0, 0, 0.1]))
    assert np.all(np.isfinite(out.tau_vector))
    # limits hold to the solver's absolute tolerance (proxsuite eps_abs = 1e-7 N m)
    assert np.all(np.abs(out.tau_vector) <= 3.4e-3 + 1e-7)
    # bounds that no force can meet: infeasible QP -> same-cycle fallback, counted
    for solver in ("proxsuite", "osqp"):
        bad = WholeBodyController(r, {"solver": solver, "contacts": {"min_normal_force": 10.0,
                                                                     "max_normal_force": 5.0}})
        out = bad.update(r.q_stand, np.zeros(r.nv), stance, References.hold(com=[0, 0, 0.1]))
        assert out.fallback and np.all(np.isfinite(out.tau_vector)) and not np.isnan(out.dv).any()
        assert bad.stats["fallbacks"] == 1
    assert ctrl.stats["fallbacks"] == 1


def past_the_stops(solver, speed):
    """jethexa on six feet with every joint 0.05 rad past its upper stop, moving further at
    ``speed``: (robot, controller, q, v, stance, output)."""
    r = robot("jethexa")
    ctrl = WholeBodyController(r, {"solver": solver})
    q = r.q_stand.copy()
    q[7:] = r.model.upperPositionLimit[7:] + 0.05
    v = np.zeros(r.nv)
    v[6:] = speed
    stance = {c.frame: True for c in r.contacts}
    return r, ctrl, q, v, stance, ctrl.update(q, v, stance, References.hold(com=[0, 0, 0.1]))


@pytest.mark.parametrize("solver", ["proxsuite", "osqp"])
def test_joint_limits_are_soft(solver):
    """Every joint past its upper stop and moving further: the acceleration bounds (all
    joints must brake) cannot hold with six feet on the ground, the hard QP is infeasible,
    and the slacks solve it in the same cycle without a fallback; physics (dynamics, cones)
    still holds."""
    r, ctrl, q, v, stance, out = past_the_stops(solver, 0.5)
    assert not out.fallback
    assert out.relaxed and ctrl.stats["relaxed"] == 1 and ctrl.stats["infeasible"] == 1
    independent_check(r, ctrl, q, v, stance, out, tol_dyn=1e-6, tol_cone=1e-4)


@pytest.mark.parametrize("solver", ["proxsuite", "osqp"])
def test_a_joint_past_its_stop_is_stopped_not_sent_back(solver):
    """Every joint past its upper stop at rest, six feet down (a stance leg pushed past its
    stop by the body's weight: MuJoCo's joint limits are soft). Sent back inside within the
    position horizon, the joints could not all move with the feet held: the hard QP was
    infeasible and only its slack problem solved it. Stopped where they stand, the hard QP
    solves, and no joint accelerates further past its stop."""
    r, ctrl, q, v, stance, out = past_the_stops(solver, 0.0)
    assert not out.fallback and not out.relaxed
    assert ctrl.stats["infeasible"] == 0 and ctrl.stats["relaxed"] == 0
    assert out.dv[6:].max() <= 1e-5
    independent_check(r, ctrl, q, v, stance, out, tol_dyn=1e-6, tol_cone=1e-4)

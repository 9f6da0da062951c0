"""The whole-body QP of a robot with soft feet (jethexa_soft; jethexa_shank, whose pads hang from
compliant shanks) against an independent model:
one soft recursion of the whole robot (every rigid body and pad a module [Pustina 2024,
Alg. 2], no Pinocchio) and the contact material points' Jacobians of that tree.

* ``soft.condensation: dynamic``: the output satisfies every row of the full soft-rigid
  equation ``M dv + h = S^T tau + J_c^T f`` (base and deformation rows with no torque), with
  the pads' visco-elastic force at the current state (``soft.horizon: 0``) or predicted H ahead
  (the reference tree's force at ``q_s + H v_s + H^2 a_s``, ``v_s + H a_s``), the contact
  points do not accelerate, the forces are inside their friction pyramids;
* ``quasi_static``: with ``a_s = 0`` the rigid rows hold exactly (base rows with no torque,
  actuated rows = tau); the deformation rows are what the condensation leaves out, and their
  residual is the pads' static imbalance at that state.

The state: the robot standing on its six pads, every soft module deformed to static equilibrium
under the forces of a first quasi-static solve (Newton on the soft rows), random small
velocities.
"""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control.constraints import pyramid
from hybrid_dynamics.control.controller import WholeBodyController
from hybrid_dynamics.control.references import References
from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.soft.kinematics import MaterialPoints
from test_soft_leaves import whole_tree


@pytest.fixture(scope="module", params=["jethexa_soft", "jethexa_shank", "jethexa_cosserat"])
def setup(request):
    """jethexa_soft (a pad on each tibia), jethexa_shank (a compliant shank on each tibia
    carrying a pad: the contact on the second soft module of a chain) and jethexa_cosserat (the
    shank a piecewise-constant-strain Cosserat rod of two segments)."""
    robot = load_robot(request.param)
    ref = whole_tree(robot)
    points = MaterialPoints(ref, [(s.name, s.contact) for s in robot.soft_modules if s.has_contact])
    return robot, ref, points


def standing_state(robot, ctrl, rng):
    """Feet on z = 0, pads at static equilibrium under the quasi-static QP's forces."""
    L = ctrl.leaves
    q = L.neutral(robot.q_stand.copy())
    p, _, _ = L.contact_points(q, np.zeros(L.nv))
    q[2] -= p[:, 2].min()
    quasi = WholeBodyController(robot, {"soft": {"condensation": "quasi_static", "machine_code": False}})
    out = quasi.update(q, np.zeros(L.nv), stance(robot), hold(robot, q))
    assert not out.fallback and min(f[2] for f in out.contact_forces.values()) > 1.0
    f = np.concatenate([out.contact_forces[c.frame] for c in robot.contacts])
    r = robot.nv
    for _ in range(20):                            # pads' rows: h_s(q) = J_c,s^T f
        M, h = L.mass_and_nle(q, np.zeros(L.nv))
        _, J, _ = L.contact_points(q, np.zeros(L.nv), updated=True)
        res = h[r:] - J[:, r:].T @ f
        if np.abs(res).max() < 1e-10:
            break
        eps, Jr = 1e-7, np.zeros((L.ns, L.ns))
        for k in range(L.ns):
            qk = q.copy()
            qk[robot.nq + k] += eps
            Mk, hk = L.mass_and_nle(qk, np.zeros(L.nv))
            _, Jk, _ = L.contact_points(qk, np.zeros(L.nv), updated=True)
            Jr[:, k] = (hk[r:] - Jk[:, r:].T @ f - res) / eps
        q[robot.nq:] -= np.linalg.solve(Jr, res)
    q_s = q[robot.nq:]
    assert min(np.abs(q_s[sl]).max() for sl in L.slices.values()) > 5e-5    # every soft module is loaded
    v = 0.02 * rng.standard_normal(L.nv)
    return q, v


def stance(robot):
    return {c.frame: True for c in robot.contacts}


def hold(robot, q):
    data = robot.model.createData()
    return References.hold(com=pin.centerOfMass(robot.model, data, q[:robot.nq]).copy())


def check(robot, ctrl, ref, points, q, v, out, rows, horizon=0.0):
    """Residual of ``rows`` of M dv + h - S^T tau - J_c^T f, the pads' visco-elastic force
    predicted ``horizon`` ahead, contact accelerations, cones."""
    n = ctrl.leaves.nv
    dv = np.zeros(n)
    dv[:len(out.dv)] = out.dv
    tau_gen = ref.inverse_dynamics(q, v, dv)                 # M dv + h (+ K q + D qdot)
    q_p, v_p = q.copy(), v.copy()
    q_p[robot.nq:] += horizon * v[robot.nv:] + horizon ** 2 * dv[robot.nv:]
    v_p[robot.nv:] += horizon * dv[robot.nv:]
    tau_gen += ref.elastic_force(q_p, v_p) - ref.elastic_force(q, v)
    _, J, bias = points(q, v)
    f = np.concatenate([out.contact_forces[c.frame] for c in robot.contacts])
    residual = tau_gen - J.T @ f
    idx = [robot.model.joints[robot.model.getJointId(nm)].idx_v for nm in ctrl.joint_names]
    residual[idx] -= out.tau_vector
    scale = max(1.0, np.abs(tau_gen).max())
    cfg = ctrl.config["contacts"]
    P = pyramid(np.array(cfg["normal"]), robot.friction, cfg["cone_facets"], cfg["cone_approximation"])
    for c in robot.contacts:
        fc = out.contact_forces[c.frame]
        assert fc[2] > 0.5 and (P[:-1] @ fc).max() <= 1e-7, "force outside its friction pyramid"
    assert np.all(np.abs(out.tau_vector) <= robot.model.effortLimit[idx] + 1e-9)
    return residual[rows] / scale, (J @ dv + bias)


@pytest.mark.parametrize("horizon", [0.0, 0.005])
def test_dynamic_condensation_satisfies_the_full_soft_rigid_equation(setup, horizon):
    robot, ref, points = setup
    ctrl = WholeBodyController(robot, {"soft": {"condensation": "dynamic", "horizon": horizon,
                                                "machine_code": False}})
    rng = np.random.default_rng(5)
    q, v = standing_state(robot, ctrl, rng)
    out = ctrl.update(q, v, stance(robot), hold(robot, q))
    assert not out.fallback and out.dv.shape == (robot.nv + ctrl.leaves.ns,)
    res, acc = check(robot, ctrl, ref, points, q, v, out, slice(None), horizon)
    if horizon:                     # the prediction changes the rows: the current force does not hold them
        off, _ = check(robot, ctrl, ref, points, q, v, out, slice(None))
        assert np.abs(off).max() > 1e-6
    print(f"dynamic, horizon {horizon}: {out.status}; max row residual {np.abs(res).max():.1e}, "
          f"contact acc {np.abs(acc).max():.1e}")
    assert np.abs(res).max() < 1e-8
    assert np.abs(acc).max() < 1e-6 * max(1.0, np.abs(out.dv).max())
    assert np.abs(out.dv[robot.nv:]).max() > 1e-3                # the pads do move in the solution


def test_quasi_static_condensation_holds_the_rigid_rows(setup):
    robot, ref, points = setup
    ctrl = WholeBodyController(robot, {"soft": {"machine_code": False}})   # the robot's config
    assert ctrl.config["soft"]["condensation"] == "quasi_static"
    rng = np.random.default_rng(6)
    q, v = standing_state(robot, ctrl, rng)
    out = ctrl.update(q, v, stance(robot), hold(robot, q))
    assert not out.fallback and out.dv.shape == (robot.nv,)
    res, _ = check(robot, ctrl, ref, points, q, v, out, slice(0, robot.nv))
    print(f"quasi-static: {out.status}; max rigid-row residual {np.abs(res).max():.1e}")
    assert np.abs(res).max() < 1e-8


def test_condensation_keys_are_checked():
    with pytest.raises(InputError, match="condensation"):
        WholeBodyController(load_robot("jethexa_soft"), {"soft": {"condensation": "lumped"}})
    with pytest.raises(InputError, match="soft.horizon"):
        WholeBodyController(load_robot("jethexa_soft"), {"soft": {"horizon": -0.005}})

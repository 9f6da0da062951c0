"""Hamel equations on SE(3) x R^n, centroidal quantities, decoupling transforms and the locked
CoM frame [Feurstein 2021, Secs. 3.1-3.3] against Pinocchio (rnea, crba, ccrba,
computeCentroidalMomentum), finite differences and a holonomy integral, on four robots."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.commands.bench_decoupled import bench
from hybrid_dynamics.dynamics import decoupling as dc
from hybrid_dynamics.dynamics.decoupling import DecoupledDynamics
from hybrid_dynamics.dynamics.com_frame import LockedComFrame
from hybrid_dynamics.dynamics.floating_hamel import FloatingHamel
from hybrid_dynamics.dynamics.lie import exp_se3, log_se3, rot_to_quat
from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.robot import load_robot

ROBOTS = ["jethexa", "talos", "solo12", "hybrid_biped"]
TOL = 1e-9


def _state(robot, seed):
    """A random base pose and twist, joints spread around the standing pose (hybrid_biped: its
    spanning tree, loops open)."""
    rng = np.random.default_rng(seed)
    m = robot.model
    q = robot.q_stand.copy()
    pose = pin.SE3.Random()
    q[:3], q[3:7] = pose.translation, rot_to_quat(pose.rotation)
    q[7:] += 0.3 * rng.normal(size=m.nq - 7)
    return q, rng.normal(size=m.nv)


@pytest.fixture(scope="module", params=ROBOTS)
def case(request):
    robot = load_robot(request.param)
    e = FloatingHamel(robot.model)
    q, v = _state(robot, 3)
    M = e.mass_matrix(q)
    Mdot = e.mass_matrix_derivative(q, v)
    return dict(robot=robot, e=e, q=q, v=v, M=M, Mdot=Mdot, C=e.hamel_coriolis(q, v, M, Mdot),
                Cp=e.passive_coriolis(q, v))


def test_hamel_c_times_v_is_rnea_and_mass_and_centroidal_quantities_are_pinocchios(case):
    e, q, v, M, C = case["e"], case["q"], case["v"], case["M"], case["C"]
    model, data = e.model, e.model.createData()
    b = pin.rnea(model, data, q, v, np.zeros(model.nv)) - pin.computeGeneralizedGravity(model, data, q)
    assert np.abs(b).max() > 1.0                                    # something to compare
    assert np.abs(C @ v - b).max() < TOL
    assert np.abs(case["Cp"] @ v - b).max() < TOL
    Mp = pin.crba(model, data, q)
    assert np.abs(M - (np.triu(Mp) + np.triu(Mp, 1).T)).max() < TOL
    c = e.centroidal(q, v, M)
    pin.computeCentroidalMomentum(model, data, q, v)
    assert np.abs(c.h_c - data.hg.vector).max() < TOL and np.abs(c.com - data.com[0]).max() < TOL
    pin.ccrba(model, data, q, v)
    assert np.abs(c.A_g - data.Ag).max() < TOL and np.abs(c.I_g - data.Ig.matrix()).max() < TOL
    assert np.abs(e.gravity(q) - pin.computeGeneralizedGravity(model, data, q)).max() < TOL
    h_b = e.base_momentum(q, v, M)
    assert np.abs(M[:6, :6] @ e.locked_velocity(q, v, M) - h_b).max() < TOL
    # the linear part of the locked velocity seen from the CoM frame is the CoM velocity
    vcom = pin.centerOfMass(model, data, q, v)
    nu_c = c.A_cb @ e.locked_velocity(q, v, M)
    assert np.abs(nu_c[:3] - data.vcom[0]).max() < TOL and np.abs(vcom).max() > 0


def test_passive_c_is_skew_against_mdot_and_hamel_c_is_not(case):
    e, q, v, M, Mdot = case["e"], case["q"], case["v"], case["M"], case["Mdot"]
    dt = 1e-7                                                       # Mdot against a central difference
    fd = (e.mass_matrix(pin.integrate(e.model, q, dt * v)) - e.mass_matrix(pin.integrate(e.model, q, -dt * v))) / (2 * dt)
    assert np.abs(fd - Mdot).max() < 1e-6 * max(1.0, np.abs(Mdot).max())
    assert np.abs(Mdot - case["Cp"] - case["Cp"].T).max() < TOL
    assert np.abs(Mdot - case["C"] - case["C"].T).max() > 1e-2


def test_decoupling_transform_block_structure_for_random_tx_ty(case):
    rng = np.random.default_rng(5)
    M, Mdot, v, n = case["M"], case["Mdot"], case["v"], case["M"].shape[0] - 6
    T, Td = dc.decoupling_transform(M, Mdot, rng.normal(size=(6, 6)), rng.normal(size=(6, 6)),
                                    rng.normal(size=(n, n)), rng.normal(size=(n, n)))
    M_T, C_T, F_T = dc.transform_equations(M, case["C"], T, Td, F=np.r_[np.zeros(6), rng.normal(size=n)])
    assert np.abs(dc.decoupling_inverse(T, 6) @ T - np.eye(len(T))).max() < 1e-9
    hamel = dc.block_structure(M_T, C_T, T @ v)
    scale = np.abs(C_T).max()
    assert hamel.M_xy < 1e-9 * np.abs(M_T).max() and hamel.C_xy < 1e-9 * scale
    assert np.abs(F_T[:6]).max() == 0.0                             # joint torques stay out of the x-rows
    _, Cp_T, _ = dc.transform_equations(M, case["Cp"], T, Td)
    passive = dc.block_structure(M_T, Cp_T, T @ v)
    assert passive.passive_skew < 1e-9 * np.abs(Cp_T).max() and passive.C_xy > 1e-6 * np.abs(Cp_T).max()
    assert hamel.passive_skew > 1e-6 * scale                        # the Hamel C is not passive


def test_momentum_form_has_the_invariance_structure_and_velocity_form_not(case):
    e, q, v, M, Mdot = case["e"], case["q"], case["v"], case["M"], case["Mdot"]
    c = e.centroidal(q, v, M)
    Adot = dc.com_frame_rates(c.A_cb, v, c.h_c[:3] / M[0, 0])
    dt = 1e-7
    c_plus, c_minus = e.centroidal(pin.integrate(e.model, q, dt * v), v), e.centroidal(pin.integrate(e.model, q, -dt * v), v)
    assert np.abs((c_plus.A_cb - c_minus.A_cb) / (2 * dt) - Adot).max() < 1e-6
    n = M.shape[0] - 6
    Tx, Tdx = dc.momentum_form(M, Mdot, c.A_cb, Adot)
    T, Td = dc.decoupling_transform(M, Mdot, Tx, Tdx, np.eye(n), np.zeros((n, n)))
    assert np.abs(T[:6] @ v - c.h_c).max() < TOL                    # v_x = h_c
    for C in (case["C"], case["Cp"]):
        M_T, C_T, _ = dc.transform_equations(M, C, T, Td)
        assert dc.block_structure(M_T, C_T, T @ v).invariance < TOL
    T, Td = dc.decoupling_transform(M, Mdot, c.A_cb, Adot, np.eye(n), np.zeros((n, n)))
    M_T, C_T, _ = dc.transform_equations(M, case["C"], T, Td)
    assert dc.block_structure(M_T, C_T, T @ v).invariance > 1e-4


@pytest.mark.parametrize("kind", dc.PSEUDO_INVERSES)
def test_external_internal_decomposition_splits_every_foot_twist(case, kind):
    e, q, v, M, robot = case["e"], case["q"], case["v"], case["M"], case["robot"]
    model, data = e.model, e.model.createData()
    pin.computeJointJacobians(model, data, q)
    pin.forwardKinematics(model, data, q, v)
    joints = [model.frames[model.getFrameId(c.frame)].parentJoint for c in robot.contacts]
    Js = [pin.getJointJacobian(model, data, j, pin.LOCAL) for j in joints]
    A_cb, loc = e.centroidal(q, v, M).A_cb, e.locked_velocity(q, v, M)
    for j, J in zip(joints, Js):                                    # nu_j = A_jb nu_b^loc + J_j^int qd
        d = dc.external_internal(M, A_cb, [J], pseudo_inverse=kind)
        ext, internal = J[:, :6] @ loc, d.J_int @ v[6:]
        assert np.abs(ext + internal - data.v[j].vector).max() < TOL and np.abs(internal).max() > 1e-3
        assert np.abs(d.J_int @ d.D_pinv - np.eye(6)).max() < 1e-8
        assert np.abs(d.M_int - d.M_int.T).max() < 1e-9 and np.abs(d.I[6:, :6]).max() == 0.0
        assert np.allclose(d.I @ v, np.r_[A_cb @ loc, internal], atol=TOL)
    if 6 * len(Js) > M.shape[0] - 6:
        with pytest.raises(InputError, match="J_int"):
            dc.external_internal(M, A_cb, Js, pseudo_inverse=kind)


def test_bad_transforms_and_states_are_rejected_by_name(case):
    M, Mdot, n = case["M"], case["Mdot"], case["M"].shape[0] - 6
    Ty = np.eye(n)
    Ty[0] = Ty[1]
    with pytest.raises(InputError, match="T_y"):
        dc.decoupling_transform(M, Mdot, np.eye(6), np.zeros((6, 6)), Ty, np.zeros((n, n)))
    with pytest.raises(InputError, match="T"):
        dc.transform_equations(M, case["C"], np.zeros_like(M), np.zeros_like(M))
    v = case["v"].copy()
    v[7] = np.nan
    with pytest.raises(InputError, match="v has non-finite"):
        case["e"].hamel_coriolis(case["q"], v)
    with pytest.raises(InputError, match="pseudo_inverse"):
        dc.external_internal(M, np.eye(6), [], pseudo_inverse="left")


def test_locked_com_frame_curvature_is_the_holonomy_of_a_small_loop():
    """(3.72) against the holonomy of the alignment condition integrated around a square of
    side eps in the (q_i, q_j) plane: H_loop = I + eps^2 F_ji^ + O(eps^3)."""
    robot = load_robot("solo12")
    frame = LockedComFrame(FloatingHamel(robot.model))
    q, _ = _state(robot, 7)
    F = frame.curvature(q)
    i, j, eps, N = 1, 2, 1e-3, 40
    H, qq = np.eye(4), q.copy()
    for side in (i, j, i, j):
        step = np.zeros(robot.model.nv - 6)
        step[side] = (eps if qq[7 + side] == q[7 + side] else -eps) / N
        for _ in range(N):
            qm = qq.copy()
            qm[7:] += 0.5 * step
            R, p = exp_se3(frame.connection(qm) @ step)
            E = np.eye(4)
            E[:3, :3], E[:3, 3] = R, p
            H, qq = E @ H, qq + np.r_[np.zeros(7), step]
    holonomy = log_se3(H[:3, :3], H[:3, 3]) / eps ** 2
    assert np.abs(F[i, j]).max() > 1e-2
    assert np.abs(holonomy - F[j, i]).max() < 1e-2 * np.abs(F[i, j]).max()
    with pytest.raises(InputError, match="not integrable"):
        frame.orientation(q, robot.q_stand)


@pytest.mark.parametrize("form", ["momentum", "velocity"])
def test_decoupled_equations_reproduce_pinocchio_forward_dynamics(form):
    """v_T_dot = T nu_dot + Tdot nu with nu_dot = aba(q, v, tau) satisfies the transformed
    equations with F_T = T^{-T} [0; tau], whose x-rows hold no torque."""
    robot = load_robot("talos")
    dd = DecoupledDynamics(robot.model, form=form)
    q, v = _state(robot, 11)
    tau = np.r_[np.zeros(6), np.random.default_rng(2).normal(size=robot.model.nv - 6)]
    nu_dot = pin.aba(robot.model, robot.model.createData(), q, v, tau)
    d = dd.equations(q, v)
    vT_dot = d.T @ nu_dot + d.Tdot @ v
    F_T = np.linalg.solve(d.T.T, tau)
    assert np.abs(d.M_T @ vT_dot + d.C_T @ d.v_T + d.G_T - F_T).max() < 1e-8
    assert np.abs(F_T[:6]).max() == 0.0 and np.abs(F_T[6:]).max() > 0.1
    assert np.abs(d.M_T[:6, 6:]).max() < 1e-12


def test_bench_decoupled_times_every_stage():
    out = bench(load_robot("solo12"), samples=3)
    assert set(out["us"]) == {"pinocchio_crba_rnea_ccrba", "M", "hamel_C", "transform_T_Tdot",
                              "transformed_M_C", "decoupled_total"}
    assert all(s["p50"] > 0 for s in out["us"].values())

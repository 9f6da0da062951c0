"""Closed-chain kinematics, passive-state estimation and constrained inverse dynamics of
hybrid_biped ([Mingo Hoffman 2024]), checked against finite differences and between the paper's forms."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.dynamics.closed_chain import ClosedChainInverseDynamics, LoopClosureKinematics
from hybrid_dynamics.estimation.passive_state import (NEAR_SINGULAR, OUT_OF_WORKSPACE,
                                                      PassiveStateEstimator, calibrate)
from hybrid_dynamics.model.robot import load_robot


@pytest.fixture(scope="module")
def robot():
    return load_robot("hybrid_biped")


@pytest.fixture(scope="module")
def kin(robot):
    return LoopClosureKinematics(robot)


def _random_actuators(kin, rng, scale=0.8):
    lo = kin.model.lowerPositionLimit[kin.qa]
    hi = kin.model.upperPositionLimit[kin.qa]
    mid = (lo + hi) / 2
    return mid + scale * (hi - lo) / 2 * rng.uniform(-1, 1, kin.n_act)


def test_serial_robot_projection_is_identity():
    talos = load_robot("talos")
    kin = LoopClosureKinematics(talos)
    G, drift = kin.projection(talos.q_stand, np.ones(talos.nv))
    assert np.array_equal(G, np.eye(talos.nv)) and not drift.any()


def test_cold_start_closure_under_10_iterations(kin):
    rng = np.random.default_rng(3)
    for _ in range(5):
        qa = _random_actuators(kin, rng, 0.6)
        q, info = kin.close(kin.with_actuated(kin.q_ref, qa), tol=1e-10)
        assert info["converged"] and info["iterations"] < 10, info
        assert np.max(np.abs(kin.residual(q))) <= 1e-10


def test_warm_start_keeps_the_assembly_branch(kin):
    q = kin.q_ref.copy()
    qa0 = q[kin.qa].copy()
    prev = q[kin.qu].copy()
    for s in np.linspace(0, 1, 50):
        qa = qa0 + s * np.array([0.015, 0.03, -0.03, 0.05, 0.015, -0.015] * 2)
        q, info = kin.close(kin.with_actuated(q, qa))
        assert info["converged"]
        assert np.max(np.abs(q[kin.qu] - prev)) < 0.05        # continuous: no branch jump
        prev = q[kin.qu].copy()


def test_jm_matches_finite_differences_of_the_closure(kin):
    q0 = kin.q_ref
    G, _ = kin.projection(q0)
    Jm = G[kin.iu, kin.nb:]
    h = 1e-6
    for i in range(kin.n_act):
        qs = []
        for sgn in (1, -1):
            qa = q0[kin.qa].copy()
            qa[i] += sgn * h
            q, info = kin.close(kin.with_actuated(q0, qa), tol=1e-13)
            assert info["converged"]
            qs.append(q[kin.qu])
        assert np.allclose((qs[0] - qs[1]) / (2 * h), Jm[:, i], atol=1e-6)


def test_drift_makes_accelerations_consistent(kin):
    rng = np.random.default_rng(5)
    q = kin.q_ref.copy()
    v, a = kin.complete(q, rng.normal(size=kin.n_act), rng.normal(size=kin.n_act),
                        v_base=rng.normal(size=6), a_base=rng.normal(size=6))
    st = kin.compute(q, v)
    assert np.abs(st.J @ v).max() < 1e-12
    assert np.abs(st.J @ a + st.drift_acc).max() < 1e-10
    # J_dot v against central differences of J(q(t)) v along v
    h = 1e-6
    Jp = kin.compute(pin.integrate(kin.model, q, h * v)).J
    Jn = kin.compute(pin.integrate(kin.model, q, -h * v)).J
    assert np.allclose((Jp - Jn) @ v / (2 * h), st.drift_acc, atol=1e-6)


def test_estimator_tracks_exact_closure_and_flags_bad_input(kin):
    est = PassiveStateEstimator(kin, dt=1e-3)
    qa0 = kin.q_ref[kin.qa].copy()
    amp = np.array([0.015, 0.01, 0.01, 0.04, 0.004, 0.004] * 2)
    w = 2 * np.pi * np.array([0.5, 0.7, 0.6, 0.4, 0.8, 0.9] * 2)
    q_exact = kin.q_ref.copy()
    worst = 0.0
    for k in range(600):
        t = k * 1e-3
        e = est.update(qa0 + amp * np.sin(w * t), amp * w * np.cos(w * t))
        assert e.valid
        if k % 100 == 99:
            q_exact, _ = kin.close(kin.with_actuated(q_exact, qa0 + amp * np.sin(w * t)))
            worst = max(worst, np.max(np.abs(e.q[kin.qu] - q_exact[kin.qu])))
    assert worst < 1e-4
    last = est.last_valid.q.copy()
    # out of the workspace: the yaw rod cannot reach its lever
    qa = e.q[kin.qa].copy()
    qa[0] = 0.3
    bad = est.update(qa, np.zeros(kin.n_act))
    assert not bad.valid and bad.status == OUT_OF_WORKSPACE and np.array_equal(bad.q, last)
    # the message names the actuator, its reading, its stroke and where the stroke came from
    assert f"{kin.actuated_joints[0]} = 0.3 not in [" in bad.message and "hybrid_biped_loops.yaml" in bad.message
    # NaN measurement
    assert est.update(qa * np.nan, np.zeros(kin.n_act)).status == OUT_OF_WORKSPACE
    # the estimator goes on from its last valid state
    assert est.update(e.q[kin.qa], np.zeros(kin.n_act)).valid


def _irregular_run(kin, stamped):
    rng = np.random.default_rng(7)
    est = PassiveStateEstimator(kin, dt=1e-3)
    qa0 = kin.q_ref[kin.qa].copy()
    amp = np.array([0.015, 0.01, 0.01, 0.04, 0.004, 0.004] * 2)
    w = 2 * np.pi * np.array([0.5, 0.7, 0.6, 0.4, 0.8, 0.9] * 2)
    q_exact = kin.q_ref.copy()
    t, worst, worst_v, worst_res = 0.0, 0.0, 0.0, 0.0
    for k in range(500):
        t += rng.uniform(0.003, 0.005)
        qa, va = qa0 + amp * np.sin(w * t), amp * w * np.cos(w * t)
        e = est.update(qa, va, t=t) if stamped else est.update(qa, va)
        assert e.valid, e.message
        q_exact, _ = kin.close(kin.with_actuated(q_exact, qa), tol=1e-12)
        v_exact, _ = kin.complete(q_exact, va)
        if k >= 5:
            worst = max(worst, np.abs(e.q[kin.qu] - q_exact[kin.qu]).max())
            worst_v = max(worst_v, np.abs(e.v[kin.iu] - v_exact[kin.iu]).max())
            worst_res = max(worst_res, np.abs(kin.residual(e.q)).max())
    return worst, worst_v, worst_res


def test_stamped_estimator_at_irregular_rates_matches_exact_closure(kin):
    """Joint states at 200-330 Hz, stamped: the Euler step over the true interval keeps the
    passive joints on the exact closure (Newton to 1e-12), v_u = J_m v_a; an estimator
    integrating its nominal 1 ms instead lags (its output is still first-order corrected)."""
    worst, worst_v, worst_res = _irregular_run(kin, stamped=True)
    lag, _, _ = _irregular_run(kin, stamped=False)
    print(f"stamped, 200-330 Hz: passive error {worst:.1e} rad (nominal dt: {lag:.1e}), "
          f"rates {worst_v:.1e} rad/s, closure {worst_res:.1e}")
    assert worst < 3e-5 and worst_v < 1e-4 and worst_res < 5e-6
    assert worst < 0.5 * lag


def test_estimator_says_so_near_a_singularity(kin):
    # yaw rod along the lever: pivot, lever tip and yaw axis aligned at s = |pivot| - lever - L0
    est = PassiveStateEstimator(kin, rcond_min=1e-4)
    qa = kin.q_ref[kin.qa].copy()
    s_sing = np.hypot(0.15, 0.04) - 0.04 - 0.15
    statuses = []
    for s in np.linspace(0.0, s_sing, 60):
        qa[0] = s
        statuses.append(est.initialise(qa, est.theta).status)
    assert statuses[0] == "ok" and statuses[-1] in (NEAR_SINGULAR, OUT_OF_WORKSPACE)
    assert NEAR_SINGULAR in statuses


def test_calibration_recovers_actuator_offsets(robot, kin):
    m = robot.model
    rng = np.random.default_rng(2)
    q_true, _ = kin.close(kin.with_actuated(kin.q_ref, _random_actuators(kin, rng, 0.5)))
    absolute = {f"{s}_{n}": q_true[m.joints[m.getJointId(f"{s}_{n}")].idx_q] for s in "lr"
                for n in ("hip_yaw", "hip_roll", "hip_pitch", "ankle_pitch", "ankle_roll", "act_knee")}
    for trial in range(6):
        offsets = rng.uniform(-0.004, 0.004, kin.n_act)
        offsets[[3, 9]] = 0.0        # the knee actuators have absolute encoders
        relative = {n: q_true[m.joints[m.getJointId(n)].idx_q] - o for n, o in zip(kin.actuated_joints, offsets)}
        res = calibrate(kin, absolute, relative)
        assert res.converged and res.iterations < 10
        assert np.allclose([res.offsets[n] for n in kin.actuated_joints], offsets, atol=1e-9)


def test_fixed_base_id_equals_lagrange_multiplier_form(kin):
    rng = np.random.default_rng(7)
    q = kin.q_ref
    v, _ = kin.complete(q, rng.normal(size=kin.n_act))
    a_a = rng.normal(size=kin.n_act)
    tau, a = kin.inverse_dynamics(q, v, a_a)
    # M_u a + h_u = J_lu^T lambda; tau = M_a a + h_a - J_la^T lambda (base held)
    rnea = pin.rnea(kin.model, kin.model.createData(), q, v, a)
    st = kin.compute(q, v)
    lam = np.linalg.solve(st.J[:, kin.iu].T, rnea[kin.iu])
    assert np.allclose(tau, rnea[kin.ia] - st.J[:, kin.ia].T @ lam, atol=1e-9)


def test_three_step_and_projected_forms_agree(robot, kin):
    idd = ClosedChainInverseDynamics(robot, kin)
    rng = np.random.default_rng(11)
    q = robot.q_stand.copy()
    # a velocity that keeps both feet still: v_m in the null space of J_c G_f
    M, h, Jc, dJc, st, G_f, drift = idd.terms(q, np.zeros(kin.nv), robot.contacts)
    null = np.linalg.svd(Jc @ G_f)[2][-6:].T
    v = G_f @ null @ (0.3 * rng.normal(size=6))
    assert np.abs(Jc @ v).max() < 1e-12
    for a_ref in (np.zeros(6), np.array([0.2, -0.1, 0.5, 0.1, 0.2, -0.1])):
        full = idd.solve(q, v, a_ref, form="three-step")
        proj = idd.solve(q, v, a_ref, form="projected")
        assert full.status == proj.status == "solved"
        assert np.allclose(full.tau, proj.tau, atol=1e-9, rtol=0)
        assert np.allclose(full.dv, proj.dv, atol=1e-9) and np.allclose(full.forces, proj.forces, atol=1e-8)
        assert np.allclose(full.lam, proj.lam, atol=1e-8)
        # serial-equivalent torques do the same power as the actuator forces
        G, _ = kin.projection(q)
        va = rng.normal(size=kin.n_act)
        assert np.isclose(full.tau_joint @ (G[idd.i_serial, 6:] @ va), full.tau @ va)
        f = full.forces.reshape(-1, 3)
        assert np.all(f[:, 2] >= -1e-9)


def test_motor_torque_through_ball_screw(kin):
    F = np.linspace(-5000, 5000, kin.n_act)
    tm = kin.motor_torque(F)
    lead, eta, fmax = kin.transmissions()
    assert np.allclose(tm, F * lead / (2 * np.pi * eta))
    assert np.allclose(kin.actuator_force(tm), F)
    assert np.all(kin.force_limits() == 5000)


def test_wrench_estimate_recovers_the_weight_standing_still(robot, kin):
    from hybrid_dynamics.estimation.wrench import WrenchEstimator
    q = robot.q_stand.copy()
    # an exact static stance, independent of any QP weights: the minimum-norm contact forces
    # balancing the base rows, and the actuator forces that hold the rest still
    idd = ClosedChainInverseDynamics(robot, kin)
    M, h, Jc, dJc, st, G_f, drift = idd.terms(q, np.zeros(kin.nv), robot.contacts)
    g = h
    B = (G_f.T @ Jc.T)[:6]
    F = np.linalg.lstsq(B, (G_f.T @ g)[:6], rcond=None)[0]
    tau = (G_f.T @ (g - Jc.T @ F))[6:]
    assert np.all(F.reshape(-1, 3)[:, 2] > 0)

    class sol:                                    # noqa: N801 (a plain record)
        forces = F
    sol.tau = tau
    west = WrenchEstimator(robot, kin)
    est = west.estimate(q, kin.motor_torque(sol.tau), motor_torque=True)
    weight = robot.total_mass() * 9.81
    total = sum(f[2] for f in est.foot_force.values())
    assert total == pytest.approx(weight, rel=0.01)
    # per-foot resultants equal the QP's (only the split among a foot's points is unobservable)
    qp = sol.forces.reshape(-1, 3)
    assert np.allclose(est.foot_force["l_sole"], qp[:4].sum(axis=0), atol=1e-6)
    assert np.allclose(est.foot_force["r_sole"], qp[4:].sum(axis=0), atol=1e-6)
    # CoP of each foot under its sole, ZMP between the feet
    for frame, cop in est.cop.items():
        sole = robot.model.getFrameId(frame)
        data = robot.model.createData()
        import pinocchio as _pin
        _pin.framesForwardKinematics(robot.model, data, q)
        centre = data.oMf[sole].translation
        assert abs(cop[0] - centre[0]) < 0.11 and abs(cop[1] - centre[1]) < 0.055
    assert abs(est.zmp[1]) < 0.1
    # the 5 Hz filter settles on a constant input
    for _ in range(300):
        filt = west.estimate(q, sol.tau, filtered=True)
    assert np.allclose(filt.forces, est.forces, atol=1e-6)

"""Each constraint of the whole-body QP on its own (control/constraints/), its rows evaluated
at random ``x = (dv, f)`` against the physical quantity they bound, computed with Pinocchio:
the floating-base rows of ``M dv + h - J^T f`` (CRBA, RNEA, point Jacobians), the classical
accelerations of the stance points, the actuated torques, cone membership of random forces
judged by their friction ratio, and joint limits reached exactly by a constant acceleration
at the bound over the horizon."""
import numpy as np
import pinocchio as pin
import pytest

from test_qp_tasks import LWA, Case, hexapod_tripod


@pytest.fixture(scope="module")
def case():
    return Case("jethexa", hexapod_tripod, seed=11, config={"contacts": {"kd": 7.0}})


def block(case, name):
    lay = case.lay
    for con, s in lay.eq_blocks:
        if con.name == name:
            return con, lay.A[s], lay.b_lo[s], lay.b_hi[s]
    for con, s in lay.in_blocks:
        if con.name == name:
            return con, lay.C[s], lay.l[s], lay.u[s]
    raise KeyError(name)


def random_x(case):
    x = case.rng.standard_normal(case.lay.nx)
    x[case.model.nv:] *= 20.0
    return x


def generalized_forces(case, x):
    """M dv + h - sum_i J_i^T f_i over the stance points (Pinocchio)."""
    nv = case.model.nv
    r = case.M @ x[:nv] + case.h
    for i in case.lay.stance_contacts:
        for (_, J), f in zip(case.points(i), case.forces(x, i)):
            r -= J.T @ f
    return r


def test_floating_base_rows_are_the_base_dynamics(case):
    con, A, b_lo, b_hi = block(case, "floating_base_dynamics")
    assert con.equality and np.array_equal(b_lo, b_hi) and A.shape[0] == 6
    for _ in range(5):
        x = random_x(case)
        expected = generalized_forces(case, x)[:6]
        assert np.linalg.norm(expected) > 1.0
        assert np.allclose(A @ x - b_lo, expected, atol=1e-9 * max(1.0, np.abs(expected).max()))


def test_contact_rows_are_the_stance_point_accelerations(case):
    """A x - b = p_ddot + kd p_dot for every stance point (classical, world)."""
    con, A, b_lo, _ = block(case, "contact_acceleration")
    m, kd = case.model, 7.0
    stance = case.lay.stance_contacts
    frames = [case.form.contacts[i].frame for i in stance]
    for _ in range(3):
        x = random_x(case)
        d = case.accelerations(x)
        expected = []
        for frame in frames:
            fid = m.getFrameId(frame)
            expected.append(pin.getFrameClassicalAcceleration(m, d, fid, LWA).linear
                            + kd * pin.getFrameVelocity(m, d, fid, LWA).linear)
        expected = np.concatenate(expected)
        assert np.linalg.norm(expected) > 1.0
        assert np.allclose(A @ x - b_lo, expected, atol=1e-8 * max(1.0, np.abs(expected).max()))


def test_actuation_rows_are_the_actuated_torques(case):
    con, C, lo, hi = block(case, "actuation_limits")
    act = case.form.joints.v_cols
    tau_max = case.form.joints.tau_max
    for _ in range(3):
        x = random_x(case)
        tau = generalized_forces(case, x)[act]
        h_a = case.h[act]
        assert np.allclose(C @ x, tau - h_a, atol=1e-9 * max(1.0, np.abs(tau).max()))
    assert np.allclose(lo + h_a, -tau_max) and np.allclose(hi + h_a, tau_max)
    names = case.form.joints.names
    urdf = np.array([case.model.effortLimit[case.model.joints[case.model.getJointId(n)].idx_v] for n in names])
    assert np.allclose(tau_max, urdf)


@pytest.mark.parametrize("approximation", ["inner", "outer"])
def test_friction_rows_accept_and_reject_by_friction_ratio(approximation):
    """Random point forces: inside the pyramid if their friction ratio is below mu cos(pi/N)
    (inner) or mu (outer) and their normal force within bounds; outside if the ratio exceeds
    mu (inner) or mu / cos(pi/N) (outer). Between the two the facet decides."""
    N = 4
    c = Case("jethexa", hexapod_tripod, seed=2, config={"contacts": {
        "cone_facets": N, "cone_approximation": approximation, "min_normal_force": 1.0,
        "max_normal_force": 80.0}})
    _, C, lo, hi = block(c, "friction_cone")
    lay = c.lay
    mu = c.form.contacts[0].friction
    inside_below = mu * np.cos(np.pi / N) if approximation == "inner" else mu
    outside_above = mu if approximation == "inner" else mu / np.cos(np.pi / N)
    verdicts = {"in": 0, "out": 0}
    for _ in range(400):
        x = np.zeros(lay.nx)
        i = c.rng.choice(lay.stance_contacts)
        f_n = c.rng.uniform(-5.0, 100.0)
        ratio = c.rng.uniform(0.0, 2.0 * mu)
        angle = c.rng.uniform(0, 2 * np.pi)
        f = np.array([ratio * abs(f_n) * np.cos(angle), ratio * abs(f_n) * np.sin(angle), f_n])
        x[lay.force_slice(i)] = np.tile(f, lay.contacts[i].n_points)
        others = [j for j in lay.stance_contacts if j != i]
        for j in others:        # the other stance points inside every cone
            x[lay.force_slice(j)] = np.tile([0.0, 0.0, 10.0], lay.contacts[j].n_points)
        y = C @ x
        accepted = bool(np.all(y >= lo - 1e-9) and np.all(y <= hi + 1e-9))
        bounded = 1.0 <= f_n <= 80.0
        if bounded and ratio <= inside_below - 1e-9:
            assert accepted, (f, ratio)
            verdicts["in"] += 1
        elif not bounded or ratio > outside_above + 1e-9:
            assert not accepted, (f, ratio)
            verdicts["out"] += 1
    assert verdicts["in"] > 50 and verdicts["out"] > 50


def test_swing_points_carry_no_force_in_the_fixed_layout():
    """The fixed layout (OSQP) keeps swing contacts' forces with 0 <= f_n <= 0: with the
    facets only f = 0 is admissible."""
    c = Case("jethexa", hexapod_tripod, seed=4, config={"solver": "osqp"})
    _, C, lo, hi = block(c, "friction_cone")
    lay = c.lay
    swing = [i for i in lay.included if not lay.stance[i]]
    assert swing
    for _ in range(50):
        x = np.zeros(lay.nx)
        x[lay.force_slice(swing[0])] = c.rng.standard_normal(3) * 5.0
        y = C @ x
        assert not (np.all(y >= lo - 1e-9) and np.all(y <= hi + 1e-9))


def test_joint_limits_reached_exactly_at_the_bound():
    """Joints moving towards their stops: a constant acceleration at the bound brings a joint
    whose position bound binds to its stop at the horizon, one whose velocity bound binds to
    its speed limit over the velocity horizon; |a| <= a_max always. The joints of the legs in
    the air (the robot's legs whose foot is not in stance) get no bound (their torque limits
    bound them)."""
    c0 = Case("jethexa", hexapod_tripod, seed=6)
    js = c0.form.joints
    con, _, _, _ = block(c0, "joint_limits")
    T, Tv, a_max = con.T, con.dt, con.a_max
    rng = np.random.default_rng(8)
    q, v = c0.q.copy(), c0.v.copy()
    span = js.q_max - js.q_min
    q_j = js.q_max - rng.uniform(0.02, 0.2, len(span)) * span      # near the upper stop
    v_j = rng.uniform(-0.5, 1.5, len(span)) * js.v_max * 0.2          # some towards it
    q[7:][js.q_idx - 7] = q_j
    v[js.v_cols] = v_j
    c0.ctrl.update(q, v, c0.stance, c0.refs)
    _, _, lo, hi = block(c0, "joint_limits")
    position_bound = 2.0 * (js.q_max - q_j - v_j * T) / T ** 2
    velocity_bound = (js.v_max - v_j) / Tv
    r = c0.robot
    in_air = {r.model.names[j] for leg in r.legs for j in leg.joints
              if not any(c0.stance[c.frame] for c in r.contacts if c.leg == leg.name)}
    air = [k for k, name in enumerate(js.names) if name in in_air]
    assert len(air) == 9 and np.all(lo[air] <= -1e19) and np.all(hi[air] >= 1e19)
    checked = 0
    for k in range(len(hi)):
        if k in air:
            continue
        assert -a_max - 1e-9 <= lo[k] <= hi[k] <= a_max + 1e-9
        if abs(hi[k]) >= a_max - 1e-9:
            continue
        if np.isclose(hi[k], position_bound[k]):
            assert np.isclose(q_j[k] + v_j[k] * T + 0.5 * hi[k] * T ** 2, js.q_max[k])
            checked += 1
        else:
            assert np.isclose(hi[k], velocity_bound[k])
            assert np.isclose(v_j[k] + hi[k] * Tv, js.v_max[k])
    assert checked > 0

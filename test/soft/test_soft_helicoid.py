"""Simulation 1 of [Pustina 2024, Sec. 7.1], the trimmed helicoid (three LVP bodies, nine
tendons): the regulated equilibria are stationary points of the total potential energy
(gravity + elasticity - tendon work, by central differences of energies and tendon lengths,
no recursion), their tips are on the paper's circles, and the PFBL's tracking error (0.2 s) follows the
exact solution of ``e'' + K_D e' + K_P e = 0`` from the straight start. The full reproduction
(20 equilibria, the paper's 5.5 s, through the command) is marked long."""
import json

import casadi as ca
import numpy as np
import pytest

from hybrid_dynamics.soft import helicoid
from hybrid_dynamics.soft.lvp import lvp_map


@pytest.fixture(scope="module")
def model():
    return helicoid.Helicoid.build()


@pytest.fixture(scope="module")
def reference(model):
    return helicoid.reference(model, samples=4)


@pytest.fixture(scope="module")
def tracked(model, reference):
    """0.2 s of tracking from the straight pose, integrated by CVODES (the reproduction's)."""
    return helicoid.track(model, reference["spline"], 0.2, samples=5)


def total_potential(model, q, u):
    """Gravity + elastic energy minus the tendons' work u . y(q) (y: contractions)."""
    zero = np.zeros(model.tree.nv)
    return model.tree.energy(q, zero)[1] - u @ model.actuation.coordinates(q, zero)[0]


def test_regulated_equilibria_are_stationary_and_put_the_tips_on_the_circles(model, reference):
    zero = np.zeros(model.tree.nv)
    assert len(reference["q"]) == 4
    for t, q, u in zip(reference["times"], reference["q"], reference["u"]):
        assert np.abs(q).max() > 0.01 and np.abs(u).max() > 10.0          # deformed, loaded
        tips = model.tips(q, zero)[0]
        assert np.abs(tips - helicoid.tip_reference(t)).max() < 1e-9
        # the paper's heights: every body shortened by the uniform stretch mode
        assert abs(tips[2] - 0.08) < 1e-9 and abs(tips[8] - 0.24) < 1e-9
        eps = 1e-6
        grad = np.array([(total_potential(model, q + eps * e, u) - total_potential(model, q - eps * e, u)) / (2 * eps)
                         for e in np.eye(model.tree.nq)])
        scale = np.abs(model.actuation.force(q, u)).max()
        assert np.abs(grad).max() < 1e-5 * scale, (np.abs(grad).max(), scale)
        residual = model.tree.inverse_dynamics(q, zero, zero) - model.actuation.force(q, u)   # Eq. (55)
        assert np.abs(residual).max() < 1e-8 * scale


def test_uniform_stretch_preserves_volume_and_moves_the_face():
    """``stretch_linear``: det(d f / d x) = 1 at random points (by AD), the distal face moves
    by q along the axis and the section shrinks by (1 + q/L)^-1/2."""
    x, q = ca.SX.sym("x", 3), ca.SX.sym("q", 1)
    f = lvp_map(x, q, helicoid.LENGTH, ["stretch_linear"])
    det = ca.Function("det", [x, q], [ca.det(ca.jacobian(f, x))])
    fn = ca.Function("f", [x, q], [f])
    rng = np.random.default_rng(3)
    for _ in range(5):
        xk = rng.uniform([-0.02, -0.02, 0.0], [0.02, 0.02, helicoid.LENGTH])
        qk = rng.uniform(-0.03, 0.03)
        assert abs(float(det(xk, qk)) - 1.0) < 1e-12
        face = np.array(fn([0.01, 0.0, helicoid.LENGTH], qk)).ravel()
        assert np.allclose(face, [0.01 / np.sqrt(1 + qk / helicoid.LENGTH), 0.0, helicoid.LENGTH + qk], atol=1e-15)


def test_straight_pose_output_has_full_rank(model):
    """The uniform stretch mode makes the nine tendon coordinates independent at the straight
    pose (the PFBL starts there)."""
    _, Jy, _ = model.actuation.coordinates(model.tree.neutral(), np.zeros(model.tree.nv))
    assert np.linalg.matrix_rank(Jy, tol=1e-6) == 9


@pytest.mark.parametrize("speed", [0.0, 20.0])
def test_integrator_jacobian_matches_finite_differences_at_a_loaded_equilibrium(model, reference, speed):
    """The approximate closed-loop Jacobian the integrator's Newton iteration uses, against
    central differences of the closed loop, at the first regulated equilibrium (tendons at
    about 300 N), at rest and moving (the bodies' second bending coefficients, Table 4's q3
    and q5, at ``speed`` 1/s: what the unactuated coordinates reach in the transient from
    the straight pose, 22-25 1/s at 0.43-0.49 s): the Newton iteration
    ``(I - h J_a)^-1 h (J - J_a)`` at a 1 ms step must contract fast. With the damping
    tangent taken as ``eta K_T`` (the tendons' geometric stiffness damped too) it contracted
    by 0.78 at rest and the step collapsed as tensions grew; with the tangents taken at zero
    velocity it was exact at rest only."""
    n = model.tree.nv
    q = reference["q"][0]
    v = speed * np.tile([0.0, 0.0, 1.0, 0.0, -1.0, 0.0, 0.0, 0.0], 3)
    step = helicoid.closed_loop(model, reference["spline"])
    assert np.abs(reference["u"][0]).max() > 100.0                    # loaded

    def f(z):
        return np.concatenate([z[n:], step(0.0, z[:n], z[n:])[1]])
    z = np.concatenate([q, v])
    eps = 1e-7
    J = np.column_stack([(f(z + eps * e) - f(z - eps * e)) / (2 * eps) for e in np.eye(2 * n)])
    Ja = helicoid.stiff_jacobian(model)(0.0, q, v)
    h = 1e-3
    contraction = np.abs(np.linalg.eigvals(np.linalg.solve(np.eye(2 * n) - h * Ja, h * (J - Ja)))).max()
    print(f"|v| = {speed}: Newton contraction at h = 1 ms {contraction:.4f}")
    assert contraction < 0.05
    assert np.abs(J - Ja)[n:, n:].max() < 0.02 * np.abs(J[n:, n:]).max()      # the damping block


def test_pfbl_error_follows_the_exact_linear_error_dynamics(tracked):
    res = tracked
    e = res["y"] - res["y_ref"]
    ed0 = res["yd"][0] - res["yd_ref"][0]
    assert np.linalg.norm(e[0]) > 5e-3                                   # starts off the reference
    predicted = helicoid.error_prediction(res["t"], e[0], ed0)
    assert np.abs(e - predicted).max() < 1e-3 * np.abs(e[0]).max(), np.abs(e - predicted).max()
    assert np.linalg.norm(e[-1]) < 0.95 * np.linalg.norm(e[0])


def test_cvodes_tracking_equals_scipy_bdf_on_a_short_horizon(model, reference, tracked):
    """The reproduction integrates the closed loop by CVODES (scipy's BDF stalls at 0.776 s
    on the full horizon): over the first 0.2 s (the transient from the straight pose) scipy's
    BDF, given the same right-hand side and Jacobian, gives the same trajectory within the
    tolerances (rtol 1e-6, atol 1e-9)."""
    bdf = helicoid.track(model, reference["spline"], 0.2, samples=5, method="BDF")
    assert np.abs(bdf["q"][-1] - bdf["q"][0]).max() > 0.1                 # it moved
    scale = np.abs(bdf["q"]).max()
    print(f"max |q_CVODES - q_BDF| {np.abs(tracked['q'] - bdf['q']).max():.2e} (max |q| {scale:.2f}), "
          f"|y| {np.abs(tracked['y'] - bdf['y']).max():.2e} m")
    assert np.abs(tracked["q"] - bdf["q"]).max() < 1e-4 * scale
    assert np.abs(tracked["y"] - bdf["y"]).max() < 1e-7


@pytest.mark.long
def test_full_simulation_1_reproduction(cli, tmp_path):
    r = cli("reproduce", "paper002", "--sims", "1", "--json", "--out", tmp_path, timeout=4 * 3600)
    assert r.returncode == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)["sim1"]
    assert out["max_statics_residual_N"] < 1e-6 and out["max_equilibrium_tip_error_m"] < 1e-9
    assert out["duration_s"] == helicoid.HORIZON
    assert out["error_norm_end_m"] < out["error_norm_start_m"]
    assert out["max_deviation_from_exact_error_m"] < 1e-3 * out["error_norm_start_m"]
    assert (tmp_path / "paper002_sim1.png").stat().st_size > 1000


def test_closed_loop_spectrum_holds_the_output_modes_of_the_exact_linearisation(model, reference):
    """At the first regulated equilibrium, at rest, the closed loop's Jacobian (central
    differences of its right-hand side) has the nine output pairs of ``e'' + K_D e' + K_P e = 0``,
    -K_D/2 +- i sqrt(K_P - K_D^2/4), and every other mode is one of the zero dynamics' (computed
    apart, :func:`helicoid.zero_dynamics_eigenvalues`: 0.2 % apart measured), all stable with
    the slowest at -12.9 1/s.
    The spectrum is computed to about 0.1 1/s only (the Jacobian spans -4e5 to 3 1/s and M's
    condition number is 1e9: the nine pairs come out within 0.01-0.1 of the exact mode at
    every difference step from 1e-6 to 1e-4)."""
    q = reference["q"][0]
    eig = helicoid.closed_loop_eigenvalues(model, reference["spline"], 0.0, q, np.zeros(model.tree.nv))
    mode = complex(-helicoid.KD / 2, np.sqrt(helicoid.KP - helicoid.KD ** 2 / 4))
    taken = np.zeros(len(eig), bool)
    for m in (mode, mode.conjugate()):
        nearest = np.argsort(np.abs(eig - m))[:9]
        assert np.abs(eig[nearest] - m).max() < 0.15, eig[nearest]
        taken[nearest] = True
    others = eig[~taken]
    assert others.real.max() < 0, others[np.argmax(others.real)]
    # the other modes are the zero dynamics': the motions that keep y, from the AD tangents
    # restricted to J_y's null space (no differences), match them one by one
    zero_dynamics = helicoid.zero_dynamics_eigenvalues(model, q, reference["u"][0])
    assert len(zero_dynamics) == len(others) == 2 * (model.tree.nv - model.actuation.m)
    mismatch = [np.abs(others - z).min() / abs(z) for z in zero_dynamics]
    assert max(mismatch) < 1e-2, max(mismatch)
    assert zero_dynamics.real.max() < -5.0, zero_dynamics.real.max()           # stiff, not marginal

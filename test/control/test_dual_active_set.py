"""The compiled Goldfarb-Idnani kernel (control/solvers/dual_active_set.py) on random strictly
convex QPs with equalities and two-sided inequalities: its solution satisfies the KKT
conditions computed here (stationarity with the multipliers found by least squares on the
active set it reports, those multipliers >= 0, primal feasibility, complementarity) and
equals ProxQP's dense solver at a tight tolerance; warm starts from right and wrong active
sets give the same optimum; infeasible and contradictory problems are reported as such."""
import numpy as np
import proxsuite
import pytest

from hybrid_dynamics.control.solvers import dual_active_set as das

NO_WARM = np.zeros(0, np.intp)


def random_qp(rng, n, neq, nin):
    """A strictly convex QP whose inequalities are active at its optimum: the unconstrained
    minimiser lies far outside the box the rows allow around a feasible point."""
    M = rng.standard_normal((n, n))
    H = M @ M.T + 1e-3 * np.eye(n)
    A = rng.standard_normal((neq, n))
    C = rng.standard_normal((nin, n))
    x_feas = rng.standard_normal(n)
    b = A @ x_feas
    width = rng.uniform(0.1, 1.0, nin)
    l, u = C @ x_feas - width, C @ x_feas + width
    one_sided = rng.random(nin) < 0.3
    l[one_sided & (rng.random(nin) < 0.5)] = -1e20          # no bound on that side
    u[one_sided & (l > -1e19)] = 1e20
    g = 30.0 * rng.standard_normal(n)
    return H, g, A, b, C, l, u


def solve(H, g, A, b, C, l, u, warm=NO_WARM):
    """(x, active sides, status, iterations, equality residual)."""
    n = len(g)
    x, sides = np.full(n, np.nan), np.full(n, -7, np.intp)
    k, status, iterations, residual = das.solve(H, g, A, b, C, l, u, warm, 1000, 1e-9, x, sides,
                                                np.full((n, n), np.nan), np.zeros((n, n)))
    return x, sides[:k].copy(), status, iterations, residual


def kkt_residuals(H, g, A, b, C, l, u, x, active):
    """Stationarity residual, smallest inequality multiplier, largest violation, largest
    complementarity product, from the active set alone (multipliers by least squares)."""
    nin = C.shape[0]
    N = [A[i] for i in range(A.shape[0])] + [C[p] if p < nin else -C[p - nin] for p in active]
    N = np.array(N).T
    lam, *_ = np.linalg.lstsq(N, H @ x + g, rcond=None)
    stat = np.abs(N @ lam - (H @ x + g)).max() / max(1.0, np.abs(g).max())
    mu = lam[A.shape[0]:]
    cx = C @ x
    viol = max(np.abs(A @ x - b).max(initial=0.0), (l - cx).max(initial=0.0), (cx - u).max(initial=0.0))
    slack = np.array([cx[p] - l[p] if p < nin else u[p - nin] - cx[p - nin] for p in active])
    return stat, mu.min(initial=0.0), viol, np.abs(slack * mu).max(initial=0.0)


def proxqp(H, g, A, b, C, l, u):
    n, neq, nin = H.shape[0], A.shape[0], C.shape[0]
    qp = proxsuite.proxqp.dense.QP(n, neq, nin)
    qp.settings.eps_abs = 1e-12
    qp.settings.eps_rel = 0.0
    qp.settings.max_iter = 10000
    qp.init(H, g, A, b, C, l, u)
    qp.solve()
    assert qp.results.info.status == proxsuite.proxqp.QPSolverOutput.PROXQP_SOLVED
    return np.array(qp.results.x)


@pytest.mark.parametrize("seed", range(12))
def test_random_qps_meet_kkt_and_equal_proxqp(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 40))
    neq, nin = int(rng.integers(0, n // 2)), int(rng.integers(1, 2 * n))
    H, g, A, b, C, l, u = random_qp(rng, n, neq, nin)
    x, active, status, iterations, residual = solve(H, g, A, b, C, l, u)
    assert status == das.SOLVED and len(active) > 0 and iterations >= len(active)
    stat, mu_min, viol, comp = kkt_residuals(H, g, A, b, C, l, u, x, active)
    assert stat < 1e-8 and mu_min > -1e-8 and viol < 1e-8 and comp < 1e-8
    assert residual < 1e-10
    x_ref = proxqp(H, g, A, b, C, l, u)
    assert np.abs(x - x_ref).max() <= 1e-6 * max(1.0, np.abs(x_ref).max())
    # warm starts: the optimum's own active set (no step beyond adding it), and a wrong one
    x_w, active_w, status_w, it_w, _ = solve(H, g, A, b, C, l, u, active)
    assert status_w == das.SOLVED and np.abs(x_w - x).max() <= 1e-9 * max(1.0, np.abs(x).max())
    assert sorted(active_w) == sorted(active) and it_w <= iterations
    wrong = rng.choice(2 * nin, size=min(5, 2 * nin), replace=False).astype(np.intp)
    x_b, _, status_b, _, _ = solve(H, g, A, b, C, l, u, wrong)
    assert status_b == das.SOLVED and np.abs(x_b - x).max() <= 1e-7 * max(1.0, np.abs(x).max())


def test_infeasible_rows_are_reported():
    rng = np.random.default_rng(3)
    H, g, A, b, C, l, u = random_qp(rng, 10, 3, 8)
    C[1] = C[0]                                  # the same row with disjoint intervals
    l[0], u[0], l[1], u[1] = 0.0, 1.0, 2.0, 3.0
    _, _, status, _, _ = solve(H, g, A, b, C, l, u)
    assert status == das.INFEASIBLE


def test_dependent_equalities():
    """A repeated equality row is skipped when consistent (same optimum as without it) and
    reported when it contradicts the first."""
    rng = np.random.default_rng(4)
    H, g, A, b, C, l, u = random_qp(rng, 12, 4, 10)
    x, *_ = solve(H, g, A, b, C, l, u)
    A2, b2 = np.vstack([A, 2.0 * A[1]]), np.append(b, 2.0 * b[1])
    x2, _, status, _, _ = solve(H, g, A2, b2, C, l, u)
    assert status == das.SOLVED and np.abs(x2 - x).max() < 1e-8 * max(1.0, np.abs(x).max())
    b2[-1] += 1.0
    assert solve(H, g, A2, b2, C, l, u)[2] == das.DEPENDENT


def test_indefinite_hessian_raises():
    rng = np.random.default_rng(5)
    H, g, A, b, C, l, u = random_qp(rng, 8, 2, 6)
    H[0, 0] = -1.0
    with pytest.raises(np.linalg.LinAlgError):
        solve(H, g, A, b, C, l, u)


def test_an_equal_hessian_reuses_its_factor():
    """The workspace keeps the last Hessian factored and its L^-1 (numpy's inverse Cholesky
    factor); a solve with an equal Hessian takes the kept factor (the same minimiser bit for
    bit as a fresh solve; a spoiled kept factor shows that it was used), a different one is
    factored again."""
    rng = np.random.default_rng(6)
    H, g, A, b, C, l, u = random_qp(rng, 14, 3, 12)
    n = len(g)
    H_last, Jt_last = np.full((n, n), np.nan), np.zeros((n, n))

    def run(H, g):
        x, sides = np.empty(n), np.zeros(n, np.intp)
        status = das.solve(H, g, A, b, C, l, u, NO_WARM, 1000, 1e-9, x, sides, H_last, Jt_last)[1]
        return x, status

    x1, status = run(H, g)
    assert status == das.SOLVED and np.array_equal(np.tril(H_last), np.tril(H))
    Linv = np.linalg.inv(np.linalg.cholesky(H))
    assert np.abs(np.tril(Jt_last) - Linv).max() <= 1e-12 * np.abs(Linv).max()
    g2 = g + rng.standard_normal(n)
    x2, status = run(H, g2)
    assert status == das.SOLVED and np.array_equal(x2, solve(H, g2, A, b, C, l, u)[0])
    assert np.abs(x2 - x1).max() > 1e-3
    Jt_last[:] = 2.0 * np.eye(n)                 # spoiled: an equal Hessian now gives another x
    assert np.abs(run(H, g2)[0] - x2).max() > 1e-3
    H2 = H + np.eye(n)                           # a new Hessian is factored again
    x3, status = run(H2, g2)
    assert status == das.SOLVED and np.array_equal(x3, solve(H2, g2, A, b, C, l, u)[0])
    assert np.array_equal(np.tril(H_last), np.tril(H2))


def test_each_changed_diagonal_block_is_factored_alone():
    """A block-diagonal Hessian (the whole-body QP's: accelerations, forces) is factored block
    by block: the kept L^-1 equals numpy's inverse Cholesky factor of the whole (1e-12), a
    solve whose Hessian changed in one block factors that block only (the other blocks' kept
    factors, spoiled here, are still the spoiled ones), and a block that is not positive
    definite raises and is never reused afterwards."""
    rng = np.random.default_rng(7)
    _, g, A, b, C, l, u = random_qp(rng, 14, 3, 12)
    n = len(g)
    blocks = [(0, 5), (5, 6), (6, 14)]

    def block_diagonal(rng):
        H = np.zeros((n, n))
        for a, e in blocks:
            M = rng.standard_normal((e - a, e - a))
            H[a:e, a:e] = M @ M.T + 1e-3 * np.eye(e - a)
        return H

    H = block_diagonal(rng)
    H_last, Jt_last = np.full((n, n), np.nan), np.zeros((n, n))

    def run(H):
        x, sides = np.empty(n), np.zeros(n, np.intp)
        status = das.solve(H, g, A, b, C, l, u, NO_WARM, 1000, 1e-9, x, sides, H_last, Jt_last)[1]
        assert status == das.SOLVED
        return x

    def inverse_factor(H):
        return np.linalg.inv(np.linalg.cholesky(H))

    x1 = run(H)
    Linv = inverse_factor(H)
    assert np.abs(Jt_last - Linv).max() <= 1e-12 * np.abs(Linv).max()
    assert np.abs(x1 - solve(H, g, A, b, C, l, u)[0]).max() <= 1e-12 * np.abs(x1).max()
    spoiled = 2.0 * np.eye(5)
    Jt_last[:5, :5] = spoiled                   # the first block's kept factor, spoiled
    H2 = H.copy()
    H2[6:, 6:] += np.eye(8)                     # only the last block changes
    run(H2)
    assert np.array_equal(Jt_last[:5, :5], spoiled)                 # kept: not factored again
    Linv2 = inverse_factor(H2)
    assert np.abs(Jt_last[5:, 5:] - Linv2[5:, 5:]).max() <= 1e-12 * np.abs(Linv2).max()
    assert np.array_equal(np.tril(H_last), np.tril(H2))
    H3 = H2.copy()
    H3[0, 0] += 1.0                             # the first block changes: factored again
    x3 = run(H3)
    Linv3 = inverse_factor(H3)
    assert np.abs(Jt_last - Linv3).max() <= 1e-12 * np.abs(Linv3).max()
    assert np.abs(x3 - solve(H3, g, A, b, C, l, u)[0]).max() <= 1e-12 * np.abs(x3).max()
    bad = H3.copy()
    bad[6:, 6:] -= 1e3 * np.eye(8)              # the last block indefinite
    with pytest.raises(np.linalg.LinAlgError):
        run(bad)
    assert np.isnan(H_last[6:]).all()
    x4 = run(H3)                                # its factor is made again, not taken
    assert np.abs(Jt_last - Linv3).max() <= 1e-12 * np.abs(Linv3).max()
    assert np.abs(x4 - x3).max() <= 1e-12 * np.abs(x3).max()

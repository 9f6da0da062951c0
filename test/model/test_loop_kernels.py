"""The compiled loop-closure kernels (model/loop_kernels.py) against the paths they replace:
the closure terms against LoopKinematics' numpy path (the same Pinocchio pass, 1e-12), the LU
factors, solves and reciprocal condition number against LAPACK's dgetrf / dgetrs / dgecon
(1e-12), and the projection and passive-state estimate of hybrid_biped on the benchmark's
walking states against the same computed with LAPACK and numpy (1e-12). Inputs: hybrid_biped's
walking workload, random configurations of it (loops open: the terms hold at any pose), the
vendored five_bar_3d of Gepetto's collection, random and singular matrices."""
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import lapack

from hybrid_dynamics.control.tsid_peer import workloads as wl
from hybrid_dynamics.dynamics.closed_chain import LoopClosureKinematics
from hybrid_dynamics.estimation.passive_state import PassiveStateEstimator
from hybrid_dynamics.model import loop_kernels as lk
from hybrid_dynamics.model.loop_kinematics import placement_view
from hybrid_dynamics.model.robot import load_robot

DATA = Path(__file__).parents[1] / "data"

TOL = 1e-12


def close(a, b, tol=TOL):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    scale = np.abs(b).max()
    assert scale > 1e-6                       # something was compared
    assert np.abs(a - b).max() <= tol * max(1.0, scale)


@pytest.fixture(scope="module")
def biped():
    return load_robot("hybrid_biped")


@pytest.fixture(scope="module")
def walk(biped):
    return wl.workload(biped, "walk", 120)[::10]


def numpy_terms(kin, q, v=None):
    """The numpy path of LoopKinematics (the compiled one switched off for this call)."""
    kin._compiled = False
    try:
        return kin._evaluate(q, v)
    finally:
        kin._compiled = True


def _states(robot, walk, rng):
    m = robot.model
    states = [(s.q, s.v) for s in walk]
    for _ in range(4):                          # off the workload, loops open
        q = pin.integrate(m, robot.q_stand, 0.2 * rng.standard_normal(m.nv))
        states.append((q, rng.standard_normal(m.nv)))
    return states


def test_closure_terms_equal_the_numpy_path(biped, walk):
    kin = LoopClosureKinematics(biped)
    assert kin.compiled                          # hybrid_biped's cuts are all linear rows
    rng = np.random.default_rng(3)
    for q, v in _states(biped, walk, rng):
        e, JT, drift = kin._evaluate(q, v)
        e0, JT0, drift0 = numpy_terms(kin, q, v)
        close(JT, JT0)
        close(drift, drift0)
        assert np.abs(e - e0).max() <= TOL       # zero on the workload (closed), not off it
        e1, JT1, none = kin._evaluate(q)
        assert none is None
        close(JT1, JT0)


def test_closure_terms_from_the_controllers_pass(biped, walk):
    """computeAllTerms fills J and dJ: the terms from its data equal the loops' own pass."""
    kin = LoopClosureKinematics(biped)
    m = biped.model
    data = m.createData()
    view = placement_view(m, data)
    for s in walk:
        pin.computeAllTerms(m, data, s.q, s.v)
        e, JT, drift = kin.terms_from(data, view, s.v)
        e0, JT0, drift0 = numpy_terms(kin, s.q, s.v)
        close(JT, JT0)
        close(drift, drift0)


def test_external_linear_loops():
    robot = load_robot(str(DATA / "five_bar_3d" / "robot.yaml"))
    kin = LoopClosureKinematics(robot)
    assert kin.compiled
    rng = np.random.default_rng(5)
    m = robot.model
    for _ in range(5):
        q = pin.integrate(m, kin.q_ref, 0.3 * rng.standard_normal(m.nv))
        v = rng.standard_normal(m.nv)
        e, JT, drift = kin._evaluate(q, v)
        e0, JT0, drift0 = numpy_terms(kin, q, v)
        close(e, e0)
        close(JT, JT0)
        close(drift, drift0)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 32, 40])
def test_lu_equals_lapack(n):
    rng = np.random.default_rng(n)
    for scale in (1.0, 1e-3):
        A = rng.standard_normal((n, n))
        A[:, -1] *= scale                          # a badly conditioned column
        lu0, piv0, info = lapack.dgetrf(A)
        assert info == 0
        rcond0 = lapack.dgecon(lu0, lapack.dlange("1", A), "1")[0]
        lu, piv = A.copy(), np.empty(n, dtype=np.int32)
        rcond = lk.lu_factor(lu, piv)
        assert np.array_equal(piv, piv0)
        close(lu, lu0)
        assert abs(rcond - rcond0) <= 1e-12 * rcond0
        B = rng.standard_normal((n, 3))
        for trans in (False, True):
            X = B.copy()
            lk.lu_solve(lu, piv, X, trans)
            close(X, lapack.dgetrs(lu0, piv0, B, trans=int(trans))[0], 1e-10)


def test_singular_matrix_has_zero_rcond():
    A = np.ones((4, 4))
    assert lk.lu_factor(A.copy(), np.empty(4, dtype=np.int32)) == 0.0
    B = np.zeros((4, 4))
    assert lk.lu_factor(B, np.empty(4, dtype=np.int32)) == 0.0


def test_factor_and_solve_equal_lapack(biped, walk):
    kin = LoopClosureKinematics(biped)
    rng = np.random.default_rng(7)
    for s in walk:
        e, JT, drift = kin._evaluate(s.q, s.v)
        W = rng.standard_normal((kin.n_act, 2))
        fac, X = kin.factor_solve(JT, W, np.c_[e, drift])
        Jlu = np.asfortranarray(JT[kin.iu].T)
        lu0, piv0, _ = lapack.dgetrf(Jlu)
        rhs = np.hstack([JT[kin.ia].T @ W, np.c_[e, drift]])
        close(X, lapack.dgetrs(lu0, piv0, rhs)[0], 1e-10)
        assert abs(fac.rcond - lapack.dgecon(lu0, lapack.dlange("1", Jlu), "1")[0]) <= 1e-12 * fac.rcond
        c = rng.standard_normal(kin.m)
        close(fac.solve_t(c), lapack.dgetrs(lu0, piv0, c, trans=1)[0], 1e-10)


def test_block_layout_equals_the_dense_factorisation(biped, walk):
    """J_lu factored block by block (the layout found from the chains) against the same kernel
    on the dense matrix: the blocks hold every non-zero of J_lu at open and closed states, the
    solutions and the condition estimate are the dense ones (1e-12; the arithmetic is the
    same), and J_lu^-T solves from the block factors too."""
    kin = LoopClosureKinematics(biped)
    rows, cols, first, end, pos = kin._blocks
    sizes = np.bincount(first)[np.unique(first)]
    assert len(sizes) > 1 and sizes.sum() == kin.m and sizes.max() < kin.m / 4
    block = np.zeros((kin.m, kin.n_pas), dtype=bool)
    for p in range(kin.m):
        block[rows[p], cols[first[p]:end[p]]] = True
    n = kin.m
    dense = (np.arange(n), np.arange(n), np.zeros(n, dtype=np.intp), np.full(n, n, dtype=np.intp), np.arange(n))
    rng = np.random.default_rng(11)
    for q, v in _states(biped, walk, rng):
        e, JT, drift = kin._evaluate(q, v)
        Jlu = JT[kin.iu].T
        assert not Jlu[~block].any() and Jlu[block].any()
        W = rng.standard_normal((kin.n_act, 13))
        out = []
        for layout in (kin._blocks, dense):
            lu, piv, X = np.zeros((n, n)), np.empty(n, dtype=np.int32), np.empty((n, 15))
            rcond = lk.factor_and_solve(JT, kin.iu, kin.ia, W, np.c_[e, drift], *layout, lu, piv, X)
            out.append((rcond, X))
        (rcond, X), (rcond0, X0) = out
        close(X, X0)
        assert abs(rcond - rcond0) <= 1e-12 * rcond0
        fac, _ = kin.factor_solve(JT, W, np.c_[e, drift])
        c = rng.standard_normal(n)
        close(Jlu.T @ fac.solve_t(c), c, 1e-9)
        close(Jlu @ fac.solve(c), c, 1e-9)


def test_projection_and_estimator_equal_the_lapack_path(biped, walk):
    """G_f and the drift, and a run of the passive-state estimator, with the compiled terms
    and LU against the same with the numpy terms and LAPACK's LU (PassiveSolve of the
    truncated SVD at full rank: the path robots with free motions take)."""
    kin = LoopClosureKinematics(biped)
    ref = LoopClosureKinematics(biped)
    ref._compiled = False
    ref._svd_rank = ref.rank_u                   # SVD solves, numpy terms
    est, est_ref = PassiveStateEstimator(kin), PassiveStateEstimator(ref)
    qa, va = kin.qa, kin.ia
    moved = 0.0
    for s in walk:
        G, d = kin.projection(s.q, s.v)
        G0, d0 = ref.projection(s.q, s.v)
        close(G, G0, 1e-10)
        close(d, d0, 1e-10)
        a = est.update(s.q[qa], s.v[va], s.q[:7], s.v[:6])
        b = est_ref.update(s.q[qa], s.v[va], s.q[:7], s.v[:6])
        assert a.valid and b.valid
        close(a.q, b.q, 1e-10)
        close(a.v, b.v, 1e-10)
        moved = max(moved, np.abs(a.q - walk[0].q).max())
    assert moved > 1e-3                          # the states differ


def test_completion_and_euler_step_equal_numpy(biped, walk):
    """The estimator's completion and Euler step (estimation/passive_state.py) against the
    numpy indexing they replaced, on random X and a walking state."""
    from hybrid_dynamics.estimation import passive_state as ps
    kin = LoopClosureKinematics(biped)
    rng = np.random.default_rng(9)
    th = walk[3].q.copy()
    q_a, v_a = th[kin.qa] + 1e-3 * rng.standard_normal(kin.n_act), rng.standard_normal(kin.n_act)
    X = rng.standard_normal((kin.n_pas, 3))
    q, v = np.empty_like(th), np.zeros(kin.nv)
    assert ps._complete(th, q_a, v_a, X, kin.qa, kin.qu, kin.ia, kin.iu, q, v)
    q0, v0 = th.copy(), np.zeros(kin.nv)
    q0[kin.qa], v0[kin.ia], v0[kin.iu] = q_a, v_a, X[:, 0]
    q0[kin.qu] += X[:, 1]
    close(q, q0)
    close(v, v0)
    X[4, 1] = np.nan
    assert not ps._complete(th, q_a, v_a, X, kin.qa, kin.qu, kin.ia, kin.iu, q, v)
    X[4, 1] = 0.0
    err, dt, beta, alpha = rng.standard_normal(kin.n_act), 1e-3, 900.0, 100.0
    t1, t0 = th.copy(), th.copy()
    ps._euler_step(t1, kin.qa, kin.qu, v_a, err, X, dt, beta, alpha)
    t0[kin.qa] += dt * (v_a + beta * err)
    t0[kin.qu] += X @ np.array([dt, dt * beta, -dt * alpha])
    close(t1 - th, t0 - th)


class _TwoCalls(LoopClosureKinematics):
    """The estimator's previous path: the closure terms, then J_lu's factors and solve, as two
    compiled calls with the glue between them in Python."""
    fused = False


def test_estimator_in_one_call_equals_the_two_call_path(biped):
    """The passive-state estimator with its terms, factors and solve in one compiled call
    (loop_kernels.complete) against the same estimator on the two-call path, on replayed
    data: the walking workload's actuator measurements at 1 kHz with their stamps (a jump of
    1 cm at one cycle makes it re-close): every estimate's q, v, residual and rcond to 1e-12."""
    one, two = LoopClosureKinematics(biped), _TwoCalls(biped)
    assert one.fused and not two.fused
    est, ref = PassiveStateEstimator(one), PassiveStateEstimator(two)
    samples = wl.workload(biped, "walk", 300)
    for k, s in enumerate(samples):
        q_a, v_a = s.q[one.qa].copy(), s.v[one.ia]
        if k == 150:
            q_a[0] += 0.01
        a = est.update(q_a, v_a, t=1.0 + 1e-3 * k)
        b = ref.update(q_a, v_a, t=1.0 + 1e-3 * k)
        assert a.valid and b.valid and a.status == b.status
        close(a.q, b.q)
        close(a.v, b.v) if np.abs(b.v).max() > 1e-6 else None
        assert abs(a.residual - b.residual) <= TOL and abs(a.rcond - b.rcond) <= TOL * b.rcond
    assert est.health.resets == ref.health.resets
    assert np.abs(est.theta - samples[0].q).max() > 1e-3         # the estimate moved


def test_measurement_offset_and_finiteness_equal_numpy(biped, walk):
    """The estimator's measurement checks (estimation/passive_state.py) against the numpy they
    replaced: the offset theta_a - q_a and its largest entry, -1 for an actuator outside its
    stroke (either side, with the offset left alone), and the finiteness of a state."""
    from hybrid_dynamics.estimation import passive_state as ps
    est = PassiveStateEstimator(LoopClosureKinematics(biped))
    kin, (lo, hi) = est.kin, est._stroke
    rng = np.random.default_rng(13)
    th = walk[5].q.copy()
    q_a = th[kin.qa] + 1e-3 * rng.standard_normal(kin.n_act)
    d = np.empty(kin.n_act)
    assert ps._offset(th, q_a, kin.qa, lo, hi, d) == np.abs(th[kin.qa] - q_a).max() > 1e-4
    assert np.array_equal(d, th[kin.qa] - q_a)
    for k, bound in ((3, lo), (7, hi)):
        out = q_a.copy()
        out[k] = bound[k] + (-1e-9 if bound is lo else 1e-9)
        d[:] = 7.0
        assert ps._offset(th, out, kin.qa, lo, hi, d) == -1.0 and (d == 7.0).all()
    assert ps._finite(th)
    for bad in (np.nan, np.inf, -np.inf):
        x = th.copy()
        x[-1] = bad
        assert not ps._finite(x) and not np.isfinite(x).all()


def test_block_layout_of_a_robot_with_angular_cut_rows():
    """The vendored Digit-like legs ('6d' cuts: the numpy terms, not the compiled ones) take the
    block LU too (4 blocks of its 36 x 36 J_lu): at random poses (loops open) the blocks hold
    every non-zero of J_lu, and the solve and rcond are LAPACK's dgetrs and dgecon (1e-10,
    1e-12)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = load_robot(str(DATA / "digit_like_2legs" / "robot.yaml"))
    kin = LoopClosureKinematics(robot)
    assert not kin.compiled and kin._svd_rank is None
    rows, cols, first, end, pos = kin._blocks
    assert len(np.unique(first)) == 4
    block = np.zeros((kin.m, kin.n_pas), dtype=bool)
    for p in range(kin.m):
        block[rows[p], cols[first[p]:end[p]]] = True
    rng = np.random.default_rng(17)
    m = robot.model
    for _ in range(4):
        q = pin.integrate(m, kin.q_ref, 0.2 * rng.standard_normal(m.nv))
        e, JT, drift = kin._evaluate(q, rng.standard_normal(m.nv))
        Jlu = np.asfortranarray(JT[kin.iu].T)
        assert not Jlu[~block].any() and Jlu[block].any()
        W = rng.standard_normal((kin.n_act, 3))
        fac, X = kin.factor_solve(JT, W, np.c_[e, drift])
        lu0, piv0, _ = lapack.dgetrf(Jlu)
        close(X, lapack.dgetrs(lu0, piv0, np.hstack([JT[kin.ia].T @ W, np.c_[e, drift]]))[0], 1e-10)
        assert abs(fac.rcond - lapack.dgecon(lu0, lapack.dlange("1", Jlu), "1")[0]) <= 1e-12 * fac.rcond

"""Goldfarb and Idnani's dual active-set method [Goldfarb 1983] for the whole-body QP, the
equalities taken as rows of the active set (no separate elimination), in one compiled call
(numba, compiled at import and cached on disk).

    min 1/2 x^T H x + g^T x    s.t.   A x = b,    l <= C x <= u          (H positive definite)

Each two-sided row ``i`` of ``C`` is two one-sided constraints ``n^T x >= c``: side ``i``
(``n = C_i``, ``c = l_i``) and side ``nin + i`` (``n = -C_i``, ``c = -u_i``); a bound at
``|c| >= 1e19`` is no constraint.

The method starts at the unconstrained minimiser ``x = -H^-1 g`` and adds one violated
constraint at a time, keeping the dual feasible (every inequality multiplier >= 0) and the
primal feasible on the active set [Goldfarb 1983, Steps 0-2]. Its numerically stable
implementation [Goldfarb 1983] keeps ``J = L^-T Q`` (``H = L L^T``) and the upper triangular
``R`` with ``J^T N = [R; 0]`` (``N``: the active constraints' normals, in order); the first
``q`` columns of ``J`` span the active normals' image, the others (``J2``) their null space:

* step directions for constraint ``p`` with normal ``n_p``: ``d = J^T n_p``, primal
  ``z = J2 d2``, dual ``r = R^-1 d1`` [Goldfarb 1983, Step 2(a)];
* step length: partial ``t1 = min u_j / r_j`` over active inequalities with ``r_j > 0`` (the
  one that reaches zero is dropped), full ``t2 = -s_p / z^T n_p`` (``s_p = n_p^T x - c_p``);
  ``z = 0`` (``n_p`` dependent on the active normals) with no ``r_j > 0``: infeasible
  [Goldfarb 1983, Step 2(b)];
* ``x += t z``, ``u -= t r``, ``u_p += t``; a full step adds ``p``, a partial one drops the
  blocking constraint [Goldfarb 1983, Step 2(c)]. Adding rotates ``d2`` onto its first entry by
  Givens rotations applied to ``J2``; dropping deletes a column of ``R`` and restores it to
  triangular by Givens rotations applied to rows of ``R`` and columns of ``J``.

The equalities are added first by full steps (their multipliers have no sign, are never
dropped); a row dependent on those before it is skipped when it holds at that point, else the
problem is infeasible. Then violated inequalities are added. Which violated constraint enters
is free in the method; here a constraint of ``warm`` (the previous cycle's active set) enters
first whenever one is violated, so that a control cycle whose active set is the last one's
adds those constraints and stops: the warm start of an active-set method, with the dual
feasibility that makes each step of the method valid kept at every step.

``J`` is stored transposed (``Jt[j]`` is column ``j`` of ``J``) so that every product and
rotation runs along contiguous memory.
"""
from __future__ import annotations

import numpy as np
from numba import float64, intp, njit, types

from ...estimation.kalman_step import _cholesky_in_place   # the base estimator's, lower triangle

F1, F2, I1 = float64[::1], float64[:, ::1], intp[::1]      # C-contiguous

SOLVED, INFEASIBLE, DEPENDENT, ITERATION_LIMIT = 0, 1, 2, 3
CROSSED = 4                  # a lower bound above its upper one (control/assembly.py: nothing solved)
NO_BOUND = 1e19
# reassociation lets LLVM vectorise the dot products; infinities and NaN keep their meaning
# (the step lengths are infinite when no constraint blocks, a NaN Hessian fails the Cholesky)
FAST = {"reassoc", "contract", "nsz", "arcp"}


@njit(cache=True, fastmath=FAST)
def _inverse_cholesky(H, Jt):
    """``Jt = L^-1`` of ``H = L L^T`` (Cholesky, then forward substitution): the transposed
    initial ``J = L^-T`` of [Goldfarb 1983]. False if ``H`` is not positive definite. ``Jt``
    (zero above its diagonal on entry) holds ``L`` after the Cholesky."""
    n = H.shape[0]
    for i in range(n):
        for c in range(i + 1):
            Jt[i, c] = H[i, c]
    if not _cholesky_in_place(Jt):
        return False
    row = np.empty(n)
    for i in range(n):                     # L^-1 in place, row by row: row i of L^-1 is
        for c in range(i):                 # -(L[i, :i] L^-1[:i, :i]) / L[i, i]
            row[c] = Jt[i, c]
            Jt[i, c] = 0.0
        for m in range(i):
            a = row[m]
            if a == 0.0:                   # H's zero blocks: L's zeros subtract nothing
                continue
            for c in range(m + 1):
                Jt[i, c] -= a * Jt[m, c]
        lii = Jt[i, i]
        for c in range(i):
            Jt[i, c] /= lii
        Jt[i, i] = 1.0 / lii
    return True


@njit(cache=True, fastmath=FAST)
def _directions(Jt, R, q, nv, d, z, r):
    """``d = J^T n``, ``z = J2 d2``, ``r = R^-1 d1`` (Step 2(a)); returns ``z^T n`` and ``|d|^2``."""
    n = Jt.shape[0]
    dd = 0.0
    for j in range(n):
        s = 0.0
        for k in range(n):
            s += Jt[j, k] * nv[k]
        d[j] = s
        dd += s * s
    for k in range(n):
        z[k] = 0.0
    for j in range(q, n):
        dj = d[j]
        if dj == 0.0:                      # (adds zeros: skipped)
            continue
        for k in range(n):
            z[k] += dj * Jt[j, k]
    for i in range(q - 1, -1, -1):
        s = d[i]
        for j in range(i + 1, q):
            s -= R[i, j] * r[j]
        r[i] = s / R[i, i]
    zn = 0.0
    for k in range(n):
        zn += z[k] * nv[k]
    return zn, dd


@njit(cache=True, fastmath=FAST)
def _rotate(Jt, a, b, c, s):
    """Columns ``a``, ``b`` of ``J`` (rows of ``Jt``) by the Givens rotation (c, s)."""
    for k in range(Jt.shape[1]):
        ja, jb = Jt[a, k], Jt[b, k]
        Jt[a, k] = c * ja + s * jb
        Jt[b, k] = -s * ja + c * jb


@njit(cache=True, fastmath=FAST)
def _add(Jt, R, q, d):
    """Append the constraint whose ``d = J^T n`` is given as column ``q`` of ``R`` [Goldfarb 1983,
    Step 2(c), the factors' update on adding]."""
    n = Jt.shape[0]
    for j in range(n - 1, q, -1):
        if d[j] == 0.0 and d[j - 1] >= 0.0:
            continue                       # the rotation is the identity (c = 1, s = 0): skipped
        h = np.sqrt(d[j - 1] * d[j - 1] + d[j] * d[j])
        if h == 0.0:
            continue
        c, s = d[j - 1] / h, d[j] / h
        d[j - 1], d[j] = h, 0.0
        _rotate(Jt, j - 1, j, c, s)
    for i in range(q + 1):
        R[i, q] = d[i]


@njit(cache=True, fastmath=FAST)
def _drop(Jt, R, q, k, active, mult):
    """Delete active constraint ``k`` of ``q``: its column of ``R`` goes, the Hessenberg part
    left is made triangular again by rotations of rows of ``R`` and columns of ``J`` [Goldfarb
    1983, Step 2(c), the factors' update on dropping]."""
    for c in range(k, q - 1):
        active[c] = active[c + 1]
        mult[c] = mult[c + 1]
        for i in range(q):
            R[i, c] = R[i, c + 1]
    for j in range(k, q - 1):
        h = np.sqrt(R[j, j] * R[j, j] + R[j + 1, j] * R[j + 1, j])
        c, s = R[j, j] / h, R[j + 1, j] / h
        R[j, j], R[j + 1, j] = h, 0.0
        for m in range(j + 1, q - 1):
            ra, rb = R[j, m], R[j + 1, m]
            R[j, m] = c * ra + s * rb
            R[j + 1, m] = -s * ra + c * rb
        _rotate(Jt, j, j + 1, c, s)


@njit(cache=True, fastmath=FAST)
def _normal(C, nin, p, nv):
    """The normal of one-sided constraint ``p`` into ``nv``."""
    i = p if p < nin else p - nin
    sign = 1.0 if p < nin else -1.0
    for k in range(C.shape[1]):
        nv[k] = sign * C[i, k]


@njit(cache=True, fastmath=FAST)
def _slack(C, l, u, p, x):
    """``s_p = n_p^T x - c_p`` of one-sided constraint ``p``."""
    nin = C.shape[0]
    i = p if p < nin else p - nin
    s = 0.0
    for k in range(C.shape[1]):
        s += C[i, k] * x[k]
    return s - l[i] if p < nin else u[i] - s


@njit(cache=True, fastmath=FAST)
def _violation(c, s, worst, tol):
    """Whether side value ``s`` (``n^T x`` against bound ``c``) is violated by more than
    ``tol (1 + |c|)`` and more than ``worst``; a bound at ``|c| >= NO_BOUND`` never is."""
    return abs(c) < NO_BOUND and s - c < -tol * (1.0 + abs(c)) and s - c < worst


@njit(cache=True, fastmath=FAST)
def _most_violated_of(C, l, u, x, sides, is_active, tol):
    """(side, s_p) of the most violated inactive side among ``sides``, or (-1, 0)."""
    nin = C.shape[0]
    p, worst = -1, 0.0
    for w in range(len(sides)):
        j = sides[w]
        if j < 2 * nin and not is_active[j]:
            c = l[j] if j < nin else -u[j - nin]
            s = _slack(C, l, u, j, x) + c
            if _violation(c, s, worst, tol):
                p, worst = j, s - c
    return p, worst


@njit(cache=True, fastmath=FAST)
def _most_violated(C, l, u, x, is_active, tol):
    """(side, s_p) of the most violated inactive side of all, or (-1, 0); each row's
    ``C_i x`` once for both of its sides."""
    nin = C.shape[0]
    p, worst = -1, 0.0
    for i in range(nin):
        s = 0.0
        for k in range(C.shape[1]):
            s += C[i, k] * x[k]
        if not is_active[i] and _violation(l[i], s, worst, tol):
            p, worst = i, s - l[i]
        if not is_active[nin + i] and _violation(-u[i], -s, worst, tol):
            p, worst = nin + i, u[i] - s
    return p, worst


@njit(cache=True)
def _same_rows(H, H_last, a, b):
    """Whether rows ``a`` to ``b - 1`` of the lower triangles (what the factorisation reads)
    are equal (NaN never is)."""
    for i in range(a, b):
        for c in range(i + 1):
            if not H[i, c] == H_last[i, c]:
                return False
    return True


@njit(cache=True, fastmath=FAST)
def _factor_changed_blocks(H, H_last, Jt_last):
    """``Jt_last = L^-1`` of ``H = L L^T`` with each diagonal block of ``H`` factored only if
    its rows differ from ``H_last``'s (which then takes them); False if ``H`` is not positive
    definite (the failed block's rows of ``H_last`` are set to NaN: never reused).

    A diagonal block is a range of rows ``[a, b)`` with no non-zero left of ``a`` in them and
    none left of ``b`` below them. ``L`` and ``L^-1`` of a block-diagonal ``H`` are block
    diagonal, each block that of its own block of ``H``: a block whose rows (their zeros left
    of it included) are as last factored keeps its rows of ``Jt_last``. The whole-body QP's
    Hessian has at least two: the accelerations' and the forces' (no task weighs both), and a
    standing robot's tasks on the accelerations are constant while a sole's wrench
    regularisation changes the forces' block every cycle (control/tasks/force_regularization.py),
    and a swing foot changes the accelerations' block while point feet keep the forces'."""
    n = H.shape[0]
    start = np.empty(n + 1, np.intp)       # start[s]: the first non-zero column of rows >= s
    start[n] = n
    lowest = n
    for i in range(n - 1, -1, -1):
        c = 0
        while c < i and H[i, c] == 0.0:
            c += 1
        lowest = min(lowest, c)
        start[i] = lowest
    a = 0
    while a < n:
        b = a + 1
        while b < n and start[b] < b:      # a block ends at b when no row from b reaches left of it
            b += 1
        if not _same_rows(H, H_last, a, b):
            for i in range(a, b):          # (the block's own entries: written from H's)
                for c in range(a):
                    Jt_last[i, c] = 0.0
            if not _inverse_cholesky(H[a:b, a:b], Jt_last[a:b, a:b]):
                for i in range(a, b):
                    H_last[i, :] = np.nan
                return False
            for i in range(a, b):
                for c in range(i + 1):
                    H_last[i, c] = H[i, c]
        a = b
    return True


@njit(types.Tuple((intp, intp, intp, float64))(F2, F1, F2, F1, F2, F1, F1, I1, intp, float64, F1, I1, F2, F2),
      cache=True, fastmath=FAST)
def solve(H, g, A, b, C, l, u, warm, max_iter, tol, x, sides, H_last, Jt_last):
    """The minimiser into ``x`` and the active inequality sides, in order of entry, into the
    first entries of ``sides`` (at least ``n`` long; it may be the memory ``warm`` views);
    returns (their number, status, iterations, largest ``|A_i x - b_i| / (1 + |b_i|)``).
    A side violated by more than ``tol (1 + |c|)`` enters. Raises numpy.linalg.LinAlgError if
    ``H`` is not positive definite. ``H_last`` and ``Jt_last`` (n x n) hold the Hessian last
    factored with this workspace (NaN: none) and its ``L^-1``: each diagonal block of ``H``
    equal to the last one's (a standing robot's tasks: all of them) keeps its factor instead of
    being factored again (:func:`_factor_changed_blocks`)."""
    n, neq, nin = H.shape[0], A.shape[0], C.shape[0]
    if not _factor_changed_blocks(H, H_last, Jt_last):
        raise np.linalg.LinAlgError("H is not positive definite")
    Jt = Jt_last.copy()                    # J^T = L^-1 (lower triangular), H = L L^T
    x[:] = 0.0                             # [Goldfarb 1983, Step 0]: x = -H^-1 g = -J J^T g
    for j in range(n):
        s = 0.0
        for k in range(n):
            s += Jt[j, k] * g[k]
        for k in range(n):
            x[k] -= s * Jt[j, k]
    R = np.zeros((n, n))
    d, z, r, nv = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    mult = np.zeros(n)
    active = np.empty(n, np.intp)          # -1 - i: equality i; p >= 0: inequality side p
    q = 0
    for i in range(neq):                   # equalities: full steps, never dropped
        for k in range(n):
            nv[k] = A[i, k]
        s = -b[i]
        for k in range(n):
            s += nv[k] * x[k]
        zn, dd = _directions(Jt, R, q, nv, d, z, r)
        if q == n or zn <= 1e-12 * dd:     # dependent on the rows before it
            if abs(s) <= tol * (1.0 + abs(b[i])):
                continue
            return 0, DEPENDENT, 0, abs(s) / (1.0 + abs(b[i]))
        t = -s / zn
        for k in range(n):
            x[k] += t * z[k]
        for j in range(q):
            mult[j] -= t * r[j]
        _add(Jt, R, q, d)
        mult[q] = t
        active[q] = -1 - i
        q += 1
    meq = q
    is_active = np.zeros(2 * nin, np.bool_)
    status, it = SOLVED, 0
    while True:
        # [Goldfarb 1983, Step 1]: a violated side, the previous cycle's first
        p, worst = _most_violated_of(C, l, u, x, warm, is_active, tol)
        if p < 0:
            p, worst = _most_violated(C, l, u, x, is_active, tol)
        if p < 0:
            break
        if it >= max_iter:
            status = ITERATION_LIMIT
            break
        _normal(C, nin, p, nv)
        s_p = worst
        u_p = 0.0
        while True:                        # [Goldfarb 1983, Step 2] for constraint p
            it += 1
            zn, dd = _directions(Jt, R, q, nv, d, z, r)
            full = q < n and zn > 1e-12 * dd
            t2 = -s_p / zn if full else np.inf
            t1, k_drop = np.inf, -1
            for j in range(meq, q):
                if r[j] > 0.0 and mult[j] / r[j] < t1:
                    t1, k_drop = mult[j] / r[j], j
            t = min(t1, t2)
            if t == np.inf:
                status = INFEASIBLE
                break
            if full:
                for k in range(n):
                    x[k] += t * z[k]
            for j in range(q):
                mult[j] -= t * r[j]
            u_p += t
            if full and t2 <= t1:          # full step: p joins the active set
                _add(Jt, R, q, d)
                mult[q] = u_p
                active[q] = p
                is_active[p] = True
                q += 1
                break
            is_active[active[k_drop]] = False   # partial step: the blocking constraint leaves
            _drop(Jt, R, q, k_drop, active, mult)
            q -= 1
            s_p = _slack(C, l, u, p, x)
            if it >= max_iter:
                status = ITERATION_LIMIT
                break
        if status != SOLVED:
            break
    residual = 0.0
    for i in range(neq):
        s = -b[i]
        for k in range(n):
            s += A[i, k] * x[k]
        residual = max(residual, abs(s) / (1.0 + abs(b[i])))
    for j in range(meq, q):                # (warm is not read any more)
        sides[j - meq] = active[j]
    return q - meq, status, it, residual

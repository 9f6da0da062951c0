"""Compiled kernels of the loop-closure kinematics (numba, compiled when this module is imported
and cached on disk, never in a control cycle).

:class:`~hybrid_dynamics.model.loop_kinematics.LoopKinematics` needs, twice per control cycle of
a closed-chain robot (passive-state estimator, controller's projection), the closure error,
its Jacobian and drift after one Pinocchio pass, and J_lu factored. In numpy that was about 40
array operations on 3 x 9 blocks and a few LAPACK calls through their Python wrappers, each a
microsecond or more of dispatch for a few hundred flops. Here:

- :func:`closure_terms`: e_l, J_l^T and J_l_dot v of cuts whose constrained rows are all
  linear (the module doc of :mod:`.loop_kinematics` gives the formulas), from the joint
  placements, ``data.J`` and ``data.dJ``;
- :func:`lu_factor`: LU with partial pivoting of J_lu in place and the reciprocal condition
  number in the 1-norm estimated as LAPACK's ``dgecon`` does (Higham's ``dlacn2``, Hager's
  method with the alternating-sign test);
- :func:`lu_solve`: ``J_lu X = B`` or ``J_lu^T X = B`` from those factors;
- :func:`factor_and_solve`: J_lu factored in its block layout and ``J_lu^-1 [J_la W, extra]``
  solved, from J_l^T; :func:`lu_solve_blocks` solves again with those factors;
- :func:`complete`: the passive-state estimator's terms and solve in one call;
- :func:`project`: the controller's whole projection (the closure terms, the factors, G_f's
  passive rows and the drift written in place) in one call, and :func:`reduce_dynamics` the
  dynamics and contact Jacobians in its coordinates over G_f's non-zeros.

Blocks: a loop's rows of J_lu touch only the passive joints of its own chains, so J_lu of a
robot with several independent linkages is block diagonal up to a permutation of its rows and
columns (hybrid_biped: 32 x 32 in 8 blocks of 2 or 6 rows; found once per robot from the
chains, :meth:`~hybrid_dynamics.model.loop_kinematics.LoopKinematics.lu_blocks`). Partial
pivoting on the dense matrix never leaves a column's block (every other row holds an exact 0
there) and an elimination step changes only its block's rows and columns, so factoring block
by block does the dense factorisation's arithmetic on its non-zero entries, in the same order
when each block keeps its columns in their original order: the same factors (rearranged), the
same solutions; the condition estimate indexes its vectors by the original columns so that
it is the dense one (only exact ties between pivot candidates may choose another row). Cost:
the sum of the blocks' cubes instead of the cube of the whole.

test/model/test_loop_kernels.py holds each to the numpy and LAPACK path it replaces (1e-12).
"""
from __future__ import annotations

import numpy as np
from numba import boolean, float64, int32, intp, njit, types, void

F1, F2, F3 = float64[:], float64[:, :], float64[:, :, :]
I1, P1 = intp[:], int32[:]
C2 = float64[:, ::1]
RO2 = types.Array(float64, 2, "A", readonly=True)      # Pinocchio's placements, a read-only view


@njit(void(RO2, I1, F3, F2, F2, I1, I1, F2, F2, F1, boolean, F1, F2, F1), cache=True)
def closure_terms(oMi, inter, Hab, S, MAB, kr, ar, J, dJ, v, with_v, e, JT, drift):
    """Linear rows of every cut ([Mingo Hoffman 2024, Sec. III-A]). ``oMi`` (njoints x 12): the
    joints' world placements [R column-major | t]; ``inter`` the joints of frame_a and frame_b
    of each cut, interleaved; ``Hab`` (2L, 4, 4) the frames' placements in their joints; ``S``
    (L x nv) b's chain minus a's, ``MAB`` (2L x nv) each chain alone; row r constrains axis
    ``ar[r]`` of cut ``kr[r]``. With ``R_a`` and ``p_a``, ``p_b`` the cut frames' world
    rotation and origins and ``r_a`` column ``ar[r]`` of ``R_a``:

        e[r]     = r_a . (p_b - p_a)
        J_l[r]   = S_k * (r_a^T J_lin + (p_b x r_a)^T J_ang)         (world joint Jacobians J)
        drift[r] = r_a . (w + om x p_b_dot - w_A x u)

    with u (p_b_dot, w) the velocity at p_b of the relative twist J (S_k v) (of b's twist
    J (MAB_b v), of J_dot (S_k v)), om the relative angular velocity, w_A frame a's. ``JT``
    (nv x m) is written whole; ``drift`` only ``with_v``."""
    L = inter.shape[0] // 2
    nv = J.shape[1]
    Ra = np.empty((3, 3))
    pa = np.empty(3)
    pb = np.empty(3)
    R = np.empty((3, 3))
    tw = np.zeros((4, 6))            # relative twist, V_B, V_A, J_dot (S v)
    JT[:, :] = 0.0
    for k in range(L):
        for side in range(2):
            j = inter[2 * k + side]
            for i in range(3):
                for c in range(3):
                    R[i, c] = oMi[j, 3 * c + i]
            H = Hab[2 * k + side]
            p = pa if side == 0 else pb
            for i in range(3):
                s = oMi[j, 9 + i]
                for c in range(3):
                    s += R[i, c] * H[c, 3]
                p[i] = s
                if side == 0:
                    for c in range(3):
                        Ra[i, c] = R[i, 0] * H[0, c] + R[i, 1] * H[1, c] + R[i, 2] * H[2, c]
        if with_v:
            tw[:, :] = 0.0
            for c in range(nv):
                sv = S[k, c] * v[c]
                bv = MAB[L + k, c] * v[c]
                av = MAB[k, c] * v[c]
                if sv == 0.0 and bv == 0.0 and av == 0.0:
                    continue
                for i in range(6):
                    tw[0, i] += J[i, c] * sv
                    tw[1, i] += J[i, c] * bv
                    tw[2, i] += J[i, c] * av
                    tw[3, i] += dJ[i, c] * sv
            # velocities at p_b: nu + om x p_b of the relative twist (u), of V_B (p_b_dot), of J_dot S v (w)
            u = np.empty((3, 3))
            for t in range(3):
                src = (0, 1, 3)[t]
                nu0, nu1, nu2 = tw[src, 0], tw[src, 1], tw[src, 2]
                o0, o1, o2 = tw[src, 3], tw[src, 4], tw[src, 5]
                u[t, 0] = nu0 + o1 * pb[2] - o2 * pb[1]
                u[t, 1] = nu1 + o2 * pb[0] - o0 * pb[2]
                u[t, 2] = nu2 + o0 * pb[1] - o1 * pb[0]
            om0, om1, om2 = tw[0, 3], tw[0, 4], tw[0, 5]
            wa0, wa1, wa2 = tw[2, 3], tw[2, 4], tw[2, 5]
            k0 = u[2, 0] + (om1 * u[1, 2] - om2 * u[1, 1]) - (wa1 * u[0, 2] - wa2 * u[0, 1])
            k1 = u[2, 1] + (om2 * u[1, 0] - om0 * u[1, 2]) - (wa2 * u[0, 0] - wa0 * u[0, 2])
            k2 = u[2, 2] + (om0 * u[1, 1] - om1 * u[1, 0]) - (wa0 * u[0, 1] - wa1 * u[0, 0])
        for r in range(kr.shape[0]):
            if kr[r] != k:
                continue
            a = ar[r]
            r0, r1, r2 = Ra[0, a], Ra[1, a], Ra[2, a]
            e[r] = r0 * (pb[0] - pa[0]) + r1 * (pb[1] - pa[1]) + r2 * (pb[2] - pa[2])
            x0 = pb[1] * r2 - pb[2] * r1                  # p_b x r_a
            x1 = pb[2] * r0 - pb[0] * r2
            x2 = pb[0] * r1 - pb[1] * r0
            for c in range(nv):
                s = S[k, c]
                if s != 0.0:
                    JT[c, r] = s * (r0 * J[0, c] + r1 * J[1, c] + r2 * J[2, c]
                                    + x0 * J[3, c] + x1 * J[4, c] + x2 * J[5, c])
            if with_v:
                drift[r] = r0 * k0 + r1 * k1 + r2 * k2


@njit(cache=True)
def _argmax_abs(x, pos):
    """The position of the largest |x_i|, the first in the original order ``pos`` (BLAS idamax)."""
    j, best = 0, -1.0
    for i in range(pos.shape[0]):
        if abs(x[pos[i]]) > best:
            j, best = pos[i], abs(x[pos[i]])
    return j


@njit(cache=True)
def _abs_sum(x, pos):
    """sum |x_i| in the original order ``pos`` (the same rounding whatever the block layout)."""
    s = 0.0
    for i in range(pos.shape[0]):
        s += abs(x[pos[i]])
    return s


@njit(cache=True, fastmath={"reassoc", "contract"})
def _apply_inverse(LU, x, trans, first, end):
    """x <- (L U)^-1 x, or (L U)^-T x with ``trans`` (no row exchanges: the 1-norm of the
    inverse does not see them), in place; L unit lower, U upper, both in ``LU`` (C order), row
    and column i inside its block [first[i], end[i]). Sums in any order (``reassoc``: they
    vectorise); NaN and inf keep their meaning."""
    n = x.shape[0]
    if not trans:
        for i in range(n):
            s = x[i]
            for j in range(first[i], i):
                s -= LU[i, j] * x[j]
            x[i] = s
        for i in range(n - 1, -1, -1):
            s = x[i]
            for j in range(i + 1, end[i]):
                s -= LU[i, j] * x[j]
            x[i] = s / LU[i, i]
    else:
        for i in range(n):
            x[i] /= LU[i, i]
            xi = x[i]
            for j in range(i + 1, end[i]):
                x[j] -= LU[i, j] * xi
        for i in range(n - 1, -1, -1):
            xi = x[i]
            for j in range(first[i], i):
                x[j] -= LU[i, j] * xi


@njit(cache=True)
def _sign_vector(x, isgn):
    """x <- sign(x) (+1 at zero), isgn the same as integers."""
    for i in range(x.shape[0]):
        x[i] = 1.0 if x[i] >= 0.0 else -1.0
        isgn[i] = 1 if x[i] > 0.0 else -1


@njit(cache=True)
def _inverse_norm_estimate(LU, first, end, pos):
    """||(L U)^-1||_1 estimated as LAPACK's dlacn2 (Higham 1988, Algorithm 4.1: at most five
    power steps on the sign vectors, then the alternating-sign vector's lower bound). The
    vectors' entries are indexed as the matrix's columns before any block layout (``pos``),
    so that the estimate is the dense matrix's."""
    n = LU.shape[0]
    x = np.full(n, 1.0 / n)
    isgn = np.empty(n, dtype=np.int64)
    _apply_inverse(LU, x, False, first, end)
    if n == 1:
        return abs(x[0])
    est = _abs_sum(x, pos)
    _sign_vector(x, isgn)
    _apply_inverse(LU, x, True, first, end)
    j = _argmax_abs(x, pos)
    it = 2
    while True:
        x[:] = 0.0
        x[j] = 1.0
        _apply_inverse(LU, x, False, first, end)
        est_old = est
        est = _abs_sum(x, pos)
        repeated = True
        for i in range(n):
            if (1 if x[i] >= 0.0 else -1) != isgn[i]:
                repeated = False
                break
        if repeated or est <= est_old:
            break
        _sign_vector(x, isgn)
        _apply_inverse(LU, x, True, first, end)
        j_last = j
        j = _argmax_abs(x, pos)
        if x[j_last] != abs(x[j]) and it < 5:
            it += 1
            continue
        break
    sign = 1.0
    for i in range(n):
        x[pos[i]] = sign * (1.0 + i / (n - 1))
        sign = -sign
    _apply_inverse(LU, x, False, first, end)
    temp = 2.0 * _abs_sum(x, pos) / (3.0 * n)
    return max(est, temp)


@njit(cache=True, fastmath={"contract"})
def _factor_blocks(A, piv, first, end, pos):
    """:func:`lu_factor` of a block-diagonal A whose row and column i lie in the block
    [first[i], end[i]) (nothing outside the blocks is read or written): the factors, pivots
    and rcond of the dense matrix, block by block ("Blocks" in the module doc)."""
    n = A.shape[0]
    anorm = 0.0
    for c in range(n):
        s = 0.0
        for i in range(first[c], end[c]):
            s += abs(A[i, c])
        anorm = max(anorm, s)
    singular = False
    row = np.empty(n)
    for k in range(n):
        a, b = first[k], end[k]
        p, best = k, abs(A[k, k])
        for i in range(k + 1, b):
            if abs(A[i, k]) > best:
                p, best = i, abs(A[i, k])
        piv[k] = p
        if p != k:
            for c in range(a, b):
                A[k, c], A[p, c] = A[p, c], A[k, c]
        if A[k, k] == 0.0:
            singular = True
            continue
        inv = 1.0 / A[k, k]
        for c in range(k + 1, b):          # pivot row apart: the update below vectorises
            row[c] = A[k, c]
        for i in range(k + 1, b):
            A[i, k] *= inv
            f = A[i, k]
            if f != 0.0:
                for c in range(k + 1, b):
                    A[i, c] -= f * row[c]
    if singular or anorm == 0.0:
        return 0.0
    inv_norm = _inverse_norm_estimate(A, first, end, pos)
    return (1.0 / inv_norm) / anorm if inv_norm != 0.0 else 0.0


@njit(cache=True)
def _dense(n):
    """The block layout of a dense n x n matrix: one block, the original order."""
    return np.zeros(n, dtype=np.intp), np.full(n, n, dtype=np.intp), np.arange(n)


@njit(float64(C2, P1), cache=True)
def lu_factor(A, piv):
    """A (n x n) <- its LU factors with partial pivoting (LAPACK dgetrf's: L unit lower, U
    upper, ``piv[i]`` the row exchanged with row i, 0-based); returns the reciprocal 1-norm
    condition number estimated as LAPACK dgecon does, 0 when A is singular."""
    first, end, pos = _dense(A.shape[0])
    return _factor_blocks(A, piv, first, end, pos)


@njit(cache=True, fastmath={"contract"})
def _row_update(B, dst, src, f):
    """B[dst] -= f B[src] (nothing when f is 0)."""
    if f != 0.0:
        for c in range(B.shape[1]):
            B[dst, c] -= f * B[src, c]


@njit(cache=True)
def _permute_rows(B, piv, forward):
    """The row exchanges of the LU factors applied to B, in order (or undone, in reverse)."""
    n = piv.shape[0]
    for t in range(n):
        i = t if forward else n - 1 - t
        p = piv[i]
        if p != i:
            for c in range(B.shape[1]):
                B[i, c], B[p, c] = B[p, c], B[i, c]


@njit(cache=True, fastmath={"contract"})
def _solve_blocks(LU, piv, B, trans, first, end):
    """B (n x k, C order) <- A^-1 B, or A^-T B with ``trans``, from the factors of
    :func:`_factor_blocks`; row operations on B (they vectorise over its k columns)."""
    n, k = LU.shape[0], B.shape[1]
    if not trans:
        _permute_rows(B, piv, True)
        for i in range(n):                        # L y = P b
            for j in range(first[i], i):
                _row_update(B, i, j, LU[i, j])
        for i in range(n - 1, -1, -1):            # U x = y
            for j in range(i + 1, end[i]):
                _row_update(B, i, j, LU[i, j])
            for c in range(k):
                B[i, c] /= LU[i, i]
        return
    for i in range(n):                            # U^T y = b
        for c in range(k):
            B[i, c] /= LU[i, i]
        for j in range(i + 1, end[i]):
            _row_update(B, j, i, LU[i, j])
    for i in range(n - 1, -1, -1):                # L^T z = y, then P^T
        for j in range(first[i], i):
            _row_update(B, j, i, LU[i, j])
    _permute_rows(B, piv, False)


@njit(void(C2, P1, C2, boolean), cache=True)
def lu_solve(LU, piv, B, trans):
    """B (n x k, C order) <- A^-1 B, or A^-T B with ``trans``, from :func:`lu_factor`'s
    factors."""
    first, end, _ = _dense(LU.shape[0])
    _solve_blocks(LU, piv, B, trans, first, end)


@njit(void(C2, P1, C2, boolean, I1, I1, I1, I1), cache=True)
def lu_solve_blocks(LU, piv, B, trans, rows, cols, first, end):
    """B (n x k, C order) <- J_lu^-1 B, or J_lu^-T B with ``trans``, from the block factors of
    :func:`factor_and_solve` (block position p holds row ``rows[p]`` and column ``cols[p]`` of
    J_lu): B is gathered into the block order, solved, and scattered back."""
    n, k = LU.shape[0], B.shape[1]
    into, back = (cols, rows) if trans else (rows, cols)
    T = np.empty((n, k))
    for p in range(n):
        for c in range(k):
            T[p, c] = B[into[p], c]
    _solve_blocks(LU, piv, T, trans, first, end)
    for p in range(n):
        for c in range(k):
            B[back[p], c] = T[p, c]


@njit(cache=True)
def _factor_lu(JT, iu, rows, cols, first, end, pos, LU, piv):
    """J_lu = J_l[:, iu] gathered from J_l^T (``JT``) into its block layout ``LU`` (block
    position p holds row ``rows[p]`` and column ``cols[p]``) and factored in place; returns
    the reciprocal condition number (0: singular)."""
    for r in range(LU.shape[0]):
        for c in range(first[r], end[r]):
            LU[r, c] = JT[iu[cols[c]], rows[r]]
    return _factor_blocks(LU, piv, first, end, pos)


@njit(cache=True)
def _solve_factored(JT, ia, W, rows, cols, first, end, LU, piv, B, X):
    """``X = J_lu^-1 B`` from J_lu's factors in its block layout (:func:`_factor_lu`), the
    first ``k = W.shape[1]`` columns of ``B`` set here to ``J_la W`` (J_la = J_l[:, ia], from
    J_l^T ``JT``), its others given, in block order; X's rows in J_lu's column order."""
    m, k = B.shape[0], W.shape[1]
    for r in range(m):
        row = rows[r]
        for j in range(k):
            s = 0.0
            for a in range(ia.shape[0]):
                s += JT[ia[a], row] * W[a, j]
            B[r, j] = s
    _solve_blocks(LU, piv, B, False, first, end)
    for r in range(m):
        for j in range(B.shape[1]):
            X[cols[r], j] = B[r, j]


@njit(float64(F2, I1, I1, F2, F2, I1, I1, I1, I1, I1, C2, P1, C2), cache=True)
def factor_and_solve(JT, iu, ia, W, extra, rows, cols, first, end, pos, LU, piv, X):
    """J_lu = J_l[:, iu] factored into ``LU``, ``piv`` and, unless it is singular,
    ``X = J_lu^-1 [J_la W, extra]`` with J_la = J_l[:, ia], from J_l^T (``JT``, nv x m);
    returns the reciprocal condition number (0: singular, ``X`` not written). J_lu in its
    block layout (the module doc): block position p holds row ``rows[p]`` and column
    ``cols[p]`` of J_lu, ``pos`` the position of each column; ``LU`` holds the blocks only."""
    m, k, p = JT.shape[1], W.shape[1], extra.shape[1]
    rcond = _factor_lu(JT, iu, rows, cols, first, end, pos, LU, piv)
    if rcond == 0.0:
        return 0.0
    B = np.empty((m, k + p))
    for r in range(m):
        for j in range(p):
            B[r, k + j] = extra[rows[r], j]
    _solve_factored(JT, ia, W, rows, cols, first, end, LU, piv, B, X)
    return rcond


@njit(float64(RO2, I1, F3, F2, F2, I1, I1, F2, F2, F1, I1, I1, I1, I1, I1, I1, I1, F1, F2, F1, C2, P1, C2,
              F2, F1), cache=True)
def project(oMi, inter, Hab, S, MAB, kr, ar, J, dJ, v, iu, ia, rows, cols, first, end, pos, e, JT, drift,
            LU, piv, B, G, d):
    """The controller's projection ([Mingo Hoffman 2024, Appendix B]) from a Pinocchio pass
    (as :func:`closure_terms`), in one call: the closure terms into ``e``, ``JT``, ``drift``,
    J_lu factored in its block layout (:func:`factor_and_solve`, ``B`` its right-hand sides),
    then the passive rows of ``G`` (a copy of G_f, its other rows left alone) and of the
    acceleration drift ``d``: J_m = -J_lu^-1 J_la, d_u = -J_lu^-1 J_l_dot v. The same
    arithmetic as :func:`closure_terms` then :func:`factor_and_solve` with W = I and the drift
    as ``extra``. Returns rcond (0: singular, ``G`` and ``d`` not written)."""
    closure_terms(oMi, inter, Hab, S, MAB, kr, ar, J, dJ, v, True, e, JT, drift)
    m, n_act = e.shape[0], ia.shape[0]
    nb = G.shape[1] - n_act
    rcond = _factor_lu(JT, iu, rows, cols, first, end, pos, LU, piv)
    if rcond == 0.0:
        return 0.0
    for r in range(m):
        for j in range(n_act):
            B[r, j] = JT[ia[j], rows[r]]
        B[r, n_act] = drift[rows[r]]
    _solve_blocks(LU, piv, B, False, first, end)
    for r in range(m):
        u = iu[cols[r]]
        for j in range(n_act):
            G[u, nb + j] = -B[r, j]
        d[u] = -B[r, n_act]
    return rcond


@njit(types.UniTuple(float64, 2)(RO2, I1, F3, F2, F2, I1, I1, F2, I1, I1, F1, F1, I1, I1, I1, I1, I1, F1,
                                 F2, C2, P1, C2, F2), cache=True)
def complete(oMi, inter, Hab, S, MAB, kr, ar, J, iu, ia, v_a, d_a, rows, cols, first, end, pos, e, JT, LU,
             piv, B, X):
    """The passive-state estimator's terms at one configuration ([Mingo Hoffman 2024, Eqs.
    (37)-(40)]) from a Pinocchio pass with the joint Jacobians (placements and ``J``), in one
    call: the closure error into ``e`` and J_l^T into ``JT`` (:func:`closure_terms`), J_lu
    factored in its block layout, and ``X = J_lu^-1 [-J_la v_a, J_la d_a, e_l]`` (n_pas x 3):
    the same arithmetic as :func:`closure_terms` then :func:`factor_and_solve` with
    ``W = [-v_a, d_a]`` and ``extra = e_l``. Returns (rcond, max |e_l|); rcond 0: singular,
    ``X`` not written."""
    # positions only: the dJ, v and drift arguments are not read without the velocity
    closure_terms(oMi, inter, Hab, S, MAB, kr, ar, J, J, e, False, e, JT, e)
    m, n_act = e.shape[0], ia.shape[0]
    residual = 0.0
    for r in range(m):
        if residual == residual and not abs(e[r]) <= residual:    # a NaN stays, as in np.abs(e).max()
            residual = abs(e[r])
    rcond = _factor_lu(JT, iu, rows, cols, first, end, pos, LU, piv)
    if rcond == 0.0:
        return 0.0, residual
    W = np.empty((n_act, 2))
    for a in range(n_act):
        W[a, 0] = -v_a[a]
        W[a, 1] = d_a[a]
    for r in range(m):
        B[r, 2] = e[rows[r]]
    _solve_factored(JT, ia, W, rows, cols, first, end, LU, piv, B, X)
    return rcond, residual


@njit(void(F2, F1, F2, F1, F3, F2, F2, F1, F3), cache=True, fastmath={"contract"})
def reduce_dynamics(M, nle, G, d, J6, drift, M_red, h_red, J6_red):
    """The dynamics in the independent coordinates ([Mingo Hoffman 2024, Appendix B]):
    ``M_red = G^T M G``, ``h_red = G^T (nle + M d)``, and per contact frame ``J6_red = J6 G``
    and ``drift += J6 d``, with ``G`` = G_f (nv x n) and ``d`` the acceleration drift of
    :func:`project`. G_f has a single 1 in each base and actuated row and J_m, sparse, in the
    passive rows; ``d`` is zero outside them: the products run over G's non-zeros (listed
    row by row first) and skip M's and d's zeros: on a hybrid_biped walking state (G 74 non-zeros
    of 900, M 792 of 2500) 2548 multiply-adds against the dense products' 72 000."""
    nv, n = G.shape
    cols = np.empty((nv, n), dtype=np.intp)      # G's non-zeros, row by row
    vals = np.empty((nv, n))
    count = np.zeros(nv, dtype=np.intp)
    for k in range(nv):
        for b in range(n):
            if G[k, b] != 0.0:
                cols[k, count[k]] = b
                vals[k, count[k]] = G[k, b]
                count[k] += 1
    MG = np.zeros((nv, n))
    h_red[:] = 0.0
    for i in range(nv):                          # M G, and nle + M d
        s = nle[i]
        for k in range(nv):
            m = M[i, k]
            if m == 0.0:
                continue
            for t in range(count[k]):
                MG[i, cols[k, t]] += m * vals[k, t]
            if d[k] != 0.0:
                s += m * d[k]
        for t in range(count[i]):                # G^T (nle + M d), row i's share
            h_red[cols[i, t]] += vals[i, t] * s
    M_red[:, :] = 0.0
    for i in range(nv):                          # G^T (M G)
        for t in range(count[i]):
            a, g = cols[i, t], vals[i, t]
            for b in range(n):
                M_red[a, b] += g * MG[i, b]
    for c in range(J6.shape[0]):                 # J6 G, drift + J6 d
        for r in range(6):
            s = 0.0
            for b in range(n):
                J6_red[c, r, b] = 0.0
            for k in range(nv):
                j = J6[c, r, k]
                if j == 0.0:
                    continue
                for t in range(count[k]):
                    J6_red[c, r, cols[k, t]] += j * vals[k, t]
                s += j * d[k]
            drift[c, r] += s

"""The dense backends' small steps, each one compiled call (numba, compiled at import and cached
on disk). The equality-constrained minimiser of the shortcut: the KKT system

    [H A^T; A 0] [x; lam] = [-g; b]

assembled and solved by LAPACK's LU (``dgesv``, as numpy's ``solve``), and whether ``x``
satisfies ``l - tol <= C x <= u + tol``; the checks of a solution against rows (the lazy
rows, the shortcut in reduced coordinates); and the reduced problem of the null-space
elimination from the QR factors (:func:`reduced_problem`). At the sizes of the whole-body QP the numpy and
LAPACK calls these replace cost more in dispatch than their arithmetic.
"""
from __future__ import annotations

import numpy as np
from numba import boolean, float64, njit, types

F1, F2 = float64[:], float64[:, :]


@njit(boolean(F2, F1, F1, F1, float64, boolean), cache=True)
def rows_check(C, x, lo, hi, tol, active):
    """``active`` False: whether ``lo - tol <= C x <= hi + tol`` holds on every row; True:
    whether any row of ``C x`` is within ``tol`` of one of its bounds (an active row)."""
    for i in range(C.shape[0]):
        s = 0.0
        for j in range(C.shape[1]):
            s += C[i, j] * x[j]
        if active and (s <= lo[i] + tol or s >= hi[i] - tol):
            return True
        if not active and (s < lo[i] - tol or s > hi[i] + tol):
            return False
    return not active


@njit(types.Tuple((F1, boolean))(F2, F1, F2, F1, F2, F1, F1, float64), cache=True)
def equality_minimiser(H, g, A, b, C, l, u, tol):
    """(x, feasible); raises numpy.linalg.LinAlgError when the KKT matrix is singular."""
    nx, neq = H.shape[0], A.shape[0]
    m = nx + neq
    K = np.zeros((m, m))
    r = np.empty(m)
    K[:nx, :nx] = H
    K[:nx, nx:] = A.T
    K[nx:, :nx] = A
    r[:nx] = -g
    r[nx:] = b
    x = np.linalg.solve(K, r)[:nx].copy()
    return x, rows_check(C, x, l, u, tol, False)


@njit(types.Tuple((F1, F2, F2, F1, F2, F1, F1))(F2, F2, F1, F2, F1, F2, F1, F1), cache=True)
def reduced_problem(Q, R, b, H, g, C, l, u):
    """The QP over ``y`` after the equalities ``A x = b`` are eliminated (solvers/null_space.py),
    from ``A^T = Q [R; 0]`` (``Q`` nx x nx, ``R`` neq x neq upper triangular):
    ``x0 = Q1 R^-T b``, ``Q2``, ``H_y = Q2^T H Q2``, ``g_y = Q2^T (H x0 + g)``, ``C_y = C Q2``
    and the bounds ``l - C x0``, ``u - C x0``. The products go to BLAS without a Python call
    between them."""
    neq = R.shape[0]
    w = np.empty(neq)
    for i in range(neq):                       # R^T w = b
        s = b[i]
        for j in range(i):
            s -= R[j, i] * w[j]
        w[i] = s / R[i, i]
    Qc = np.ascontiguousarray(Q)
    Q1 = np.ascontiguousarray(Qc[:, :neq])
    Q2 = np.ascontiguousarray(Qc[:, neq:])
    Hc = np.ascontiguousarray(H)
    Cc = np.ascontiguousarray(C)
    x0 = Q1 @ w
    Hy = Q2.T @ (Hc @ Q2)
    gy = Q2.T @ (Hc @ x0 + g)
    Cx0 = Cc @ x0
    return x0, Q2, Hy, gy, Cc @ Q2, l - Cx0, u - Cx0

"""The dense backends' small steps, each one compiled call (numba, compiled at import and cached
on disk). The equality-constrained minimiser of the shortcut: the KKT system

    [H A^T; A 0] [x; lam] = [-g; b]

assembled and solved by LAPACK's LU (``dgesv``, as numpy's ``solve``), and whether ``x``
satisfies ``l - tol <= C x <= u + tol``; and the checks of a solution against rows (the lazy
rows, the shortcut in reduced coordinates). At the sizes of the whole-body QP the numpy and
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

"""The equality-constrained minimiser of the dense backends' shortcut, in one compiled call
(numba, compiled at import and cached on disk): the KKT system

    [H A^T; A 0] [x; lam] = [-g; b]

assembled and solved by LAPACK's LU (``dgesv``, as numpy's ``solve``), and whether ``x``
satisfies ``l - tol <= C x <= u + tol``. At the sizes of the whole-body QP the seven numpy
and LAPACK calls this replaces cost more in dispatch than the solve itself.
"""
from __future__ import annotations

import numpy as np
from numba import boolean, float64, njit, types

F1, F2 = float64[:], float64[:, :]


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
    for i in range(C.shape[0]):
        s = 0.0
        for j in range(nx):
            s += C[i, j] * x[j]
        if s < l[i] - tol or s > u[i] + tol:
            return x, False
    return x, True

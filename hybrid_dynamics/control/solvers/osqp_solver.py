"""Sparse backend: OSQP with a fixed sparsity pattern.

The pattern of ``P = triu(H)`` and of ``[A; C]`` is found once per structure key (the fixed
layout only changes with the morphology) by evaluating the problem at several random states
with every contact both in stance and swinging, so every entry that may become non-zero is
allocated. Each cycle then writes the values into the CSC arrays (one ``np.take`` each),
``update``s them, warm-starts from the previous solution, and OSQP refactors numerically only
(the symbolic factorization is reused).
"""
from __future__ import annotations

import numpy as np
import osqp
import scipy.sparse as sp

from .base import QPSolver, SolveResult

S = osqp.SolverStatus


class OsqpSolver(QPSolver):
    name = "osqp"

    def __init__(self, settings: dict):
        self.settings = dict(eps_abs=min(float(settings.get("eps_abs", 1e-7)) * 10, 1e-6),
                             eps_rel=1e-7, max_iter=max(int(settings.get("max_iter", 1000)), 10000),
                             polishing=True, warm_starting=True, verbose=False,
                             adaptive_rho=True, check_termination=10)
        self.solvers = {}
        self.patterns = {}

    def reset(self) -> None:
        self.solvers.clear()

    def set_pattern(self, key, P_mask: np.ndarray, A_mask: np.ndarray) -> None:
        """Boolean masks of the entries of triu(H) and [A; C] that may be non-zero."""
        self.patterns[key] = (P_mask, A_mask)

    def _setup(self, p):
        P_mask, A_mask = self.patterns.get(p.key, (None, None))
        nx = p.nx
        if P_mask is None:
            P_mask = np.triu(np.ones((nx, nx), bool))
            A_mask = np.ones((p.neq + p.nin, nx), bool)
        P_mask = np.triu(P_mask | np.eye(nx, dtype=bool))
        Ps = sp.csc_matrix(P_mask.astype(float))
        As = sp.csc_matrix(A_mask.astype(float))
        Ps.sort_indices()
        As.sort_indices()
        # flat (row-major) positions of the CSC entries, in CSC order
        P_idx = _flat_positions(Ps, nx)
        A_idx = _flat_positions(As, nx)
        AC = np.vstack([p.A, p.C])
        Ps.data = np.take(p.H, P_idx)
        As.data = np.take(AC, A_idx)
        lo = np.concatenate([p.b_lo, p.l])
        hi = np.concatenate([p.b_hi, p.u])
        lo[lo <= -1e19] = -np.inf              # OSQP's own infinity, not a huge finite bound
        hi[hi >= 1e19] = np.inf
        solver = osqp.OSQP()
        solver.setup(P=Ps, q=p.g, A=As, l=lo, u=hi, **self.settings)
        state = {"solver": solver, "P_idx": P_idx, "A_idx": A_idx, "AC": AC, "lo": lo, "hi": hi}
        if p.x is not None and len(p.x) == nx:
            solver.warm_start(x=p.x, y=None)
        return state

    def solve(self, p) -> SolveResult:
        st = self.solvers.get(p.key)
        if st is None:
            st = self.solvers[p.key] = self._setup(p)
        else:
            AC, lo, hi = st["AC"], st["lo"], st["hi"]
            neq = p.neq
            AC[:neq] = p.A
            AC[neq:] = p.C
            lo[:neq] = p.b_lo
            lo[neq:] = p.l
            hi[:neq] = p.b_hi
            hi[neq:] = p.u
            lo[lo <= -1e19] = -np.inf
            hi[hi >= 1e19] = np.inf
            st["solver"].update(q=p.g, l=lo, u=hi, Px=np.take(p.H, st["P_idx"]),
                                Ax=np.take(AC, st["A_idx"]))
        res = st["solver"].solve(raise_error=False)
        status = res.info.status_val
        ok = status == S.OSQP_SOLVED and np.all(np.isfinite(res.x))
        infeasible = status in (S.OSQP_PRIMAL_INFEASIBLE, S.OSQP_PRIMAL_INFEASIBLE_INACCURATE,
                                S.OSQP_DUAL_INFEASIBLE, S.OSQP_DUAL_INFEASIBLE_INACCURATE)
        if not ok:
            self.solvers.pop(p.key, None)
        return SolveResult(np.array(res.x), bool(ok), str(res.info.status), int(res.info.iter), infeasible)


def _flat_positions(M: sp.csc_matrix, ncols: int) -> np.ndarray:
    cols = np.repeat(np.arange(M.shape[1]), np.diff(M.indptr))
    return M.indices.astype(np.int64) * ncols + cols

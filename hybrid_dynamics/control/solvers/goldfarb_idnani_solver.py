"""Dense backend ``goldfarb_idnani``: the whole QP, equalities and inequalities, in one
compiled call of Goldfarb and Idnani's dual active-set method (:mod:`.dual_active_set`, the
algorithm of TSID's eiquadprog, written from the paper), warm-started from the previous
cycle's active set of the same structure key.

No elimination, no shortcut path of its own: the method's first point after the equalities is
the equality-constrained minimiser, and a cycle ends there when no inequality is violated
(counted in :attr:`shortcuts` like the null-space backends' shortcut). The equalities are
rows of the active set from the start and every later step moves in their null space, so
they hold to round-off; :attr:`SolveResult.exact` says so only when the kernel's residual
``max |A_i x - b_i| / (1 + |b_i|)`` confirms it (the decoding re-solves the base rows otherwise).
"""
from __future__ import annotations

import numpy as np

from . import dual_active_set as das
from .base import QPSolver, SolveResult

STATUS = {das.SOLVED: "solved", das.INFEASIBLE: "infeasible",
          das.DEPENDENT: "dependent equality rows that contradict each other",
          das.ITERATION_LIMIT: "iteration limit", das.CROSSED: "crossed bounds"}
FAILED = (das.INFEASIBLE, das.DEPENDENT, das.CROSSED)
NO_WARM = np.zeros(0, np.intp)
EXACT = 1e-10                 # |A_i x - b_i| <= EXACT (1 + |b_i|): the equalities hold to round-off


class GoldfarbIdnaniSolver(QPSolver):
    name = "goldfarb_idnani"
    fills = True                 # solve(p, fill): the problem written in the same compiled call

    def __init__(self, settings: dict):
        self.max_iter = int(settings.get("max_iter", 1000))
        self.tol = float(settings.get("feasibility_tol", 1e-9))
        self._work = {}              # structure key -> [active inequality sides of its last
        #                              solve (warm start), memory the sides are written to, the
        #                              last Hessian factored, its L^-1]: one look-up a cycle
        self.shortcuts = 0           # cycles that ended at the equality-constrained minimiser

    def reset(self) -> None:
        self._work.clear()

    def solve(self, p, fill=None) -> SolveResult:
        """``fill``: (kernel, its leading arguments) that writes ``p``'s numbers, solves them
        with this backend's warm start and workspace and computes the actuated torques in one
        compiled call (control/assembly.py ``fill_and_solve``); they come back in
        ``SolveResult.torques``."""
        work = self._work.get(p.key)
        if work is None:
            nx = p.nx
            work = self._work[p.key] = [NO_WARM, np.zeros(nx, np.intp), np.full((nx, nx), np.nan), np.zeros((nx, nx))]
        x = np.empty(p.nx)
        torques = None
        try:
            if fill is None:
                k, status, iterations, residual = das.solve(
                    p.H, p.g, p.A, p.b, p.C, p.l, p.u, work[0], self.max_iter, self.tol, x, work[1], work[2], work[3])
            else:
                tau = np.empty(p.n_act)
                k, status, iterations, residual, finite = fill[0](*fill[1], work[0], self.max_iter, self.tol, x,
                                                                  work[1], work[2], work[3], tau)
                torques = (tau, finite)
        except np.linalg.LinAlgError:
            return SolveResult(np.zeros(p.nx), False, "Hessian not positive definite", 0, False)
        if status == das.SOLVED:
            work[0] = work[1][:k]
            self.shortcuts += not k
            return SolveResult(x, True, "solved", iterations, False, residual <= EXACT, torques)
        work[0] = NO_WARM            # never warm-start from a failed solve
        return SolveResult(x, False, STATUS[status], iterations, status in FAILED)

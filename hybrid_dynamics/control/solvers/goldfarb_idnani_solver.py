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
        self.warm = {}               # structure key -> active inequality sides of its last solve
        self._work = {}              # structure key -> (memory the sides are written to, the
        #                              last Hessian factored and its L^-1)
        self.shortcuts = 0           # cycles that ended at the equality-constrained minimiser

    def reset(self) -> None:
        self.warm.clear()
        self._work.clear()

    def solve(self, p, fill=None) -> SolveResult:
        """``fill``: (kernel, its leading arguments) that writes ``p``'s numbers, solves them
        with this backend's warm start and workspace and computes the actuated torques in one
        compiled call (control/assembly.py ``fill_and_solve``); they come back in
        ``SolveResult.torques``."""
        key = p.key
        work = self._work.get(key)
        if work is None:
            work = self._work[key] = (np.zeros(p.nx, np.intp), np.full((p.nx, p.nx), np.nan), np.zeros((p.nx, p.nx)))
        x = np.empty(p.nx)
        warm = self.warm.get(key, NO_WARM)
        torques = None
        try:
            if fill is None:
                k, status, iterations, residual = das.solve(
                    p.H, p.g, p.A, p.b, p.C, p.l, p.u, warm, self.max_iter, self.tol, x, *work)
            else:
                tau = np.empty(len(p.act))
                k, status, iterations, residual, finite = fill[0](*fill[1], warm, self.max_iter, self.tol, x,
                                                                  *work, tau)
                torques = (tau, finite)
        except np.linalg.LinAlgError:
            return SolveResult(np.zeros(p.nx), False, "Hessian not positive definite", 0, False)
        ok = status == das.SOLVED
        if ok:
            self.warm[key] = work[0][:k]
            self.shortcuts += not k
        else:                        # never warm-start from a failed solve
            self.warm.pop(key, None)
        return SolveResult(x, ok, STATUS[status], int(iterations), status in FAILED,
                           exact=ok and residual <= EXACT, torques=torques if ok else None)

"""Dense backend ``daqp``: the null-space elimination and shortcut of
:mod:`.null_space`, then DAQP (Arnström, Bemporad and Axehill's dual active-set solver for small dense QPs) on
the reduced, inequality-only problem.

One DAQP workspace per structure key, set up once and then ``update``d in place each cycle.
DAQP keeps the working set of its previous solve, so a cycle whose active constraints are
those of the last one costs one factorisation and no pivoting: the warm start an active-set
method gives a control loop. A rank-deficient equality block goes to DAQP whole, its
equalities as rows of sense ``EQUALITY`` (always in the working set).

Measured against ProxQP on the same reduced problems (``bench controller --solver``, and
both in one process on the same states): faster on every workload with active constraints
(jethexa walk 0.19 vs 0.29 ms p50, TALOS walk 0.30 vs 0.57 ms) and no iteration-limit
fallbacks where ProxQP had some (TALOS walk 14 of 2000, hybrid_biped walk 52 of 2000).
Handing DAQP the whole problem instead (equalities as rows) was 10-15 % faster still on the
walks but 60 % slower on TALOS standing (many sole-corner rows), so the elimination stays.
"""
from __future__ import annotations

import daqp
import numpy as np
from scipy.linalg import lapack

from .base import SolveResult
from .null_space import NullSpaceSolver

EQUALITY = 5                  # DAQP's sense flag of an equality row
INFEASIBLE = -1               # DAQP's exit flag of a primal infeasible problem


class DaqpSolver(NullSpaceSolver):
    name = "daqp"

    def __init__(self, settings: dict):
        super().__init__(settings)
        self.settings = {"primal_tol": float(settings.get("eps_abs", 1e-7)),
                         "iter_limit": int(settings.get("max_iter", 1000))}
        self.models = {}

    def reset(self) -> None:
        super().reset()
        self.models.clear()

    def _solve(self, key, H, g, rows, upper, lower, neq, start) -> SolveResult:
        if not len(upper):                      # no rows (DAQP needs one): the unconstrained minimiser
            L, info = lapack.dpotrf(H)
            x = lapack.dpotrs(L, -g)[0] if info == 0 else np.full(len(g), np.nan)
            ok = info == 0 and bool(np.isfinite(x).all())
            return SolveResult(x, ok, "solved (unconstrained)" if ok else "singular Hessian", 0, False)
        model = self.models.get(key)
        if model is None:
            model = self.models[key] = daqp.Model()
            for name, value in self.settings.items():
                model.settings[name] = value
            sense = np.zeros(len(upper), dtype=np.intc)
            sense[:neq] = EQUALITY
            model.setup(H, g, rows, upper, lower, sense,
                        primal_start=start if start is not None and len(start) == len(g) else None)
        else:
            model.update(H=H, f=g, A=rows, bupper=upper, blower=lower)
        x, _, flag, info = model.solve()
        x = np.asarray(x)
        ok = flag == 1 and bool(np.isfinite(x).all())
        if not ok:                              # never hot-start from a failed solve
            self.models.pop(key, None)
        return SolveResult(x, ok, "solved" if ok else f"daqp exit flag {flag}",
                           int(info["iterations"]), flag == INFEASIBLE)

    def _inner(self, key, H, g, C, l, u, y0) -> SolveResult:
        return self._solve(key, H, g, C, u, l, 0, y0)

    def _full(self, p) -> SolveResult:
        return self._solve(p.key + ("full",), p.H, p.g, np.vstack([p.A, p.C]),
                           np.concatenate([p.b_hi, p.u]), np.concatenate([p.b_lo, p.l]), p.neq, p.x)

"""Dense active-set backend: DAQP (Arnström, Bemporad and Axehill, a dual active-set solver
for small dense QPs), one workspace per structure key, hot-started.

The problem goes to DAQP whole: the equalities (floating-base dynamics, stance contact
accelerations) as rows of sense ``EQUALITY`` (always in the working set), the inequalities
(friction pyramids, normal-force bounds, torque and joint limits) as two-sided rows. A
workspace is set up once per structure key (stance pattern, morphology); each cycle then
``update``s H, g, the rows and the bounds in place and solves. DAQP keeps the working set of
the previous solve, so a cycle whose active constraints are those of the last one costs one
factorisation and no pivoting: the warm start an active-set method gives a control loop.
"""
from __future__ import annotations

import daqp
import numpy as np

from .base import QPSolver, SolveResult

EQUALITY = 5                  # DAQP's sense flag of an equality row


class _Workspace:
    """A DAQP model and the stacked row and bound buffers of one structure."""

    def __init__(self, p, settings: dict):
        self.rows = np.vstack([p.A, p.C])
        self.upper = np.concatenate([p.b_hi, p.u])
        self.lower = np.concatenate([p.b_lo, p.l])
        sense = np.zeros(p.neq + p.nin, dtype=np.intc)
        sense[:p.neq] = EQUALITY
        self.model = daqp.Model()
        for key, value in settings.items():
            self.model.settings[key] = value
        self.model.setup(p.H, p.g, self.rows, self.upper, self.lower, sense)

    def update(self, p) -> None:
        neq = p.neq
        self.rows[:neq] = p.A
        self.rows[neq:] = p.C
        self.upper[:neq] = p.b_hi
        self.upper[neq:] = p.u
        self.lower[:neq] = p.b_lo
        self.lower[neq:] = p.l
        self.model.update(H=p.H, f=p.g, A=self.rows, bupper=self.upper, blower=self.lower)


class DaqpSolver(QPSolver):
    name = "daqp"

    def __init__(self, settings: dict):
        self.settings = {"primal_tol": float(settings.get("eps_abs", 1e-7)),
                         "iter_limit": int(settings.get("max_iter", 1000))}
        self.workspaces = {}

    def reset(self) -> None:
        self.workspaces.clear()

    def solve(self, p) -> SolveResult:
        ws = self.workspaces.get(p.key)
        if ws is None:
            ws = self.workspaces[p.key] = _Workspace(p, self.settings)
        else:
            ws.update(p)
        x, _, flag, info = ws.model.solve()
        x = np.asarray(x)
        ok = flag == 1 and bool(np.isfinite(x).all())
        if not ok:                              # never hot-start from a failed solve
            self.workspaces.pop(p.key, None)
        return SolveResult(x, ok, "solved" if ok else f"daqp exit flag {flag}",
                           int(info["iterations"]), flag == -1)

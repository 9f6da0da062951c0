"""Dense backend ``proxsuite``: the null-space elimination and shortcut of
:mod:`.null_space`, then ProxQP's dense solver (proximal augmented Lagrangian) on the reduced
problem, one ``proxqp.dense.QP`` per structure key, ``update``d in place and warm-started
from its previous result."""
from __future__ import annotations

import numpy as np
import proxsuite

from .base import SolveResult
from .null_space import NullSpaceSolver

_STATUS = proxsuite.proxqp.QPSolverOutput
_PREVIOUS = proxsuite.proxqp.InitialGuess.WARM_START_WITH_PREVIOUS_RESULT


class ProxsuiteSolver(NullSpaceSolver):
    name = "proxsuite"

    def __init__(self, settings: dict):
        super().__init__(settings)
        self.eps_abs = float(settings.get("eps_abs", 1e-7))
        self.max_iter = int(settings.get("max_iter", 1000))       # outer iterations
        self.max_iter_in = int(settings.get("max_iter_in", 30))   # inner, per outer
        self.eps_inf = float(settings.get("eps_infeasible", 1e-8))
        self.qps = {}

    def reset(self) -> None:
        super().reset()
        self.qps.clear()

    def _qp(self, key, nx, neq, nin, H, g, A, b, C, l, u, x0=None):
        qp = self.qps.get(key)
        if qp is not None:
            qp.update(H, g, A, b, C, l, u)
            qp.solve()
            return qp
        qp = self.qps[key] = proxsuite.proxqp.dense.QP(nx, neq, nin)
        s = qp.settings
        s.eps_abs = self.eps_abs
        s.eps_rel = 0.0
        s.max_iter = self.max_iter
        s.verbose = False
        s.max_iter_in = self.max_iter_in   # work bounded by max_iter x max_iter_in
        s.eps_primal_inf = self.eps_inf    # the default (1e-4) calls ill-conditioned QPs infeasible
        s.eps_dual_inf = self.eps_inf
        qp.init(H, g, A, b, C, l, u)
        if x0 is not None:
            s.initial_guess = proxsuite.proxqp.InitialGuess.WARM_START
            qp.solve(x0, None, None)
        else:
            qp.solve()
        s.initial_guess = _PREVIOUS      # only now is there a previous result
        return qp

    def _inner(self, key, H, g, C, l, u, y0) -> SolveResult:
        return self._finish(self._qp(key, len(g), 0, len(l), H, g, None, None, C, l, u, y0), key)

    def _full(self, p) -> SolveResult:
        key = p.key + ("full",)
        return self._finish(self._qp(key, p.nx, p.neq, p.nin, p.H, p.g, p.A, p.b, p.C, p.l, p.u, p.x), key)

    def _finish(self, qp, key) -> SolveResult:
        r = qp.results
        status = r.info.status
        ok = status == _STATUS.PROXQP_SOLVED
        infeasible = status in (_STATUS.PROXQP_PRIMAL_INFEASIBLE, _STATUS.PROXQP_DUAL_INFEASIBLE)
        x = np.array(r.x)
        if not ok or not np.all(np.isfinite(x)):
            self.qps.pop(key, None)           # never warm-start from a failed solve
            ok = False
        return SolveResult(x, ok, str(status).rsplit(".", 1)[-1], int(r.info.iter), infeasible)

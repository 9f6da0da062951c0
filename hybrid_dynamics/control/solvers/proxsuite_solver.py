"""Dense backend: equalities eliminated by a null-space basis, then ProxQP (dense).

The whole-body QP of a legged robot is small (24 to 60 variables) and its equalities (six
base rows, stance contact rows) are many, so the backend removes them first:

    A^T = Q R = [Q1 Q2] [R1; 0]          (Householder QR, LAPACK dgeqrf/dorgqr)
    x   = x0 + Q2 y,     x0 = Q1 R1^-T b  (every x of this form satisfies A x = b exactly)

and solves over ``y`` alone (nx - neq variables, inequalities only):

    min 1/2 y^T (Q2^T H Q2) y + (Q2^T (H x0 + g))^T y    s.t.  l - C x0 <= C Q2 y <= u - C x0.

Two exact steps, cheapest first. (1) The equality-constrained minimiser, one LAPACK solve of
the KKT system ``[H A^T; A 0] [x; lam] = [-g; b]``, is the optimum whenever it satisfies every
inequality: the common case while the robot stands or walks well inside its cones and
limits, and where Goldfarb-Idnani (TSID's eiquadprog) starts too. (2) Otherwise the
elimination above and ProxQP's dense solver on the reduced problem, one ``proxqp.dense.QP``
per structure key, warm-started from its previous result.

Side effect worth having: the equalities (floating-base dynamics, contact accelerations) hold
to round-off whatever the solver tolerance. If ``A`` is rank deficient (a contact Jacobian at
a singularity, or dependent contacts) the elimination is skipped and ProxQP gets the full
problem with its equalities.
"""
from __future__ import annotations

import numpy as np
import proxsuite
from scipy.linalg import lapack

from .base import QPSolver, SolveResult

_STATUS = proxsuite.proxqp.QPSolverOutput
_PREVIOUS = proxsuite.proxqp.InitialGuess.WARM_START_WITH_PREVIOUS_RESULT


class _Reduction:
    """Buffers of the KKT shortcut and the null-space elimination for one structure."""

    def __init__(self, nx: int, neq: int):
        self.P = np.zeros((nx, nx), order="F")
        self.ny = nx - neq
        self.K = np.zeros((nx + neq, nx + neq), order="F")    # symmetric: C or F order alike
        self.r = np.zeros(nx + neq)
        self.nx = nx
        self.skip_kkt = 0


class ProxsuiteSolver(QPSolver):
    name = "proxsuite"

    def __init__(self, settings: dict):
        self.eps_abs = float(settings.get("eps_abs", 1e-7))
        self.max_iter = int(settings.get("max_iter", 1000))
        self.max_iter_in = int(settings.get("max_iter_in", 1500))
        self.eps_inf = float(settings.get("eps_infeasible", 1e-8))
        self.rank_tol = 1e-9
        self.qps = {}
        self.reductions = {}
        self.shortcuts = 0          # cycles solved by the unconstrained minimiser

    def reset(self) -> None:
        self.qps.clear()
        self.reductions.clear()

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
        s.max_iter_in = self.max_iter_in   # bounded work when the QP is infeasible
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

    def solve(self, p) -> SolveResult:
        neq = p.neq
        if neq == 0:
            return self._finish(self._qp(p.key, p.nx, 0, p.nin, p.H, p.g, None, None, p.C, p.l, p.u), p.key)
        red = self.reductions.get(p.key)
        if red is None:
            red = self.reductions[p.key] = _Reduction(p.nx, neq)
        # (1) equality-constrained minimiser: one KKT solve. Skipped for a while after it
        # missed (inequalities active), when the check after the elimination is cheaper.
        nx, K, r = p.nx, red.K, red.r
        if red.skip_kkt > 0:
            red.skip_kkt -= 1
        else:
            K[:nx, :nx] = p.H
            K[:nx, nx:] = p.A.T
            K[nx:, :nx] = p.A
            np.negative(p.g, out=r[:nx])
            r[nx:] = p.b
            _, _, sol, info = lapack.dgesv(K, r)
            if info == 0:
                x = sol[:nx]
                cx = p.C @ x
                if (cx >= p.l - 1e-9).all() and (cx <= p.u + 1e-9).all():
                    self.shortcuts += 1
                    return SolveResult(x, True, "solved (equality-constrained)", 0, False, True)
            red.skip_kkt = 20
        qr, tau, _, info = lapack.dgeqrf(p.A.T)
        diag = np.abs(np.diagonal(qr)[:neq])
        if info != 0 or diag.min() <= self.rank_tol * max(1.0, diag.max()):
            return self._full(p)
        P = red.P
        P[:, :neq] = qr
        Q, _, info = lapack.dorgqr(P, tau)
        w, info2 = lapack.dtrtrs(qr[:neq, :neq], p.b, lower=0, trans=1)
        Q1, Q2 = Q[:, :neq], Q[:, neq:]
        x0 = Q1 @ w
        HQ2 = p.H @ Q2
        Hy = Q2.T @ HQ2
        gy = Q2.T @ (p.H @ x0 + p.g)
        Cy = p.C @ Q2
        Cx0 = p.C @ x0
        ly = p.l - Cx0
        uy = p.u - Cx0
        if red.skip_kkt:                    # the same check in reduced coordinates
            L, info3 = lapack.dpotrf(Hy)
            if info3 == 0:
                y, _ = lapack.dpotrs(L, -gy)
                cy = Cy @ y
                if (cy >= ly - 1e-9).all() and (cy <= uy + 1e-9).all():
                    self.shortcuts += 1
                    red.skip_kkt = 0
                    return SolveResult(x0 + Q2 @ y, True, "solved (equality-constrained)", 0, False, True)
        # (2) ProxQP on the reduced, inequality-only problem; first without the lazy rows
        # (torque and joint limits), which are then checked: if they hold, that is the optimum
        y0 = None
        if p.x is not None and len(p.x) == p.nx:
            y0 = Q2.T @ (p.x - x0)
        lazy = getattr(p, "lazy_rows", None)
        if lazy is not None and lazy.any():
            key = p.key + ("eager",)
            eager = ~lazy
            qp = self._qp(key, red.ny, 0, int(eager.sum()), Hy, gy, None, None,
                          Cy[eager], ly[eager], uy[eager], None if key in self.qps else y0)
            res = self._finish(qp, key)
            if res.ok:
                cl = Cy[lazy] @ res.x
                if (cl >= ly[lazy] - 1e-7).all() and (cl <= uy[lazy] + 1e-7).all():
                    res.x = x0 + Q2 @ res.x
                    res.exact = True
                    return res
        key = p.key + ("reduced",)
        qp = self._qp(key, red.ny, 0, p.nin, Hy, gy, None, None, Cy, ly, uy, None if key in self.qps else y0)
        res = self._finish(qp, key)
        if not res.ok:                     # a warm start gone astray: once more, cold
            res = self._finish(self._qp(key, red.ny, 0, p.nin, Hy, gy, None, None, Cy, ly, uy), key)
        if res.ok:
            res.x = x0 + Q2 @ res.x
            res.exact = True
        return res

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

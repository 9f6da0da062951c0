"""Dense backends' common part: equalities eliminated by a null-space basis, an exact
shortcut, then an inequality-only QP for a dense solver (:mod:`.proxsuite_solver`,
:mod:`.daqp_solver`).

The whole-body QP of a legged robot is small (24 to 60 variables) and its equalities (six
base rows, stance contact rows) are many, so they are removed first:

    A^T = Q R = [Q1 Q2] [R1; 0]          (Householder QR, LAPACK dgeqrf/dorgqr)
    x   = x0 + Q2 y,     x0 = Q1 R1^-T b  (every x of this form satisfies A x = b exactly)

and the QP is solved over ``y`` alone (nx - neq variables, inequalities only):

    min 1/2 y^T (Q2^T H Q2) y + (Q2^T (H x0 + g))^T y    s.t.  l - C x0 <= C Q2 y <= u - C x0.

Two exact steps, cheapest first. (1) The equality-constrained minimiser, one LAPACK solve of
the KKT system ``[H A^T; A 0] [x; lam] = [-g; b]``, is the optimum whenever it satisfies every
inequality: the common case while the robot stands well inside its cones and limits, and
where Goldfarb-Idnani (TSID's eiquadprog) starts too. After it missed (inequalities active),
the same check is made in reduced coordinates (a Cholesky of the reduced Hessian) for a
while, which is cheaper once the elimination is done anyway. (2) Otherwise the subclass's
solver on the reduced problem, one per structure key, warm-started from its previous result;
first without the *lazy* rows (torque and joint limits), which are then checked: if they
hold, that is the optimum.

Side effect worth having: the equalities (floating-base dynamics, contact accelerations) hold
to round-off whatever the solver tolerance. If ``A`` is rank deficient (a contact Jacobian at
a singularity, or dependent contacts) the elimination is skipped and the subclass solves the
full problem with its equalities (:meth:`NullSpaceSolver._full`).
"""
from __future__ import annotations

from abc import abstractmethod
from typing import Optional

import numpy as np
from scipy.linalg import lapack

from .base import QPSolver, SolveResult

SHORTCUT = "solved (equality-constrained)"


class _Reduction:
    """Buffers of the KKT shortcut and the null-space elimination for one structure."""

    def __init__(self, nx: int, neq: int):
        self.P = np.zeros((nx, nx), order="F")
        self.ny = nx - neq
        self.K = np.zeros((nx + neq, nx + neq), order="F")    # symmetric: C or F order alike
        self.r = np.zeros(nx + neq)
        self.nx = nx
        self.skip_kkt = 0


class NullSpaceSolver(QPSolver):
    """Elimination and shortcut (module docstring); subclasses solve the reduced QP."""

    def __init__(self, settings: dict):
        self.rank_tol = 1e-9
        self.reductions = {}
        self.shortcuts = 0          # cycles solved by the equality-constrained minimiser

    def reset(self) -> None:
        self.reductions.clear()

    @abstractmethod
    def _inner(self, key, H, g, C, l, u, y0: Optional[np.ndarray]) -> SolveResult:
        """``min 1/2 y^T H y + g^T y  s.t.  l <= C y <= u`` with the solver kept under ``key``
        (warm from its previous result; a new one starts from ``y0`` if given). A failed solve
        forgets the solver of ``key``."""

    @abstractmethod
    def _full(self, p) -> SolveResult:
        """The whole problem with its equalities (``A`` rank deficient)."""

    def solve(self, p) -> SolveResult:
        neq = p.neq
        if neq == 0:
            return self._inner(p.key, p.H, p.g, p.C, p.l, p.u, p.x)
        red = self.reductions.get(p.key)
        if red is None:
            red = self.reductions[p.key] = _Reduction(p.nx, neq)
        # (1) equality-constrained minimiser: one KKT solve, skipped for a while after a miss
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
                    return SolveResult(x, True, SHORTCUT, 0, False, True)
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
                    return SolveResult(x0 + Q2 @ y, True, SHORTCUT, 0, False, True)
        # (2) the reduced, inequality-only problem; first without the lazy rows
        y0 = None
        if p.x is not None and len(p.x) == p.nx:
            y0 = Q2.T @ (p.x - x0)
        lazy = getattr(p, "lazy_rows", None)
        if lazy is not None and lazy.any() and not lazy.all():
            eager = ~lazy
            res = self._inner(p.key + ("eager",), Hy, gy, Cy[eager], ly[eager], uy[eager], y0)
            if res.ok:
                cl = Cy[lazy] @ res.x
                if (cl >= ly[lazy] - 1e-7).all() and (cl <= uy[lazy] + 1e-7).all():
                    return self._lift(res, x0, Q2)
        key = p.key + ("reduced",)
        res = self._inner(key, Hy, gy, Cy, ly, uy, y0)
        if not res.ok:                     # a warm start gone astray: once more, cold
            res = self._inner(key, Hy, gy, Cy, ly, uy, None)
        return self._lift(res, x0, Q2) if res.ok else res

    @staticmethod
    def _lift(res: SolveResult, x0, Q2) -> SolveResult:
        res.x = x0 + Q2 @ res.x
        res.exact = True
        return res

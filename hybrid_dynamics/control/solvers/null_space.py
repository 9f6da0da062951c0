"""Dense backends' common part: equalities eliminated by a null-space basis, an exact
shortcut, then an inequality-only QP for a dense solver (:mod:`.proxsuite_solver`,
:mod:`.daqp_solver`).

The whole-body QP of a legged robot is small (24 to 60 variables) and its equalities (six
base rows, stance contact rows) are many, so they are removed first:

    A^T = Q R = [Q1 Q2] [R1; 0]          (Householder QR, LAPACK dgeqrf/dorgqr)
    x   = x0 + Q2 y,     x0 = Q1 R1^-T b  (every x of this form satisfies A x = b exactly)

and the QP is solved over ``y`` alone (nx - neq variables, inequalities only):

    min 1/2 y^T (Q2^T H Q2) y + (Q2^T (H x0 + g))^T y    s.t.  l - C x0 <= C Q2 y <= u - C x0.

Two exact steps, cheapest first. (1) The equality-constrained minimiser is the optimum
whenever it satisfies every inequality: the common case while the robot stands well inside its
cones and limits, and where Goldfarb-Idnani (TSID's eiquadprog) starts too. After a cycle that
ended there it is tried first, by one LAPACK solve of the KKT system
``[H A^T; A 0] [x; lam] = [-g; b]`` (:mod:`.kkt`, one compiled call); otherwise it is tried after the elimination (a Cholesky
of the reduced Hessian), with a back-off: after k misses in a row it waits 2^k cycles (at most
32) before trying again, so that a walk, whose optimum always has active inequalities, pays
for it on a few percent of its cycles. (2) Otherwise the subclass's solver on the reduced
problem, one per structure key, warm-started from its previous result; first without the
*lazy* rows (torque and joint limits), which are then checked in the original coordinates
(``l <= C x <= u``, no reduced rows needed): if they hold, that is the optimum. While a lazy row
is active at the optimum (a torque at its limit through a stride) the next cycles go straight
to the problem with every row, until none is active.

The inequality rows are laid out with the lazy ones last (:class:`~..formulation.Layout`), so
the eager rows are a leading block and their reduced rows ``C Q2`` one product on a view.

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
from .kkt import equality_minimiser, reduced_problem, rows_check

SHORTCUT = "solved (equality-constrained)"


class _Reduction:
    """Buffers and per-structure state of the shortcut and the elimination (module docstring)."""

    def __init__(self, nx: int, lazy):
        self.P = np.zeros((nx, nx), order="F")
        self.last_shortcut = True        # the previous cycle ended at the KKT minimiser
        self.wait = 0                    # cycles before the next reduced shortcut test
        self.backoff = 1
        self.lazy_needed = False         # a lazy row was active at the previous optimum
        nin = len(lazy) if lazy is not None else 0
        ne = nin - int(lazy.sum()) if nin else 0
        split = 0 < ne < nin
        self.eager = self.lazy = None
        if split and not lazy[:ne].any():            # the lazy rows are the last block
            self.eager, self.lazy = slice(0, ne), slice(ne, nin)
        elif split:
            self.eager, self.lazy = np.flatnonzero(~lazy), np.flatnonzero(lazy)

    def missed(self) -> None:
        self.last_shortcut = False
        self.wait = self.backoff
        self.backoff = min(2 * self.backoff, 32)

    def hit(self) -> None:
        self.last_shortcut = True
        self.wait = 0
        self.backoff = 1


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
            red = self.reductions[p.key] = _Reduction(p.nx, getattr(p, "lazy_rows", None))
        # (1) equality-constrained minimiser by the KKT system, after a cycle that ended there
        if red.last_shortcut:
            try:
                x, feasible = equality_minimiser(p.H, p.g, p.A, p.b, p.C, p.l, p.u, 1e-9)
            except np.linalg.LinAlgError:          # singular KKT matrix: eliminate instead
                feasible = False
            if feasible:
                self.shortcuts += 1
                return SolveResult(x, True, SHORTCUT, 0, False, True)
            red.missed()
        qr, tau, _, info = lapack.dgeqrf(p.A.T)
        diag = np.abs(np.diagonal(qr)[:neq])
        if info != 0 or diag.min() <= self.rank_tol * max(1.0, diag.max()):
            return self._full(p)
        P = red.P
        P[:, :neq] = qr
        Q, _, info = lapack.dorgqr(P, tau)
        x0, Q2, Hy, gy, C_all, ly, uy = reduced_problem(Q, qr[:neq, :neq], p.b, p.H, p.g, p.C, p.l, p.u)
        eager = red.eager
        all_rows = eager is None or red.lazy_needed
        Cy = C_all if all_rows else C_all[eager]           # the eager rows' reduced rows
        if red.wait > 0:
            red.wait -= 1
        elif not red.last_shortcut:           # the same test in reduced coordinates
            L, info3 = lapack.dpotrf(Hy)
            if info3 == 0:
                y, _ = lapack.dpotrs(L, -gy)
                x = x0 + Q2 @ y
                if rows_check(p.C, x, p.l, p.u, 1e-9, False):
                    self.shortcuts += 1
                    red.hit()
                    return SolveResult(x, True, SHORTCUT, 0, False, True)
            red.missed()
        # (2) the reduced, inequality-only problem; first without the lazy rows
        y0 = None
        if p.x is not None and len(p.x) == p.nx:
            y0 = Q2.T @ (p.x - x0)
        if not all_rows:
            res = self._inner(p.key + ("eager",), Hy, gy, Cy, ly[eager], uy[eager], y0)
            if res.ok:
                x = x0 + Q2 @ res.x
                lz = red.lazy
                if rows_check(p.C[lz], x, p.l[lz], p.u[lz], 1e-7, False):
                    return self._exact(res, x)
            red.lazy_needed = True
            Cy = C_all
        key = p.key + ("reduced",)
        res = self._inner(key, Hy, gy, Cy, ly, uy, y0)
        if not res.ok:                     # a warm start gone astray: once more, cold
            res = self._inner(key, Hy, gy, Cy, ly, uy, None)
        if not res.ok:
            return res
        x = x0 + Q2 @ res.x
        if red.lazy_needed:                # any lazy row still at a bound?
            lz = red.lazy
            red.lazy_needed = rows_check(Cy[lz], res.x, ly[lz], uy[lz], 1e-7, True)
        return self._exact(res, x)

    @staticmethod
    def _exact(res: SolveResult, x) -> SolveResult:
        res.x = x
        res.exact = True
        return res

"""Stiff integration by SUNDIALS CVODES through CasADi: a right-hand side ``f(t, x)`` and a
Jacobian ``J(t, x)`` (exact or approximate) written in Python, given to CVODES as CasADi
callbacks (``casadi.integrator(..., "cvodes", ...)``: BDF of variable order 1-5, a modified
Newton iteration on ``I - gamma J`` with its own error-weighted convergence test).

Why beside scipy's BDF: on Simulation 1's closed loop (docs/soft.md) scipy's BDF, given the
same right-hand side and Jacobian, stalls at 0.776 s (its step collapses while the Newton
iteration keeps failing) where CVODES passes in a few hundred right-hand sides.
"""
from __future__ import annotations

from typing import Callable, Dict, Sequence, Tuple

import casadi as ca
import numpy as np


class _Jacobian(ca.Callback):
    """(t, x, f) -> (df/dt, df/dx): CasADi's Jacobian scheme for a callback of (t, x). df/dt
    is given as zero: CVODES's Newton matrix needs df/dx only.

    CasADi asks for df/dx at every setup of CVODES's Newton matrix (each change of the step
    or order), where SUNDIALS itself would reuse it. With ``reuse`` the last one is returned
    while the requests move forward in time, at most ``reuse`` times; a request at or before
    the previous one's time (CVODES retrying a step after a failed Newton iteration or error
    test) gets a fresh one. The Jacobian sets the Newton iteration only, never the answer
    (CVODES's error test and convergence test are unchanged)."""

    def __init__(self, name: str, jacobian: Callable, n: int, counts: Dict[str, int], reuse: int):
        ca.Callback.__init__(self)
        self.jacobian, self.n, self.counts, self.reuse = jacobian, n, counts, reuse
        self._last, self._t, self._age = None, -np.inf, 0
        self.construct(name, {})

    def get_n_in(self):
        return 3

    def get_n_out(self):
        return 2

    def get_sparsity_in(self, i):
        return ca.Sparsity.dense(1, 1) if i == 0 else ca.Sparsity.dense(self.n, 1)

    def get_sparsity_out(self, i):
        return ca.Sparsity.dense(self.n, 1) if i == 0 else ca.Sparsity.dense(self.n, self.n)

    def eval(self, arg):
        t = float(arg[0])
        if self._last is None or t <= self._t or self._age >= self.reuse:
            self.counts["jacobians"] += 1
            self._last, self._age = np.asarray(self.jacobian(t, np.array(arg[1]).ravel()), float), 0
        else:
            self._age += 1
        self._t = t
        return [np.zeros(self.n), self._last]


class _RightHandSide(ca.Callback):
    """(t, x) -> f(t, x), whose Jacobian is the :class:`_Jacobian` callback."""

    def __init__(self, name: str, rhs: Callable, jacobian: Callable, n: int, counts: Dict[str, int], reuse: int):
        ca.Callback.__init__(self)
        self.rhs, self.n, self.counts = rhs, n, counts
        self._jacobian = _Jacobian(f"{name}_jacobian", jacobian, n, counts, reuse)
        self.construct(name, {})

    def get_n_in(self):
        return 2

    def get_n_out(self):
        return 1

    def get_sparsity_in(self, i):
        return ca.Sparsity.dense(1, 1) if i == 0 else ca.Sparsity.dense(self.n, 1)

    def get_sparsity_out(self, i):
        return ca.Sparsity.dense(self.n, 1)

    def has_jacobian(self):
        return True

    def get_jacobian(self, name, inames, onames, opts):
        return self._jacobian

    def eval(self, arg):
        self.counts["right_hand_sides"] += 1
        return [np.asarray(self.rhs(float(arg[0]), np.array(arg[1]).ravel()), float)]


def integrate(rhs: Callable, jacobian: Callable, x0, times: Sequence[float], rtol: float = 1e-6,
              atol: float = 1e-9, max_steps: int = 200000, reuse: int = 0) -> Tuple[np.ndarray, Dict[str, int]]:
    """x(t) at ``times`` (increasing, the first one the start) of ``xdot = rhs(t, x)`` from
    ``x0``, by CVODES with the Newton matrix from ``jacobian(t, x)`` (reused up to ``reuse``
    times while CVODES advances: :class:`_Jacobian`); and the counts of right-hand sides,
    Jacobians, steps and Newton iterations. A failure (step too small, too many steps) raises
    CasADi's RuntimeError."""
    x0 = np.asarray(x0, float)
    n = len(x0)
    counts = {"right_hand_sides": 0, "jacobians": 0}
    f = _RightHandSide("closed_loop", rhs, jacobian, n, counts, reuse)
    t, x = ca.MX.sym("t"), ca.MX.sym("x", n)
    solver = ca.integrator("cvodes", "cvodes", {"t": t, "x": x, "ode": f(t, x)}, float(times[0]),
                           [float(tk) for tk in times],
                           {"reltol": rtol, "abstol": atol, "max_num_steps": max_steps})
    xs = np.array(solver(x0=x0)["xf"]).T
    stats = solver.stats()
    counts.update(steps=int(stats["nsteps"]), newton_iterations=int(stats["nniters"]),
                  error_test_failures=int(stats["netfails"]), newton_failures=int(stats["nncfails"]))
    return xs, counts

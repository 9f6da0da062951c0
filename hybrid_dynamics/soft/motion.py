"""Statics, forward dynamics and the Coriolis matrix of a soft-module tree.

Statics [Pustina 2024, Eq. (55)]: Newton-Raphson on ``g(q) + s(q, 0) = tau + A(q) u`` over
chosen coordinates, with the exact tangent from the traced ID. Forward dynamics [Pustina 2024,
Sec. 5.2]: ``qdd = M^-1 (tau - h)`` with (M, h) from one MID call, integrated by an explicit
Runge-Kutta (scipy DOP853; BDF or Radau for stiff bodies, or SUNDIALS CVODES through CasADi)
in (q, v) with qdot = G(q) v.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import casadi as ca
import numpy as np
from scipy.integrate import solve_ivp

from hybrid_dynamics.soft import cvodes
from hybrid_dynamics.soft.tree import SoftTree


def forward_dynamics(tree: SoftTree, q, v, tau) -> np.ndarray:
    M, h = tree.mid(q, v)
    return np.linalg.solve(M, np.asarray(tau, float) - h)


def simulate(tree: SoftTree, q0, v0, duration: float, tau: Optional[Callable] = None,
             samples: int = 201, rtol: float = 1e-11, atol: float = 1e-12, method: str = "DOP853",
             acceleration: Optional[Callable] = None, jacobian: Optional[Callable] = None,
             jacobian_reuse: int = 0):
    """(t, q(t), v(t)) from (q0, v0) under generalized forces tau(t, q, v) (default zero).
    ``method``: a scipy ``solve_ivp`` method (an implicit one, BDF or Radau, for stiff bodies),
    or ``"CVODES"`` (SUNDIALS' BDF through CasADi, :mod:`~hybrid_dynamics.soft.cvodes`; needs
    ``jacobian``, reused up to ``jacobian_reuse`` times while the integrator advances);
    ``acceleration(t, q, v)`` replaces ``M^-1 (tau - h)`` (a closed loop that forms M and h
    itself); ``jacobian(t, q, v)``: d(qdot, vdot)/d(q, v), exact or approximate, for the
    implicit methods (default: scipy's finite differences)."""
    nq = tree.nq
    tau = tau or (lambda t, q, v: np.zeros(tree.nv))
    acceleration = acceleration or (lambda t, q, v: forward_dynamics(tree, q, v, tau(t, q, v)))

    def rhs(t, z):
        q, v = z[:nq], z[nq:]
        return np.concatenate([tree.qdot(q, v), acceleration(t, q, v)])
    jac = None if jacobian is None else (lambda t, z: jacobian(t, z[:nq], z[nq:]))
    ts = np.linspace(0.0, duration, samples)
    if method == "CVODES":
        if jac is None:
            raise ValueError("CVODES needs the Jacobian (jacobian=...)")
        zs, _ = cvodes.integrate(rhs, jac, np.concatenate([q0, v0]), ts, rtol, atol, reuse=jacobian_reuse)
        return ts, zs[:, :nq], zs[:, nq:]
    options = {} if jac is None else {"jac": jac}
    sol = solve_ivp(rhs, (0.0, duration), np.concatenate([q0, v0]), method=method,
                    t_eval=ts, rtol=rtol, atol=atol, **options)
    if not sol.success:
        raise RuntimeError(f"integration failed: {sol.message}")
    return sol.t, sol.y[:nq].T, sol.y[nq:].T


def with_tangent(residual: ca.Function) -> ca.Function:
    """(x, p) -> (r, dr/dx) for a residual r(x, p): the tangent by one forward-mode sweep per
    column, mapped over the columns (exact AD; no Jacobian graph is built: for a chain of three
    8-coordinate LVP bodies building ``jacobian(residual)`` took 675 s on the loaded machine)."""
    n, n_p = residual.size1_in(0), residual.size1_in(1)
    x, p = ca.MX.sym("x", n), ca.MX.sym("p", n_p)
    r = residual(x, p)
    sweeps = residual.forward(1).map(n)
    J = sweeps(ca.repmat(x, 1, n), ca.repmat(p, 1, n), ca.repmat(r, 1, n), ca.DM.eye(n), ca.DM.zeros(n_p, n))
    return ca.Function(f"{residual.name()}_tangent", [x, p], [r, J])


def load_tangent(tree: SoftTree, actuation=None) -> Callable:
    """(q, v, u) -> (K, D): the tangents d/dq and d/dv of the generalized load
    ``h(q, v) - A(q) u`` (``h = C v + g + s``: one IID with zero acceleration plus the
    visco-elastic force; A from ``actuation``, if any) by forward AD, for the Jacobians of the
    implicit integrators. Exact at any velocity: the Coriolis terms and the damping's
    ``eta (dK_e/dq) qdot`` are in K and D, and D damps the elastic stiffness only (never the
    tendons' geometric stiffness nor gravity's)."""
    if tree.nq != tree.nv:
        raise ValueError("the load tangent needs qdot = v (no free flyer)")
    n, m = tree.nv, 0 if actuation is None else actuation.m
    iid, _, elastic = tree.symbolic()
    x, u = ca.MX.sym("x", 2 * n), ca.MX.sym("u", m)
    q, v = x[:n], x[n:]
    load = iid(q, v, ca.MX.zeros(n), ca.DM(-tree.gravity)) + elastic(q, v)
    if actuation is not None:
        load = load - actuation.symbolic_matrix()(q) @ u
    fn = with_tangent(ca.Function("load", [x, u], [load]).expand())

    def tangents(q, v, u=None):
        T = np.array(fn(np.concatenate([q, v]), np.zeros(m) if u is None else u)[1])
        return T[:, :n], T[:, n:]
    return tangents


def newton(fn: ca.Function, x0, p, free: Sequence[int], tol: float = 1e-10, max_iter: int = 50) -> np.ndarray:
    """x with |r(x, p)[free]| < tol by Newton on the coordinates ``free`` (the others held),
    ``fn = with_tangent(r)``; the step is halved while it does not reduce |r|."""
    x, free = np.array(x0, float), np.asarray(free, int)

    def restricted(x):
        r, J = fn(x, p)
        return np.array(r).ravel()[free], np.array(J)[np.ix_(free, free)]
    r, J = restricted(x)
    for _ in range(max_iter):
        if np.abs(r).max() < tol:
            return x
        step, alpha = np.linalg.solve(J, r), 1.0
        while True:
            trial = x.copy()
            trial[free] -= alpha * step
            r_new, J_new = restricted(trial)
            if np.linalg.norm(r_new) < np.linalg.norm(r) or alpha < 1e-3:
                break
            alpha /= 2
        x, r, J = trial, r_new, J_new
    raise RuntimeError(f"Newton did not converge: |residual| = {np.abs(r).max():.2e}")


class Statics:
    """Newton-Raphson for g(q) + s(q, 0) = tau + A(q) u [Pustina 2024, Eq. (55)] on the
    coordinates ``free``; ``actuation`` (an :class:`~hybrid_dynamics.soft.actuation.Actuation`)
    gives A(q), whose change with q enters the tangent. ``residual(q, (tau, u))`` is the traced
    left side minus the loads, for problems that add equations to it."""

    def __init__(self, tree: SoftTree, free: Sequence[int], actuation=None):
        if tree.nq != tree.nv:
            raise ValueError("statics needs qdot = v (no free flyer)")
        self.tree, self.free = tree, np.asarray(free, int)
        self.m = 0 if actuation is None else actuation.m
        iid, _, elastic = tree.symbolic()
        q, load = ca.MX.sym("q", tree.nq), ca.MX.sym("load", tree.nv + self.m)
        tau, u = load[:tree.nv], load[tree.nv:]
        zero = ca.MX.zeros(tree.nv)
        residual = iid(q, zero, zero, ca.DM(-tree.gravity)) + elastic(q, zero) - tau
        if actuation is not None:
            residual = residual - actuation.symbolic_matrix()(q) @ u
        self.residual = ca.Function("statics", [q, load], [residual]).expand()
        self._fn = with_tangent(self.residual)

    def solve(self, q0, tau=None, u=None, tol: float = 1e-10, max_iter: int = 50) -> np.ndarray:
        tau = np.zeros(self.tree.nv) if tau is None else np.asarray(tau, float)
        u = np.zeros(self.m) if u is None else np.asarray(u, float)
        return newton(self._fn, q0, np.concatenate([tau, u]), self.free, tol, max_iter)

    def tangent(self, q, tau=None, u=None) -> np.ndarray:
        """d(g + s - tau - A u)/dq at q (all coordinates, velocity zero)."""
        tau = np.zeros(self.tree.nv) if tau is None else np.asarray(tau, float)
        u = np.zeros(self.m) if u is None else np.asarray(u, float)
        return np.array(self._fn(q, np.concatenate([tau, u]))[1])


def coriolis_matrix(tree: SoftTree) -> Callable:
    """C(q, v) from the Christoffel symbols of M (so that Mdot - 2C is skew)."""
    if tree.nq != tree.nv:
        raise ValueError("C(q, v) by Christoffel symbols needs qdot = v")
    _, mid, _ = tree.symbolic()
    q, v = ca.MX.sym("q", tree.nq), ca.MX.sym("v", tree.nv)
    M, _ = mid(q, v, ca.DM.zeros(3))
    n = tree.nv
    dM = ca.jacobian(ca.vec(M), q)                       # column k: dM/dq_k (vec)
    Mdot = ca.reshape(dM @ v, n, n)
    # C_ij = 1/2 sum_k (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) v_k
    D = [ca.reshape(dM[:, k], n, n) for k in range(n)]
    C = 0.5 * Mdot + 0.5 * ca.horzcat(*[D[j] @ v for j in range(n)]) \
        - 0.5 * ca.horzcat(*[D[i] @ v for i in range(n)]).T
    fn = ca.Function("coriolis", [q, v], [C, Mdot]).expand()
    return lambda qq, vv: tuple(np.array(x) for x in fn(qq, vv))

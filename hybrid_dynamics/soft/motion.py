"""Statics, forward dynamics and the Coriolis matrix of a soft-module tree.

Statics [Pustina 2024, Eq. (55)]: Newton-Raphson on ``g(q) + s(q, 0) = tau + A(q) u`` over
chosen coordinates, with the exact tangent from the traced ID. Forward dynamics [Pustina 2024,
Sec. 5.2]: ``qdd = M^-1 (tau - h)`` with (M, h) from one MID call, integrated by an explicit
Runge-Kutta (scipy DOP853) in (q, v) with qdot = G(q) v.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import casadi as ca
import numpy as np
from scipy.integrate import solve_ivp

from hybrid_dynamics.soft.tree import SoftTree


def forward_dynamics(tree: SoftTree, q, v, tau) -> np.ndarray:
    M, h = tree.mid(q, v)
    return np.linalg.solve(M, np.asarray(tau, float) - h)


def simulate(tree: SoftTree, q0, v0, duration: float, tau: Optional[Callable] = None,
             samples: int = 201, rtol: float = 1e-11, atol: float = 1e-12):
    """(t, q(t), v(t)) from (q0, v0) under generalized forces tau(t, q, v) (default zero)."""
    nq = tree.nq
    tau = tau or (lambda t, q, v: np.zeros(tree.nv))

    def rhs(t, z):
        q, v = z[:nq], z[nq:]
        return np.concatenate([tree.qdot(q, v), forward_dynamics(tree, q, v, tau(t, q, v))])
    ts = np.linspace(0.0, duration, samples)
    sol = solve_ivp(rhs, (0.0, duration), np.concatenate([q0, v0]), method="DOP853",
                    t_eval=ts, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"integration failed: {sol.message}")
    return sol.t, sol.y[:nq].T, sol.y[nq:].T


class Statics:
    """Newton-Raphson for g(q) + s(q, 0) = tau + A(q) u [Pustina 2024, Eq. (55)] on the
    coordinates ``free``; ``actuation`` (an :class:`~hybrid_dynamics.soft.actuation.Actuation`)
    gives A(q), whose change with q enters the tangent."""

    def __init__(self, tree: SoftTree, free: Sequence[int], actuation=None):
        if tree.nq != tree.nv:
            raise ValueError("statics needs qdot = v (no free flyer)")
        self.tree, self.free = tree, np.asarray(free, int)
        self.m = 0 if actuation is None else actuation.m
        iid, _, elastic = tree.symbolic()
        q, u = ca.MX.sym("q", tree.nq), ca.MX.sym("u", self.m)
        zero = ca.MX.zeros(tree.nv)
        residual = iid(q, zero, zero, ca.DM(-tree.gravity)) + elastic(q, zero)
        if actuation is not None:
            residual = residual - actuation.symbolic_matrix()(q) @ u
        self._fn = ca.Function("statics", [q, u], [residual, ca.jacobian(residual, q)]).expand()

    def solve(self, q0, tau=None, u=None, tol: float = 1e-10, max_iter: int = 50) -> np.ndarray:
        q = np.array(q0, float)
        tau = np.zeros(self.tree.nv) if tau is None else np.asarray(tau, float)
        u = np.zeros(self.m) if u is None else np.asarray(u, float)
        for _ in range(max_iter):
            r, K = self._fn(q, u)
            r = np.array(r).ravel()[self.free] - tau[self.free]
            if np.abs(r).max() < tol:
                return q
            q[self.free] -= np.linalg.solve(np.array(K)[np.ix_(self.free, self.free)], r)
        raise RuntimeError(f"statics did not converge: |residual| = {np.abs(r).max():.2e}")


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

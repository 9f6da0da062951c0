"""An independent Euler-Lagrange reference for fixed-base trees of soft-rigid modules: the
world position of every quadrature point is composed from the joint and body maps, and the
equations of motion come from automatic differentiation of the kinetic and potential energy,

    T = 1/2 sum_k w_k |d/dt p_k(q)|^2,   V = - sum_k w_k g . p_k(q),
    Q = d/dt dT/dqdot - dT/dq + dV/dq = M qdd + c + g,

with no use of the recursion, its frames or its integrals [Pustina 2024, Sec. 7.3, App. A.4].
"""
from __future__ import annotations

import casadi as ca
import numpy as np

from hybrid_dynamics.soft.symbolic import segment
from hybrid_dynamics.soft.tree import SoftTree


class LagrangeReference:
    """(M, Q) from energies; only for joints with qdot = v (no free flyer)."""

    def __init__(self, tree: SoftTree):
        if any(m.joint.nq != m.joint.nv for m in tree.modules):
            raise ValueError("the Euler-Lagrange reference needs qdot = v (no quaternion joints)")
        q, qd, qdd = ca.SX.sym("q", tree.nq), ca.SX.sym("qd", tree.nq), ca.SX.sym("qdd", tree.nq)
        frames, points = [], []
        for i, m in enumerate(tree.modules):
            qi = segment(q, tree.qslice[i].start, tree.qslice[i].stop)
            qJ, qB = segment(qi, 0, m.joint.nq), segment(qi, m.joint.nq, m.nq)
            RJ, tJ = m.joint.transform(qJ)
            RB, tB = m.body.distal_transform(qB)
            p = tree.parent[i]
            Rp, tp = frames[p] if p >= 0 else (ca.SX.eye(3), ca.SX.zeros(3))
            Rj, tj = Rp @ RJ, tp + Rp @ tJ                      # joint frame in the world
            Ri, ti = Rj @ RB, tj + Rj @ tB                       # distal frame in the world
            frames.append((Ri, ti))
            P = m.body.local_points(qB)
            for k, wk in enumerate(m.body.weights):
                points.append((wk, ti + Ri @ P[3 * k:3 * k + 3]))
        g = ca.DM(tree.gravity)
        kinetic = sum(0.5 * wk * ca.sumsqr(ca.jtimes(pk, q, qd)) for wk, pk in points)
        potential = -sum(wk * ca.dot(g, pk) for wk, pk in points)
        dTdqd = ca.gradient(kinetic, qd)
        M = ca.jacobian(dTdqd, qd)
        Q = M @ qdd + ca.jacobian(dTdqd, q) @ qd - ca.gradient(kinetic, q) + ca.gradient(potential, q)
        self._fn = ca.Function("lagrange", [q, qd, qdd], [M, Q])
        self._energy = ca.Function("energy", [q, qd], [kinetic, potential])

    def __call__(self, q, qd, qdd):
        """(M, M qdd + c + g) at (q, qd, qdd)."""
        M, Q = self._fn(q, qd, qdd)
        return np.array(M), np.array(Q).ravel()

    def energies(self, q, qd):
        T, V = self._energy(q, qd)
        return float(T), float(V)

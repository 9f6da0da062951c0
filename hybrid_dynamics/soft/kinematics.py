"""Material-point kinematics of a soft-module tree: world position of a material point x of a
body, its Jacobian J(q) with respect to the speeds (it includes the body's deformation
coordinates) and the bias ``Jdot v`` [Pustina 2024, Eq. (67) with qdd = 0]."""
from __future__ import annotations

from typing import List, Sequence, Tuple

import casadi as ca
import numpy as np

from hybrid_dynamics.soft.symbolic import segment
from hybrid_dynamics.soft.tree import SoftTree


def symbolic_points(tree: SoftTree, points: Sequence[Tuple[str, Sequence[float]]], q) -> List:
    """World positions of the material points ``(module name, x)`` at the symbolic q."""
    poses = tree.symbolic_poses(q)
    worlds = []
    for name, x in points:
        i = tree.module_index(name)
        body = tree.modules[i].body
        R, p = poses[i]
        qi = segment(q, tree.qslice[i].start, tree.qslice[i].stop)
        qB = segment(qi, tree.modules[i].joint.nq, tree.modules[i].nq)
        qs = ca.SX.sym("qB", body.nq)
        local = ca.Function("local", [qs], [body.local_points(qs, np.asarray(x, float)[None, :])])
        worlds.append(p + R @ local(qB))
    return worlds


class MaterialPoints:
    """Material points ``(module name, x)`` (reference coordinates), evaluated together."""

    def __init__(self, tree: SoftTree, points: Sequence[Tuple[str, Sequence[float]]]):
        q, v = ca.MX.sym("q", tree.nq), ca.MX.sym("v", tree.nv)
        qd = tree.symbolic_qdot(q, v)
        worlds = symbolic_points(tree, points, q)
        world = ca.vertcat(*worlds)
        J = ca.jacobian(ca.jtimes(world, q, qd), v)
        bias = ca.jtimes(J @ v, q, qd)
        self.count = len(worlds)
        self._fn = ca.Function("points", [q, v], [world, J, bias]).expand()

    def __call__(self, q, v) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(world positions (3k), J (3k x nv), Jdot v (3k)), points stacked in order."""
        p, J, b = self._fn(q, v)
        return np.array(p).ravel(), np.array(J), np.array(b).ravel()


class MaterialPoint(MaterialPoints):
    """A material point ``x`` (reference coordinates) of the body of module ``name``."""

    def __init__(self, tree: SoftTree, name: str, x):
        super().__init__(tree, [(name, x)])

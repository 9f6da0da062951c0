"""Joints of soft-rigid modules [Pustina 2024, Sec. 3.1]: a constant placement in the parent's
distal frame followed by a 0-6 DoF motion.

A joint gives, symbolically, its transform ``T_J(q_J)`` and the map ``qdot = G(q_J) v_J`` from
its generalized speeds to the derivative of its coordinates. Serial axes (revolute/prismatic,
0 to 6 of them) have ``v = qdot``; the free flyer stores a unit quaternion and uses the body
twist (linear, angular) in its own frame as speeds, Pinocchio's local-velocity convention.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence, Tuple

import casadi as ca
import numpy as np

from hybrid_dynamics.soft.symbolic import quaternion_rate, quaternion_rotation, se3_exp


@dataclass(frozen=True)
class Placement:
    """A constant transform (rotation, translation) of the joint in its parent frame."""
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))


class Joint:
    """Base of every joint: sizes, a symbolic transform and the coordinate-rate map."""
    nq: int = 0
    nv: int = 0

    def __init__(self, placement: Placement = Placement()):
        self.placement = placement

    def motion(self, q) -> Tuple[ca.SX, ca.SX]:
        """(R, t) of the joint motion alone, after the placement."""
        return ca.SX.eye(3), ca.SX.zeros(3)

    def qdot(self, q, v):
        """Time derivative of the joint coordinates for the speeds ``v``."""
        return v

    def transform(self, q):
        """(R, t) of ``placement * motion(q)`` in the parent frame."""
        Rm, tm = self.motion(q)
        R0 = ca.DM(self.placement.rotation)
        return R0 @ Rm, ca.DM(self.placement.translation) + R0 @ tm

    def neutral(self) -> np.ndarray:
        return np.zeros(self.nq)


class FixedJoint(Joint):
    """No motion: the body is rigidly fixed to the parent's distal frame."""


class AxesJoint(Joint):
    """0 to 6 one-DoF primitives applied in sequence, each ('revolute'|'prismatic', axis)."""

    def __init__(self, axes: Sequence[Tuple[str, Sequence[float]]],
                 placement: Placement = Placement()):
        super().__init__(placement)
        if len(axes) > 6:
            raise ValueError(f"a joint has at most 6 axes, got {len(axes)}")
        self.axes = [(kind, np.asarray(axis, float) / np.linalg.norm(axis)) for kind, axis in axes]
        self.nq = self.nv = len(self.axes)

    def motion(self, q):
        R, t = ca.SX.eye(3), ca.SX.zeros(3)
        for k, (kind, axis) in enumerate(self.axes):
            xi = ca.vertcat(ca.DM(axis) * q[k], ca.DM.zeros(3)) if kind == "revolute" \
                else ca.vertcat(ca.DM.zeros(3), ca.DM(axis) * q[k])
            Rk, tk = se3_exp(xi)
            R, t = R @ Rk, t + R @ tk
        return R, t


class FreeFlyerJoint(Joint):
    """6 DoF: q = (position, quaternion xyzw), v = (linear, angular) twist in the joint frame."""
    nq, nv = 7, 6

    def motion(self, q):
        return quaternion_rotation(q[3:7]), q[0:3]

    def qdot(self, q, v):
        return ca.vertcat(quaternion_rotation(q[3:7]) @ v[0:3], quaternion_rate(q[3:7], v[3:6]))

    def neutral(self) -> np.ndarray:
        return np.array([0, 0, 0, 0, 0, 0, 1.0])


def revolute(axis, placement: Placement = Placement()) -> AxesJoint:
    return AxesJoint([("revolute", axis)], placement)


def prismatic(axis, placement: Placement = Placement()) -> AxesJoint:
    return AxesJoint([("prismatic", axis)], placement)

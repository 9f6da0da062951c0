"""Base position and orientation tasks on the base acceleration ``dv[0:6]`` (local frame).

Pinocchio's base velocity is local: ``v[0:3]`` the origin's velocity and ``v[3:6] = w`` the
angular velocity, both in the base frame. With ``R`` the base orientation,

    world classical acceleration of the origin:  p̈ = R (dv[0:3] + w x v[0:3])
    world angular acceleration:                   ẇ_world = R dv[3:6]

Since R is orthogonal, ``|| p̈ - p̈_des ||^2 = || dv[0:3] - (R^T p̈_des - w x v[0:3]) ||^2``: the
Hessian block is ``w I`` (constant). Orientation error ``e = log(R_ref R^T)`` (world),
``ẇ_des = ẇ_ref + kp e + kd (w_ref - R w)``.
"""
from __future__ import annotations

import numpy as np

from .. import kernels
from .base import Task


class BasePositionTask(Task):
    name = "base_position"
    constant_hessian = True

    def active(self, refs) -> bool:
        return self.weight > 0.0 and refs.base_position is not None

    def add_hessian(self, H, layout) -> None:
        H[0:3, 0:3] += self.weight * np.eye(3)

    def add_gradient(self, g, state, layout, refs) -> None:
        t = refs.base_position
        R = state.base_rotation
        v = state.v_m
        a_des = t.acceleration + self.kp * (t.position - state.base_translation) + self.kd * (t.velocity - R @ v[0:3])
        g[0:3] -= self.weight * (R.T @ a_des - np.cross(v[3:6], v[0:3]))


class BaseOrientationTask(Task):
    name = "base_orientation"
    constant_hessian = True

    def active(self, refs) -> bool:
        return self.weight > 0.0 and refs.base_orientation is not None

    def add_hessian(self, H, layout) -> None:
        H[3:6, 3:6] += self.weight * np.eye(3)

    def add_gradient(self, g, state, layout, refs) -> None:
        t = refs.base_orientation
        kernels.orientation_gradient(g, t.rotation(), state.base_rotation, state.v_m, t.angular_velocity,
                                     t.angular_acceleration, self.weight, self.kp, self.kd)

"""Joint position and velocity limits turned into joint acceleration bounds.

Over a velocity horizon ``T_v`` and a position horizon ``T`` (both at least the control
period ``dt``; longer, so that the robot brakes before a stop instead of hitting it, and a
joint already over its speed limit is slowed down over ``T_v`` rather than in one cycle):

    velocity:  (v_min - v) / T_v         <= a <= (v_max - v) / T_v
    position:  2 (q_min - q - v T) / T^2 <= a <= 2 (q_max - q - v T) / T^2
    and        |a| <= a_max.

The bounds are the intersection. When it is empty (a joint already past a stop, or moving too
fast to stop in time) the pair is replaced by the gap between them, the least violation.
One compiled call per cycle (:func:`~hybrid_dynamics.control.kernels.joint_acceleration_bounds`).
These rows are *soft*: if the QP with them is infeasible, the same cycle solves again with a
slack per row (weight ``slack_weight``): physics (dynamics, cones, torque limits) stays hard.
"""
from __future__ import annotations

from .. import kernels
from .base import Constraint


class JointLimits(Constraint):
    lazy = True
    name = "joint_limits"
    soft = True

    def __init__(self, joints, dt: float, horizon: float, a_max: float, velocity_horizon: float = 0.0):
        self.joints = joints
        self.dt = max(float(dt), float(velocity_horizon))
        self.T = max(float(horizon), float(dt))
        self.a_max = float(a_max)

    def rows(self, layout) -> int:
        return len(self.joints.v_cols)

    def setup(self, C, lo, hi, layout) -> None:
        C[:] = 0.0
        for r, col in enumerate(self.joints.v_cols):
            C[r, col] = 1.0

    def fill(self, C, lo, hi, state, layout) -> None:
        js = self.joints
        kernels.joint_acceleration_bounds(lo, hi, state.q_joints, state.v_joints, js.q_min, js.q_max,
                                          js.v_max, self.T, self.dt, self.a_max)

"""Joint position and velocity limits turned into joint acceleration bounds.

Over a velocity horizon ``T_v`` and a position horizon ``T`` (both at least the control
period ``dt``; longer, so that the robot brakes before a stop instead of hitting it, and a
joint already over its speed limit is slowed down over ``T_v`` rather than in one cycle):

    velocity:  (v_min - v) / T_v         <= a <= (v_max - v) / T_v
    position:  2 (q_min - q - v T) / T^2 <= a <= 2 (q_max - q - v T) / T^2
    and        |a| <= a_max.

The bounds are the intersection. When it is empty (a joint moving too fast to stop in time)
the pair is replaced by the gap between them, the least violation.

**A joint already past a stop is only stopped, not sent back**: its position bound takes the
stop where the joint stands, ``q_max <- max(q_max, q)`` (``q_min <- min(q_min, q)``), so it
asks ``a <= -2 v / T``: brake to rest within ``T``, go no further. A stance leg pushed past its
stop by the body's weight (MuJoCo's joint limits are soft: a tibia 0.016 rad past its 2.40 rad
stop with the body down on the floor) was asked to be back inside within ``T``, which the held
foot forbids: the hard QP was infeasible and its slack problem solved every such cycle
(jethexa campaign, legs 1+3 lost at phase 1: 68 cycles). A joint inside its range keeps the
full bound.
One compiled call per cycle (:func:`~hybrid_dynamics.control.kernels.joint_acceleration_bounds`).
These rows are *soft*: if the QP with them is infeasible, the same cycle solves again with a
slack per row (weight ``slack_weight``): physics (dynamics, cones, torque limits) stays hard.

**Legs in the air are bounded by their torque limits only.** The joints that carry no
contact in stance in this layout (every contact on their path from the base is in swing or
landing) get no acceleration bound here. Bounded (by position, speed, or ``a_max`` alone), they turn a swing-foot task into a pull on the base: a
foot in the air asked to move faster than its joints may (after a loss the feet in the air
land 6-10 cm away within 50 ms) is moved by accelerating the whole body, which the QP then
pays for with the stance forces. Traced on legs 1+3 lost at phase 1 (declared, jethexa
campaign): the QP pushed the two stance feet to 30 and 22 N, threw the body up at 0.3 m/s,
then gave them 2-7 N of the 21 N weight while the landing legs' joints sat on their speed
bounds, and the body fell; with those legs' rows freed it walks on (with ``|a| <= a_max``
kept on them it still fell: the landing asks its joints for thousands of rad/s^2). Their
stops are the hardware's (MuJoCo's joint ranges in simulation), their accelerations bounded
by the torque limits (constraints/actuation_limits.py); a leg that carries the body keeps all
its bounds.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from .. import kernels
from .base import INF, Constraint


class JointLimits(Constraint):
    lazy = True
    name = "joint_limits"
    soft = True

    def __init__(self, joints, dt: float, horizon: float, a_max: float, velocity_horizon: float = 0.0,
                 carriers: Sequence[Sequence[int]] = ()):
        # carriers[i]: the rows (joints) on the path from the base to contact i
        self.joints = joints
        self.dt = max(float(dt), float(velocity_horizon))
        self.T = max(float(horizon), float(dt))
        self.a_max = float(a_max)
        self.carriers = [list(rows) for rows in carriers]
        self._in_the_air: Dict[Tuple[bool, ...], np.ndarray] = {}

    def rows(self, layout) -> int:
        return len(self.joints.v_cols)

    def setup(self, C, lo, hi, layout) -> None:
        C[:] = 0.0
        for r, col in enumerate(self.joints.v_cols):
            C[r, col] = 1.0

    def fill(self, C, lo, hi, state, layout) -> None:
        js = self.joints
        kernels.joint_acceleration_bounds(lo, hi, state.q_joints, state.v_joints, js.q_min, js.q_max,
                                          js.v_max, self.in_the_air(layout.stance), self.T, self.dt,
                                          self.a_max, INF)

    def in_the_air(self, stance: Tuple[bool, ...]) -> np.ndarray:
        """Rows of the joints that carry contacts, none of them in stance (module docstring)."""
        rows = self._in_the_air.get(stance)
        if rows is None:
            carrying: List[int] = [k for i, path in enumerate(self.carriers) if stance[i] for k in path]
            rows = np.array(sorted({k for i, path in enumerate(self.carriers) if not stance[i]
                                    for k in path} - set(carrying)), np.intp)
            self._in_the_air[stance] = rows
        return rows

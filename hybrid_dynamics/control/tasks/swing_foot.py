"""Swing-foot trajectory task: a contact frame that is not in stance follows a target.

Classical acceleration of the frame origin (world): ``p̈ = J6[:3] dv + drift[:3]``;
``p̈_des = p̈_ref + kp (p_ref - p) + kd (ṗ_ref - ṗ)``. A surface contact (a sole) also has its
angular velocity damped, ``ẇ_des = -kd w``, so that it lands flat. The Hessian ``w J^T J``
changes with the configuration, so this task adds both terms every cycle.
"""
from __future__ import annotations

import numpy as np

from .base import Task, add_least_squares


class SwingFootTask(Task):
    name = "swing_foot"

    def active(self, refs) -> bool:
        return self.weight > 0.0 and bool(refs.swing_feet)

    def add(self, H, g, state, layout, refs) -> None:
        cols = slice(0, layout.n)
        for i, c in enumerate(state.contacts):
            if layout.stance[i]:
                continue
            t = refs.swing_feet.get(c.frame)
            if t is None:
                continue
            vel = state.frame_velocity(i)
            a_des = t.acceleration + self.kp * (t.position - state.frame_position(i)) + self.kd * (t.velocity - vel[:3])
            J, drift = state.J6[i], state.drift[i]
            if c.kind == "surface":
                a6 = np.concatenate([a_des, -self.kd * vel[3:]])
                add_least_squares(H, g, self.weight, J, a6 - drift, cols)
            else:
                add_least_squares(H, g, self.weight, J[:3], a_des - drift[:3], cols)

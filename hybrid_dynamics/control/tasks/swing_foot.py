"""Swing-foot trajectory task: a contact frame that is not in stance follows a target.

Classical acceleration of the frame origin (world): ``p̈ = J6[:3] dv + drift[:3]``;
``p̈_des = p̈_ref + kp (p_ref - p) + kd (ṗ_ref - ṗ)``. A surface contact (a sole) also has its
angular velocity damped, ``ẇ_des = -kd w``, so that it lands flat. The Hessian ``w J^T J``
changes with the configuration, so this task adds both terms every cycle.

Every swing foot's rows go into one stacked Jacobian ``J`` (3 rows per point foot, 6 per
sole) and one stacked target, so that the task costs one gather and two products whatever
the number of feet in the air: ``H += w J^T J``, ``g -= w J^T (a_des - drift)``.
"""
from __future__ import annotations

import numpy as np

from .base import Task


class SwingFootTask(Task):
    name = "swing_foot"

    def active(self, refs) -> bool:
        return self.weight > 0.0 and bool(refs.swing_feet)

    def add(self, H, g, state, layout, refs) -> None:
        feet = [(i, t) for i, t in ((i, refs.swing_feet.get(layout.contacts[i].frame))
                                    for i in layout.swing_contacts) if t is not None]
        if not feet:
            return
        k = [layout.contacts[i].n_rows for i, _ in feet]
        J = np.concatenate([state.J6[i][:r] for (i, _), r in zip(feet, k)])
        vel = J @ state.v_m                     # the feet's velocities (linear, angular)
        b = -self.kd * vel                      # -kd w on the angular rows of a sole
        b -= np.concatenate([state.drift[i][:r] for (i, _), r in zip(feet, k)])
        o = 0
        for (i, t), r in zip(feet, k):
            b[o:o + 3] += t.acceleration + self.kp * (t.position - state.frame_position(i)) + self.kd * t.velocity
            o += r
        wJt = self.weight * J.T
        n = layout.n
        H[:n, :n] += wJt @ J
        g[:n] -= wJt @ b

"""Torque limits on the eliminated torques.

The actuated rows of the dynamics give ``tau = M_a dv + h_a - J_a^T f``; the limits
``-tau_max <= tau <= tau_max`` (URDF effort limits, scaled) are therefore the rows

    -tau_max - h_a <= [M_a, -J_a^T] x <= tau_max - h_a.

For closed chains ``tau`` are the actuated-joint torques of the projected dynamics; the
actuator forces follow from them through the transmission (lead, efficiency), so a force limit
is a torque limit here.
"""
from __future__ import annotations

import numpy as np

from .. import kernels
from .base import Constraint


class ActuationLimits(Constraint):
    lazy = True
    name = "actuation_limits"

    def __init__(self, tau_max: np.ndarray):
        self.tau_max = np.asarray(tau_max, float)

    def rows(self, layout) -> int:
        return len(layout.act)

    def fill(self, C, lo, hi, state, layout) -> None:
        kernels.dynamics_rows(C, lo, hi, state.M, state.h, layout.Jf, layout.act, layout.n,
                              -1.0, 1.0, self.tau_max)

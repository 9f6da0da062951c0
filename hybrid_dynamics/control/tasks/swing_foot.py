"""Swing-foot trajectory task: a contact frame that is not in stance follows a target.

Classical acceleration of the frame origin (world): ``p̈ = J6[:3] dv + drift[:3]``;
``p̈_des = p̈_ref + kp (p_ref - p) + kd (ṗ_ref - ṗ)``. A surface contact (a sole) also has its
angular velocity damped, ``ẇ_des = -kd w``, so that it lands flat. The Hessian ``w J^T J``
changes with the configuration, so this task adds both terms every cycle.

Every swing foot's rows are stacked into one ``J`` (3 rows per point foot, 6 per sole) and one
target, ``H += w J^T J``, ``g -= w J^T (a_des - drift)``, in one compiled call
(:func:`~hybrid_dynamics.control.kernels.swing_feet`, which reads the feet's positions from
the model update's ``frame_p``); here only the targets are gathered (:meth:`SwingFootTask.targets`,
which the formulation's one compiled call per cycle reads too: control/assembly.py).
"""
from __future__ import annotations

import numpy as np

from .. import kernels
from .base import Task


class SwingFootTask(Task):
    name = "swing_foot"

    def __init__(self, config: dict):
        super().__init__(config)
        self._buffers = {}

    def active(self, refs) -> bool:
        return self.weight > 0.0 and bool(refs.swing_feet)

    def targets(self, layout, refs):
        """(feet, rows per foot, (feet, 3, 3) target position, velocity, acceleration) of the
        swing contacts that have a target this cycle, or None (the arrays are the layout's,
        reused)."""
        targets = refs.swing_feet
        key = (id(layout), tuple(targets))
        buf = self._buffers.get(key, self)          # (self: not seen yet; None: no foot)
        if buf is self:
            contacts = layout.contacts
            feet = [i for i in layout.swing_contacts if contacts[i].frame in targets]
            buf = self._buffers[key] = None if not feet else (
                np.array(feet, np.intp), np.array([contacts[i].n_rows for i in feet], np.intp),
                np.zeros((len(feet), 3, 3)), [contacts[i].frame for i in feet])
        if buf is None:
            return None
        index, nrows, reference, frames = buf
        for j, frame in enumerate(frames):
            reference[j] = targets[frame].stack
        return index, nrows, reference

    def add(self, H, g, state, layout, refs) -> None:
        targets = self.targets(layout, refs)
        if targets is not None:
            feet, nrows, reference = targets
            kernels.swing_feet(H, g, state.J6_stack, state.drift_stack, feet, nrows, state.v_m,
                               state.frame_p, reference, self.weight, self.kp, self.kd)

"""Centroidal momentum task, written on the contact forces.

The centroidal momentum ``h = (m ċ, L_c)`` (Pinocchio's ``data.hg``, world axes at the CoM)
changes only through external forces: ``ḣ = sum_i [f_i; (p_i - c) x f_i] + [m g; 0]``. The task
asks ``ḣ = -kd (h - h_ref)`` (``h_ref`` from ``References.momentum``, zero by default: damp the
momentum), with ``A_f = [I3 ...; [p_i - c]x ...]``.
"""
from __future__ import annotations

import numpy as np

from ...dynamics.lie import skew
from .base import Task


class MomentumTask(Task):
    name = "momentum"

    def add(self, H, g, state, layout, refs) -> None:
        if layout.nf_stance == 0:
            return
        h = state.data.hg.vector
        h_ref = np.zeros(6) if refs.momentum is None else np.asarray(refs.momentum, float)
        dh_des = -self.kd * (h - h_ref)
        dh_des[:3] -= state.mass * state.gravity
        c = state.com
        blocks = []
        for i in layout.stance_contacts:
            for p in state.point_positions(i):
                blocks.append(np.vstack([np.eye(3), skew(p - c)]))
        A = np.hstack(blocks)
        wAt = self.weight * A.T
        H[layout.ff] += wAt @ A
        g[layout.f_stance] -= wAt @ dh_des

"""Contact acceleration of the stance contacts.

A point contact that does not slide has zero classical acceleration, a surface contact
(a sole) zero classical linear and angular acceleration of its frame:

    J6_c dv = -drift_c - kd * v_c     (3 rows for a point, 6 for a surface)

with an optional velocity damping ``kd`` that removes drift of a foot that slipped. With the
fixed (OSQP) layout every contact has its rows; the rows of a swing contact are left free
(``-inf..inf``), so the sparsity pattern never changes with the gait.
"""
from __future__ import annotations

import numpy as np

from .base import INF, Constraint


class ContactAcceleration(Constraint):
    name = "contact_acceleration"
    equality = True

    def __init__(self, kd: float = 0.0):
        self.kd = float(kd)

    def rows(self, layout) -> int:
        return sum(layout.contacts[i].n_rows for i in layout.included)

    def fill(self, C, lo, hi, state, layout) -> None:
        n = layout.n
        inc = layout.included
        if not inc:
            return
        if layout.rows_are_Jf:
            C[:, :n] = layout.Jf
            np.concatenate([state.drift[i][:3] for i in inc], out=lo)
        else:
            k = [layout.contacts[i].n_rows for i in inc]
            np.concatenate([state.J6[i][:r] for i, r in zip(inc, k)], out=C[:, :n])
            np.concatenate([state.drift[i][:r] for i, r in zip(inc, k)], out=lo)
        if self.kd:
            lo += self.kd * np.concatenate([state.frame_velocity(i)[:layout.contacts[i].n_rows] for i in inc])
        np.negative(lo, out=lo)
        if len(layout.swing_rows):
            lo[layout.swing_rows] = -INF
            hi[:] = lo
            hi[layout.swing_rows] = INF
        else:
            hi[:] = lo

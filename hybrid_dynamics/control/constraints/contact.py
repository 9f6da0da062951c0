"""Contact acceleration of the stance contacts.

A point contact that does not slide has zero classical acceleration, a surface contact
(a sole) zero classical linear and angular acceleration of its frame:

    J6_c dv = -drift_c - kd * v_c     (3 rows for a point, 6 for a surface)

with an optional velocity damping ``kd`` that removes drift of a foot that slipped. With the
fixed (OSQP) layout every contact has its rows; the rows of a swing contact are left free
(``-inf..inf``), so the sparsity pattern never changes with the gait.
"""
from __future__ import annotations

from .. import kernels
from .base import INF, Constraint


class ContactAcceleration(Constraint):
    name = "contact_acceleration"
    equality = True

    def __init__(self, kd: float = 0.0):
        self.kd = float(kd)

    def rows(self, layout) -> int:
        return sum(layout.contacts[i].n_rows for i in layout.included)

    def fill(self, C, lo, hi, state, layout) -> None:
        if layout.included:
            kernels.contact_rows(C, lo, hi, state.J6_stack, state.drift_stack, layout.included_index,
                                 layout.included_rows, layout.included_stance, state.v_m, self.kd, INF)

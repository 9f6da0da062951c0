"""Floating-base dynamics: the six unactuated rows of ``M dv + h = S^T tau + J^T f``.

Torques are not variables: the actuated rows give them afterwards,
``tau = M_a dv + h_a - J_a^T f``, so the only dynamics rows in the QP are the base ones,

    M_b dv - J_b^T f = -h_b        (6 equalities; J stacks the stance point Jacobians)

(TSID's ``InverseDynamicsFormulationAccForce`` does the same). For closed chains the rows are
those of the projected dynamics ``G_f^T (M a + h - J^T f)`` ([Mingo Hoffman 2024, Appendix B]).
"""
from __future__ import annotations

from .base import Constraint


class FloatingBaseDynamics(Constraint):
    name = "floating_base_dynamics"
    equality = True

    def rows(self, layout) -> int:
        return 6

    def fill(self, C, lo, hi, state, layout) -> None:
        n = layout.n
        C[:, :n] = state.M[:6]
        if layout.nf:
            C[:, n:] = -layout.Jf[:, :6].T
        lo[:] = -state.h[:6]
        hi[:] = lo

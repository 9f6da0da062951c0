"""Floating-base dynamics: the unactuated rows of ``M dv + h = S^T tau + J^T f``.

Torques are not variables: the actuated rows give them afterwards,
``tau = M_a dv + h_a - J_a^T f``, so the only dynamics rows in the QP are the unactuated ones ``u``,

    M_b dv - J_b^T f = -h_b        (one per unactuated coordinate; J stacks the stance point Jacobians)

(TSID's ``InverseDynamicsFormulationAccForce`` does the same). The unactuated coordinates are
the six of a floating base (none for a fixed one), the deformation coordinates of soft modules
(``soft.condensation: dynamic``) and, for closed chains, the free internal motions with
inertia; the rows are then those of the projected dynamics ``G_f^T (M a + h - J^T f)``
([Mingo Hoffman 2024, Appendix B]).
"""
from __future__ import annotations

from .. import kernels
from .base import Constraint


class FloatingBaseDynamics(Constraint):
    name = "floating_base_dynamics"
    equality = True

    def rows(self, layout) -> int:
        return layout.n_unactuated

    def fill(self, C, lo, hi, state, layout) -> None:
        kernels.dynamics_rows(C, lo, hi, state.M, state.h, layout.Jf, layout.unactuated_rows, layout.n,
                              0.0, 0.0, layout.unactuated_zeros)

"""What every constraint shares: a block of rows ``lo <= C x <= hi`` over ``x = (dv, f)``.

Equality blocks (``lo == hi``: floating-base dynamics, contact accelerations) go to the
equality part of the QP, inequality blocks to the inequality part. ``soft`` blocks (joint
limits) may be relaxed with slack variables when the hard problem is infeasible
(:mod:`hybrid_dynamics.control.formulation`). ``lazy`` blocks (torque and joint limits,
rarely active) may be left out of a first solve and added only if that solution violates
them, which is exact. Each block writes into views of the QP arrays
that the formulation hands it, and never allocates them.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

INF = 1.0e20   # "no bound" for both backends (OSQP treats >= 1e20 as infinite too)


class Constraint(ABC):
    name = "constraint"
    equality = False
    soft = False
    lazy = False      # rarely active: a backend may first solve without these rows

    @abstractmethod
    def rows(self, layout) -> int:
        """Number of rows this block has in ``layout``."""

    def setup(self, C, lo, hi, layout) -> None:
        """Values that only change with the layout (stance pattern), written once."""

    def fill(self, C, lo, hi, state, layout) -> None:
        """Values of this cycle."""

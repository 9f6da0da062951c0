"""What every task shares: a weight, PD gains, and the least-squares accumulation.

A task contributes ``w ||A x - b||^2`` to the QP cost ``1/2 x^T H x + g^T x`` over the
variables ``x = (dv, f)``: ``H += w A^T A``, ``g -= w A^T b`` (a common factor 2 is dropped:
only ratios of weights matter). Tasks whose ``A`` depends only on the stance pattern (posture,
base, CoM, force regularisation) declare ``constant_hessian``: the formulation adds their
``w A^T A`` once per layout and only their gradient each cycle. The others (swing feet,
momentum) add both each cycle.
"""
from __future__ import annotations

import numpy as np


class Task:
    name = "task"
    constant_hessian = False

    def __init__(self, config: dict):
        self.weight = float(config.get("weight", 0.0))
        self.kp = float(config.get("kp", 0.0))
        self.kd = float(config.get("kd", 0.0))

    def active(self, refs) -> bool:
        """Whether this task contributes this cycle (weight > 0 and a reference given). It may
        read ``refs`` only through which fields are set (``References.presence``): the
        formulation keeps the answer per presence (control/formulation.py ``build``)."""
        return self.weight > 0.0

    def add_hessian(self, H: np.ndarray, layout) -> None:
        """``w A^T A`` of a task with a constant Hessian (called once per layout)."""

    def add_gradient(self, g: np.ndarray, state, layout, refs) -> None:
        """``-w A^T b`` of a task with a constant Hessian (called every cycle)."""

    def add(self, H: np.ndarray, g: np.ndarray, state, layout, refs) -> None:
        """Both terms (tasks whose Hessian changes with the state override this)."""
        self.add_hessian(H, layout)
        self.add_gradient(g, state, layout, refs)


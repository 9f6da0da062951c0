"""The interface every QP backend implements, and the slack augmentation of soft rows.

A backend receives a :class:`~hybrid_dynamics.control.formulation.Layout` (the arrays
``H, g, A, b, C, l, u`` and a structure ``key``) and returns a :class:`SolveResult`. It keeps
one solver object per structure key: same key, values are updated and the previous solution
warm-starts the next; a new key (new stance pattern for the dense backend, new morphology for
both) sets a new solver up, warm-started from ``layout.x`` when the caller mapped one there.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional

import numpy as np


@dataclass
class SolveResult:
    x: np.ndarray
    ok: bool
    status: str
    iterations: int
    infeasible: bool = False
    exact: bool = False        # equalities hold to round-off (null-space elimination)
    torques: Optional[tuple] = None   # (tau, finite) of x, computed in the solve's call


class SlackProblem:
    """The layout's QP with a slack ``s`` on every soft inequality row:
    ``l <= C x + s <= u`` and ``weight ||s||^2`` added to the cost."""

    def __init__(self, layout, weight: float):
        rows = layout.soft_rows
        ns = len(rows)
        nx = layout.nx
        self.nx = nx + ns
        self.neq, self.nin = layout.neq, layout.nin
        self.key = layout.key + ("slack",)
        self.H = np.zeros((self.nx, self.nx))
        self.g = np.zeros(self.nx)
        self.A = np.zeros((layout.neq, self.nx))
        self.C = np.zeros((layout.nin, self.nx))
        self.C[rows, nx + np.arange(ns)] = 1.0
        self.H[nx + np.arange(ns), nx + np.arange(ns)] = weight
        self.layout = layout
        self.x = None

    def refresh(self):
        lay = self.layout
        nx = lay.nx
        self.H[:nx, :nx] = lay.H
        self.g[:nx] = lay.g
        self.A[:, :nx] = lay.A
        self.C[:, :nx] = lay.C
        self.b_lo, self.b_hi, self.l, self.u = lay.b_lo, lay.b_hi, lay.l, lay.u
        return self

    @property
    def b(self):
        return self.b_lo


class QPSolver(ABC):
    """Backend interface: ``solve(problem) -> SolveResult``; ``reset()`` forgets every
    prepared structure (a morphology change)."""
    name = "base"

    @abstractmethod
    def solve(self, problem) -> SolveResult:
        """Solve ``problem`` (a Layout or a SlackProblem)."""

    def reset(self) -> None:
        pass

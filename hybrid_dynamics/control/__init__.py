"""Whole-body QP inverse dynamics with friction cones (see controller.py)."""
from .controller import ControlOutput, WholeBodyController
from .references import OrientationTarget, References, Target

__all__ = ["WholeBodyController", "ControlOutput", "References", "Target", "OrientationTarget"]

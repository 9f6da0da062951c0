"""Weighted tasks of the whole-body QP, one per module (as in pink and TSID).

Each task adds ``w ||A x - b||^2`` to the cost; see :mod:`.base`.
"""
from .base import Task
from .base_pose import BaseOrientationTask, BasePositionTask
from .com import ComTask
from .decoupled_centroidal import DecoupledCentroidalTask
from .force_regularization import ForceRegularizationTask
from .internal_impedance import InternalImpedanceTask
from .momentum import MomentumTask
from .posture import PostureTask
from .swing_foot import SwingFootTask

__all__ = ["Task", "ComTask", "BasePositionTask", "BaseOrientationTask", "SwingFootTask",
           "PostureTask", "MomentumTask", "ForceRegularizationTask", "DecoupledCentroidalTask",
           "InternalImpedanceTask"]

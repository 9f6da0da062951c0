"""Locomotion: gait scheduling for any set of legs, swing-foot trajectories, body motion.

:class:`LocomotionPlanner` turns ``/cmd_vel`` and the current morphology into a
:class:`LocomotionReference` (base and CoM targets, swing-foot targets, stance flags) that the
whole-body controller tracks; :class:`JointTracker` is the paper's IK + joint PD baseline.
"""
from .gait import GaitPattern, GaitScheduler, tripod, wave
from .joint_tracker import JointTracker
from .planner import FootReference, LocomotionConfig, LocomotionPlanner, LocomotionReference

__all__ = ["GaitPattern", "GaitScheduler", "tripod", "wave", "JointTracker", "FootReference",
           "LocomotionConfig", "LocomotionPlanner", "LocomotionReference"]

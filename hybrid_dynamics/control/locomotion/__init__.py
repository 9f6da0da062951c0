"""Locomotion: gait scheduling for any set of legs, swing-foot trajectories, body motion.

:class:`LocomotionPlanner` turns ``/cmd_vel`` and the current morphology into a
:class:`LocomotionReference` (base and CoM targets, swing-foot targets, stance flags) that the
whole-body controller tracks.
"""
from .gait import GaitPattern, GaitScheduler, tripod, wave
from .planner import FootReference, LocomotionConfig, LocomotionPlanner, LocomotionReference

__all__ = ["GaitPattern", "GaitScheduler", "tripod", "wave", "FootReference",
           "LocomotionConfig", "LocomotionPlanner", "LocomotionReference"]

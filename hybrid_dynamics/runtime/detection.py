"""The damage detector inside the control cycle: an estimate hook of the
:class:`~hybrid_dynamics.runtime.pipeline.Pipeline`.

Between the cycle's estimate and its command, the momentum observer of
estimation/damage_detector.py takes the estimate of this cycle, the efforts of the joint state
it was made from (the torques applied since the previous cycle), the stance the estimator used
and the IMU sample of the cycle's stamp (told to the fall monitor of
estimation/fall_monitor.py). A detection is handed to :attr:`CycleDetector.handlers` before
the command is computed, so the owner can reassemble the pipeline for it in the same cycle.

The library scenario loop (sim/runner.py) and the whole-body controller node
(ros/whole_body_controller.py, ``detector: true``, in the one-process and the process-per-node
graph alike) run this hook, so a scenario's detection reaches the controller's command in the
same cycle through either. The detector was first run beside the controller, in the morphology
manager on the state estimator's output; there the detection of stamp ``t`` needed the
controller's record of that cycle (its stance) and reached the controller two cycles later:
10 ms more, which made a pair of legs lost in stance fall while the library loop stood
(docs/ros.md). The manager now applies the controller's detections beside declared damage.
"""
from __future__ import annotations

from typing import Callable, List, Mapping, Optional

from ..errors import InputError
from ..estimation.base_estimator import BaseState
from ..estimation.damage_detector import DamageDetector, Detection
from ..estimation.fall_monitor import FallMonitor
from ..model.morphology import Morphology
from .pipeline import Pipeline

# handler(t, detections, the pipeline's morphology with them applied, rejected detections' errors)
DetectionHandler = Callable[[float, List[Detection], Morphology, List[str]], None]


class CycleDetector:
    """The damage detector and its fall monitor on ``pipeline``'s estimates (module docstring)."""

    def __init__(self, robot, pipeline: Pipeline, detector_config: Optional[Mapping] = None,
                 fall_config: Optional[Mapping] = None):
        self.pipeline = pipeline
        self.detector = DamageDetector(robot, detector_config)
        self.fall_monitor = FallMonitor(fall_config)
        self.handlers: List[DetectionHandler] = []
        self.last_stamp: Optional[float] = None     # of the last estimate taken
        pipeline.estimate_hooks.append(self.on_estimate)

    def set_morphology(self, morph: Morphology, t: Optional[float]) -> None:
        """The robot's morphology changed (declared or detected): the observer restarts on it."""
        self.detector.set_morphology(morph, t)

    def on_estimate(self, t: float, est: BaseState) -> None:
        if t == self.last_stamp:
            # a cycle on the joint state of the last one (a timer-driven cycle that came before
            # the next sample): the same evidence, counted once. Counted twice, one low IMU
            # sample made the fall monitor's two in a row, and the detector decided on its
            # falling rules' short evidence (jethexa_soft's chattering pads, docs/soft.md)
            return
        self.last_stamp = t
        state = self.pipeline.state
        falling_since = self.fall_monitor.update(t, state.imu_for(t))
        found = self.detector.update(t, est.q, est.v, state.buffer.tau, state.stance, est.q_soft, est.v_soft,
                                     falling_since=falling_since)
        if not found:
            return
        morph, rejected = self.pipeline.morphology, []
        for detection in found:
            try:
                morph = detection.apply(morph)
            except InputError as exc:
                rejected.append(str(exc))
        for handler in self.handlers:
            handler(t, found, morph, rejected)

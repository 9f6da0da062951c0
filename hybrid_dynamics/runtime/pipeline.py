"""One control cycle, wired once: inputs -> state estimate -> references -> whole-body QP ->
effort command, in the spirit of TSID's formulation / solve / actuator-forces split.

:class:`Pipeline` is what the controller node, ``replay``, the benches and the library
scenario loop call; nothing else wires estimator, planner and controller together::

    pipe = Pipeline(robot, params)            # params: the whole_body_controller's (ros/params.py)
    pipe.add_imu(imu_msg, now)                # or pass them to step()
    cycle = pipe.step(stamp, joint_state_msg) # -> Cycle(command, safe_mode, ...)
    pipe.set_morphology(morphology, t)        # every stage reassembles before the next cycle

A cycle has two stages, :meth:`Pipeline.estimate` then :meth:`Pipeline.command`;
:meth:`Pipeline.step` runs the two in order, with the safe mode (damping) when the inputs are
stale or the cycle fails. Between them it calls the :attr:`Pipeline.estimate_hooks`
(``hook(t, estimate)``): a damage detector that changes the morphology there has the
controller reassembled in the same cycle, and checks on the estimate plug in the same way.
Nothing here imports rclpy: messages are duck-typed (``runtime/inputs.py`` validates them,
and builds message-shaped inputs for callers without ROS).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional

import numpy as np

from ..control.controller import ControlOutput
from ..control.kernels import finite
from ..estimation.base_estimator import BaseState
from ..model.morphology import Morphology
from .control import ControlCore
from .inputs import Rejected
from .references import GaitCore, make_reference_source
from .state import StateCore

CYCLE_ERRORS = (FloatingPointError, np.linalg.LinAlgError, ValueError)


@dataclass
class Cycle:
    """What one :meth:`Pipeline.step` produced. ``command`` is a view on a preallocated
    array (copy it to keep it); ``safe_mode`` says why the damping command was sent (None
    when the QP ran); ``error`` is set when the cycle failed (the estimator was reset);
    ``estimate_time`` and ``control_time`` are the two stages' wall times (s)."""
    command: np.ndarray
    safe_mode: Optional[str] = None
    error: Optional[str] = None
    estimate: Optional[BaseState] = None
    stance: Dict[str, bool] = field(default_factory=dict)
    output: Optional[ControlOutput] = None
    rejected: Optional[Rejected] = None
    estimate_time: float = 0.0
    control_time: float = 0.0


class Pipeline:
    """State estimation, reference source and whole-body control of one robot.

    ``params`` are the controller node's nested parameters (``ros/params.py``): ``estimator``,
    ``contact_detection``, ``controller``, ``joints``, ``contacts``, ``references``, ...
    """

    def __init__(self, robot, params: Mapping):
        self.robot = robot
        self.state = StateCore(robot, params)
        self.control = ControlCore(robot, params)
        # references: the gait (follows /cmd_vel and the morphology), the weight shift of a
        # closed-chain biped, or none (hold where it first stands)
        self.reference_kind, self.references = make_reference_source(robot, params)
        self.gait: Optional[GaitCore] = self.references if self.reference_kind == "gait" else None
        self.morphology = Morphology.healthy(robot)
        self.stance: Dict[str, bool] = dict(self.state.stance)
        self.estimate_hooks: List[Callable[[float, BaseState], None]] = []

    # ---------------------------------------------------------------- inputs
    def add_joint_state(self, msg, now: float) -> Optional[Rejected]:
        return self.state.add_joint_state(msg, now)

    def add_imu(self, msg, now: float) -> Optional[Rejected]:
        return self.state.add_imu(msg, now)

    def set_command(self, vx: float, vy: float, wz: float) -> None:
        """A velocity command (/cmd_vel) for the gait; ignored by other reference sources."""
        if self.gait is not None:
            self.gait.set_command(vx, vy, wz)

    def set_morphology(self, morph: Morphology, t: Optional[float] = None) -> None:
        """Every stage reassembles for ``morph``; ``t`` is when the gait replans (default:
        the last joint-state stamp)."""
        if t is None or not np.isfinite(t):
            t = self.state.buffer.stamp
        self.state.set_morphology(morph)
        self.control.set_morphology(morph)
        if self.gait is not None:
            self.gait.set_morphology(morph, t if np.isfinite(t) else 0.0)
        self.morphology = morph

    # ---------------------------------------------------------------- the cycle
    def estimate(self) -> BaseState:
        """Stage 1: the state at the last joint-state stamp (inputs must not be stale)."""
        est = self.state.estimate()
        if not (finite(est.q) and finite(est.v)):
            raise FloatingPointError("estimate is not finite")
        return est

    def command(self, est: BaseState) -> np.ndarray:
        """Stage 2: references for the estimate, then the QP's effort command."""
        stance = self.state.stance
        if self.references is not None:
            refs, stance = self.references.update(self.state.buffer.stamp, est)
            self.control.set_references(refs)
            self.state.schedule = stance      # the estimator's contacts: the plan
        self.stance = stance
        return self.control.cycle(est, stance)

    def step(self, stamp: float, joint_state=None, imu=None, use_stamps: bool = False) -> Cycle:
        """Feed the given messages (``stamp``: receive time), then run one cycle. With
        ``use_stamps`` staleness is judged on message stamps (lock-step runs, replay)."""
        rejected = None
        if imu is not None:
            rejected = self.add_imu(imu, stamp)
        if joint_state is not None:
            rejected = self.add_joint_state(joint_state, stamp) or rejected
        reason = self.state.stale(stamp, use_stamps=use_stamps)
        error = est = None
        t0 = t1 = time.perf_counter()
        if reason is None:
            try:
                est = self.estimate()
                for hook in self.estimate_hooks:
                    hook(self.state.buffer.stamp, est)
                t1 = time.perf_counter()
                cmd = self.command(est)
            except CYCLE_ERRORS as exc:
                self.state.estimator.reset()
                error = str(exc)
                reason = f"cycle failed: {exc}"
        if reason is not None:
            vj = self.state.safe_velocities(stamp, use_stamps)
            return Cycle(self.control.safe(vj), reason, error, rejected=rejected)
        return Cycle(cmd, None, None, est, self.stance, self.control.last_output, rejected,
                     t1 - t0, time.perf_counter() - t1)

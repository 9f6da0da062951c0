"""Closed-chain balance references: a biped with closed linkages standing and shifting its
weight (Mingo Hoffman et al.'s (2024) hardware test: the CoM moves laterally over one foot and
back).

:class:`WeightShift` is the lateral CoM motion, :class:`WeightShiftReference` the controller's
references for it (CoM held where the robot stands plus the shift, base level, every foot
down). The control cycle that tracks them is the runtime :class:`~hybrid_dynamics.runtime.
pipeline.Pipeline` with ``references: weight_shift`` (passive-state completion
[Mingo Hoffman 2024, Sec. VI-A], base estimator, these references, the QP on the projected
dynamics, actuator forces out).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional

import numpy as np
import pinocchio as pin

from ..errors import InputError, reject_unknown_settings
from .references import OrientationTarget, References, Target


@dataclass
class WeightShift:
    """Lateral CoM motion: ``stand`` s still, then ``cycles`` shifts of ``period`` s each,
    alternately towards the left foot (+y) and the right foot (-y), each
    ``y = +-amplitude (1 - cos(2 pi tau / period)) / 2`` (over the foot and back, zero velocity
    at both ends), then still again."""
    stand: float = 2.0          # s
    amplitude: float = 0.06     # m (the feet are 0.10 m either side of the pelvis centre)
    period: float = 4.0         # s, one shift out and back
    cycles: int = 4

    @classmethod
    def from_dict(cls, data: Optional[Mapping] = None) -> "WeightShift":
        data = dict(data or {})
        reject_unknown_settings(cls, data, "weight-shift", "balance")
        out = cls(**{k: (int(v) if k == "cycles" else float(v)) for k, v in data.items()})
        if out.period <= 0 or out.stand < 0 or out.cycles < 0 or out.amplitude < 0:
            raise InputError("weight shift: period > 0, stand, cycles, amplitude >= 0", field="balance")
        return out

    @property
    def end(self) -> float:
        return self.stand + self.cycles * self.period

    def offset(self, t: float):
        """(y, y_dot, y_ddot) of the CoM offset at ``t`` s after the start."""
        tau = t - self.stand
        if tau <= 0.0 or tau >= self.cycles * self.period:
            return 0.0, 0.0, 0.0
        k = int(tau // self.period)
        sign = 1.0 if k % 2 == 0 else -1.0
        w = 2 * math.pi / self.period
        ph = w * (tau - k * self.period)
        a = sign * self.amplitude / 2
        return a * (1 - math.cos(ph)), a * w * math.sin(ph), a * w * w * math.cos(ph)


class WeightShiftReference:
    """The references of the weight shift: CoM held where the robot stands when it starts
    (heading as it is, base level), plus :class:`WeightShift`'s lateral offset; every foot
    stays down (the reference source ``weight_shift`` of runtime/references.py)."""

    def __init__(self, robot, shift: Optional[WeightShift] = None):
        self.robot = robot
        self.shift = shift or WeightShift()
        self.model = robot.model
        self.data = self.model.createData()
        self.stance = {c.frame: True for c in robot.contacts}
        self.t0: Optional[float] = None
        self.com0: Optional[np.ndarray] = None
        self.yaw0 = np.array([0.0, 0.0, 0.0, 1.0])
        # one References for the whole run, its CoM target written in place each cycle (a new
        # one per cycle, the orientation's normalisation and matrix with it, was about 15 us)
        self._refs: Optional[References] = None
        self._lateral = np.array([0.0, 1.0, 0.0])

    @property
    def started(self) -> bool:
        return self.t0 is not None

    def start(self, t: float, q: np.ndarray) -> None:
        """Hold where the robot stands at ``t`` (estimated configuration ``q``, full size)."""
        self.t0 = float(t)
        self.com0 = pin.centerOfMass(self.model, self.data, q).copy()
        R = pin.Quaternion(q[6], *q[3:6]).toRotationMatrix()
        yaw = math.atan2(R[1, 0], R[0, 0])
        self.yaw0 = np.array([0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)])
        self._refs = References(com=Target(self.com0), base_orientation=OrientationTarget(self.yaw0))

    def reference(self, t: float) -> References:
        """The references at ``t`` (the same object every cycle, updated in place)."""
        y, yd, ydd = self.shift.offset(t - self.t0)
        com, e = self._refs.com, self._lateral
        np.multiply(e, y, out=com.position)
        com.position += self.com0
        np.multiply(e, yd, out=com.velocity)
        np.multiply(e, ydd, out=com.acceleration)
        return self._refs

    def update(self, t: float, estimate):
        """(References, stance) at ``t`` for the state estimate (a ``BaseState``); the first
        call starts the hold at its ``q``."""
        if self.t0 is None:
            self.start(t, estimate.q)
        return self.reference(t), self.stance

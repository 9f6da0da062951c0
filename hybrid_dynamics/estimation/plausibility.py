"""Plausibility limits on sensor inputs: a finite value no robot can produce is rejected
like a NaN, before it reaches a filter.

A joint state or an IMU sample can be finite, well formed and absurd (a velocity of
1e308 rad/s, an acceleration of 1e308 m/s^2, a stamp a day ahead). Accepted, one such sample
drives a Kalman filter's state to ~1e306, which the filter takes thousands of cycles to
forget, and the QP fails on the state all that time. The limits:

joint position   outside the URDF ``lower``/``upper`` limits widened by ``position_margin``
                 (rad or m; encoders overshoot soft limits, a fallen robot is not absurd)
joint velocity   beyond ``velocity_factor`` x the URDF ``velocity`` limit
                 (``default_velocity`` where the URDF gives none, i.e. 0)
joint effort     beyond ``effort_factor`` x the URDF ``effort`` limit (``default_effort``)
IMU rate         any axis beyond ``max_angular_velocity`` (rad/s; 100, three times the
                 2000 deg/s of the widest common MEMS gyroscopes)
IMU acceleration any axis beyond ``max_linear_acceleration`` (m/s^2; 1000, about 100 g:
                 beyond common 16 g sensors, with room for a simulator's contact impacts)
stamps           (:class:`StampGate`) older than the last accepted one, or ahead of it by
                 more than the receive clock advanced plus ``stamp_lead``; ``reanchor_after``
                 refused stamps in a row that agree with one another are accepted as a new
                 clock (a restarted source), so one wild stamp cannot lock a stream out

The factors and ranges are parameters (``limits.*`` of the state estimator and the
controller, docs/ros.md); the defaults reject only what no sensor produces.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np
from numba import float64, intp, njit

from ..errors import reject_unknown_settings

_NONE = np.zeros(0)        # a message without velocities or efforts: nothing to check


@njit(intp(intp[:], float64[:], float64[:], float64[:], float64[:], float64[:], float64[:], float64[:]),
      cache=True)
def _first_violation(dst, position, velocity, effort, q_lo, q_hi, v_max, tau_max):
    """-1, or ``3 i + k`` for the first implausible entry ``i`` of a message (``k`` 0: position
    outside [q_lo, q_hi]; 1: |velocity| above v_max; 2: |effort| above tau_max; in that order;
    an empty velocity or effort array is not checked): one compiled call per joint state
    instead of a dozen numpy gathers and comparisons."""
    n = dst.shape[0]
    for i in range(n):
        if position[i] < q_lo[dst[i]] or position[i] > q_hi[dst[i]]:
            return 3 * i
    for k, values, bound in ((1, velocity, v_max), (2, effort, tau_max)):
        if values.shape[0]:
            for i in range(n):
                if abs(values[i]) > bound[dst[i]]:
                    return 3 * i + k
    return -1


@dataclass
class PlausibilityConfig:
    """Margins and ranges beyond which an input sample is rejected."""
    position_margin: float = 0.5            # rad or m beyond the URDF position limits
    velocity_factor: float = 5.0            # x the URDF velocity limit
    default_velocity: float = 100.0         # rad/s or m/s where the URDF gives no limit
    effort_factor: float = 3.0              # x the URDF effort limit
    default_effort: float = 1.0e4           # N m or N where the URDF gives no limit
    max_angular_velocity: float = 100.0     # rad/s, each gyroscope axis (3x a 2000 deg/s range)
    max_linear_acceleration: float = 1000.0  # m/s^2, each accelerometer axis (~100 g)
    stamp_lead: float = 0.2                 # s a stamp may run ahead of the receive clock
    reanchor_after: int = 3                 # consistent refused stamps in a row: a new clock

    @classmethod
    def from_dict(cls, data: Optional[Mapping] = None) -> "PlausibilityConfig":
        data = dict(data or {})
        reject_unknown_settings(cls, data, "plausibility", "limits")
        return cls(**{k: type(getattr(cls, k))(v) for k, v in data.items()})


@dataclass(frozen=True)
class Violation:
    """One implausible value: ``field`` (position, velocity, effort, angular_velocity,
    linear_acceleration, stamp), the joint or axis, the value and the bound it broke."""
    field: str
    name: str
    value: float
    bound: str

    def __str__(self) -> str:
        return f"{self.field} of {self.name} = {self.value:.6g} outside {self.bound}"


def _limit(urdf: np.ndarray, factor: float, default: float) -> np.ndarray:
    """factor x the URDF limit; ``default`` where the URDF gives none (0, inf or NaN)."""
    ok = np.isfinite(urdf) & (urdf > 0)
    return np.where(ok, factor * np.where(ok, urdf, 0.0), default)


class InputLimits:
    """The limits of :class:`PlausibilityConfig` for the 1-DoF joints ``joints`` of ``robot``
    (any order: a message's values are checked through the caller's index ``dst``)."""

    AXES = ("x", "y", "z")

    def __init__(self, robot, joints: Sequence[str], config: Optional[PlausibilityConfig | Mapping] = None):
        cfg = config if isinstance(config, PlausibilityConfig) else PlausibilityConfig.from_dict(config)
        self.config = cfg
        model = robot.model
        jts = [model.joints[model.getJointId(n)] for n in joints]
        iq = np.array([j.idx_q for j in jts], dtype=int)
        iv = np.array([j.idx_v for j in jts], dtype=int)
        self.joints = list(joints)
        self.q_lo = model.lowerPositionLimit[iq] - cfg.position_margin
        self.q_hi = model.upperPositionLimit[iq] + cfg.position_margin
        self.v_max = _limit(model.velocityLimit[iv], cfg.velocity_factor, cfg.default_velocity)
        self.tau_max = _limit(model.effortLimit[iv], cfg.effort_factor, cfg.default_effort)
        self.w_max = cfg.max_angular_velocity
        self.a_max = cfg.max_linear_acceleration

    def check_joints(self, dst: np.ndarray, position: np.ndarray, velocity: Optional[np.ndarray],
                     effort: Optional[np.ndarray]) -> Optional[Violation]:
        """The first implausible value of a message whose entries are joints ``dst``, or None."""
        code = _first_violation(dst, position, _NONE if velocity is None else velocity,
                                _NONE if effort is None else effort, self.q_lo, self.q_hi, self.v_max, self.tau_max)
        if code < 0:
            return None
        i, kind = divmod(int(code), 3)
        j = dst[i]
        if kind == 0:
            return Violation("position", self.joints[j], float(position[i]),
                             f"[{self.q_lo[j]:.4g}, {self.q_hi[j]:.4g}] (limits +- {self.config.position_margin:g})")
        label, values, bound, factor = (("velocity", velocity, self.v_max, self.config.velocity_factor),
                                        ("effort", effort, self.tau_max, self.config.effort_factor))[kind - 1]
        return Violation(label, self.joints[j], float(values[i]), f"+-{bound[j]:.4g} ({factor:g} x the URDF limit)")

    def check_imu(self, angular_velocity: Sequence[float], linear_acceleration: Sequence[float]) -> Optional[Violation]:
        """The first implausible IMU axis, or None (plain floats: no numpy per sample)."""
        for label, values, bound in (("angular_velocity", angular_velocity, self.w_max),
                                     ("linear_acceleration", linear_acceleration, self.a_max)):
            for axis, x in zip(self.AXES, values):
                if abs(x) > bound:
                    return Violation(label, axis, float(x), f"+-{bound:g} (the sensor's range)")
        return None


class StampGate:
    """Admits the stamps of one input stream (module docstring, ``stamps``).

    ``admit(stamp, now)`` records an accepted stamp and returns None, or says why it is
    refused (a :class:`Violation` of field ``stamp``). ``stamp`` is the last accepted stamp,
    ``received`` its receive time (``now`` of the caller's clock). Refused stamps are sorted
    into runs of stamps consistent with one another (each in order and within the lead of the
    run's last one; up to ``CANDIDATES`` runs at once, the oldest dropped); a run that reaches
    ``reanchor_after`` stamps is a clock of its own (a restarted source, or the honest stream
    after a wild stamp got in) and is accepted. Random wild stamps do not form runs, and
    other wild stamps in between do not break the honest one's run."""

    CANDIDATES = 4

    def __init__(self, config: PlausibilityConfig):
        self.lead = config.stamp_lead
        self.reanchor_after = int(config.reanchor_after)
        self.stamp = -math.inf
        self.received = -math.inf
        self._runs: list = []            # [last stamp, its receive time, length] of refused stamps

    def admit(self, stamp: float, now: float) -> Optional[Violation]:
        refusal = self._refusal(stamp, now, self.stamp, self.received)
        if refusal is not None:
            run = next((r for r in self._runs if self._refusal(stamp, now, r[0], r[1]) is None), None)
            if run is None:
                run = [stamp, now, 0]
                self._runs = self._runs[-(self.CANDIDATES - 1):] + [run]
            run[0], run[1], run[2] = stamp, now, run[2] + 1
            if run[2] < self.reanchor_after:
                return refusal
        self.stamp, self.received = stamp, now
        self._runs = []
        return None

    def _refusal(self, stamp: float, now: float, last: float, received: float) -> Optional[Violation]:
        if stamp < last:
            return Violation("stamp", "header", stamp, f"older than the last accepted {last:.6f}")
        ahead = stamp - last - max(now - received, 0.0)
        if ahead > self.lead:
            return Violation("stamp", "header", stamp, f"{ahead:.3g} s ahead of the receive clock "
                             f"(more than {self.lead:g} s after {last:.6f})")
        return None

"""The damage detector's inputs, paired by stamp (no rclpy here).

The detector (estimation/damage_detector.py) integrates the joint torques between two calls,
so each call must carry one instant's estimate (``state_estimator/joint_states_full`` and
``state_estimator/odometry``), the planned stance of that instant (the controller's
``~/cycle`` record, which carries the stamp of the joint state it was computed from) and the
mean of the ``/joint_states`` efforts since the previous call. Between processes these four
streams arrive in any order: the manager's own ``/joint_states`` (1 kHz) typically lag the
estimator's output of the same stamp by tens of milliseconds on a loaded machine, and the
odometry and the full joint states of one stamp come as two messages. Taking "the latest of
each" then pairs an estimate with torques and a stance of another instant, or (matching by
stamp but not waiting) drops most estimates, and the detector integrates across the gaps:
that is what convicted a healthy tripod in the process-per-node graph (docs/launch.md).

:class:`DetectorInputs` holds each stream until an estimate is complete: both halves of the
estimate, efforts up to its stamp (one at or after it has arrived) and a stance at or after it
(the stance at the stamp is the last one planned at or before it); the IMU sample of the stamp
(the latest stamped at or before it, for the fall monitor of estimation/fall_monitor.py) goes
with it when the IMU stream is fed, without being waited for. An estimate that cannot be
completed (a half that will never come, a stream silent for ``max_wait``) is dropped; the
detector then sees a gap and does not integrate across it.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..estimation.base_estimator import ImuSample


@dataclass
class DetectorSample:
    t: float
    q: np.ndarray                       # healthy-size configuration (base from the odometry)
    v: np.ndarray
    tau: np.ndarray                     # mean effort over (previous t, t]
    stance: Optional[Dict[str, bool]]   # planned at t (None: no stance source)
    q_soft: Optional[np.ndarray] = None  # soft modules' deformation coordinates at t (soft robots)
    v_soft: Optional[np.ndarray] = None
    imu: Optional[ImuSample] = None      # the IMU sample of t (None: no IMU stream, or none yet)


class DetectorInputs:
    """Estimates, efforts and planned stances in, complete time-consistent samples out."""

    def __init__(self, frames: Sequence[str], use_stance: bool = True, max_wait: float = 0.25,
                 max_efforts: int = 4096):
        self.frames = list(frames)
        self.use_stance = use_stance
        self.max_wait = max_wait
        self.efforts: Deque[Tuple[float, np.ndarray, Optional[Tuple]]] = deque(maxlen=max_efforts)
        self.stances: Deque[Tuple[float, Dict[str, bool]]] = deque(maxlen=256)
        self.imus: Deque[Tuple[float, ImuSample]] = deque(maxlen=1024)
        self.bases: Dict[float, Tuple[np.ndarray, np.ndarray]] = {}
        self.joints: Dict[float, Tuple[np.ndarray, np.ndarray]] = {}
        self.last_base = self.last_joints = -np.inf
        self.t_prev: Optional[float] = None
        self.dropped = 0                 # estimates that could not be completed

    # ---------------------------------------------------------------- the streams
    def add_effort(self, t: float, tau: np.ndarray, deformation: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> None:
        """One ``/joint_states``' efforts and, on a robot with soft modules, the deformation
        coordinates (q_s, v_s) of the same message (the plant reports them beside the joints)."""
        self.efforts.append((t, tau, deformation))

    def add_stance(self, t: float, flags: Sequence[float]) -> None:
        """One ``~/cycle`` record's stamp and stance flags (one per contact frame)."""
        self.stances.append((t, {f: bool(x > 0.5) for f, x in zip(self.frames, flags)}))

    def add_imu(self, t: float, sample: ImuSample) -> None:
        """One IMU sample and its stamp (``runtime.inputs.parse_imu``)."""
        self.imus.append((t, sample))

    def add_base(self, t: float, q7: np.ndarray, v6: np.ndarray) -> None:
        self.bases[t] = (q7, v6)
        self.last_base = max(self.last_base, t)

    def add_joints(self, t: float, q: np.ndarray, v: np.ndarray) -> None:
        self.joints[t] = (q, v)
        self.last_joints = max(self.last_joints, t)

    # ---------------------------------------------------------------- pairing
    def ready(self) -> List[DetectorSample]:
        """The estimates now complete, oldest first (each returned once)."""
        out = []
        while True:
            stamps = sorted(set(self.bases) | set(self.joints))
            if not stamps:
                return out
            t = stamps[0]
            sample = self._complete(t)
            if sample == "wait":
                return out
            self.bases.pop(t, None)
            self.joints.pop(t, None)
            if sample is None:
                self.dropped += 1
                continue
            out.append(sample)

    def _complete(self, t: float):
        """The sample of stamp ``t``; "wait" while it may still complete; None: never."""
        newest = max(self.last_base, self.last_joints)
        if self.t_prev is not None and t <= self.t_prev:
            return None
        if t not in self.bases or t not in self.joints:
            # each stream arrives in order: a half missing while its stream is past t never comes
            missing_past = (t not in self.bases and self.last_base > t) or (t not in self.joints and self.last_joints > t)
            return None if missing_past or newest - t > self.max_wait else "wait"
        efforts_done = bool(self.efforts) and self.efforts[-1][0] >= t
        stance_done = not self.use_stance or (bool(self.stances) and self.stances[-1][0] >= t)
        if not (efforts_done and stance_done):
            return None if newest - t > self.max_wait else "wait"
        tau, deformation = self._mean_effort(t)
        stance = latest_at(self.stances, t) if self.use_stance else None   # planned at or before t
        if tau is None or (self.use_stance and stance is None):
            return None
        (q7, v6), (qj, vj) = self.bases[t], self.joints[t]
        self.t_prev = t
        return DetectorSample(t, np.concatenate([q7, qj]), np.concatenate([v6, vj]), tau, stance,
                              *(deformation or (None, None)), imu=latest_at(self.imus, t))

    def _mean_effort(self, t: float) -> Tuple[Optional[np.ndarray], Optional[Tuple]]:
        """Mean of the efforts stamped in (previous sample, t] (the first sample: at t) and
        the deformation coordinates of the last of them; older efforts are forgotten."""
        start = self.t_prev if self.t_prev is not None else t - 1e-9
        window = [(tau, deformation) for s, tau, deformation in self.efforts if start < s <= t]
        while self.efforts and self.efforts[0][0] <= t:
            self.efforts.popleft()
        if not window:
            return None, None
        return np.mean([w[0] for w in window], axis=0), window[-1][1]


def latest_at(stream: Deque[Tuple[float, Any]], t: float) -> Any:
    """The payload of a time-ordered ``(stamp, payload)`` stream stamped last at or before
    ``t``, or None; the entries before it are forgotten (later calls ask for later times)."""
    while len(stream) > 1 and stream[1][0] <= t:
        stream.popleft()
    first = stream[0] if stream else None
    return first[1] if first is not None and first[0] <= t else None

"""Input validation: what the pipeline accepts from the wire (duck-typed ROS messages, no rclpy).

Every check returns a :class:`Rejected` reason instead of raising, so a node can log it once,
count it on ``/diagnostics`` and keep its last good state. Rules:

JointState (``/joint_states``)
  - ``name`` and ``position`` have the same length; ``velocity`` and ``effort`` are empty or
    of that length too; names are unique;
  - every value is finite (NaN or inf rejects the whole message);
  - joints are matched by **name**: a message may carry any subset in any order; names the
    robot does not have are ignored and reported (``unknown``); joints never received are
    reported as ``missing`` by :class:`JointStateBuffer` until they arrive;
  - every value is plausible (:mod:`hybrid_dynamics.estimation.plausibility`: position
    within the URDF limits plus a margin, velocity and effort within a factor of theirs);
  - a message whose stamp is older than the last accepted one is dropped (out of order), one
    far ahead of it is rejected (``StampGate``);
  - efforts hold only while they keep coming: the joints of a message without ``effort``
    have no effort (``JointStateBuffer.has_effort``), so contact detection by force never
    reads an older message's efforts.

Imu (``/imu_sensor_broadcaster/imu``)
  - the quaternion is finite and of unit norm within ``QUAT_TOLERANCE`` (a zero or
    non-unit quaternion is rejected; small rounding is renormalised);
  - ``orientation_covariance[0] == -1`` (REP-145: no orientation) is rejected, the base
    estimator needs an orientation;
  - angular velocity and linear acceleration are finite and within the sensor's range
    (``InputLimits.check_imu``); out-of-order and far-ahead stamps are refused (``StampGate``).

Every :class:`Rejected` names the field (``joint_state.velocity``, ``imu.linear_acceleration``,
``imu.header.stamp``, ...) that the nodes count on ``/diagnostics``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..control.kernels import finite
from ..estimation.base_estimator import ImuSample
from ..estimation.plausibility import InputLimits, PlausibilityConfig, StampGate, Violation

QUAT_TOLERANCE = 1e-2


@dataclass(frozen=True)
class Rejected:
    """Why a message was refused; ``kind`` is a short stable key for counting, ``field``
    the message field at fault (``joint_state.position``, ``imu.orientation``, ...)."""
    kind: str
    detail: str
    field: str = ""

    @classmethod
    def implausible(cls, message: str, v: Violation) -> "Rejected":
        kind = "out_of_order" if v.field == "stamp" and "older" in v.bound else "implausible"
        field = "header.stamp" if v.field == "stamp" else v.field
        return cls(kind, str(v), f"{message}.{field}")

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


def stamp_to_sec(stamp) -> float:
    return float(stamp.sec) + 1e-9 * float(stamp.nanosec)


def stamped(t: float) -> float:
    """``t`` as a message's stamp carries it (whole nanoseconds, read back by :func:`stamp_to_sec`)."""
    ns = int(round(t * 1e9))
    return float(ns // 1_000_000_000) + 1e-9 * float(ns % 1_000_000_000)


def sec_to_stamp(t: float, stamp) -> None:
    """Write ``t`` seconds into a builtin_interfaces/Time (in place), rounded to the nearest
    nanosecond as a whole: 1.9999999999999987 (a sum of 1 ms steps) is 2 s, not 1.999999999 s
    (rounding the fraction alone and capping it, the library loop stamped such an instant 1 ns
    before the ROS plant did)."""
    ns = int(round(t * 1e9))
    stamp.sec, stamp.nanosec = ns // 1_000_000_000, ns % 1_000_000_000


# whole_body_controller/cycle (std_msgs/Float64MultiArray): QP solve ms, cycle ms, fallback,
# infeasible, the stamp (s) of the joint state the cycle used, then one planned stance flag
# per contact frame of the robot
CYCLE_HEADER = 5


def cycle_stance(data: Sequence[float], frames: int) -> Optional[Tuple[float, Sequence[float]]]:
    """(stamp, stance flags) of a ``~/cycle`` record, or None if its length is not that of
    a record for ``frames`` contact frames."""
    if len(data) != CYCLE_HEADER + frames:
        return None
    return float(data[CYCLE_HEADER - 1]), data[CYCLE_HEADER:]


class JointStateMatcher:
    """Name-based matching of JointState messages to a fixed list of joints.

    The index map of a name list is cached (a robot's broadcaster sends the same list each
    cycle), so matching is a dictionary look-up then fancy indexing.
    """

    def __init__(self, joints: Sequence[str]):
        self.joints = list(joints)
        self.index = {n: i for i, n in enumerate(self.joints)}
        self._cache: Dict[Tuple[str, ...], Tuple[np.ndarray, np.ndarray, Tuple[str, ...]]] = {}

    def match(self, names: Sequence[str]):
        """(message positions, our positions, unknown names) for a message's name list."""
        key = tuple(names)
        hit = self._cache.get(key)
        if hit is None:
            src, dst, unknown = [], [], []
            for i, n in enumerate(key):
                j = self.index.get(n)
                if j is None:
                    unknown.append(n)
                else:
                    src.append(i)
                    dst.append(j)
            hit = (np.array(src, dtype=int), np.array(dst, dtype=int), tuple(unknown))
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[key] = hit
        return hit


@dataclass
class JointSample:
    """The part of a JointState we use, already matched: ``dst`` indexes our joint list."""
    stamp: float
    dst: np.ndarray
    position: np.ndarray
    velocity: Optional[np.ndarray]
    effort: Optional[np.ndarray]
    unknown: Tuple[str, ...]


def parse_joint_state(msg, matcher: JointStateMatcher, limits: Optional[InputLimits] = None):
    """A :class:`JointSample`, or :class:`Rejected` (module docstring rules; the plausibility
    limits only when ``limits`` are given)."""
    names = msg.name
    n = len(names)
    pos = np.asarray(msg.position, dtype=float)
    vel = np.asarray(msg.velocity, dtype=float)
    eff = np.asarray(msg.effort, dtype=float)
    if len(pos) != n:
        return Rejected("length_mismatch", f"{n} names but {len(pos)} positions", "joint_state.position")
    if len(vel) not in (0, n):
        return Rejected("length_mismatch", f"{n} names but {len(vel)} velocities", "joint_state.velocity")
    if len(eff) not in (0, n):
        return Rejected("length_mismatch", f"{n} names but {len(eff)} efforts", "joint_state.effort")
    if len(set(names)) != n:
        return Rejected("duplicate_names", "a joint name appears twice", "joint_state.name")
    for label, arr in (("position", pos), ("velocity", vel), ("effort", eff)):
        if len(arr) and not finite(arr):
            bad = [names[i] for i in np.flatnonzero(~np.isfinite(arr))[:3]]
            return Rejected("non_finite", f"{label} of {', '.join(bad)} is NaN or inf", f"joint_state.{label}")
    src, dst, unknown = matcher.match(names)
    if len(dst) == 0:
        return Rejected("unknown_joints", f"none of the joints {list(names)[:4]} belongs to the robot",
                        "joint_state.name")
    sample = JointSample(stamp_to_sec(msg.header.stamp), dst, pos[src],
                         vel[src] if len(vel) else None, eff[src] if len(eff) else None, unknown)
    if limits is not None:
        bad = limits.check_joints(dst, sample.position, sample.velocity, sample.effort)
        if bad is not None:
            return Rejected.implausible("joint_state", bad)
    return sample


class JointStateBuffer:
    """The latest value of every joint, merged from (possibly partial) messages.

    ``ready`` once every joint has been heard of; ``missing`` lists those never received.
    With ``limits`` (:class:`~hybrid_dynamics.estimation.plausibility.InputLimits` of these
    joints) implausible values are rejected too; stamps pass a ``StampGate``.
    """

    def __init__(self, joints: Sequence[str], q_default: Optional[np.ndarray] = None,
                 limits: Optional[InputLimits] = None):
        self.matcher = JointStateMatcher(joints)
        self.limits = limits
        self.gate = StampGate(limits.config if limits is not None else PlausibilityConfig())
        n = len(self.matcher.joints)
        self.q = np.zeros(n) if q_default is None else np.array(q_default, dtype=float)
        self.v = np.zeros(n)
        self.tau = np.zeros(n)
        self.has_effort = np.zeros(n, dtype=bool)
        self.seen = np.zeros(n, dtype=bool)
        self.seen_time = np.full(n, -np.inf)       # receive time of each joint's last value
        self.last_received = -np.inf
        self.unknown: Tuple[str, ...] = ()

    @property
    def joints(self) -> List[str]:
        return self.matcher.joints

    @property
    def stamp(self) -> float:
        """The stamp of the last accepted message."""
        return self.gate.stamp

    @property
    def ready(self) -> bool:
        return bool(self.seen.all())

    @property
    def missing(self) -> List[str]:
        return [n for n, s in zip(self.matcher.joints, self.seen) if not s]

    def add(self, msg, now: Optional[float] = None):
        """Merge a message; returns ``None`` when accepted, else :class:`Rejected`.
        A message with a zero stamp gets ``now``."""
        sample = parse_joint_state(msg, self.matcher, self.limits)
        if isinstance(sample, Rejected):
            return sample
        if sample.stamp == 0.0 and now is not None:
            sample.stamp = now
        refused = self.gate.admit(sample.stamp, sample.stamp if now is None else now)
        if refused is not None:
            return Rejected.implausible("joint_state", refused)
        dst = sample.dst
        self.q[dst] = sample.position
        if sample.velocity is not None:
            self.v[dst] = sample.velocity
        # efforts are measurements of now or nothing: a message without them makes those
        # joints' efforts unknown (an older message's efforts, held, drove the force-based
        # contact detection on stale zeros: no foot in contact, the base filter diverged)
        if sample.effort is not None:
            self.tau[dst] = sample.effort
        self.has_effort[dst] = sample.effort is not None
        self.seen[dst] = True
        if now is not None:
            self.seen_time[dst] = now
            self.last_received = now
        self.unknown = sample.unknown
        return None


def parse_imu(msg, limits: Optional[InputLimits] = None):
    """An :class:`ImuSample` plus its stamp, or :class:`Rejected` (the sensor's range is
    checked when ``limits`` are given)."""
    o = msg.orientation
    w = msg.angular_velocity
    a = msg.linear_acceleration
    vals = (o.x, o.y, o.z, o.w, w.x, w.y, w.z, a.x, a.y, a.z)
    if not all(map(math.isfinite, vals)):       # the common case in one pass, without numpy
        if not all(map(math.isfinite, vals[:4])):
            return Rejected("non_finite", "orientation is NaN or inf", "imu.orientation")
        field = "imu.angular_velocity" if not all(map(math.isfinite, vals[4:7])) else "imu.linear_acceleration"
        return Rejected("non_finite", "angular velocity or acceleration is NaN or inf", field)
    cov = msg.orientation_covariance
    if len(cov) and cov[0] == -1.0:
        return Rejected("no_orientation", "orientation_covariance[0] = -1: the IMU gives no orientation",
                        "imu.orientation_covariance")
    quat = np.array(vals[:4], dtype=float)
    norm = math.sqrt(quat.dot(quat))            # what np.linalg.norm computes, bit for bit
    if norm == 0.0:
        return Rejected("bad_quaternion", "zero quaternion", "imu.orientation")
    if abs(norm - 1.0) > QUAT_TOLERANCE:
        return Rejected("bad_quaternion", f"quaternion norm {norm:.4f} is not 1", "imu.orientation")
    if limits is not None:
        bad = limits.check_imu(vals[4:7], vals[7:])
        if bad is not None:
            return Rejected.implausible("imu", bad)
    return stamp_to_sec(msg.header.stamp), ImuSample(quat / norm, np.array(vals[4:7], dtype=float),
                                                     np.array(vals[7:], dtype=float))



# ---------------------------------------------------------------------------- in-process inputs
# What a caller without ROS (the library scenario loop, the biped balance, tests) hands the
# pipeline: plain objects with the fields of sensor_msgs/JointState and sensor_msgs/Imu, so
# that every input goes through the same validation as a message from the wire.
@dataclass
class Stamp:
    sec: int
    nanosec: int


@dataclass
class Header:
    stamp: Stamp


@dataclass
class Vector3:
    x: float
    y: float
    z: float


@dataclass
class Quaternion:
    x: float
    y: float
    z: float
    w: float


@dataclass
class JointStateSample:
    header: Header
    name: Sequence[str]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


@dataclass
class ImuReadingSample:
    header: Header
    orientation: Quaternion
    angular_velocity: Vector3
    linear_acceleration: Vector3
    orientation_covariance: Tuple[float, ...] = ()


def header(t: float) -> Header:
    stamp = Stamp(0, 0)
    sec_to_stamp(t, stamp)
    return Header(stamp)


def joint_state_sample(t: float, names: Sequence[str], q, v, effort=()) -> JointStateSample:
    """The joint encoders at ``t`` as a JointState-shaped object."""
    return JointStateSample(header(t), list(names), np.asarray(q, float), np.asarray(v, float),
                            np.asarray(effort, float))


def imu_sample(t: float, imu) -> ImuReadingSample:
    """An IMU reading (``orientation`` xyzw, ``angular_velocity``, ``linear_acceleration``) at
    ``t`` as an Imu-shaped object."""
    o, w, a = (np.asarray(x, float) for x in (imu.orientation, imu.angular_velocity, imu.linear_acceleration))
    return ImuReadingSample(header(t), Quaternion(*o), Vector3(*w), Vector3(*a))

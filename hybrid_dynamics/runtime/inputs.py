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
  - a message whose stamp is older than the last accepted one is dropped (out of order).

Imu (``/imu_sensor_broadcaster/imu``)
  - the quaternion is finite and of unit norm within ``QUAT_TOLERANCE`` (a zero or
    non-unit quaternion is rejected; small rounding is renormalised);
  - ``orientation_covariance[0] == -1`` (REP-145: no orientation) is rejected, the base
    estimator needs an orientation;
  - angular velocity and linear acceleration are finite; out-of-order stamps are dropped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..estimation.base_estimator import ImuSample

QUAT_TOLERANCE = 1e-2


@dataclass(frozen=True)
class Rejected:
    """Why a message was refused; ``kind`` is a short stable key for counting."""
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


def stamp_to_sec(stamp) -> float:
    return float(stamp.sec) + 1e-9 * float(stamp.nanosec)


def sec_to_stamp(t: float, stamp) -> None:
    """Write ``t`` seconds into a builtin_interfaces/Time (in place)."""
    sec = int(np.floor(t))
    stamp.sec = sec
    stamp.nanosec = min(int(round((t - sec) * 1e9)), 999_999_999)


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


def parse_joint_state(msg, matcher: JointStateMatcher):
    """A :class:`JointSample`, or :class:`Rejected` (module docstring rules)."""
    names = msg.name
    n = len(names)
    pos = np.asarray(msg.position, dtype=float)
    vel = np.asarray(msg.velocity, dtype=float)
    eff = np.asarray(msg.effort, dtype=float)
    if len(pos) != n:
        return Rejected("length_mismatch", f"{n} names but {len(pos)} positions")
    if len(vel) not in (0, n):
        return Rejected("length_mismatch", f"{n} names but {len(vel)} velocities")
    if len(eff) not in (0, n):
        return Rejected("length_mismatch", f"{n} names but {len(eff)} efforts")
    if len(set(names)) != n:
        return Rejected("duplicate_names", "a joint name appears twice")
    for label, arr in (("position", pos), ("velocity", vel), ("effort", eff)):
        if len(arr) and not np.all(np.isfinite(arr)):
            bad = [names[i] for i in np.flatnonzero(~np.isfinite(arr))[:3]]
            return Rejected("non_finite", f"{label} of {', '.join(bad)} is NaN or inf")
    src, dst, unknown = matcher.match(names)
    if len(dst) == 0:
        return Rejected("unknown_joints", f"none of the joints {list(names)[:4]} belongs to the robot")
    return JointSample(stamp_to_sec(msg.header.stamp), dst, pos[src],
                       vel[src] if len(vel) else None, eff[src] if len(eff) else None, unknown)


class JointStateBuffer:
    """The latest value of every joint, merged from (possibly partial) messages.

    ``ready`` once every joint has been heard of; ``missing`` lists those never received.
    """

    def __init__(self, joints: Sequence[str], q_default: Optional[np.ndarray] = None):
        self.matcher = JointStateMatcher(joints)
        n = len(self.matcher.joints)
        self.q = np.zeros(n) if q_default is None else np.array(q_default, dtype=float)
        self.v = np.zeros(n)
        self.tau = np.zeros(n)
        self.has_effort = np.zeros(n, dtype=bool)
        self.seen = np.zeros(n, dtype=bool)
        self.seen_time = np.full(n, -np.inf)       # receive time of each joint's last value
        self.last_received = -np.inf
        self.stamp = -np.inf
        self.unknown: Tuple[str, ...] = ()

    @property
    def joints(self) -> List[str]:
        return self.matcher.joints

    @property
    def ready(self) -> bool:
        return bool(self.seen.all())

    @property
    def missing(self) -> List[str]:
        return [n for n, s in zip(self.matcher.joints, self.seen) if not s]

    def add(self, msg, now: Optional[float] = None):
        """Merge a message; returns ``None`` when accepted, else :class:`Rejected`.
        A message with a zero stamp gets ``now``."""
        sample = parse_joint_state(msg, self.matcher)
        if isinstance(sample, Rejected):
            return sample
        if sample.stamp == 0.0 and now is not None:
            sample.stamp = now
        if sample.stamp < self.stamp:
            return Rejected("out_of_order", f"stamp {sample.stamp:.6f} older than {self.stamp:.6f}")
        self.stamp = sample.stamp
        dst = sample.dst
        self.q[dst] = sample.position
        if sample.velocity is not None:
            self.v[dst] = sample.velocity
        if sample.effort is not None:
            self.tau[dst] = sample.effort
            self.has_effort[dst] = True
        self.seen[dst] = True
        if now is not None:
            self.seen_time[dst] = now
            self.last_received = now
        self.unknown = sample.unknown
        return None


def parse_imu(msg):
    """An :class:`ImuSample` plus its stamp, or :class:`Rejected`."""
    o = msg.orientation
    w = msg.angular_velocity
    a = msg.linear_acceleration
    vals = (o.x, o.y, o.z, o.w, w.x, w.y, w.z, a.x, a.y, a.z)
    if not all(map(math.isfinite, vals)):       # the common case in one pass, without numpy
        if not all(map(math.isfinite, vals[:4])):
            return Rejected("non_finite", "orientation is NaN or inf")
        return Rejected("non_finite", "angular velocity or acceleration is NaN or inf")
    cov = msg.orientation_covariance
    if len(cov) and cov[0] == -1.0:
        return Rejected("no_orientation", "orientation_covariance[0] = -1: the IMU gives no orientation")
    quat = np.array(vals[:4], dtype=float)
    norm = math.sqrt(quat.dot(quat))            # what np.linalg.norm computes, bit for bit
    if norm == 0.0:
        return Rejected("bad_quaternion", "zero quaternion")
    if abs(norm - 1.0) > QUAT_TOLERANCE:
        return Rejected("bad_quaternion", f"quaternion norm {norm:.4f} is not 1")
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

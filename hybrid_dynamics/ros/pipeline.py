"""What the nodes compute, without rclpy: the nodes, ``replay`` and the tests share it.

:class:`StateCore` turns validated joint states and IMU samples into the full robot state
(passive joints of closed chains completed, floating base estimated, contacts decided).
:class:`ControlCore` turns that state into the effort command, in the order of the
controller's ``joints`` parameter, through :class:`~hybrid_dynamics.control.controller.
WholeBodyController` (the QP). Both reassemble on :meth:`set_morphology`.

Safe mode: when inputs are stale (no IMU or joint state for ``stale_timeout``), missing or
never received, the command is joint damping ``tau = -kd_safe * qd`` on the surviving
actuated joints, until fresh data returns. Nothing here ever returns NaN.
"""
from __future__ import annotations

from collections import Counter, deque
from typing import Dict, List, Mapping, Optional

import numpy as np
import pinocchio as pin

from ..control.balance import WeightShift, WeightShiftReference
from ..control.controller import WholeBodyController
from ..control.locomotion import LocomotionConfig, LocomotionPlanner
from ..control.references import OrientationTarget, References, Target
from ..errors import InputError
from ..estimation.base_estimator import BaseEstimator, BaseState, ImuSample
from ..estimation.contact_state import ContactForceEstimator, ContactStateEstimator
from ..estimation.passive_state import PassiveStateEstimator
from ..model.morphology import Morphology, MorphologyMap
from .convert import JointStateBuffer, Rejected, parse_imu


# ============================================================================ state
class StateCore:
    """Inputs -> full state. ``params`` are the state_estimator's (params.py)."""

    def __init__(self, robot, params: Mapping):
        self.robot = robot
        self.params = params
        self.buffer = JointStateBuffer(robot.joint_names, robot.q_stand[7:])
        self.imu: Optional[ImuSample] = None
        self.imu_stamp = -np.inf
        self.imu_history: deque = deque(maxlen=32)      # (stamp, sample), increasing stamps
        self.first_js_stamp: Optional[float] = None
        self.js_received = -np.inf
        self.imu_received = -np.inf
        self.estimator = BaseEstimator(robot, params.get("estimator"))
        self.contacts = ContactStateEstimator(robot, params.get("contact_detection"))
        self.force_estimator = ContactForceEstimator(robot)
        self.stale_timeout = float(params.get("stale_timeout", 0.05))
        self.rejected: Counter = Counter()
        self.passive = _PassiveCompletion(robot) if robot.loops is not None else None
        self.stance = {c.frame: True for c in robot.contacts}
        self.schedule: Optional[Dict[str, bool]] = None    # planned contacts (a gait), if any
        self.last: Optional[BaseState] = None
        self.set_morphology(Morphology.healthy(robot))

    # ---------------------------------------------------------------- morphology
    def set_morphology(self, morph: Morphology) -> None:
        self.map = MorphologyMap(self.robot, morph)
        self.morphology = morph
        frames = [c.frame for c in self.map.contacts]
        self.estimator.set_active_contacts(frames)
        self._active_frames = set(frames)
        surviving = set(self.map.joint_names)
        required = set(self.robot.actuated_joints) if self.passive is not None else set(self.robot.joint_names)
        self._required = np.array([n in surviving and n in required for n in self.buffer.joints])

    # ---------------------------------------------------------------- inputs
    def add_joint_state(self, msg, now: float) -> Optional[Rejected]:
        out = self.buffer.add(msg, now)
        if out is None:
            self.js_received = now
            if self.first_js_stamp is None:
                self.first_js_stamp = self.buffer.stamp
        else:
            self.rejected[out.kind] += 1
        return out

    def add_imu(self, msg, now: float) -> Optional[Rejected]:
        out = parse_imu(msg)
        if isinstance(out, Rejected):
            self.rejected[out.kind] += 1
            return out
        stamp, sample = out
        if stamp == 0.0:
            stamp = now
        if stamp < self.imu_stamp:
            self.rejected["out_of_order"] += 1
            return Rejected("out_of_order", f"IMU stamp {stamp:.6f} older than {self.imu_stamp:.6f}")
        self.imu_stamp, self.imu, self.imu_received = stamp, sample, now
        self.imu_history.append((stamp, sample))
        return None

    def imu_for(self, t: float) -> ImuSample:
        """The IMU sample of time ``t``: the latest stamped at or before ``t`` (so that a
        sample of the next step arriving first changes nothing), else the oldest kept."""
        for stamp, sample in reversed(self.imu_history):
            if stamp <= t:
                return sample
        return self.imu_history[0][1]

    # ---------------------------------------------------------------- lock-step pairing
    # One cycle per joint state, paired with the IMU sample of the same time whatever order
    # the two arrive in (they travel on two topics): a joint state waits until an IMU sample
    # stamped at or after it has arrived, or until the IMU is stale. The node and the replay
    # run this same rule, so a run replays to identical commands.
    pending: Optional[float] = None

    def lockstep_after_joint_state(self) -> bool:
        """Call after an accepted joint state: True if its cycle can run now."""
        t = self.buffer.stamp
        ref = self.imu_stamp if self.imu is not None else self.first_js_stamp
        if self.imu_stamp >= t or t - ref > self.stale_timeout:
            self.pending = None
            return True
        self.pending = t
        return False

    def lockstep_after_imu(self) -> bool:
        """Call after an accepted IMU sample: True if a waiting joint state's cycle can run."""
        if self.pending is not None and self.imu_stamp >= self.pending:
            self.pending = None
            return True
        return False

    def missing(self) -> List[str]:
        return [n for n, s, r in zip(self.buffer.joints, self.buffer.seen, self._required) if r and not s]

    def stale(self, now: float, use_stamps: bool = False) -> Optional[str]:
        """Why the inputs cannot be used now, or None. With ``use_stamps`` the IMU's age is
        judged against the joint-state stamp (deterministic: replay, lock-step runs)."""
        if self.imu is None:
            return "no IMU received"
        missing = self.missing()
        if missing:
            return f"joints never received: {', '.join(missing[:4])}" + (" ..." if len(missing) > 4 else "")
        if use_stamps:
            age_imu = self.buffer.stamp - self.imu_stamp
            age_js = 0.0
        else:
            age_imu = now - self.imu_received
            age_js = now - self.js_received
        if age_imu > self.stale_timeout:
            return f"IMU stale ({1e3 * age_imu:.0f} ms)"
        if age_js > self.stale_timeout:
            return f"joint states stale ({1e3 * age_js:.0f} ms)"
        return None

    # ---------------------------------------------------------------- estimate
    def estimate(self) -> BaseState:
        """One estimator step at the joint-state stamp (requires :meth:`stale` to be None)."""
        buf = self.buffer
        qj, vj = buf.q, buf.v
        t = buf.stamp
        if self.passive is not None:
            qj, vj = self.passive(qj, vj, t)
        state = self.estimator.update(t, qj, vj, self.imu_for(t), self.stance)
        # contacts for the next step: forces from efforts when every surviving joint has one
        forces_z = None
        planned = self.schedule is not None and self.contacts.config.mode in ("auto", "schedule")
        if not planned and self.buffer.has_effort[self._required].all() and \
                self.contacts.config.mode in ("auto", "force"):
            f = self.force_estimator.forces(state.q, state.v, buf.tau)
            forces_z = {k: float(x[2]) for k, x in f.items()}
        heights = {k: float(p[2]) for k, p in state.feet.items()}
        stance = self.contacts.update(heights=heights, forces_z=forces_z, schedule=self.schedule)
        self.stance = {k: (s and k in self._active_frames) for k, s in stance.items()}
        self.last = state
        return state


class _PassiveCompletion:
    """The closed-chain passive-state completion (estimation/passive_state.py) as
    ``(qj, vj, stamp) -> (qj, vj)`` on healthy-size joint vectors; the loop residual and
    validity of the last call are kept for /diagnostics. Time-stamped: the Euler step spans
    the true interval between joint states, with the gains of ``control.balance.
    passive_estimator`` at that rate (the library balance loop's estimator)."""

    def __init__(self, robot):
        self.est = PassiveStateEstimator(robot)
        names = robot.joint_names
        self.ia = np.array([names.index(n) for n in self.est.actuated_joints], dtype=int)
        self.residual = 0.0
        self.valid = True
        self.status = "ok"

    def __call__(self, qj, vj, t=None):
        out = self.est.update(qj[self.ia], vj[self.ia], t=t)
        self.residual, self.valid, self.status = float(out.residual), bool(out.valid), out.status
        return out.q[7:], out.v[6:]


# ============================================================================ control
def hold_references(robot, mmap, q_full: np.ndarray) -> References:
    """Stand still where the robot is: CoM held at its current position, level base,
    standing posture (``control.references.References.hold``)."""
    com = pin.centerOfMass(mmap.model, mmap.model.createData(), mmap.expand_q(mmap.reduce_q(q_full)))
    return References.hold(com=com.copy())


class ControlCore:
    """Full state -> effort command in ``joints`` order (removed/locked/passive joints get 0)."""

    def __init__(self, robot, params: Mapping):
        self.robot = robot
        self.params = params
        joints = list(params.get("joints") or robot.actuated_joints)
        unknown = [j for j in joints if j not in robot.joint_names]
        if unknown:
            raise InputError(f"joints not in robot {robot.name}: {', '.join(unknown)}", field="joints")
        self.joints = joints
        self.kd_safe = float(params.get("safe_mode_damping", 1.0))
        config = dict(params.get("controller") or {})
        if params.get("solver"):
            config["solver"] = params["solver"]
        if params.get("update_rate"):
            config["dt"] = 1.0 / float(params["update_rate"])
        self.controller = WholeBodyController(robot, config)
        self.kind = "qp"                # reported on /diagnostics and by the benches
        self.allowed_contacts = set(params.get("contacts") or [c.frame for c in robot.contacts])
        unknown = self.allowed_contacts - {c.frame for c in robot.contacts}
        if unknown:
            raise InputError(f"contacts not in robot {robot.name}: {', '.join(sorted(unknown))}", field="contacts")
        self.references = None          # set_references(), or hold where the first state is
        self.command = np.zeros(len(joints))
        self.last_output = None
        self.fallbacks = 0
        self.nonfinite = 0
        self._jidx = {n: robot.model.joints[robot.model.getJointId(n)].idx_v - 6 for n in robot.joint_names}
        self.set_morphology(Morphology.healthy(robot))

    def set_morphology(self, morph: Morphology) -> None:
        mmap = MorphologyMap(self.robot, morph)
        self.controller.set_morphology(mmap)
        self.map = mmap
        self.morphology = morph
        surviving = set(mmap.joint_names)
        actuated = set(self.robot.actuated_joints)
        self.live = [(i, n) for i, n in enumerate(self.joints) if n in surviving and n in actuated]
        self.live_idx = np.array([i for i, _ in self.live], dtype=int)
        self.live_v = np.array([self._jidx[n] for _, n in self.live], dtype=int)
        self.contact_frames = [c.frame for c in mmap.contacts]

    def set_references(self, references) -> None:
        """Task references (control/references.py) from a gait or reference source."""
        self.references = references

    def cycle(self, state: BaseState, stance: Mapping[str, bool]) -> np.ndarray:
        """The command for one cycle (a view on a preallocated array)."""
        q = self.map.reduce_q(state.q)
        v = self.map.reduce_v(state.v)
        if self.references is None:
            self.references = hold_references(self.robot, self.map, state.q)
        st = {f: bool(stance.get(f, False)) and f in self.allowed_contacts for f in self.contact_frames}
        out = self.controller.update(q, v, st, self.references)
        self.last_output = out
        cmd = self.command
        cmd[:] = 0.0
        tau = out.tau
        for i, n in self.live:
            cmd[i] = tau.get(n, 0.0)
        if getattr(out, "fallback", False):
            self.fallbacks += 1
        if not np.all(np.isfinite(cmd)):
            self.nonfinite += 1
            return self.safe(state.v[6:])
        return cmd

    def safe(self, vj: np.ndarray) -> np.ndarray:
        """Joint damping on the surviving actuated joints (``vj`` healthy-size rates)."""
        cmd = self.command
        cmd[:] = 0.0
        if len(self.live_idx):
            vals = -self.kd_safe * np.asarray(vj)[self.live_v]
            cmd[self.live_idx] = np.where(np.isfinite(vals), vals, 0.0)
        return cmd


# ============================================================================ gait
def to_references(ref):
    """A :class:`~hybrid_dynamics.control.locomotion.LocomotionReference` as the controller's
    :class:`~hybrid_dynamics.control.references.References` (stance feet are contacts, swing
    feet tracked)."""
    return References(
        com=Target(ref.com_position, ref.base_linear_velocity, ref.base_linear_acceleration),
        base_orientation=OrientationTarget(ref.base_orientation, ref.base_angular_velocity),
        swing_feet={f: Target(x.position, x.velocity, x.acceleration) for f, x in ref.feet.items() if not x.stance})


class GaitCore:
    """/cmd_vel and the morphology -> controller references and the planned stance, through
    :class:`~hybrid_dynamics.control.locomotion.LocomotionPlanner` (the logic lives there).

    The controller node owns one (``gait: true``) and calls :meth:`update` at the start of
    each cycle with the estimate; the library scenario loop (sim/runner.py) uses the same
    class, so both paths plan identically."""

    def __init__(self, robot, config: Optional[Mapping] = None):
        self.robot = robot
        self.planner = LocomotionPlanner(robot, LocomotionConfig.from_dict(config))
        self.frames = [c.frame for c in robot.contacts]
        self.command = (0.0, 0.0, 0.0)
        self.started = False
        self.mmap: Optional[MorphologyMap] = None
        self.reference = None
        self.stance = {f: True for f in self.frames}

    def set_command(self, vx: float, vy: float, wz: float) -> None:
        vals = (float(vx), float(vy), float(wz))
        if not all(np.isfinite(vals)):
            return
        self.command = vals
        if self.started:
            self.planner.set_command(*vals)

    def set_morphology(self, morph: Morphology, t: float) -> None:
        self.mmap = None if morph.is_healthy() else MorphologyMap(self.robot, morph)
        if self.started:
            self.planner.set_morphology(self.mmap, t)

    def start(self, t: float, q: np.ndarray) -> None:
        """Start standing where the robot is (``q`` healthy-size), then follow the command."""
        self.planner.morphology_map = self.mmap
        self.planner.reset(t, q)
        self.planner.set_command(*self.command)
        self.started = True

    def update(self, t: float, q: np.ndarray):
        """(References, planned stance: frame -> bool) at time ``t``."""
        if not self.started:
            self.start(t, q)
        ref = self.planner.update(t)
        self.reference = ref
        self.stance = {f: ref.feet[f].stance if f in ref.feet else False for f in self.frames}
        return to_references(ref), self.stance


# ============================================================================ reference sources
REFERENCE_SOURCES = ("gait", "weight_shift", "hold")


def make_reference_source(robot, params: Mapping):
    """(kind, source) for the controller node's ``references`` parameter (params.py):

    - ``gait`` (or ``references`` empty and ``gait: true``): :class:`GaitCore`, the
      locomotion planner following /cmd_vel and the morphology;
    - ``weight_shift``: ``control.balance.WeightShiftReference`` (the closed-chain balance's
      references: CoM held where the robot stands at the first cycle plus the lateral weight
      shift of ``weight_shift`` (YAML of ``control.balance.WeightShift`` fields), every foot down);
    - ``hold`` (or empty without a gait): None, the controller holds where it first stands.

    A source has ``update(t, q) -> (References, stance)``."""
    import yaml
    kind = str(params.get("references") or ("gait" if params.get("gait") else "hold"))
    if kind not in REFERENCE_SOURCES:
        raise InputError(f"references '{kind}' is not {', '.join(REFERENCE_SOURCES)}", field="references")

    def mapping(key):
        try:
            data = yaml.safe_load(params.get(key) or "{}") or {}
        except yaml.YAMLError as exc:
            raise InputError(f"{key} is not YAML: {exc}", field=key) from None
        if not isinstance(data, dict):
            raise InputError(f"{key} must be a YAML mapping", field=key)
        return data
    if kind == "gait":
        return kind, GaitCore(robot, mapping("gait_config"))
    if kind == "weight_shift":
        return kind, WeightShiftReference(robot, WeightShift.from_dict(mapping("weight_shift")))
    return kind, None

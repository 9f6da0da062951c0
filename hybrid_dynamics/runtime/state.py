"""Inputs -> full robot state, without rclpy: validated joint states and IMU samples become
the floating-base estimate (passive joints of closed chains completed, contacts decided).

Lock-step pairing and staleness are decided here too, so that the controller node, ``replay``
and the library runs share one rule.

Inputs: every sample passes the plausibility limits (estimation/plausibility.py) before it
reaches a filter; a rejected one is counted by kind and by field (``rejected``,
``rejected_fields``), an accepted one in ``accepted``. Staleness is judged on accepted
samples only. The estimators' health restarts are counted in ``restarts``.
"""
from __future__ import annotations

from collections import Counter, deque
from typing import Dict, List, Mapping, Optional

import numpy as np

from ..estimation.base_estimator import BaseEstimator, BaseState, ImuSample
from ..estimation.contact_state import ContactForceEstimator, ContactStateEstimator
from ..estimation.passive_state import PassiveStateEstimator
from ..estimation.plausibility import InputLimits, StampGate
from ..model.morphology import Morphology, MorphologyMap
from ..soft.coordinates import coordinate_names
from .inputs import JointStateBuffer, Rejected, parse_imu


class StateCore:
    """Inputs -> full state. ``params`` are the state_estimator's (params.py)."""

    def __init__(self, robot, params: Mapping):
        self.robot = robot
        self.params = params
        self.limits = InputLimits(robot, robot.joint_names, params.get("limits"))
        self.buffer = JointStateBuffer(robot.joint_names, robot.q_stand[7:], self.limits)
        self.imu: Optional[ImuSample] = None
        self.imu_gate = StampGate(self.limits.config)
        self.imu_history: deque = deque(maxlen=32)      # (stamp, sample), increasing stamps
        self.first_js_stamp: Optional[float] = None
        self.js_received = -np.inf
        self.imu_received = -np.inf
        self.estimator = BaseEstimator(robot, params.get("estimator"))
        self.contacts = ContactStateEstimator(robot, params.get("contact_detection"))
        self._radius = {c.frame: c.radius for c in robot.contacts}     # foot sphere: frame height on the ground
        self.force_estimator = ContactForceEstimator(robot)
        self.stale_timeout = float(params.get("stale_timeout", 0.05))
        self.rejected: Counter = Counter()              # by kind
        self.rejected_fields: Counter = Counter()       # by message field
        self.accepted: Counter = Counter()              # joint_states, imu
        self.passive = _PassiveCompletion(robot) if robot.loops is not None else None
        # soft feet: their coordinates as the plant reports them in /joint_states (<module>_q<k>)
        self.deformation = JointStateBuffer(coordinate_names(robot)) if robot.soft_modules else None
        self.stance = {c.frame: True for c in robot.contacts}
        self.schedule: Optional[Dict[str, bool]] = None    # planned contacts (a gait), if any
        self.last: Optional[BaseState] = None
        self.restarts = 0                   # estimator restarts (health), base and passive
        self.restart_reason = ""
        self._restart_counts: Dict[str, int] = {}
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
    @property
    def imu_stamp(self) -> float:
        """The stamp of the last accepted IMU sample."""
        return self.imu_gate.stamp

    def _count(self, out: Rejected) -> Rejected:
        self.rejected[out.kind] += 1
        self.rejected_fields[out.field] += 1
        return out

    def add_joint_state(self, msg, now: float) -> Optional[Rejected]:
        out = self.buffer.add(msg, now)
        if out is not None:
            return self._count(out)
        if self.deformation is not None:
            self.deformation.add(msg, now)     # absent from a message: the last value stays
            if self.buffer.unknown:            # the pads' coordinates are ours, not unknown joints
                self.buffer.unknown = tuple(n for n in self.buffer.unknown if n not in self.deformation.matcher.index)
        self.js_received = now
        self.accepted["joint_states"] += 1
        if self.first_js_stamp is None:
            self.first_js_stamp = self.buffer.stamp
        return None

    def add_imu(self, msg, now: float) -> Optional[Rejected]:
        out = parse_imu(msg, self.limits)
        if isinstance(out, Rejected):
            return self._count(out)
        stamp, sample = out
        if stamp == 0.0:
            stamp = now
        refused = self.imu_gate.admit(stamp, now)
        if refused is not None:
            return self._count(Rejected.implausible("imu", refused))
        self.imu, self.imu_received = sample, now
        self.accepted["imu"] += 1
        if self.imu_history and stamp < self.imu_history[-1][0]:
            self.imu_history.clear()                # a re-anchored (restarted) clock
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

    def lockstep_after_joint_state(self, rejected: bool = False) -> bool:
        """Call after a joint-state message: True if a cycle can run now. A rejected message
        runs one too, on the last accepted samples (the source waits for a command; without
        one a lock-step plant stalls until its timeout), unless an accepted one still waits
        for its IMU sample."""
        if rejected:
            return self.pending is None
        t = self.buffer.stamp
        ref = self.imu_stamp if self.imu is not None else self.first_js_stamp
        if self.imu_stamp >= t or t - ref > self.stale_timeout:
            self.pending = None
            return True
        self.pending = t
        return False

    def lockstep_after_imu(self, rejected: bool = False) -> bool:
        """Call after an IMU message: True if a waiting joint state's cycle can run. A
        rejected message releases it too (with the last accepted sample): in lock-step the
        source waits for the command, so waiting for the next IMU sample would never end."""
        if self.pending is not None and (rejected or self.imu_stamp >= self.pending):
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

    def safe_velocities(self, now: float, use_stamps: bool = False) -> np.ndarray:
        """The joint rates safe mode damps: the last accepted ones while they are fresh, else
        zeros (a stale rate held as a torque would push a joint that has stopped)."""
        if use_stamps or now - self.js_received <= self.stale_timeout:
            return self.buffer.v
        return np.zeros_like(self.buffer.v)

    # ---------------------------------------------------------------- estimate
    def _set_stance(self, stance: Mapping[str, bool]) -> None:
        self.stance = {k: (s and k in self._active_frames) for k, s in stance.items()}

    def estimate(self) -> BaseState:
        """One estimator step at the joint-state stamp (requires :meth:`stale` to be None)."""
        buf = self.buffer
        qj, vj = buf.q, buf.v
        t = buf.stamp
        if self.passive is not None:
            qj, vj = self.passive(qj, vj, t)
        planned = self.schedule is not None and self.contacts.config.mode in ("auto", "schedule")
        if planned:         # the plan of the last cycle holds now: the feet it put down are down
            self._set_stance(self.contacts.update(schedule=self.schedule))
        state = self.estimator.update(t, qj, vj, self.imu_for(t), self.stance)
        if self.deformation is not None:
            state.q_soft, state.v_soft = self.deformation.q.copy(), self.deformation.v.copy()
        self._note_restarts()
        if not planned:     # contacts for the next step, from efforts (every surviving joint) or heights
            forces_z = None
            if self.buffer.has_effort[self._required].all() and self.contacts.config.mode in ("auto", "force"):
                f = self.force_estimator.forces(state.q, state.v, buf.tau)
                forces_z = {k: float(x[2]) for k, x in f.items()}
            heights = {k: float(p[2]) - self._radius[k] for k, p in state.feet.items()}
            self._set_stance(self.contacts.update(heights=heights, forces_z=forces_z))
        self.last = state
        return state

    def _note_restarts(self) -> None:
        """Count the estimators' health restarts (for /diagnostics), keep the last reason."""
        for name, health in (("base estimator", self.estimator.health),
                             ("passive-state estimator", self.passive.est.health if self.passive else None)):
            if health is not None and health.resets > self._restart_counts.get(name, 0):
                self.restarts += health.resets - self._restart_counts.get(name, 0)
                self._restart_counts[name] = health.resets
                self.restart_reason = f"{name}: {health.reason}"


class _PassiveCompletion:
    """The closed-chain passive-state completion (estimation/passive_state.py) as
    ``(qj, vj, stamp) -> (qj, vj)`` on healthy-size joint vectors; the loop residual and
    validity of the last call are kept for /diagnostics. Time-stamped: the Euler step spans
    the true interval between joint states, the estimator's gains capped at that interval
    (``alpha dt <= 1``, ``beta dt <= 1``: at 200 Hz, alpha 100 and beta 200 per second)."""

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

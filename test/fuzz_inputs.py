"""Adversarial inputs for the fuzz tests (hypothesis strategies) and the library harness that
runs the estimator + controller cycle on them as the controller node does in lock-step.

A drawn input is a :class:`Spec` (topic, fault, parameters); :meth:`Spec.build` makes the
message at the stream's clock ``t`` (stamps are relative to it), and :attr:`Spec.fields` is
what the pipeline must name if it rejects it: a set of message fields, ``None`` among them
when the message is acceptable (a stamp fault may be accepted after a re-anchor, see
estimation/plausibility.py ``StampGate``).
"""
import math
from dataclasses import dataclass, field
from typing import FrozenSet, Optional, Tuple

import numpy as np
from geometry_msgs.msg import Twist
from hypothesis import strategies as st
from sensor_msgs.msg import Imu, JointState

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.damage_events import apply_damage_yaml
from hybrid_dynamics.runtime.inputs import QUAT_TOLERANCE, Rejected, sec_to_stamp
from hybrid_dynamics.ros.sources import standing_pose

DT = 0.002                                  # 500 Hz: the stream's clock per input
RECOVERY_CYCLES = 10                        # 20 ms at the 500 Hz of config/jethexa.yaml
HUGE = st.floats(1e6, 1.7e308).flatmap(lambda x: st.sampled_from([x, -x]))
NONFINITE = st.sampled_from([math.nan, math.inf, -math.inf])


@dataclass(frozen=True)
class Spec:
    topic: str                               # joint_states, imu, cmd_vel, damage
    fault: str
    args: Tuple = ()
    fields: FrozenSet[Optional[str]] = field(default_factory=lambda: frozenset({None}))


def _spec(topic, fault, *args, fields=(None,)):
    return Spec(topic, fault, tuple(args), frozenset(fields))


# ---------------------------------------------------------------------------- joint states
def joint_state_specs(n_joints: int):
    js = "joint_state."
    idx = st.integers(0, n_joints - 1)
    quantity = st.sampled_from(["position", "velocity", "effort"])
    return st.one_of(
        st.just(_spec("joint_states", "valid")),
        st.just(_spec("joint_states", "valid_zero_stamp")),
        st.lists(idx, min_size=1, unique=True).map(lambda sub: _spec("joint_states", "subset", tuple(sub))),
        st.text(min_size=1, max_size=12).map(lambda name: _spec("joint_states", "extra_name", name)),
        st.tuples(quantity, st.integers(-3, 3).filter(bool)).map(
            lambda a: _spec("joint_states", "length", *a, fields=(js + a[0],))),
        idx.map(lambda i: _spec("joint_states", "duplicate", i, fields=(js + "name",))),
        st.lists(st.text(max_size=8).filter(lambda s: not s.startswith("leg")), max_size=3).map(
            lambda names: _spec("joint_states", "unknown_only", tuple(names), fields=(js + "name",))),
        st.tuples(quantity, idx, NONFINITE).map(lambda a: _spec("joint_states", "value", *a, fields=(js + a[0],))),
        st.tuples(quantity, idx, HUGE).map(lambda a: _spec("joint_states", "value", *a, fields=(js + a[0],))),
        st.tuples(idx, st.floats(0.6, 50.0), st.booleans()).map(
            lambda a: _spec("joint_states", "beyond_limit", *a, fields=(js + "position",))),
        st.floats(1e-4, 1e9).map(lambda d: _spec("joint_states", "stamp", -d, fields=(js + "header.stamp", None))),
        st.floats(0.6, 1e9).map(lambda d: _spec("joint_states", "stamp", d, fields=(js + "header.stamp", None))),
    )


# ---------------------------------------------------------------------------- IMU
def imu_specs():
    imu = "imu."
    vec3 = st.sampled_from(["angular_velocity", "linear_acceleration"])
    axis = st.sampled_from("xyz")
    return st.one_of(
        st.just(_spec("imu", "valid")),
        st.floats(-0.5 * QUAT_TOLERANCE, 0.5 * QUAT_TOLERANCE).map(lambda e: _spec("imu", "quat_scale", 1.0 + e)),
        st.floats(0.0, 1.0 - 1.5 * QUAT_TOLERANCE).map(lambda s: _spec("imu", "quat_scale", s,
                                                                         fields=(imu + "orientation",))),
        st.floats(1.0 + 1.5 * QUAT_TOLERANCE, 1e150).map(lambda s: _spec("imu", "quat_scale", s,
                                                                           fields=(imu + "orientation",))),
        NONFINITE.map(lambda x: _spec("imu", "quat_value", x, fields=(imu + "orientation",))),
        st.just(_spec("imu", "no_orientation", fields=(imu + "orientation_covariance",))),
        st.tuples(vec3, axis, NONFINITE).map(lambda a: _spec("imu", "value", *a, fields=(imu + a[0],))),
        st.tuples(vec3, axis, HUGE).map(lambda a: _spec("imu", "value", *a, fields=(imu + a[0],))),
        st.floats(1e-4, 1e9).map(lambda d: _spec("imu", "stamp", -d, fields=(imu + "header.stamp", None))),
        st.floats(0.6, 1e9).map(lambda d: _spec("imu", "stamp", d, fields=(imu + "header.stamp", None))),
    )


# ---------------------------------------------------------------------------- twist, damage
def twist_specs():
    value = st.one_of(st.floats(-1.0, 1.0), HUGE, NONFINITE)
    return st.tuples(value, value, value).map(lambda v: _spec("cmd_vel", "twist", *v))


YAML_EDGES = ["", "~", "[]", "{}", "- ", "remove_leg:", "remove_leg: [", "remove_leg: leg9", "remove_leg: 3",
              "remove_links: {leg: leg2, first: 0}", "remove_links: {leg: leg2, first: 2.5}",
              "remove_links: {leg: leg2, first: true}", "lock_joint: {joint: leg1_coxa_joint, angle: .nan}",
              "lock_joint: {joint: leg1_coxa_joint, angle: .inf}", "lock_joint: {joint: leg1_coxa_joint, angle: 1e308}",
              "lock_joint: {joint: nope}", "restore: {leg: leg1, joint: x}", "explode: leg1", "!!python/object:os.system x",
              "&a [*a]", "? [a, b]\n: c", "remove_leg: leg1\nremove_leg: leg2", "\t", "- remove_leg: leg1\n- - x",
              "- remove_leg: leg1\n- remove_leg: leg2\n- remove_leg: leg3\n- remove_leg: leg4\n- remove_leg: leg5\n"
              "- remove_leg: leg6", "remove_links: {leg: leg2, first: 99999999999999999999}"]
VALID_EVENTS = ["remove_leg: leg3", "remove_links: {leg: leg2, first: 2}", "lock_joint: {joint: leg1_coxa_joint, angle: 0.2}",
                "lock_joint: {joint: leg1_femur_joint}", "restore: {}", "- remove_leg: leg4\n- restore: {leg: leg4}"]


def damage_specs():
    return st.one_of(st.sampled_from(YAML_EDGES + VALID_EVENTS), st.text(max_size=40)).map(
        lambda text: _spec("damage", "yaml", text))


ABSURD = {"imu linear_acceleration.z = 1e308": Spec("imu", "value", ("linear_acceleration", "z", 1e308),
                                                     frozenset({"imu.linear_acceleration"})),
          "imu angular_velocity.z = 1e6": Spec("imu", "value", ("angular_velocity", "z", 1e6),
                                                frozenset({"imu.angular_velocity"})),
          "joint velocity = 1e308": Spec("joint_states", "value", ("velocity", 4, 1e308),
                                         frozenset({"joint_state.velocity"}))}

# the faults of the flood (a fixed catalogue: the flood is drawn with numpy, not hypothesis)
JS, IMU = "joint_state.", "imu."
FLOOD_FAULTS = list(ABSURD.values()) + [
    _spec("joint_states", "value", "position", 2, math.nan, fields=(JS + "position",)),
    _spec("joint_states", "value", "effort", 7, 1e300, fields=(JS + "effort",)),
    _spec("joint_states", "length", "velocity", -2, fields=(JS + "velocity",)),
    _spec("joint_states", "duplicate", 3, fields=(JS + "name",)),
    _spec("joint_states", "unknown_only", ("a", "b"), fields=(JS + "name",)),
    _spec("joint_states", "beyond_limit", 5, 3.0, False, fields=(JS + "position",)),
    *[_spec("joint_states", "stamp", d, fields=(JS + "header.stamp", None)) for d in (-0.5, 1e6, 0.3, 0.05)],
    _spec("imu", "quat_scale", 0.0, fields=(IMU + "orientation",)),
    _spec("imu", "quat_scale", 3.0, fields=(IMU + "orientation",)),
    _spec("imu", "quat_value", math.inf, fields=(IMU + "orientation",)),
    _spec("imu", "no_orientation", fields=(IMU + "orientation_covariance",)),
    _spec("imu", "value", "angular_velocity", "x", -math.inf, fields=(IMU + "angular_velocity",)),
    *[_spec("imu", "stamp", d, fields=(IMU + "header.stamp", None)) for d in (-2.0, 86400.0, 0.4, 0.05)]]


def input_specs(n_joints: int, valid_share: float = 1 / 3, damage: bool = True, twist: bool = False):
    """A mixed stream: about ``valid_share`` valid joint-state + IMU pairs, the rest faults."""
    faults = [joint_state_specs(n_joints), imu_specs()] + ([damage_specs()] if damage else []) + \
        ([twist_specs()] if twist else [])
    valid = st.just(_spec("pair", "valid"))
    return st.integers(0, 999).flatmap(lambda k: valid if k < 1000 * valid_share else st.one_of(*faults))


# ---------------------------------------------------------------------------- messages
class Builder:
    """Messages of a standing robot, and the faults of a :class:`Spec`, at clock ``t``."""

    def __init__(self, robot):
        self.robot = robot
        self.q = standing_pose(robot)
        self.joints = list(robot.actuated_joints)
        idx = {n: i for i, n in enumerate(robot.joint_names)}
        self.qj = self.q[7:][[idx[n] for n in self.joints]]
        m = robot.model
        jids = [m.getJointId(n) for n in self.joints]
        self.lower = np.array([m.lowerPositionLimit[m.joints[j].idx_q] for j in jids])
        self.upper = np.array([m.upperPositionLimit[m.joints[j].idx_q] for j in jids])

    def joint_state(self, t: float, spec: Spec = _spec("joint_states", "valid")) -> JointState:
        names, pos = list(self.joints), [float(x) for x in self.qj]
        vel, eff = [0.0] * len(names), [0.0] * len(names)
        f, a = spec.fault, spec.args
        stamp = t
        if f == "valid_zero_stamp":
            stamp = 0.0
        elif f == "subset":
            names, pos, vel, eff = ([arr[i] for i in a[0]] for arr in (names, pos, vel, eff))
        elif f == "extra_name" and a[0] not in names:
            names, pos, vel, eff = names + [a[0]], pos + [7.0], vel + [0.0], eff + [0.0]
        elif f == "length":
            arr = {"position": pos, "velocity": vel, "effort": eff}[a[0]]
            arr[:] = arr[:len(arr) + a[1]] if a[1] < 0 else arr + [0.0] * a[1]
        elif f == "duplicate":
            names[(a[0] + 1) % len(names)] = names[a[0]]
        elif f == "unknown_only":
            names = list(dict.fromkeys(a[0]))
            pos, vel, eff = [0.0] * len(names), [0.0] * len(names), [0.0] * len(names)
        elif f == "value":
            {"position": pos, "velocity": vel, "effort": eff}[a[0]][a[1]] = a[2]
        elif f == "beyond_limit":
            i, d, up = a
            pos[i] = float(self.upper[i] + d if up else self.lower[i] - d)
        elif f == "stamp":
            stamp = t + a[0]
        m = JointState()
        sec_to_stamp(max(stamp, 0.0), m.header.stamp)
        m.name, m.position, m.velocity, m.effort = names, pos, vel, eff
        return m

    def imu(self, t: float, spec: Spec = _spec("imu", "valid")) -> Imu:
        m = Imu()
        stamp = t + (spec.args[0] if spec.fault == "stamp" else 0.0)
        sec_to_stamp(max(stamp, 0.0), m.header.stamp)
        m.orientation.w = 1.0
        m.linear_acceleration.z = 9.81
        if spec.fault == "quat_scale":
            m.orientation.w = float(spec.args[0])
        elif spec.fault == "quat_value":
            m.orientation.x = spec.args[0]
        elif spec.fault == "no_orientation":
            m.orientation_covariance[0] = -1.0
        elif spec.fault == "value":
            setattr(getattr(m, spec.args[0]), spec.args[1], spec.args[2])
        return m

    @staticmethod
    def twist(spec: Spec) -> Twist:
        m = Twist()
        m.linear.x, m.linear.y, m.angular.z = spec.args
        return m


def rejection_matches(spec: Spec, out) -> bool:
    """The outcome of one message agrees with its spec: accepted only if acceptable, and a
    rejection names one of the spec's fields."""
    if out is None:
        return None in spec.fields
    return isinstance(out, Rejected) and out.field in spec.fields


# ---------------------------------------------------------------------------- the library harness
class LibraryLoop:
    """The runtime :class:`~hybrid_dynamics.runtime.pipeline.Pipeline` cycled as the
    controller node does: with ``lockstep`` one cycle per joint state paired with its IMU
    sample (``trigger: joint_states``), else only from :meth:`timer_cycle` (the timer);
    damage events applied through the damage schema as the morphology manager does. Keeps
    every command and whether it came from the QP, safe mode or the fallback."""

    def __init__(self, robot, pipeline):
        self.robot, self.pipeline = robot, pipeline
        self.state, self.control = pipeline.state, pipeline.control
        self.commands, self.kinds = [], []
        self.rejections = 0
        self.morphology = Morphology.healthy(robot)
        self.damage_rejected = 0
        self.lockstep = True

    def feed(self, topic: str, msg, now: float):
        """One message; returns the Rejected (or None) and runs a cycle when one is due."""
        st_ = self.state
        if topic == "joint_states":
            out = self.pipeline.add_joint_state(msg, now)
            due = st_.lockstep_after_joint_state(rejected=out is not None)
        else:
            out = self.pipeline.add_imu(msg, now)
            due = st_.lockstep_after_imu(rejected=out is not None)
        self.rejections += out is not None
        if due and self.lockstep:
            self._step(now, True)
        return out

    def timer_cycle(self, now: float) -> None:
        """A cycle of the timer-driven controller at receive time ``now``: staleness judged
        on the receive times of accepted samples."""
        self._step(now, False)

    def _step(self, now: float, use_stamps: bool) -> None:
        cycle = self.pipeline.step(now, use_stamps=use_stamps)
        kind = "safe" if cycle.safe_mode is not None else ("fallback" if cycle.output.fallback else "qp")
        self.commands.append(cycle.command.copy())
        self.kinds.append(kind)

    def damage(self, text: str) -> bool:
        try:
            new = apply_damage_yaml(self.morphology, text, lambda j: 0.0)
            MorphologyMap(self.robot, new)            # what the morphology manager checks
        except InputError:
            self.damage_rejected += 1
            return False
        self.pipeline.set_morphology(new)
        self.morphology = new
        return True

    def command_limits(self) -> np.ndarray:
        m = self.robot.model
        return np.array([m.effortLimit[m.joints[m.getJointId(n)].idx_v] for n in self.control.joints])

"""Every node's parameters, declared in one place: one typed spec per node.

A :class:`Param` has a default (its type: bool, int, float, str or a list of str, float or int), a
description and, for numbers, a range; each node declares its spec with a
``ParameterDescriptor`` carrying all three, so ``ros2 param describe`` shows them and rclpy
rejects a value of the wrong type or out of range. Groups of settings are the library's config
dataclasses, field for field, under a dotted prefix (``estimator.accel_noise``,
``locomotion.step_height``): defaults, types and descriptions (the field's comment) come from
the dataclass, the single source. :func:`nested` turns the dotted keys back into the
dictionaries the library takes. Names follow ros2_control where one exists (``joints``,
``update_rate``, ``contacts``, ``solver``). ``config/<robot>.yaml`` sets them per robot.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, fields
from typing import Any, Dict, Iterable, Optional, Tuple

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType

from ..control.balance import WeightShift
from ..control.locomotion import LocomotionConfig
from ..estimation.base_estimator import BaseEstimatorConfig
from ..estimation.contact_state import ContactStateConfig
from ..estimation.damage_detector import DamageDetectorConfig
from ..estimation.fall_monitor import FallMonitorConfig
from ..estimation.plausibility import PlausibilityConfig
from ..sim.plant import ImuNoise

INT_MAX = 2 ** 31 - 1
POSITIVE = (0.0, float("inf"))


@dataclass(frozen=True)
class Param:
    default: Any
    description: str
    range: Optional[Tuple[float, float]] = None         # inclusive bounds of a number

    @property
    def type(self) -> int:
        d = self.default
        if isinstance(d, bool):
            return ParameterType.PARAMETER_BOOL
        if isinstance(d, int):
            return ParameterType.PARAMETER_INTEGER
        if isinstance(d, float):
            return ParameterType.PARAMETER_DOUBLE
        if isinstance(d, list):
            if d and all(isinstance(x, int) and not isinstance(x, bool) for x in d):
                return ParameterType.PARAMETER_INTEGER_ARRAY
            numbers = bool(d) and all(isinstance(x, float) for x in d)
            return ParameterType.PARAMETER_DOUBLE_ARRAY if numbers else ParameterType.PARAMETER_STRING_ARRAY
        return ParameterType.PARAMETER_STRING

    def descriptor(self, name: str) -> ParameterDescriptor:
        out = ParameterDescriptor(name=name, type=self.type, description=self.description)
        if self.range is not None and self.type == ParameterType.PARAMETER_DOUBLE:
            out.floating_point_range = [FloatingPointRange(from_value=float(self.range[0]),
                                                           to_value=float(self.range[1]), step=0.0)]
        elif self.range is not None and self.type == ParameterType.PARAMETER_INTEGER:
            hi = INT_MAX if self.range[1] == float("inf") else int(self.range[1])
            out.integer_range = [IntegerRange(from_value=int(self.range[0]), to_value=hi, step=0)]
        return out


Spec = Dict[str, Param]

_FIELD_COMMENT = re.compile(r"^\s+(\w+)\s*:[^=#]*=[^#]*#\s*(.*)$")


def field_comments(cls) -> Dict[str, str]:
    """The trailing comment of each field of a dataclass's source (its documentation)."""
    out = {}
    for line in inspect.getsource(cls).splitlines():
        m = _FIELD_COMMENT.match(line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def config_group(prefix: str, cls, signed: Iterable[str] = ()) -> Spec:
    """The fields of config dataclass ``cls`` as parameters ``prefix.field``: numbers are
    non-negative unless named in ``signed``."""
    comments = field_comments(cls)
    out: Spec = {}
    for f in fields(cls):
        default = [float(x) for x in f.default] if isinstance(f.default, (list, tuple)) else f.default
        numeric = isinstance(default, (int, float)) and not isinstance(default, bool)
        text = f"{cls.__name__}.{f.name}" + (f": {comments[f.name]}" if f.name in comments else "")
        out[f"{prefix}.{f.name}"] = Param(default, text, POSITIVE if numeric and f.name not in signed else None)
    return out


def declare(node, spec: Spec) -> Dict[str, Any]:
    """Declare ``spec`` on an rclpy node (descriptors with type, description, range); the
    values it got, by dotted key."""
    for key, param in spec.items():
        node.declare_parameter(key, param.default, param.descriptor(key))
    return {key: node.get_parameter(key).value for key in spec}


COMMON: Spec = {
    "robot": Param("jethexa", "built-in robot name, or a path to a robot.yaml or .urdf"),
    "morphology_topic": Param("/morphology_manager/morphology", "current morphology (transient local)"),
    "diagnostics_period": Param(0.5, "s between /diagnostics messages (the morphology manager: 5x this)",
                                (1e-3, 3600.0)),
}

STATE_ESTIMATOR: Spec = {
    **COMMON,
    "joint_states_topic": Param("/joint_states", "sensor_msgs/JointState in (joint_state_broadcaster)"),
    "imu_topic": Param("/imu_sensor_broadcaster/imu", "sensor_msgs/Imu in"),
    "stale_timeout": Param(0.05, "s without IMU or joint states before the state is stale", (1e-4, 10.0)),
    "odom_frame": Param("odom", "Odometry header frame (REP-105)"),
    "base_frame": Param("", "Odometry child frame; empty: the robot's root link"),
    "publish_rate": Param(0.0, "Hz cap on the estimate and ~/joint_states_full, ~/odometry (0: every "
                               "joint state); the filter is time-stamped, so it runs at this rate", (0.0, 10000.0)),
    "publish_tf": Param(True, "publish odom -> base on /tf when tf2_msgs is installed"),
    "stance_topic": Param("", "state_estimator: the controller's cycle record (whole_body_controller/cycle) "
                              "whose planned stance replaces contact detection while it arrives; empty: off"),
    **config_group("estimator", BaseEstimatorConfig, signed=("ground_height",)),
    **config_group("contact_detection", ContactStateConfig, signed=("ground_height",)),
    **config_group("limits", PlausibilityConfig),
}

WHOLE_BODY_CONTROLLER: Spec = {
    **STATE_ESTIMATOR,
    "joints": Param([""], "command order of /effort_controller/commands (the effort controller's joints); "
                          "[''] or []: the robot's actuated joints"),
    "contacts": Param([""], "contact frames the QP may use; empty: the robot's"),
    "update_rate": Param(1000.0, "Hz, timer-driven control loop", (1.0, 10000.0)),
    "trigger": Param("timer", "timer: cycle at update_rate on the executor's timer; joint_states: one "
                              "cycle per joint state (lock-step simulation, deterministic replay); thread: "
                              "cycle at update_rate in the node's own thread at absolute deadlines, on the "
                              "latest inputs (not under use_sim_time; it shares the GIL with the executor: for "
                              "1 kHz on a robot use timer with thread_priority, docs/control_loop.md)"),
    "thread_priority": Param(0, "SCHED_FIFO priority (1-99) of the thread that runs the control cycle, as "
                                "ros2_control's thread_priority (50 there); 0: the default scheduler. Needs "
                                "CAP_SYS_NICE or an rtprio limit; refused: a fault on /diagnostics, the cycle "
                                "runs on (runtime/realtime.py)", (0, 99)),
    "cpu_affinity": Param([-1], "CPUs of the thread that runs the control cycle, as ros2_control's cpu_affinity "
                                "(on a robot: cores kept for it, isolcpus); [-1]: any CPU. Refused: a fault on "
                                "/diagnostics, the cycle runs on; /diagnostics carries the CPUs it runs on "
                                "(runtime/realtime.py)"),
    "solver": Param("", "QP solver: goldfarb_idnani, daqp, proxsuite or osqp; empty: the controller configuration's"),
    "commands_topic": Param("/effort_controller/commands", "std_msgs/Float64MultiArray out"),
    "actuator_forces_topic": Param("~/actuator_forces", "closed chains: actuator forces, order of actuators"),
    "safe_mode_damping": Param(1.0, "N m s/rad of the safe-mode damping torques", POSITIVE),
    "markers_period": Param(0.1, "s between ~/markers messages (0: off); built only while subscribed", POSITIVE),
    "gait": Param(False, "walk: the node owns the locomotion planner (control/locomotion), follows "
                         "cmd_vel_topic and the morphology, and uses the planned stance"),
    "cmd_vel_topic": Param("/cmd_vel", "geometry_msgs/Twist in (with gait: true)"),
    "references": Param("", "reference source: gait (as gait: true), weight_shift (closed-chain balance: CoM "
                            "held plus the weight_shift.* motion, every foot down) or hold; empty: gait "
                            "if gait is true, else hold"),
    **config_group("locomotion", LocomotionConfig),
    **config_group("weight_shift", WeightShift),
    "detector": Param(False, "damage detection in the control cycle (runtime/detection.py: the momentum "
                             "observer of estimation/damage_detector.py with the IMU's fall monitor, on this "
                             "cycle's estimate, efforts and stance, before its command); a detection changes "
                             "the controller's morphology in that cycle and goes to the morphology manager "
                             "on ~/detections"),
    **config_group("damage_detector", DamageDetectorConfig),
    **config_group("fall_monitor", FallMonitorConfig),
}

MORPHOLOGY_MANAGER: Spec = {
    **COMMON,
    "damage": Param("", "a damage event in YAML (schema: hybrid_dynamics.model.damage_events); setting it "
                        "applies it"),
    "joint_states_topic": Param("/joint_states", "for silent-joint detection and lock angles"),
    "auto_detect": Param(True, "a joint not reported (or reported NaN) for detect_timeout removes "
                               "its links from the leg"),
    "detect_timeout": Param(0.5, "s", (1e-3, 3600.0)),
    "detections_topic": Param("/whole_body_controller/detections", "detections made in the controller's cycle "
                                                                   "(its detector: true), applied as they come"),
}

MUJOCO_SIM: Spec = {
    "robot": COMMON["robot"],
    "publish_rate": Param(1000.0, "Hz of sensor messages (1000: every physics step of 1 ms)", (1.0, 10000.0)),
    "real_time": Param(True, "pace the physics with the wall clock; false: as fast as the timer allows"),
    "joints": Param([""], "order of /effort_controller/commands; empty: the plant's actuated joints"),
    "seed": Param(0, "seed of the sensor noise", (0, INT_MAX)),
    "lockstep": Param(False, "advance one publish period per command received (lock-step with a "
                             "controller triggered by joint states)"),
    "lockstep_timeout": Param(0.5, "wall s without the answer to its state before a lock-step plant sends the "
                                   "state again (it never steps without a command)", (1e-3, 60.0)),
    "max_command_age": Param(0.02, "real time: the physics waits while the last command is older than this "
                                   "(s of simulated time; a starved controller slows the simulation down "
                                   "instead of losing it); 0: never waits", POSITIVE),
    "settle": Param(0.0, "s of joint PD on the standing pose before the first message", POSITIVE),
    "diagnostics_period": Param(1.0, "wall s between /diagnostics messages (commands taken and ignored, "
                                     "states re-sent)", (0.01, 60.0)),
    "clock_rate": Param(0.0, "Hz of /clock (0: with every sensor message)", POSITIVE),
    "damage": Param("", "damage events (the YAML of morphology_manager/damage) the plant suffers at "
                        "damage_at; empty: none"),
    "damage_at": Param(0.0, "s after the settle (the plant's clock at its first message) at which "
                            "damage happens, exactly, in the plant's step", POSITIVE),
    **config_group("sensors", ImuNoise),
}

NODES = {"state_estimator": STATE_ESTIMATOR, "whole_body_controller": WHOLE_BODY_CONTROLLER,
         "morphology_manager": MORPHOLOGY_MANAGER}


def nested(flat: Dict[str, Any]) -> Dict[str, Any]:
    """``{"a.b": 1, "c": 2}`` -> ``{"a": {"b": 1}, "c": 2}``; empty string lists become []."""
    out: Dict[str, Any] = {}
    for key, value in flat.items():
        if isinstance(value, (list, tuple)):
            value = [x for x in value if x != ""]
        parts = key.split(".")
        d = out
        for p in parts[:-1]:
            d = d.setdefault(p, {})
        d[parts[-1]] = value
    return out


def flatten(data: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """Inverse of :func:`nested` (for YAML files written with nested mappings)."""
    out: Dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def defaults(node: str) -> Dict[str, Any]:
    return {k: p.default for k, p in NODES[node].items()}

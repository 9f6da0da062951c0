"""Every node's parameters, declared in one place (name: default, description).

Names follow ros2_control where one exists (``joints``, ``update_rate``, ``contacts``,
``solver``). Nested groups use dots (``estimator.accel_noise``); :func:`nested` turns them
back into the dictionaries the library takes. ``config/<robot>.yaml`` sets them per robot.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

from ..estimation.base_estimator import BaseEstimatorConfig
from ..estimation.contact_state import ContactStateConfig

Spec = Dict[str, Tuple[Any, str]]

COMMON: Spec = {
    "robot": ("jethexa", "built-in robot name, or a path to a robot.yaml or .urdf"),
    "morphology_topic": ("/morphology_manager/morphology", "current morphology (transient local)"),
    "diagnostics_period": (0.5, "s between /diagnostics messages (the morphology manager: 5x this)"),
}

STATE_ESTIMATOR: Spec = {
    **COMMON,
    "joint_states_topic": ("/joint_states", "sensor_msgs/JointState in (joint_state_broadcaster)"),
    "imu_topic": ("/imu_sensor_broadcaster/imu", "sensor_msgs/Imu in"),
    "stale_timeout": (0.05, "s without IMU or joint states before the state is stale"),
    "odom_frame": ("odom", "Odometry header frame (REP-105)"),
    "base_frame": ("", "Odometry child frame; empty: the robot's root link"),
    "publish_rate": (0.0, "Hz cap on the estimate and ~/joint_states_full, ~/odometry (0: every "
                          "joint state); the filter is time-stamped, so it runs at this rate"),
    "publish_tf": (True, "publish odom -> base on /tf when tf2_msgs is installed"),
    "stance_topic": ("", "state_estimator: the controller's cycle record (whole_body_controller/cycle) "
                         "whose planned stance replaces contact detection while it arrives; empty: off"),
    **{f"estimator.{k}": (f.default, "base estimator KF setting")
       for k, f in BaseEstimatorConfig.__dataclass_fields__.items()},
    **{f"contact_detection.{k}": (f.default, "contact-state setting")
       for k, f in ContactStateConfig.__dataclass_fields__.items()},
}

WHOLE_BODY_CONTROLLER: Spec = {
    **STATE_ESTIMATOR,
    "joints": ([""], "command order of /effort_controller/commands (the effort controller's joints); "
                     "[''] or []: the robot's actuated joints"),
    "contacts": ([""], "contact frames the QP may use; empty: the robot's"),
    "update_rate": (1000.0, "Hz, timer-driven control loop"),
    "trigger": ("timer", "timer: cycle at update_rate; joint_states: one cycle per joint state "
                         "(lock-step simulation, deterministic replay)"),
    "solver": ("", "QP solver: proxsuite or osqp; empty: the controller configuration's"),
    "commands_topic": ("/effort_controller/commands", "std_msgs/Float64MultiArray out"),
    "actuator_forces_topic": ("~/actuator_forces", "closed chains: actuator forces, order of actuators"),
    "safe_mode_damping": (1.0, "N m s/rad of the safe-mode damping torques"),
    "markers_period": (0.1, "s between ~/markers messages (0: off); built only while subscribed"),
    "gait": (False, "walk: the node owns the locomotion planner (control/locomotion), follows "
                    "cmd_vel_topic and the morphology, and uses the planned stance"),
    "cmd_vel_topic": ("/cmd_vel", "geometry_msgs/Twist in (with gait: true)"),
    "gait_config": ("", "YAML mapping of LocomotionConfig fields (with gait: true)"),
    "references": ("", "reference source: gait (as gait: true), weight_shift (closed-chain balance: CoM "
                       "held plus control.balance.WeightShift, every foot down) or hold; empty: gait "
                       "if gait is true, else hold"),
    "weight_shift": ("", "YAML mapping of control.balance.WeightShift fields (with references: weight_shift)"),
}

MORPHOLOGY_MANAGER: Spec = {
    **COMMON,
    "damage": ("", "a damage event in YAML (schema: hybrid_dynamics.model.damage_events); setting it applies it"),
    "joint_states_topic": ("/joint_states", "for automatic detection and lock angles"),
    "auto_detect": (True, "a joint not reported (or reported NaN) for detect_timeout removes "
                          "its links from the leg"),
    "detect_timeout": (0.5, "s"),
    "detector": (False, "momentum-observer damage detection (estimation/damage_detector.py) on "
                        "the state estimator's output, the measured efforts and the controller's "
                        "planned stance (whole_body_controller/cycle)"),
    "detector_config": ("", "YAML mapping of DamageDetectorConfig fields"),
    "odometry_topic": ("/state_estimator/odometry", "estimated base (for the detector)"),
    "joint_states_full_topic": ("/state_estimator/joint_states_full", "estimated joints (for the detector)"),
    "cycle_topic": ("/whole_body_controller/cycle", "the controller's cycle record (planned stance)"),
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
    return {k: v for k, (v, _) in NODES[node].items()}

"""Scenario files, ``config/scenarios/<name>.yaml``: what to simulate and what goes wrong.

::

    description: "Farghdani et al.'s (2025) S1: legs 3 and 4 lost at t = 3 s"
    robot: jethexa
    duration: 20.0                  # s of simulated time
    cmd_vel: {linear_x: 0.1, linear_y: 0.0, angular_z: 0.0}
    damage:                         # optional
      at: 3.0                       # s
      declared: true                # false: the morphology manager must detect it
      events:                       # the morphology_manager/damage schema (model/damage_events.py)
        - remove_leg: leg3
        - remove_leg: leg4
    sensors: {gyro_std: 0.002, accel_std: 0.02, gyro_bias: [0.001, -0.001, 0.0005]}
    control_rate: 200.0             # Hz (the plant runs at its MJCF timestep, 1 kHz)
    seed: 0
    controller: {...}               # overrides of config/controller/<robot>.yaml
    estimator: {...}                # BaseEstimatorConfig fields (the base estimator of both runners)
    locomotion: {...}               # LocomotionConfig fields
    detector: {...}                 # DamageDetectorConfig fields
    fall_monitor: {...}             # FallMonitorConfig fields (the IMU's fall alert the detector takes)
    references: gait                # gait (walk at cmd_vel), weight_shift (closed-chain balance:
                                    # CoM held plus control.balance.WeightShift), or hold
    balance: {...}                  # WeightShift fields (references: weight_shift)

Every field is checked; a wrong one is an :class:`~hybrid_dynamics.errors.InputError` naming
the file, the line and the field.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..control.balance import WeightShift
from ..control.locomotion import LocomotionConfig
from ..errors import InputError
from ..estimation.base_estimator import BaseEstimatorConfig
from ..estimation.damage_detector import DamageDetectorConfig
from ..estimation.fall_monitor import FallMonitorConfig
from ..model.damage_events import apply_event
from ..model.morphology import Morphology
from ..model.robot import load_robot
from ..model.yamlio import load_yaml
from ..paths import config_dir
from .plant import ImuNoise

FIELDS = {"description", "robot", "duration", "cmd_vel", "damage", "sensors", "control_rate", "seed",
          "controller", "estimator", "locomotion", "detector", "fall_monitor", "references", "balance"}
REFERENCES = ("gait", "weight_shift", "hold")
CMD_FIELDS = {"linear_x", "linear_y", "angular_z"}
DAMAGE_FIELDS = {"at", "declared", "events"}


@dataclass
class Scenario:
    name: str
    path: Optional[Path]
    robot: str = "jethexa"
    description: str = ""
    duration: float = 20.0
    cmd_vel: Dict[str, float] = field(default_factory=lambda: {"linear_x": 0.0, "linear_y": 0.0, "angular_z": 0.0})
    damage_at: Optional[float] = None
    damage_events: List[dict] = field(default_factory=list)
    declared: bool = True
    sensors: Dict[str, Any] = field(default_factory=dict)
    control_rate: float = 200.0
    seed: int = 0
    controller: Dict[str, Any] = field(default_factory=dict)
    estimator: Dict[str, Any] = field(default_factory=dict)
    locomotion: Dict[str, Any] = field(default_factory=dict)
    detector: Dict[str, Any] = field(default_factory=dict)
    fall_monitor: Dict[str, Any] = field(default_factory=dict)
    references: str = "gait"
    balance: Dict[str, Any] = field(default_factory=dict)


def scenarios_dir() -> Path:
    return config_dir() / "scenarios"


def available() -> List[str]:
    return sorted(p.stem for p in scenarios_dir().glob("*.yaml"))


def scenario_path(name_or_path: str) -> Path:
    """``config/scenarios/<name>.yaml`` for a name, else the path itself (which must exist)."""
    text = str(name_or_path)
    path = Path(text)
    if path.suffix not in (".yaml", ".yml"):
        path = scenarios_dir() / f"{text}.yaml"
        if "/" in text or not path.is_file():
            raise InputError(f"unknown scenario '{text}': scenarios are {', '.join(available())}, "
                             "or give a path to a scenario .yaml")
    elif not path.is_file():
        raise InputError("file not found", file=str(path))
    return path


class _Fields:
    """Typed reads of a scenario file's fields; errors name the file, line and field."""

    def __init__(self, doc):
        self.doc = doc
        self.data = doc.data

    def number(self, value, *where, positive=False) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.doc.error(f"expected a number, got {value!r}", *where)
        if positive and not value > 0:
            raise self.doc.error(f"must be positive, got {value}", *where)
        return float(value)

    def mapping(self, key) -> dict:
        value = self.data.get(key) or {}
        if not isinstance(value, dict):
            raise self.doc.error("expected a mapping", key)
        return dict(value)

    def known(self, keys, allowed, *where) -> None:
        for key in keys:
            if key not in allowed:
                raise self.doc.error(f"unknown field (expected {', '.join(sorted(allowed))})", *where, key)


def load_scenario(name_or_path: str) -> Scenario:
    """A scenario by name (``config/scenarios/<name>.yaml``) or by path."""
    path = scenario_path(name_or_path)
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise doc.error("expected a mapping (robot, duration, cmd_vel, damage, ...)")
    f = _Fields(doc)
    data = doc.data
    f.known(data, FIELDS)
    sc = Scenario(name=path.stem, path=path)
    sc.robot = str(data.get("robot", sc.robot))
    sc.description = str(data.get("description", ""))
    if "duration" in data:
        sc.duration = f.number(data["duration"], "duration", positive=True)
    if "control_rate" in data:
        sc.control_rate = f.number(data["control_rate"], "control_rate", positive=True)
    if "seed" in data:
        if isinstance(data["seed"], bool) or not isinstance(data["seed"], int):
            raise doc.error("expected an integer", "seed")
        sc.seed = data["seed"]
    cmd = f.mapping("cmd_vel")
    f.known(cmd, CMD_FIELDS, "cmd_vel")
    sc.cmd_vel.update({key: f.number(value, "cmd_vel", key) for key, value in cmd.items()})
    _read_damage(f, sc)
    for key in ("sensors", "controller", "estimator", "locomotion", "detector", "fall_monitor", "balance"):
        setattr(sc, key, f.mapping(key))
    if "references" in data:
        if data["references"] not in REFERENCES:
            raise doc.error(f"expected one of {', '.join(REFERENCES)}, got {data['references']!r}", "references")
        sc.references = data["references"]
    _check_settings(doc, sc)
    return sc


def _read_damage(f: _Fields, sc: Scenario) -> None:
    damage = f.mapping("damage")
    if not damage:
        return
    f.known(damage, DAMAGE_FIELDS, "damage")
    if "at" not in damage:
        raise f.doc.error("missing: when the damage happens (s)", "damage", "at")
    sc.damage_at = f.number(damage["at"], "damage", "at")
    declared = damage.get("declared", True)
    if not isinstance(declared, bool):
        raise f.doc.error("expected true or false", "damage", "declared")
    sc.declared = declared
    events = damage.get("events")
    if not isinstance(events, list) or not events:
        raise f.doc.error("expected a non-empty list of damage events", "damage", "events")
    sc.damage_events = events


def _check_settings(doc, sc: Scenario) -> None:
    """The parts other modules own are checked now, with this file's name on the error."""
    for key, check in (("sensors", ImuNoise.from_dict), ("estimator", BaseEstimatorConfig.from_dict),
                       ("locomotion", LocomotionConfig.from_dict),
                       ("detector", DamageDetectorConfig.from_dict), ("fall_monitor", FallMonitorConfig.from_dict),
                       ("balance", WeightShift.from_dict)):
        try:
            check(getattr(sc, key))
        except (InputError, TypeError, ValueError) as exc:
            raise doc.error(str(exc.detail if isinstance(exc, InputError) else exc), key) from None


def check_events(sc: Scenario, robot) -> None:
    """Damage events name real legs and joints of the robot (an InputError otherwise)."""
    morph = Morphology.healthy(robot)
    for event in sc.damage_events:
        try:
            morph = apply_event(morph, event, current_angle=lambda joint: 0.0)
        except InputError as exc:
            raise InputError(f"damage event {event!r}: {exc.detail}", file=str(sc.path), field="damage") from None


def prepare_run(sc: Scenario, duration: Optional[float], undeclared: bool):
    """What every scenario runner checks and needs first: (duration, declared, robot).

    The duration is the scenario's unless given, and positive; ``undeclared`` hides declared
    damage from the software; the robot must have an MJCF to simulate and the damage events
    must name its legs and joints (an InputError otherwise)."""
    run_for = float(duration if duration is not None else sc.duration)
    if not run_for > 0:
        raise InputError(f"duration must be positive, got {run_for}", field="duration")
    robot = load_robot(sc.robot)
    if robot.mjcf is None:
        raise InputError(f"robot '{robot.name}' has no MJCF to simulate", file=str(sc.path))
    check_events(sc, robot)
    return run_for, sc.declared and not undeclared, robot

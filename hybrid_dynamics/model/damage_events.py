"""Damage events and the published morphology, as YAML text (no rclpy here).

Damage event schema (``morphology_manager/damage``, std_msgs/String, or the manager's
``damage`` parameter): one event, or a list of events applied in order, all or nothing::

    remove_leg: leg3                              # the whole leg
    remove_links: {leg: leg2, first: 2}           # links 2..n of leg2 (1-based from the body)
    lock_joint: {joint: leg1_coxa_joint, angle: 0.2}   # angle in rad; omitted: current angle
    restore: {}                                   # everything; or {leg: leg3} / {joint: NAME}

    # a list:
    - remove_leg: leg3
    - lock_joint: {joint: leg1_coxa_joint, angle: 0.0}

Each event is a mapping with exactly one of those keys. A malformed event (not YAML, an
unknown key, an unknown leg or joint, a link index out of range, removing the last leg)
raises :class:`~hybrid_dynamics.errors.InputError` and changes nothing.

Published morphology (``morphology_manager/morphology``, std_msgs/String, transient local,
so a node started later gets the current one)::

    robot: jethexa
    revision: 3                # increases with every change
    links_kept: {leg1: 3, leg2: 1, leg3: 0, ...}
    locked: {leg1_coxa_joint: 0.2}
    description: "leg2 lost links 2..3; leg3 removed; leg1_coxa_joint locked at 0.200 rad"
    source: topic              # what made the change: topic, parameter, detected
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Tuple

import yaml

from ..errors import InputError
from ..model.morphology import Morphology

EVENT_KEYS = ("remove_leg", "remove_links", "lock_joint", "restore")


def _mapping(value, key) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"'{key}' expects a mapping, got {type(value).__name__}", field=key)
    return value


def apply_event(morph: Morphology, event, current_angle: Optional[Callable[[str], float]] = None) -> Morphology:
    """One event (a mapping with one key of :data:`EVENT_KEYS`) applied to ``morph``."""
    if not isinstance(event, dict) or len(event) != 1:
        raise InputError(f"a damage event is a mapping with one of {', '.join(EVENT_KEYS)}", field="damage")
    (key, value), = event.items()
    if key == "remove_leg":
        if not isinstance(value, str):
            raise InputError("remove_leg expects a leg name", field=key)
        return morph.remove_leg(value)
    if key == "remove_links":
        value = _mapping(value, key)
        if set(value) - {"leg", "first"} or "leg" not in value or "first" not in value:
            raise InputError("remove_links expects {leg: NAME, first: INDEX}", field=key)
        first = value["first"]
        if isinstance(first, bool) or not isinstance(first, int):
            raise InputError("remove_links.first must be an integer (1-based link index)", field=key)
        return morph.remove_links(str(value["leg"]), first)
    if key == "lock_joint":
        value = _mapping(value, key)
        if set(value) - {"joint", "angle"} or "joint" not in value:
            raise InputError("lock_joint expects {joint: NAME, angle: RAD}", field=key)
        joint = str(value["joint"])
        angle = value.get("angle")
        if angle is None:
            if current_angle is None:
                raise InputError("lock_joint needs an angle here", field=key)
            angle = current_angle(joint)
        if isinstance(angle, bool) or not isinstance(angle, (int, float)):
            raise InputError("lock_joint.angle must be a number (rad)", field=key)
        return morph.lock_joint(joint, float(angle))
    if key == "restore":
        value = _mapping(value, key)
        if set(value) - {"leg", "joint"}:
            raise InputError("restore expects {} or {leg: NAME} or {joint: NAME}", field=key)
        return morph.restore(leg=value.get("leg"), joint=value.get("joint"))
    raise InputError(f"unknown damage event '{key}' (expected {', '.join(EVENT_KEYS)})", field="damage")


def with_lock_angles(events, locked: Mapping[str, float]) -> list:
    """``events`` (a list of events) with every ``lock_joint`` that names no angle given the
    angle of ``locked`` (joint -> rad, e.g. where the plant locked it): the declaration of a
    damage that has happened, not one for the receiver to complete with its latest reading."""
    out = []
    for event in events:
        value = event.get("lock_joint") if isinstance(event, dict) else None
        if isinstance(value, dict) and value.get("angle") is None and value.get("joint") in locked:
            event = {"lock_joint": {**value, "angle": float(locked[value["joint"]])}}
        out.append(event)
    return out


def apply_damage_yaml(morph: Morphology, text: str,
                      current_angle: Optional[Callable[[str], float]] = None) -> Morphology:
    """Parse a damage message (one event or a list) and apply it, all or nothing."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"damage event is not YAML: {str(exc).splitlines()[0]}", field="damage") from None
    events = data if isinstance(data, list) else [data]
    if not events:
        raise InputError("empty damage event list", field="damage")
    new = morph
    for event in events:
        new = apply_event(new, event, current_angle)
    return new


def morphology_to_yaml(robot_name: str, morph: Morphology, revision: int, source: Optional[str] = None,
                       t: Optional[float] = None) -> str:
    """``source``: what made the change (topic, parameter, detected, ...), when known; ``t``:
    when it happened (s of the clock), when known."""
    data = {
        "robot": robot_name,
        "revision": int(revision),
        "links_kept": {leg: int(k) for leg, k in morph.links_kept},
        "locked": {j: float(a) for j, a in morph.locked},
        "description": morph.describe(),
    }
    if source is not None:
        data["source"] = source
    if t is not None:
        data["t"] = float(t)
    return yaml.safe_dump(data, sort_keys=False)


def morphology_from_yaml(robot, text: str) -> Tuple[Morphology, int]:
    """(Morphology, revision) from a published morphology message, checked against ``robot``."""
    return morphology_from_mapping(robot, load_morphology_message(text))


def load_morphology_message(text: str):
    """The parsed YAML of a morphology message (checked by :func:`morphology_from_mapping`)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"morphology message is not YAML: {exc}", field="morphology") from None


def morphology_from_mapping(robot, data) -> Tuple[Morphology, int]:
    """(Morphology, revision) from a parsed morphology message, checked against ``robot``."""
    if not isinstance(data, dict) or not isinstance(data.get("links_kept"), dict):
        raise InputError("morphology message needs links_kept", field="morphology")
    if data.get("robot") not in (None, robot.name):
        raise InputError(f"morphology is for robot '{data.get('robot')}', not '{robot.name}'", field="robot")
    morph = Morphology.healthy(robot)
    sizes = morph.sizes
    for leg, kept in data["links_kept"].items():
        if leg not in sizes or not isinstance(kept, int) or not 0 <= kept <= sizes[leg]:
            raise InputError(f"bad links_kept entry {leg}: {kept}", field="links_kept")
        if kept < sizes[leg]:
            morph = morph.remove_links(leg, kept + 1)
    locked: Mapping = data.get("locked") or {}
    if not isinstance(locked, dict):
        raise InputError("locked must be a mapping joint: angle", field="locked")
    for joint, angle in locked.items():
        morph = morph.lock_joint(str(joint), float(angle))
    return morph, int(data.get("revision", 0))

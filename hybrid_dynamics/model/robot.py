"""A robot as the rest of the package sees it: a Pinocchio model with a free-flyer root,
its contacts, legs and kinematic modules, its closed loops and actuators, a standing pose.

Robots are named by a manifest ``robots/<name>/robot.yaml``::

    name: jethexa
    urdf: jethexa.urdf            # relative to the manifest, or example-robot-data:<path>
    mjcf: jethexa.xml             # optional: what the MuJoCo plant loads
    loops: ~                      # optional loop-closure YAML (closed linkages, docs/loops.md)
    base: floating                # or fixed: no free flyer (five-bars, deltas, test rigs)
    srdf: ~                       # optional: reference poses
    imu_frame: imu_link
    friction: 0.8
    contacts:                     # point: a 3D force at the frame; surface: 4 corner points
      - {frame: leg1_foot, type: point}
      - {frame: left_sole_link, type: surface, size: [0.21, 0.138], leg: left}
    stand: {srdf: half_sitting}   # or {joints: {regex: value, ...}}
    gait_groups: [[leg1, leg4, leg5], [leg2, leg3, leg6]]
    soft_modules: [...]           # optional soft leaves (soft feet), model/soft_modules.py

:func:`load_robot` takes a built-in name, a manifest path, a bare URDF path (with a loop
YAML ``<stem>_loops.yaml`` beside it if there is one; contacts are then guessed from frame
names such as foot, sole, toe or tip), or a loop YAML in the community convention
(``closed_loop`` ...) with its URDF of the same stem beside it (``robot.yaml`` +
``robot.urdf``; fixed base unless the YAML or ``base=`` says floating, as the community's
loaders do), or an MJCF file (loops from its ``<equality>``, actuators from ``<actuator>``,
reference pose its first keyframe, else qpos0; floating when it has a free joint). ``base="fixed"`` or ``"floating"`` overrides the base of any of them.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import numpy as np
import pinocchio as pin

from ..errors import InputError
from ..paths import example_robot_data_dir, robots_dir
from .loops import (LoopSpec, apply_strokes, build_loop_model, check_loops, load_loops, load_mjcf_loops,
                    reference_configurations)
from .modules import KinematicModule, Leg, find_legs, find_modules
from .soft_modules import SoftModuleSpec, load_soft_modules
from .yamlio import YamlDocument, load_yaml

ERD_PREFIX = "example-robot-data:"
CONTACT_NAME = re.compile(r"(foot|sole|toe|tip)", re.IGNORECASE)


@dataclass(frozen=True)
class Contact:
    """A contact frame and the points (in that frame) where forces act."""
    frame: str
    kind: str                     # "point" or "surface"
    points: np.ndarray            # (k, 3) offsets in the frame; one zero row for a point
    leg: str
    radius: float = 0.0           # m, height of the frame above the ground when touching (a foot sphere)


class Robot:
    """Everything the estimators and controllers need to know about a robot's body."""

    def __init__(self, name: str, urdf: Path, model: pin.Model, contacts: List[Contact],
                 legs: List[Leg], loops: Optional[LoopSpec], q_stand: np.ndarray, *,
                 manifest: Optional[Path] = None, mjcf: Optional[Path] = None,
                 imu_frame: Optional[str] = None, friction: float = 0.8,
                 gait_groups: Optional[List[List[str]]] = None, loop_report: Optional[dict] = None,
                 soft_modules: Optional[List[SoftModuleSpec]] = None, soft_doc: Optional[YamlDocument] = None):
        self.name = name
        self.urdf = urdf
        self.model = model
        self.contacts = contacts
        self.legs = legs
        self.loops = loops
        self.q_stand = q_stand
        self.manifest = manifest
        self.mjcf = mjcf
        self.imu_frame = imu_frame
        self.friction = friction
        self.gait_groups = gait_groups or []
        self.loop_report = loop_report or {}
        self.modules: List[KinematicModule] = find_modules(model)
        self.soft_modules: List[SoftModuleSpec] = soft_modules or []   # leaves of the rigid tree
        self.soft_doc = soft_doc                                          # their manifest, for errors

    @property
    def nq(self) -> int:
        return self.model.nq

    @property
    def nv(self) -> int:
        return self.model.nv

    @property
    def floating(self) -> bool:
        """A free-flyer root (else the base is fixed to the world)."""
        return self.model.njoints > 1 and self.model.joints[1].shortname() == "JointModelFreeFlyer"

    @property
    def joint_names(self) -> List[str]:
        """Every 1-DoF joint, in Pinocchio's order (the universe and the free flyer left out)."""
        return [self.model.names[j] for j in range(1 + self.floating, self.model.njoints)]

    @property
    def actuated_joints(self) -> List[str]:
        """The joints that carry a motor: name_mot for closed linkages, else all of them."""
        return list(self.loops.actuated) if self.loops else self.joint_names

    @property
    def passive_joints(self) -> List[str]:
        actuated = set(self.actuated_joints)
        return [n for n in self.joint_names if n not in actuated]

    def total_mass(self) -> float:
        return float(sum(inertia.mass for inertia in self.model.inertias))

    def summary(self) -> dict:
        m = self.model
        actuators = []
        for name in self.actuated_joints:
            j = m.getJointId(name)
            entry = {"joint": name, "effort_limit": float(m.effortLimit[m.joints[j].idx_v])}
            if self.loops and name in self.loops.transmissions:
                t = self.loops.transmissions[name]
                entry["transmission"] = {"lead": t.lead, "efficiency": t.efficiency}
            actuators.append(entry)
        return {
            "name": self.name,
            "urdf": str(self.urdf),
            "nq": m.nq,
            "nv": m.nv,
            "total_mass_kg": round(self.total_mass(), 6),
            "legs": [{"name": leg.name, "joints": leg.joint_names(m), "contact_frame": leg.contact_frame}
                     for leg in self.legs],
            "modules": [{"index": mod.index, "parent": mod.parent,
                         "joints": mod.joint_names(m)} for mod in self.modules],
            "contacts": [{"frame": c.frame, "type": c.kind, "points": len(c.points), "leg": c.leg}
                         for c in self.contacts],
            "base": "floating" if self.floating else "fixed",
            "closed_loops": [{"frames": [l.frame_a, l.frame_b], "type": l.kind, "rows": len(l.axes)}
                             for l in (self.loops.loops if self.loops else [])],
            "loop_checks": {k: v for k, v in self.loop_report.items() if k != "q_ref"},
            "actuators": actuators,
            "passive_joints": self.passive_joints,
        }


# ---------------------------------------------------------------------------- loading
def builtin_robots() -> List[str]:
    return sorted(p.parent.name for p in robots_dir().glob("*/robot.yaml"))


def load_robot(name_or_path: str | Path, base: Optional[str] = None) -> Robot:
    """A built-in robot by name, or a robot from a manifest, URDF or community loop-YAML path;
    ``base`` ('fixed' or 'floating') overrides the description's base."""
    if base not in (None, "fixed", "floating"):
        raise InputError(f"base '{base}' is not fixed or floating")
    text = str(name_or_path)
    path = Path(text)
    if path.suffix in (".yaml", ".yml"):
        doc = load_yaml(path)
        if isinstance(doc.data, dict) and "closed_loop" in doc.data and "urdf" not in doc.data:
            return _from_urdf(path.with_suffix(".urdf"), base, loops_path=path, default_base="fixed")
        return _from_manifest(path, base)
    if path.suffix == ".urdf":
        return _from_urdf(path, base)
    if path.suffix == ".xml":
        return _from_mjcf(path, base)
    manifest = robots_dir() / text / "robot.yaml"
    if "/" not in text and manifest.is_file():
        return _from_manifest(manifest, base)
    raise InputError(f"unknown robot '{text}': built-in robots are {', '.join(builtin_robots())}, "
                     "or give a path to a .urdf or a robot.yaml")


def build_model(urdf: Path, floating: bool = True) -> pin.Model:
    """Pinocchio model with a free-flyer root (or fixed to the world); the URDF is first checked
    as XML so that a malformed file is reported with its line."""
    try:
        ET.parse(urdf)
    except FileNotFoundError:
        raise InputError("file not found", file=str(urdf)) from None
    except ET.ParseError as exc:
        raise InputError(f"malformed XML: {exc.msg if hasattr(exc, 'msg') else exc}",
                         file=str(urdf), line=exc.position[0]) from None
    try:
        if floating:
            return pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer())
        return pin.buildModelFromUrdf(str(urdf))
    except (RuntimeError, ValueError) as exc:
        raise InputError(f"not a valid URDF: {str(exc).strip().splitlines()[0]}", file=str(urdf)) from None


def _resolve(doc: YamlDocument, key: str) -> Optional[Path]:
    value = doc.data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise doc.error("expected a file path", key)
    if value.startswith(ERD_PREFIX):
        try:
            path = example_robot_data_dir() / value[len(ERD_PREFIX):]
        except FileNotFoundError as exc:
            raise doc.error(str(exc), key) from None
    else:
        path = doc.path.parent / value
    if not path.is_file():
        raise doc.error(f"file not found: {path}", key)
    return path


def _closed_model(urdf: Path, floating: bool, loops_path: Optional[Path]):
    """(model, loop spec or None): the URDF's model, the loop YAML's joint substitutions
    applied, missing or zero-width limits warned of and completed (loops.apply_strokes)."""
    model = build_model(urdf, floating)
    loops = load_loops(loops_path, model) if loops_path else None
    if loops is not None:
        model = build_loop_model(model, loops)
    apply_strokes(model, loops, str(urdf))
    return model, loops


def _base(doc_value, override, default: str, doc: Optional[YamlDocument] = None) -> bool:
    value = override or doc_value or default
    if value not in ("fixed", "floating"):
        raise doc.error(f"'{value}' is not fixed or floating", "base")
    return value == "floating"


def _from_manifest(path: Path, base: Optional[str] = None) -> Robot:
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise doc.error("expected a mapping (name, urdf, contacts, ...)")
    data = doc.data
    urdf = _resolve(doc, "urdf")
    if urdf is None:
        raise doc.error("missing", "urdf")
    floating = _base(data.get("base"), base, "floating", doc)
    model, loops = _closed_model(urdf, floating, _resolve(doc, "loops"))
    contacts = _contacts(doc, model)
    legs = find_legs(model, [c.frame for c in contacts], [c.leg for c in contacts])
    q_stand = _stand(doc, model, urdf)
    soft = load_soft_modules(doc, model, [c.frame for c in contacts])
    report = None
    if loops is not None:
        report = check_loops(model, loops, q_stand)
        q_stand = report["q_ref"]
    groups = data.get("gait_groups") or []
    leg_names = {leg.name for leg in legs}
    for i, group in enumerate(groups):
        for name in group:
            if name not in leg_names:
                raise doc.error(f"'{name}' is not a leg ({', '.join(sorted(leg_names))})", "gait_groups", i)
    return Robot(str(data.get("name", path.parent.name)), urdf, model, contacts, legs, loops, q_stand,
                 manifest=path, mjcf=_resolve(doc, "mjcf"), imu_frame=data.get("imu_frame"),
                 friction=float(data.get("friction", 0.8)), gait_groups=groups, loop_report=report,
                 soft_modules=soft, soft_doc=doc)


def _contacts(doc: YamlDocument, model: pin.Model) -> List[Contact]:
    entries = doc.data.get("contacts") or []
    if not isinstance(entries, list):
        raise doc.error("expected a list of {frame, type}", "contacts")
    contacts = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "frame" not in entry:
            raise doc.error("each contact needs a frame", "contacts", i)
        frame = entry["frame"]
        if not model.existFrame(frame):
            raise doc.error(f"frame '{frame}' is not in the URDF", "contacts", i, "frame")
        kind = entry.get("type", "point")
        if kind == "point":
            points = np.zeros((1, 3))
        elif kind == "surface":
            size = entry.get("size")
            if not (isinstance(size, list) and len(size) == 2):
                raise doc.error("a surface contact needs size: [length, width]", "contacts", i, "size")
            lx, ly = float(size[0]) / 2, float(size[1]) / 2
            points = np.array([[lx, ly, 0], [lx, -ly, 0], [-lx, ly, 0], [-lx, -ly, 0]])
        else:
            raise doc.error(f"'{kind}' is not point or surface", "contacts", i, "type")
        radius = entry.get("radius", 0.0)
        if isinstance(radius, bool) or not isinstance(radius, (int, float)) or not 0.0 <= radius < 1.0:
            raise doc.error(f"radius {radius!r} is not a length in [0, 1) m (the height of the frame "
                            "above the ground when the foot touches it)", "contacts", i, "radius")
        contacts.append(Contact(frame, kind, points, str(entry.get("leg", frame)), float(radius)))
    return contacts


def _stand(doc: YamlDocument, model: pin.Model, urdf: Path) -> np.ndarray:
    q = pin.neutral(model)
    stand = doc.data.get("stand") or {}
    if "srdf" in stand:
        srdf = _resolve(doc, "srdf")
        if srdf is None:
            raise doc.error("stand.srdf needs an srdf file", "stand", "srdf")
        pin.loadReferenceConfigurations(model, str(srdf), False)
        if stand["srdf"] not in model.referenceConfigurations:
            raise doc.error(f"no reference configuration '{stand['srdf']}' in {srdf.name}", "stand", "srdf")
        q = model.referenceConfigurations[stand["srdf"]].copy()
    floating = model.njoints > 1 and model.joints[1].shortname() == "JointModelFreeFlyer"
    for pattern, value in (stand.get("joints") or {}).items():       # the free flyer is no joint here
        matched = [j for j in range(1 + floating, model.njoints) if re.fullmatch(pattern, model.names[j])]
        if not matched:
            raise doc.error(f"'{pattern}' matches no joint of the URDF", "stand", "joints", pattern)
        for j in matched:
            q[model.joints[j].idx_q] = float(value)
    if floating:
        q[3:7] = (0, 0, 0, 1)
    return q


def _guessed_contacts(model: pin.Model):
    """Point contacts at body frames named like feet (foot, sole, toe, tip), one leg each (a
    name that another frame also has, as MJCF bodies share their joints' names, is left out)."""
    names = [f.name for f in model.frames]
    frames = [f.name for f in model.frames if f.type == pin.FrameType.BODY and CONTACT_NAME.search(f.name)
              and f.parentJoint > 1 and names.count(f.name) == 1]
    contacts = [Contact(f, "point", np.zeros((1, 3)), f) for f in frames]
    legs = find_legs(model, frames)
    return [Contact(c.frame, c.kind, c.points, leg.name, c.radius) for c, leg in zip(contacts, legs)], legs


def _from_mjcf(path: Path, base: Optional[str]) -> Robot:
    model, loops = load_mjcf_loops(path)
    refs = reference_configurations(model)
    q = next((v for k, v in refs if k != "qpos0"), dict(refs).get("qpos0", pin.neutral(model)))
    floating = model.njoints > 1 and model.joints[1].shortname() == "JointModelFreeFlyer"
    if floating and base == "fixed":
        model = pin.buildReducedModel(model, [1], q)
        q = q[7:]
    elif not floating and base == "floating":
        raise InputError("an MJCF without a free joint cannot be given a floating base", file=str(path))
    apply_strokes(model, loops, str(path))
    contacts, legs = _guessed_contacts(model)
    report = check_loops(model, loops, q)
    return Robot(path.stem, path, model, contacts, legs, loops, report["q_ref"], mjcf=path, loop_report=report)


def _from_urdf(urdf: Path, base: Optional[str] = None, loops_path: Optional[Path] = None,
               default_base: str = "floating") -> Robot:
    if loops_path is None:
        beside = urdf.with_name(urdf.stem + "_loops.yaml")
        loops_path = beside if beside.is_file() else None
    yaml_base = None
    if loops_path is not None:
        doc = load_yaml(loops_path)
        yaml_base = doc.data.get("base") if isinstance(doc.data, dict) else None
        if yaml_base not in (None, "fixed", "floating"):
            raise doc.error(f"'{yaml_base}' is not fixed or floating", "base")
    model, loops = _closed_model(urdf, _base(yaml_base, base, default_base), loops_path)
    contacts, legs = _guessed_contacts(model)
    q = pin.neutral(model)
    report = None
    if loops is not None:
        report = check_loops(model, loops, q)
        q = report["q_ref"]
    name = urdf.parent.name if urdf.stem == "robot" else urdf.stem
    return Robot(name, urdf, model, contacts, legs, loops, q, loop_report=report)

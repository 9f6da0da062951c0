"""Soft-module YAML: a list of modules, each a joint and a body, validated field by field
before anything is built (an :class:`InputError` names the file, line, module and field).

    gravity: [0, 0, -9.81]               # optional
    modules:
      - name: shank_pad
        parent: null                     # or the name of an earlier module
        joint: {type: revolute, axis: [0, 1, 0], xyz: [0, 0, 0.1], rpy: [0, 0, 0]}
        body:  {type: cc, length: 0.05, radius: 0.01, density: 1100, planar: false,
                elongation: true, youngs_modulus: 1.0e6, poisson: 0.45, damping_time: 0.01}

Joint types: fixed, revolute, prismatic (axis), axes (list of [revolute|prismatic, axis], at
most 6), free_flyer. Body types and their fields are in BODY_FIELDS; an optional
``face: [x_J, x_a, x_b]`` overrides the distal-face points (checked: orthogonal, distinct,
rigid under deformation unless ``relax_face``).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pinocchio as pin

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.yamlio import YamlDocument, load_yaml
from hybrid_dynamics.soft import bodies as B
from hybrid_dynamics.soft.joints import AxesJoint, FixedJoint, FreeFlyerJoint, Joint, Placement
from hybrid_dynamics.soft.lvp import PRIMITIVES, LVPBody
from hybrid_dynamics.soft.module import Module, check_distal_face
from hybrid_dynamics.soft.tree import GRAVITY, SoftTree

# body type -> (required fields, optional fields with defaults); positive: must be > 0
_ROD = {"length": None, "radius": None, "density": None}
_MATERIAL = {"youngs_modulus": 0.0, "poisson": 0.5, "damping_time": 0.0, "n_axial": 6}
BODY_FIELDS: Dict[str, Dict[str, Any]] = {
    "rigid": {"mass": None, "com": [0, 0, 0], "inertia": [0, 0, 0]},
    "cc": {**_ROD, **_MATERIAL, "planar": False, "elongation": False},
    "pcs": {**_ROD, **_MATERIAL, "segments": None, "strains": [0, 1, 2, 5]},
    "gvs": {**_ROD, **_MATERIAL, "order": None, "strains": [0, 1], "steps": 8},
    "modal": {**_ROD, "modes_per_direction": 2, "youngs_modulus": 0.0, "damping_time": 0.0},
    "lvp": {**_ROD, "primitives": None, "elastic_coefficient": 0.0, "damping_time": 0.0,
            "n_axial": 4, "relax_face": False},
}
POSITIVE = {"length", "radius", "density", "segments", "order", "steps", "n_axial", "modes_per_direction"}
NON_NEGATIVE = {"mass", "youngs_modulus", "damping_time", "elastic_coefficient"}


def _numbers(value) -> List[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return []


def _body_params(doc: YamlDocument, i: int, name: str, spec: Any) -> Dict[str, Any]:
    where = ("modules", i, "body")
    if not isinstance(spec, dict):
        raise doc.error(f"module '{name}': body must be a mapping with a 'type'", *where)
    kind = spec.get("type")
    if kind not in BODY_FIELDS:
        raise doc.error(f"module '{name}': unknown body type {kind!r}; known: {sorted(BODY_FIELDS)}",
                        *where, "type")
    fields = BODY_FIELDS[kind]
    unknown = set(spec) - set(fields) - {"type", "face"}
    if unknown:
        raise doc.error(f"module '{name}': unknown body field(s) {sorted(unknown)}", *where, sorted(unknown)[0])
    params = {}
    for key, default in fields.items():
        if key not in spec and default is None:
            raise doc.error(f"module '{name}': missing field '{key}' for a {kind} body", *where, key)
        value = spec.get(key, default)
        nums = _numbers(value)
        if any(not math.isfinite(x) for x in nums):
            raise doc.error(f"module '{name}': {key} must be finite (got {value!r})", *where, key)
        if key in POSITIVE and not (nums and all(x > 0 for x in nums)):
            raise doc.error(f"module '{name}': {key} must be positive (got {value!r})", *where, key)
        if key in NON_NEGATIVE and not (nums and all(x >= 0 for x in nums)):
            raise doc.error(f"module '{name}': {key} must be >= 0 (got {value!r})", *where, key)
        params[key] = value
    if kind == "lvp" and (not isinstance(params["primitives"], list)
                          or any(p not in PRIMITIVES for p in params["primitives"])):
        raise doc.error(f"module '{name}': primitives must be a list of {sorted(PRIMITIVES)}",
                        *where, "primitives")
    return params


def _build_body(kind: str, p: Dict[str, Any]) -> B.Body:
    mat = {k: p[k] for k in ("youngs_modulus", "poisson", "damping_time", "n_axial") if k in p}
    rod = (p.get("length"), p.get("radius"), p.get("density"))
    if kind == "rigid":
        inertia = np.asarray(p["inertia"], float)
        return B.RigidBody(p["mass"], p["com"], np.diag(inertia) if inertia.shape == (3,) else inertia)
    if kind == "cc":
        return B.constant_curvature(*rod, planar=bool(p["planar"]), elongation=bool(p["elongation"]), **mat)
    if kind == "pcs":
        return B.piecewise_constant_strain(*rod, int(p["segments"]), strains=p["strains"], **mat)
    if kind == "gvs":
        return B.variable_strain(*rod, int(p["order"]), strains=p["strains"], steps=int(p["steps"]), **mat)
    if kind == "modal":
        return B.ModalBody(*rod, int(p["modes_per_direction"]), p["youngs_modulus"], p["damping_time"])
    return LVPBody(*rod, p["primitives"], p["elastic_coefficient"], p["damping_time"], int(p["n_axial"]),
                   bool(p["relax_face"]))


def _joint(doc: YamlDocument, i: int, name: str, spec: Any) -> Joint:
    where = ("modules", i, "joint")
    spec = {"type": "fixed"} if spec is None else spec
    if not isinstance(spec, dict):
        raise doc.error(f"module '{name}': joint must be a mapping with a 'type'", *where)
    for key in ("xyz", "rpy", "axis"):
        if key in spec and (len(_numbers(spec[key])) != 3 or not all(math.isfinite(x) for x in _numbers(spec[key]))):
            raise doc.error(f"module '{name}': {key} must be three finite numbers", *where, key)
    placement = Placement(pin.rpy.rpyToMatrix(*[float(x) for x in spec.get("rpy", [0, 0, 0])]),
                          np.array(spec.get("xyz", [0, 0, 0]), float))
    kind = spec.get("type")
    if kind == "fixed":
        return FixedJoint(placement)
    if kind == "free_flyer":
        return FreeFlyerJoint(placement)
    if kind in ("revolute", "prismatic"):
        if "axis" not in spec or np.linalg.norm(spec["axis"]) == 0:
            raise doc.error(f"module '{name}': a {kind} joint needs a non-zero axis", *where, "axis")
        return AxesJoint([(kind, spec["axis"])], placement)
    if kind == "axes":
        axes = spec.get("axes")
        ok = isinstance(axes, list) and len(axes) <= 6 and all(
            isinstance(a, list) and len(a) == 2 and a[0] in ("revolute", "prismatic")
            and len(_numbers(a[1])) == 3 and np.linalg.norm(a[1]) > 0 for a in axes)
        if not ok:
            raise doc.error(f"module '{name}': axes must be up to 6 [revolute|prismatic, [x, y, z]]",
                            *where, "axes")
        return AxesJoint([(a[0], a[1]) for a in axes], placement)
    raise doc.error(f"module '{name}': unknown joint type {kind!r}; known: fixed, revolute, "
                    "prismatic, axes, free_flyer", *where, "type")


def load_soft_tree(path: str | Path) -> SoftTree:
    """Parse, check and build the soft-module tree of a YAML file (all or nothing)."""
    doc = load_yaml(path)
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("modules"), list) or not data["modules"]:
        raise doc.error("expected a mapping with a non-empty 'modules' list", "modules")
    modules: List[Module] = []
    names: set = set()
    for i, spec in enumerate(data["modules"]):
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise doc.error("each module is a mapping with a 'name'", "modules", i, "name")
        name = spec["name"]
        if name in names:
            raise doc.error(f"module '{name}' is declared twice", "modules", i, "name")
        parent = spec.get("parent")
        if parent is not None and parent not in names:
            raise doc.error(f"module '{name}': parent {parent!r} is not an earlier module",
                            "modules", i, "parent")
        kind = spec.get("body", {}).get("type") if isinstance(spec.get("body"), dict) else None
        params = _body_params(doc, i, name, spec.get("body"))
        joint = _joint(doc, i, name, spec.get("joint"))
        try:
            body = _build_body(kind, params)
        except ValueError as exc:
            raise doc.error(f"module '{name}': {exc}", "modules", i, "body") from None
        if "face" in spec["body"]:
            face = spec["body"]["face"]
            if len(_numbers(face)) != 9 or not all(math.isfinite(x) for x in _numbers(face)):
                raise doc.error(f"module '{name}': face is three points [x_J, x_a, x_b]",
                                "modules", i, "body", "face")
            body.face = tuple(np.asarray(p, float) for p in face)
        module = Module(name, joint, body, parent)
        problem = check_distal_face(module)
        if problem:
            raise doc.error(f"module '{name}': {problem}", "modules", i, "body", "face")
        modules.append(module)
        names.add(name)
    gravity = data.get("gravity", list(GRAVITY))
    if len(_numbers(gravity)) != 3 or not all(math.isfinite(x) for x in _numbers(gravity)):
        raise doc.error("gravity must be three finite numbers", "gravity")
    try:
        return SoftTree(modules, gravity=gravity)
    except ValueError as exc:
        raise InputError(str(exc), file=str(path), field="modules") from None

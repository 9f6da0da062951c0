"""Soft-module YAML: a list of modules, each a joint and a body, validated field by field
before anything is built (an :class:`InputError` names the file, line, module and field).

    gravity: [0, 0, -9.81]               # optional
    modules:
      - name: shank_pad
        parent: null                     # or the name of an earlier module
        joint: {type: revolute, axis: [0, 1, 0], xyz: [0, 0, 0.1], rpy: [0, 0, 0]}
        body:  {type: cc, length: 0.05, radius: 0.01, density: 1100, planar: false,
                elongation: true, youngs_modulus: 1.0e6, poisson: 0.45, damping_time: 0.01}

    tendons:                             # optional: tendons through via points
      - name: t0
        points: [[shank_pad, [0.008, 0, 0]], [shank_pad, [0.008, 0, 0.05]]]   # [module, x]
    chambers:                            # optional: pressure chambers (lvp, modal, map bodies)
      - {name: cavity, module: gripper, radius: 0.005, start: 0.0, end: 0.05}
        # reading: volume (default, p dV/dq) or surfaces (lvp: top on stretch, wall on source)

Joint types: fixed, revolute, prismatic (axis), axes (list of [revolute|prismatic, axis], at
most 6), free_flyer. Body types and their fields are in model/soft_fields.py (BODY_FIELDS); an optional
``face: [x_J, x_a, x_b]`` overrides the distal-face points (checked: orthogonal, distinct,
rigid under deformation unless ``relax_face``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pinocchio as pin

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.soft_fields import body_params, finite_triple, joint_fields
from hybrid_dynamics.model.yamlio import YamlDocument, load_yaml
from hybrid_dynamics.soft import bodies as B
from hybrid_dynamics.soft.actuation import READINGS, Actuation, Chamber, Tendon
from hybrid_dynamics.soft.joints import AxesJoint, FixedJoint, FreeFlyerJoint, Joint, Placement
from hybrid_dynamics.soft.lvp import PRIMITIVES, LVPBody
from hybrid_dynamics.soft.module import Module, check_distal_face
from hybrid_dynamics.soft.tree import GRAVITY, SoftTree


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
                   bool(p["relax_face"]), bool(p["orthonormal_face"]))


def build_joint(spec: Dict[str, Any]) -> Joint:
    """The joint of a block checked by :func:`joint_fields`."""
    placement = Placement(pin.rpy.rpyToMatrix(*[float(x) for x in spec.get("rpy", [0, 0, 0])]),
                          np.array(spec.get("xyz", [0, 0, 0]), float))
    kind = spec["type"]
    if kind == "fixed":
        return FixedJoint(placement)
    if kind == "free_flyer":
        return FreeFlyerJoint(placement)
    if kind in ("revolute", "prismatic"):
        return AxesJoint([(kind, spec["axis"])], placement)
    return AxesJoint([(a[0], a[1]) for a in spec["axes"]], placement)


def build_module(doc: YamlDocument, where: Tuple, spec: Dict[str, Any], parent: Optional[str],
                 joint: Optional[Dict[str, Any]] = None) -> Module:
    """Check and build the module block ``spec`` found at ``where`` in ``doc`` (body fields,
    joint fields unless ``joint`` gives the checked ones, LVP primitives, Assumption 2)."""
    name = spec["name"]
    kind, params = body_params(doc, where + ("body",), name, spec.get("body"))
    if kind == "lvp" and (not isinstance(params["primitives"], list)
                          or any(p not in PRIMITIVES for p in params["primitives"])):
        raise doc.error(f"module '{name}': primitives must be a list of {sorted(PRIMITIVES)}",
                        *where, "body", "primitives")
    joint = joint_fields(doc, where + ("joint",), name, spec.get("joint")) if joint is None else joint
    try:
        body = _build_body(kind, params)
    except ValueError as exc:       # a field the body names (InputError.field), or the body
        field = getattr(exc, "field", None)
        raise doc.error(f"module '{name}': {getattr(exc, 'detail', exc)}", *where, "body",
                        *((field,) if field else ())) from None
    if "face" in spec["body"]:
        body.face = tuple(np.asarray(p, float) for p in spec["body"]["face"])
    module = Module(name, build_joint(joint), body, parent)
    problem = check_distal_face(module)
    if problem:
        raise doc.error(f"module '{name}': {problem}", *where, "body", "face")
    return module


def _entries(doc: YamlDocument, section: str, kind: str, fields: set):
    """(index, block, name) of each block of the list ``section``, each a mapping with a name
    and only the known ``fields``."""
    for i, spec in enumerate(doc.data.get(section) or []):
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise doc.error(f"each {kind} is a mapping with a 'name'", section, i, "name")
        unknown = set(spec) - fields - {"name"}
        if unknown:
            raise doc.error(f"{kind} '{spec['name']}': unknown field(s) {sorted(unknown)}", section, i,
                            sorted(unknown)[0])
        yield i, spec, spec["name"]


def _tendons(doc: YamlDocument, names: set) -> List[Tendon]:
    out = []
    for i, spec, name in _entries(doc, "tendons", "tendon", {"points"}):
        points = spec.get("points")
        if not isinstance(points, list) or len(points) < 2:
            raise doc.error(f"tendon '{name}': points must list at least two [module, [x1, x2, x3]]",
                            "tendons", i, "points")
        for k, point in enumerate(points):
            if not (isinstance(point, list) and len(point) == 2 and point[0] in names
                    and finite_triple(point[1])):
                raise doc.error(f"tendon '{name}': via point {k} must be [module, [x1, x2, x3]] with a "
                                f"declared module and finite coordinates (got {point!r})", "tendons", i, "points", k)
        out.append(Tendon(name, tuple((m, tuple(float(c) for c in x)) for m, x in points)))
    return out


def _chambers(doc: YamlDocument, names: set) -> List[Chamber]:
    out = []
    for i, spec, name in _entries(doc, "chambers", "chamber", {"module", "radius", "start", "end", "n_angular",
                                                              "n_axial", "reading"}):
        if spec.get("module") not in names:
            raise doc.error(f"chamber '{name}': module {spec.get('module')!r} is not a declared module",
                            "chambers", i, "module")
        for key in ("radius", "start", "end", "n_angular", "n_axial"):
            value = spec.get(key, 1)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) \
                    or (key != "start" and value <= 0) or (key == "start" and value < 0):
                raise doc.error(f"chamber '{name}': {key} must be a finite number, positive (start: >= 0); "
                                f"got {value!r}", "chambers", i, key)
        if spec["end"] <= spec["start"]:
            raise doc.error(f"chamber '{name}': end must be greater than start", "chambers", i, "end")
        if spec.get("reading", "volume") not in READINGS:
            raise doc.error(f"chamber '{name}': reading must be one of {list(READINGS)} (got {spec['reading']!r})",
                            "chambers", i, "reading")
        out.append(Chamber(name, spec["module"], float(spec["radius"]), float(spec["start"]), float(spec["end"]),
                           int(spec.get("n_angular", 16)), int(spec.get("n_axial", 8)), spec.get("reading", "volume")))
    return out


def load_soft(path: str | Path) -> Tuple[SoftTree, Optional[Actuation]]:
    """Parse, check and build the soft-module tree of a YAML file and its actuation (None
    without tendons and chambers), all or nothing."""
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
        module = build_module(doc, ("modules", i), spec, parent)
        modules.append(module)
        names.add(name)
    gravity = data.get("gravity", list(GRAVITY))
    if not finite_triple(gravity):
        raise doc.error("gravity must be three finite numbers", "gravity")
    tendons, chambers = _tendons(doc, names), _chambers(doc, names)
    inputs = [("tendons", k, t.name) for k, t in enumerate(tendons)] + \
        [("chambers", k, c.name) for k, c in enumerate(chambers)]
    for j, (section, k, name) in enumerate(inputs):
        if name in [n for _, _, n in inputs[:j]]:
            raise doc.error(f"input '{name}': tendon and chamber names must be distinct", section, k, "name")
    try:
        tree = SoftTree(modules, gravity=gravity)
    except ValueError as exc:
        raise InputError(str(exc), file=str(path), field="modules") from None
    if not inputs:
        return tree, None
    try:
        return tree, Actuation(tree, tendons, chambers)
    except ValueError as exc:
        raise InputError(str(exc), file=str(path), field="chambers") from None


def load_soft_tree(path: str | Path) -> SoftTree:
    """The soft-module tree of a YAML file (see :func:`load_soft`)."""
    return load_soft(path)[0]

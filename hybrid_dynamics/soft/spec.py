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
                   bool(p["relax_face"]))


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
    except ValueError as exc:
        raise doc.error(f"module '{name}': {exc}", *where, "body") from None
    if "face" in spec["body"]:
        body.face = tuple(np.asarray(p, float) for p in spec["body"]["face"])
    module = Module(name, build_joint(joint), body, parent)
    problem = check_distal_face(module)
    if problem:
        raise doc.error(f"module '{name}': {problem}", *where, "body", "face")
    return module


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
        module = build_module(doc, ("modules", i), spec, parent)
        modules.append(module)
        names.add(name)
    gravity = data.get("gravity", list(GRAVITY))
    if not finite_triple(gravity):
        raise doc.error("gravity must be three finite numbers", "gravity")
    try:
        return SoftTree(modules, gravity=gravity)
    except ValueError as exc:
        raise InputError(str(exc), file=str(path), field="modules") from None

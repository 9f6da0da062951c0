"""Field checks of soft-module blocks (a joint and a body each), shared by the soft-module
YAML (``soft/spec.py``) and the ``soft_modules`` block of a robot manifest: every number finite,
lengths and densities positive, required fields present, no unknown field. An
:class:`InputError` names the file, line, module and field; nothing is built here (the bodies
themselves are built in ``soft/``, above this layer).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Tuple

import numpy as np

from .yamlio import YamlDocument

# body type -> {field: default}; a default of None marks a required field
_ROD = {"length": None, "radius": None, "density": None}
_MATERIAL = {"youngs_modulus": 0.0, "poisson": 0.5, "damping_time": 0.0, "n_axial": 6}
BODY_FIELDS: Dict[str, Dict[str, Any]] = {
    "rigid": {"mass": None, "com": [0, 0, 0], "inertia": [0, 0, 0]},
    "cc": {**_ROD, **_MATERIAL, "planar": False, "elongation": False},
    "pcs": {**_ROD, **_MATERIAL, "segments": None, "strains": [0, 1, 2, 5]},
    "gvs": {**_ROD, **_MATERIAL, "order": None, "strains": [0, 1], "steps": 8},
    "modal": {**_ROD, "modes_per_direction": 2, "youngs_modulus": 0.0, "damping_time": 0.0},
    "lvp": {**_ROD, "primitives": None, "elastic_coefficient": 0.0, "damping_time": 0.0,
            "n_axial": 4, "relax_face": False, "orthonormal_face": False},
}
POSITIVE = {"length", "radius", "density", "segments", "order", "steps", "n_axial", "modes_per_direction"}
NON_NEGATIVE = {"mass", "youngs_modulus", "damping_time", "elastic_coefficient"}
INTEGER = {"segments", "order", "steps", "n_axial", "modes_per_direction"}
SCALAR = {"length", "radius", "density", "mass", "youngs_modulus", "poisson", "damping_time", "elastic_coefficient"}
BOOLEAN = {"planar", "elongation", "relax_face", "orthonormal_face"}
STRAIN_COMPONENTS = 6       # (kx, ky, kz, sx, sy, sz): a rod's strain has six components
JOINT_TYPES = ("fixed", "revolute", "prismatic", "axes", "free_flyer")


def numbers(value) -> List[float]:
    """Every number in a (nested) list, booleans excluded."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, list):
        return [x for v in value for x in numbers(v)]
    return []


def finite_triple(value) -> bool:
    nums = numbers(value)
    return isinstance(value, list) and len(nums) == 3 and all(math.isfinite(x) for x in nums)


def body_params(doc: YamlDocument, where: Tuple, name: str, spec: Any) -> Tuple[str, Dict[str, Any]]:
    """(body type, its fields with defaults filled) of the body block at ``where``."""
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
        nums = numbers(value)
        if any(not math.isfinite(x) for x in nums):
            raise doc.error(f"module '{name}': {key} must be finite (got {value!r})", *where, key)
        if key in POSITIVE and not (nums and all(x > 0 for x in nums)):
            raise doc.error(f"module '{name}': {key} must be positive (got {value!r})", *where, key)
        if key in NON_NEGATIVE and not (nums and all(x >= 0 for x in nums)):
            raise doc.error(f"module '{name}': {key} must be >= 0 (got {value!r})", *where, key)
        if key in SCALAR and not (isinstance(value, (int, float)) and not isinstance(value, bool)):
            raise doc.error(f"module '{name}': {key} must be a number (got {value!r})", *where, key)
        if key in INTEGER and not (isinstance(value, int) and not isinstance(value, bool)):
            raise doc.error(f"module '{name}': {key} must be an integer (got {value!r})", *where, key)
        if key in BOOLEAN and not isinstance(value, bool):
            raise doc.error(f"module '{name}': {key} must be true or false (got {value!r})", *where, key)
        # G = E / (2 (1 + nu)): an isotropic material has -1 < nu <= 1/2
        if key == "poisson" and not (len(nums) == 1 and -1.0 < nums[0] <= 0.5):
            raise doc.error(f"module '{name}': poisson must be in (-1, 0.5] (got {value!r})", *where, key)
        if key == "strains" and not _strain_components(value):
            raise doc.error(f"module '{name}': strains must be distinct integers in 0..{STRAIN_COMPONENTS - 1} "
                            f"(kx, ky, kz, sx, sy, sz; got {value!r})", *where, key)
        params[key] = value
    if "face" in spec and (len(numbers(spec["face"])) != 9
                           or not all(math.isfinite(x) for x in numbers(spec["face"]))):
        raise doc.error(f"module '{name}': face is three points [x_J, x_a, x_b]", *where, "face")
    return kind, params


def _strain_components(value) -> bool:
    """A non-empty list of distinct strain-component indices."""
    return (isinstance(value, list) and len(value) > 0 and len(set(value)) == len(value)
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < STRAIN_COMPONENTS
                    for v in value))


def joint_fields(doc: YamlDocument, where: Tuple, name: str, spec: Any) -> Dict[str, Any]:
    """The joint block at ``where`` checked (type known, xyz/rpy/axis three finite numbers,
    a non-zero axis where one is needed, at most six axes); ``fixed`` when absent."""
    spec = {"type": "fixed"} if spec is None else spec
    if not isinstance(spec, dict):
        raise doc.error(f"module '{name}': joint must be a mapping with a 'type'", *where)
    for key in ("xyz", "rpy", "axis"):
        if key in spec and not finite_triple(spec[key]):
            raise doc.error(f"module '{name}': {key} must be three finite numbers", *where, key)
    kind = spec.get("type")
    if kind not in JOINT_TYPES:
        raise doc.error(f"module '{name}': unknown joint type {kind!r}; known: {', '.join(JOINT_TYPES)}",
                        *where, "type")
    if kind in ("revolute", "prismatic") and ("axis" not in spec or np.linalg.norm(spec["axis"]) == 0):
        raise doc.error(f"module '{name}': a {kind} joint needs a non-zero axis", *where, "axis")
    if kind == "axes":
        axes = spec.get("axes")
        ok = isinstance(axes, list) and len(axes) <= 6 and all(
            isinstance(a, list) and len(a) == 2 and a[0] in ("revolute", "prismatic")
            and finite_triple(a[1]) and np.linalg.norm(a[1]) > 0 for a in axes)
        if not ok:
            raise doc.error(f"module '{name}': axes must be up to 6 [revolute|prismatic, [x, y, z]]",
                            *where, "axes")
    return spec

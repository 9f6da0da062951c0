"""Loop-closure sidecar YAML for closed linkages: the community convention of Pinocchio-based
parallel-robot tools (example-parallel-robots, toolbox-parallel-robots) in full, plus our
extensions; loops as in [Mingo Hoffman 2024, Sec. III-A]. Every key, its meaning and default
is written down in docs/loops.md::

    closed_loop: [[frame_a, frame_b], ...]   # the two sides of each cut joint (required)
    type: ['3d' | '6d', ...]                 # any case; default '6d' for every loop
    name_mot: [actuated joint names]         # required; every other non-fixed joint is passive
    joint_name: [joint, ...]                 # joints of the URDF replaced by ...
    joint_type: [SPHERICAL | UJOINT_AB | FREE | FIXED, ...]   # ... these (any case; 'universal'
                                             # = UJOINT_XY), revolutes about the joint frame's axes
    # our extensions
    constrained_axes: [[i, ...], ...]        # per loop: rows of [vx vy vz wx wy wz] in frame_a kept
    orientation: [coincide | reference, ...] # per '6d' loop: frames coincide (default) or keep
                                             # their relative orientation at the reference pose
    stroke: {joint: [lower, upper]}          # joint range where the URDF gives none (or zero width)
    internal_motion: least_norm | springs | none   # free internal motions: least norm (default), set by
                                             # the measured spring joints (springs), or an error
    base: fixed | floating                   # for a loop YAML loaded as the robot (default fixed)
    transmissions:                           # per actuated prismatic joint
      joint_name: {lead: 0.005, efficiency: 0.9, max_force: 5000}
    springs:                                 # per passive joint: tau = -stiffness (q - rest) - damping v
      joint_name: {stiffness: 1500, rest: 0.0, damping: 0.1}

:func:`load_loops` checks every key and name; :func:`build_loop_model` applies the joint
substitutions; :func:`apply_strokes` warns of zero-width or missing limits and takes the
stroke from the YAML; :func:`check_loops` finds a closed reference pose and checks the ranks
there. :func:`load_mjcf_loops` reads MuJoCo ``<equality connect|weld>`` loops.
"""
from __future__ import annotations

import math
import re
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np
import pinocchio as pin

from ..errors import DescriptionWarning, InputError
from .loop_kinematics import LoopKinematics
from .yamlio import YamlDocument, load_yaml

DEFAULT_AXES = {"3d": (0, 1, 2), "6d": (0, 1, 2, 3, 4, 5)}
KEYS = ("closed_loop", "type", "name_mot", "joint_name", "joint_type", "constrained_axes", "orientation",
        "stroke", "internal_motion", "base", "transmissions", "springs")
AXES = {"x": pin.JointModelRX, "y": pin.JointModelRY, "z": pin.JointModelRZ}


@dataclass(frozen=True)
class LoopClosure:
    """A cut joint: frames ``frame_a`` and ``frame_b`` are joined.

    ``kind`` '3d' (positions coincide: a spherical cut, MuJoCo connect) or '6d' (whole poses
    coincide: MuJoCo weld). ``axes`` lists the constrained rows of the relative twist
    [vx vy vz wx wy wz] in frame_a (e.g. (1, 2) for a planar loop in the local yz plane).
    ``orientation`` 'coincide' (the frames' orientations are equal at closure) or 'reference'
    (kept as at the reference pose)."""
    frame_a: str
    frame_b: str
    kind: str = "3d"
    axes: Tuple[int, ...] = (0, 1, 2)
    orientation: str = "coincide"


@dataclass(frozen=True)
class Transmission:
    """A ball-screw: motor torque = force * lead / (2 pi efficiency)."""
    lead: float
    efficiency: float = 1.0
    max_force: float = float("inf")


@dataclass(frozen=True)
class Spring:
    """A passive joint's spring (Cassie's shin and heel springs): tau = -stiffness (q - rest) -
    damping v (N m/rad, rad, N m s/rad; N/m, m, N s/m for a prismatic joint)."""
    stiffness: float
    rest: float = 0.0
    damping: float = 0.0


@dataclass
class LoopSpec:
    path: Path
    loops: List[LoopClosure]
    actuated: List[str]
    transmissions: Dict[str, Transmission] = field(default_factory=dict)
    substitutions: Dict[str, str] = field(default_factory=dict)     # joint -> spherical, ujoint_xy, free, fixed
    stroke: Dict[str, Tuple[float, float]] = field(default_factory=dict)
    internal_motion: str = "least_norm"
    base: Optional[str] = None
    springs: Dict[str, Spring] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(len(l.axes) for l in self.loops)


def _names(doc: YamlDocument, key: str, model: pin.Model, what: str) -> List[str]:
    values = doc.data.get(key)
    if not isinstance(values, list) or not values:
        raise doc.error(f"must list the {what}", key)
    for i, name in enumerate(values):
        if not isinstance(name, str) or not model.existJointName(name):
            raise doc.error(f"joint '{name}' is not in the URDF", key, i)
    return list(values)


def _per_loop(doc: YamlDocument, key: str, n: int, default):
    values = doc.data.get(key, [default] * n)
    if not isinstance(values, list) or len(values) != n:
        raise doc.error(f"needs one entry per loop of closed_loop ({n})", key)
    return values


def _substitution(doc: YamlDocument, i: int, kind) -> str:
    k = str(kind).lower()
    k = "ujoint_xy" if k == "universal" else k
    if k in ("spherical", "free", "fixed") or (k.startswith("ujoint_") and len(k) == 9 and k[7] in AXES
                                                and k[8] in AXES and k[7] != k[8]):
        return k
    raise doc.error(f"'{kind}' is not SPHERICAL, UJOINT_XY (any two of X, Y, Z), universal, FREE or FIXED",
                    "joint_type", i)


def load_loops(path: str | Path, model: pin.Model) -> LoopSpec:
    """Parse and check a loop YAML against ``model`` (the URDF's): every key known, every frame
    and joint present, one entry per loop where one is needed."""
    doc = load_yaml(path)
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error("expected a mapping with closed_loop, type, name_mot")
    for key in data:
        if key not in KEYS:
            raise doc.error(f"unknown key '{key}': a loop YAML takes {', '.join(KEYS)} (docs/loops.md)", key)
    pairs = data.get("closed_loop")
    if not isinstance(pairs, list) or not pairs:
        raise doc.error("must be a non-empty list of [frame_a, frame_b] pairs", "closed_loop")
    n = len(pairs)
    types = _per_loop(doc, "type", n, "6d")
    axes_list = _per_loop(doc, "constrained_axes", n, None)
    orientations = _per_loop(doc, "orientation", n, "coincide")
    loops = []
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(f, str) for f in pair)):
            raise doc.error(f"loop {i} must be a pair [frame_a, frame_b]", "closed_loop", i)
        for f in pair:
            if not model.existFrame(f):
                raise doc.error(f"loop {i}: frame '{f}' is not in the URDF", "closed_loop", i)
        kind = str(types[i]).lower()
        if kind not in DEFAULT_AXES:
            raise doc.error(f"loop {i} ({pair[0]}-{pair[1]}): '{types[i]}' is not '3d' or '6d'", "type", i)
        axes = axes_list[i]
        if axes is None:
            axes = DEFAULT_AXES[kind]
        elif not (isinstance(axes, list) and axes and all(isinstance(a, int) and 0 <= a < 6 for a in axes)
                  and len(set(axes)) == len(axes)):
            raise doc.error(f"loop {i} ({pair[0]}-{pair[1]}): list distinct row indices 0..5 "
                            "(0-2 position, 3-5 orientation)", "constrained_axes", i)
        if kind == "3d" and any(a >= 3 for a in axes):
            raise doc.error(f"loop {i} ({pair[0]}-{pair[1]}) is '3d': its rows are 0, 1, 2 (make it '6d' "
                            "to constrain orientation)", "constrained_axes", i)
        if orientations[i] not in ("coincide", "reference"):
            raise doc.error(f"loop {i}: '{orientations[i]}' is not coincide or reference", "orientation", i)
        loops.append(LoopClosure(pair[0], pair[1], kind, tuple(axes), orientations[i]))
    actuated = _names(doc, "name_mot", model, "actuated joints")
    substitutions = {}
    if "joint_name" in data or "joint_type" in data:
        names = _names(doc, "joint_name", model, "joints to substitute")
        kinds = data.get("joint_type")
        if not isinstance(kinds, list) or len(kinds) != len(names):
            raise doc.error(f"needs one type per entry of joint_name ({len(names)})", "joint_type")
        for i, (name, kind) in enumerate(zip(names, kinds)):
            if name in actuated:
                raise doc.error(f"'{name}' is actuated (name_mot): only passive joints are substituted",
                                "joint_name", i)
            substitutions[name] = _substitution(doc, i, kind)
    stroke = {}
    for name, rng in (data.get("stroke") or {}).items():
        if not model.existJointName(str(name)):
            raise doc.error(f"joint '{name}' is not in the URDF", "stroke", name)
        if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, (int, float)) for x in rng)
                and rng[0] < rng[1]):
            raise doc.error(f"'{name}': give [lower, upper] with lower < upper", "stroke", name)
        stroke[str(name)] = (float(rng[0]), float(rng[1]))
    internal = data.get("internal_motion", "least_norm")
    if internal not in ("least_norm", "springs", "none"):
        raise doc.error(f"'{internal}' is not least_norm, springs or none", "internal_motion")
    if internal == "springs" and not data.get("springs"):
        raise doc.error("internal_motion: springs needs the measured spring joints under springs:", "internal_motion")
    base = data.get("base")
    if base not in (None, "fixed", "floating"):
        raise doc.error(f"'{base}' is not fixed or floating", "base")
    transmissions = {}
    for name, spec in (data.get("transmissions") or {}).items():
        if name not in actuated:
            raise doc.error(f"'{name}' is not an actuated joint (name_mot)", "transmissions", name)
        try:
            transmissions[name] = Transmission(float(spec["lead"]), float(spec.get("efficiency", 1.0)),
                                               float(spec.get("max_force", float("inf"))))
        except (TypeError, KeyError, ValueError, AttributeError):
            raise doc.error("needs numbers lead, and optionally efficiency, max_force",
                            "transmissions", name) from None
    springs = {}
    for name, spec in (data.get("springs") or {}).items():
        if not model.existJointName(str(name)) or name in actuated:
            raise doc.error(f"'{name}' is not a passive joint of the URDF", "springs", name)
        try:
            springs[str(name)] = Spring(float(spec["stiffness"]), float(spec.get("rest", 0.0)),
                                        float(spec.get("damping", 0.0)))
        except (TypeError, KeyError, ValueError, AttributeError):
            raise doc.error("needs a number stiffness, and optionally rest, damping", "springs", name) from None
    return LoopSpec(Path(path), loops, actuated, transmissions, substitutions, stroke, internal, base, springs)


def build_loop_model(model: pin.Model, spec: LoopSpec) -> pin.Model:
    """The model with the YAML's joint substitutions applied (the model itself without any):
    a spherical joint becomes three revolutes about the joint frame's x, y, z (named
    ``<joint>_x``, ``_y``, ``_z``; singular only where the middle angle is +-pi/2), a
    universal joint ``ujoint_ab`` two revolutes about a then b, a free joint three prismatic
    and three revolute joints (``_tx`` .. ``_rz``); a fixed one is locked at zero. Frames,
    inertias and the other joints' limits are kept."""
    if not spec.substitutions:
        return model
    new = pin.Model()
    new.name = model.name
    new.gravity = model.gravity
    jmap = {0: 0}
    for j in range(1, model.njoints):
        name, parent = model.names[j], jmap[model.parents[j]]
        kind = spec.substitutions.get(name)
        place = model.jointPlacements[j]
        if kind is None or kind == "fixed":
            jm, iq = model.joints[j], model.joints[j].idx_q
            nq = jm.nq
            jid = new.addJoint(parent, jm, place, name, model.effortLimit[jm.idx_v:jm.idx_v + jm.nv],
                               model.velocityLimit[jm.idx_v:jm.idx_v + jm.nv],
                               model.lowerPositionLimit[iq:iq + nq], model.upperPositionLimit[iq:iq + nq])
        else:
            chain = {"spherical": [("x", "r"), ("y", "r"), ("z", "r")],
                     "free": [("x", "p"), ("y", "p"), ("z", "p"), ("x", "r"), ("y", "r"), ("z", "r")]}.get(
                kind, [(kind[7], "r"), (kind[8], "r")])
            jid = parent
            for n_, (ax, typ) in enumerate(chain):
                jm = AXES[ax]() if typ == "r" else getattr(pin, f"JointModelP{ax.upper()}")()
                suffix = ax if kind != "free" else f"{'t' if typ == 'p' else 'r'}{ax}"
                lim = math.pi if typ == "r" else 1e3
                jid = new.addJoint(jid, jm, place if n_ == 0 else pin.SE3.Identity(), f"{name}_{suffix}",
                                   np.zeros(1), np.full(1, 1e3), np.full(1, -lim), np.full(1, lim))
                if n_ < len(chain) - 1:
                    new.appendBodyToJoint(jid, pin.Inertia.Zero(), pin.SE3.Identity())
        new.appendBodyToJoint(jid, model.inertias[j], pin.SE3.Identity())
        jmap[j] = jid
    for f in list(model.frames)[1:]:
        new.addFrame(pin.Frame(f.name, jmap[f.parentJoint], f.placement, f.type, f.inertia), False)
    for key, q in ((k, v.copy()) for k, v in reference_configurations(model)):
        new.referenceConfigurations[key] = _transfer(model, q, new, spec)
    fixed = [new.getJointId(n) for n, k in spec.substitutions.items() if k == "fixed"]
    if fixed:
        new = pin.buildReducedModel(new, fixed, pin.neutral(new))
    return new


def reference_configurations(model: pin.Model) -> List[Tuple[str, np.ndarray]]:
    """(name, q) of ``model.referenceConfigurations``, in the map's order."""
    return [(str(e.key()), np.array(e.data())) for e in model.referenceConfigurations]


def _transfer(model: pin.Model, q: np.ndarray, new: pin.Model, spec: LoopSpec) -> np.ndarray:
    """A configuration of ``model`` in the substituted model ``new``: kept joints copied, a
    spherical joint's quaternion as the angles of its x-y-z revolute triple (R = Rx Ry Rz),
    other substitutions at zero."""
    out = pin.neutral(new)
    for j in range(1, model.njoints):
        name, jm = model.names[j], model.joints[j]
        kind = spec.substitutions.get(name)
        if kind is None:
            jn = new.joints[new.getJointId(name)]
            out[jn.idx_q:jn.idx_q + jn.nq] = q[jm.idx_q:jm.idx_q + jm.nq]
        elif kind == "spherical" and jm.nq == 4:
            R = pin.Quaternion(q[jm.idx_q + 3], *q[jm.idx_q:jm.idx_q + 3]).normalized().matrix()
            angles = (math.atan2(-R[1, 2], R[2, 2]), math.asin(max(-1.0, min(1.0, R[0, 2]))),
                      math.atan2(-R[0, 1], R[0, 0]))
            for axis, angle in zip("xyz", angles):
                out[new.joints[new.getJointId(f"{name}_{axis}")].idx_q] = angle
    return out


def apply_strokes(model: pin.Model, spec: Optional[LoopSpec], source: str) -> List[str]:
    """Joints whose URDF limits are missing or of zero width (Pinocchio reads a ``<limit>``
    without lower/upper as [0, 0]): the stroke from the loop YAML when it gives one, else a
    revolute's full turn [-pi, pi]; a prismatic joint without stroke keeps [0, 0] (its actuator
    cannot move: ``validate closed-loop`` fails). Each is warned of, naming the joint and the
    file. Returns the joints warned of."""
    warned = []
    stroke = spec.stroke if spec is not None else {}
    lo, hi = model.lowerPositionLimit.copy(), model.upperPositionLimit.copy()
    for j in range(1, model.njoints):
        jm, name = model.joints[j], model.names[j]
        if jm.nq != 1:
            continue
        i = jm.idx_q
        if name in stroke:
            lo[i], hi[i] = stroke[name]
            continue
        if lo[i] < hi[i]:
            continue
        if jm.shortname().startswith("JointModelR"):
            lo[i], hi[i] = -math.pi, math.pi
            what = "taken as [-pi, pi]"
        else:
            what = "its stroke is unknown: give stroke: {" + name + ": [lower, upper]} in the loop YAML"
        warnings.warn(f"{source}: joint '{name}' has {'zero-width' if lo[i] == hi[i] else 'no'} position "
                      f"limits in the URDF; {what}", DescriptionWarning, stacklevel=3)
        warned.append(name)
    model.lowerPositionLimit, model.upperPositionLimit = lo, hi
    return warned


def check_loops(model: pin.Model, spec: LoopSpec, q_ref: np.ndarray, *, closure_tol: float = 1e-6,
                rcond_min: float = 1e-8) -> dict:
    """Load-time checks, at a closed reference pose.

    When the loops are open at ``q_ref`` (a description's neutral pose usually is), a closed
    pose near it is found, moving the passive joints (:meth:`LoopKinematics.close`) or, when
    that fails, every joint (:meth:`LoopKinematics.closed_pose`), and
    becomes the reference (``figures['reference']`` says so). There the ranks of J_l and J_lu
    are found: the actuated joints must be independent (rank J_l = rank J_lu), and internal
    motions the loops leave free are resolved by least norm (warned of) unless the YAML says
    ``internal_motion: none``. Raises :class:`InputError` naming the file and the loop.
    Returns the figures checked, with ``q_ref``."""
    where = {"file": str(spec.path)}
    measured = list(spec.springs) if spec.internal_motion == "springs" else []
    kin = LoopKinematics(model, spec, q_ref, measured)
    figures = {"reference": "given"}
    e0 = kin.residual(q_ref)
    residual = float(np.max(np.abs(e0))) if e0.size else 0.0
    if residual > closure_tol:
        q, info = kin.close(q_ref)                 # the passive joints alone, then every joint
        if not info["converged"]:
            q, info = kin.closed_pose(q_ref)
        if not info["converged"]:
            worst = _loop_of_row(spec, int(np.argmax(np.abs(kin.residual(q)))))
            raise InputError(f"loop {worst.frame_a}-{worst.frame_b} cannot be closed (residual "
                             f"{info['residual']:.3g} from the reference pose): check its frames and type"
                             + _ball_joint_hint(model, spec), **where)
        figures["reference"] = f"closed automatically (open by {residual:.3g} at the given pose)"
        q_ref = q
        kin = LoopKinematics(model, spec, q_ref, measured)
        residual = info["residual"]
    figures.update(rows=kin.m, passive=kin.n_pas, actuated=kin.n_act, rank=kin.rank_l,
                   rank_passive=kin.rank_u, free_internal=kin.n_free, residual=residual)
    if kin.rank_l > kin.rank_u:
        raise InputError(f"the loops constrain the actuated joints among themselves (rank of J_l "
                         f"{kin.rank_l} > rank over the passive joints {kin.rank_u}): a joint of name_mot "
                         "is not independent; remove it from name_mot", field="name_mot", **where)
    if kin.n_free:
        _, s, Vt = np.linalg.svd(kin.compute(q_ref).J[:, kin.iu])
        null = np.abs(Vt[kin.rank_u:]).max(axis=0) > 1e-6
        joints = [n for n, f in zip(kin.passive_joints, null) if f]
        message = (f"{kin.m} constraint rows of rank {kin.rank_l} for {kin.n_pas} passive DoF: the loops "
                   f"leave {kin.n_free} internal motion(s) undetermined (joints {', '.join(joints)})")
        if spec.internal_motion == "none":
            raise InputError(message + ": add constrained_axes or remove the joints, or declare "
                             "internal_motion: least_norm", **where)
        rule = "the measured springs, then least norm" if measured else "least norm"
        warnings.warn(f"{spec.path}: {message}; resolved by {rule} (internal_motion: {spec.internal_motion})",
                      DescriptionWarning, stacklevel=2)
        figures["free_joints"] = joints
    fac = kin.factor(kin.compute(q_ref).J.T)
    if fac.rcond < rcond_min:
        raise InputError(f"the actuated joints do not determine the passive ones at the reference "
                         f"configuration (J_lu condition {1 / max(fac.rcond, 1e-300):.3g})", **where)
    figures["jlu_condition"] = 1.0 / fac.rcond
    figures["q_ref"] = q_ref
    return figures


BALL_NAME = re.compile(r"spher|ball|univers|cardan|ujoint", re.IGNORECASE)


def _ball_joint_hint(model: pin.Model, spec: LoopSpec) -> str:
    """CAD exports write ball and universal joints as one revolute, named for what they are
    (Gepetto's kangaroo_like_2legs: 26 revolutes spherical_*): such joints not substituted."""
    done = tuple(f"{name}_" for name in spec.substitutions)
    named = [model.names[j] for j in range(1, model.njoints)
             if model.joints[j].shortname().startswith("JointModelR") and BALL_NAME.search(model.names[j])
             and not model.names[j].startswith(done)]
    if not named:
        return ""
    shown = ", ".join(named[:6]) + (f" and {len(named) - 6} more" if len(named) > 6 else "")
    return (f"; {len(named)} revolute joints are named like ball or universal joints ({shown}): if they are, "
            "list them under joint_name with joint_type SPHERICAL or UJOINT_AB")


def _loop_of_row(spec: LoopSpec, row: int) -> LoopClosure:
    for loop in spec.loops:
        if row < len(loop.axes):
            return loop
        row -= len(loop.axes)
    return spec.loops[-1]


def load_mjcf_loops(path: str | Path, actuated: List[str] | None = None, rows="all", q_ref=None):
    """(model, LoopSpec) from an MJCF file: the tree and its constraints through Pinocchio's MJCF
    parser (``buildModelAndConstraintsFromMJCF``; a ``<freejoint>`` is the free flyer), each
    ``<equality connect>`` a '3d' loop and each ``<equality weld>`` a '6d' loop. Either form of
    MuJoCo's: between two sites (``site1``/``site2``, frames of the model), or between two
    bodies (``body1``, ``body2`` or the world, ``anchor`` / ``relpose``): the loop's frames are
    then added to the model at the placements Pinocchio's parser computed (named
    ``<name>_1``/``<name>_2``, the element's name or ``connect<i>``/``weld<i>``). Ball joints
    become three revolutes (as ``joint_type: SPHERICAL`` in the loop YAML). The actuated joints
    are those of the ``<actuator>`` elements unless given. MuJoCo's qpos0 (joints' ``ref``) and
keyframes are in ``model.referenceConfigurations`` ('qpos0', key names).

    ``rows`` picks the constraint rows of each loop (MJCF has no constrained-axes field, and a
    ``connect`` keeps 3 rows, which over-constrains a planar cut):
      - ``"all"``: every row (3 per connect, 6 per weld), as MuJoCo states them;
      - ``"rank"``: an independent subset, :func:`independent_rows` at ``q_ref`` (default the
        model's neutral configuration, MJCF's qpos0, where the loops must be closed);
      - a :class:`LoopSpec` (e.g. the loop YAML): each loop keeps the constrained axes of the
        spec's loop between the same two frames."""
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except ET.ParseError as exc:
        raise InputError(f"malformed XML: {exc}", file=str(path), line=exc.position[0]) from None
    world = root.find("worldbody")
    roots = [] if world is None else [b.get("name", "?") for b in world.findall("body")]
    if len(roots) > 1:          # the others would be dropped silently (Pinocchio 3.x / 4.1)
        raise InputError(f"<worldbody> has {len(roots)} bodies ({', '.join(roots)}): Pinocchio's MJCF parser "
                         "reads only the first; put the mechanism under one root body", file=str(path))
    try:
        model, points, frames = pin.buildModelAndConstraintsFromMJCF(str(path))
    except (RuntimeError, ValueError) as exc:
        raise InputError(f"not a valid MJCF: {str(exc).strip().splitlines()[0]}", file=str(path)) from None
    parsed = {"connect": list(points), "weld": list(frames)}
    loops = []
    elements = [el for eq in root.iter("equality") for el in eq if el.tag in ("connect", "weld")]
    for i, el in enumerate(elements):
        name = el.get("name") or f"{el.tag}{i}"
        where = f"<{el.tag}> {name} (equality {i})"
        sites, bodies = (el.get("site1"), el.get("site2")), (el.get("body1"), el.get("body2"))
        if all(sites):
            ends = sites
        elif bodies[0] and not any(sites):
            ends = bodies
        else:
            raise InputError(f"{where}: give site1 and site2, or body1 (and body2, anchor)", file=str(path))
        joints, ftype = [], pin.FrameType.OP_FRAME if all(sites) else pin.FrameType.BODY
        for f in ends:
            if f is None or f == "world":
                joints.append(0)
            elif model.existFrame(f, ftype):
                joints.append(model.frames[model.getFrameId(f, ftype)].parentJoint)
            else:
                raise InputError(f"{where}: '{f}' is not a {'site' if all(sites) else 'body'} of the model",
                                 file=str(path))
        # Pinocchio's parser made the same constraint (between the same joints): cross-check
        match = [c for c in parsed[el.tag] if {c.joint1_id, c.joint2_id} == set(joints)]
        if not match:
            raise InputError(f"{where}: Pinocchio's MJCF parser does not find it", file=str(path))
        c = match[0]
        parsed[el.tag].remove(c)
        if not all(sites):                 # body form: the frames at the parser's placements
            ends = (f"{name}_1", f"{name}_2")
            for fname, j, place in zip(ends, (c.joint1_id, c.joint2_id), (c.joint1_placement, c.joint2_placement)):
                model.addFrame(pin.Frame(fname, j, place, pin.FrameType.OP_FRAME), False)
        kind = "3d" if el.tag == "connect" else "6d"
        loops.append(LoopClosure(ends[0], ends[1], kind, DEFAULT_AXES[kind]))
    if actuated is None:
        actuated = [el.get("joint") for act in root.iter("actuator") for el in act if el.get("joint")]
    for name in actuated:
        if not model.existJointName(name):
            raise InputError(f"actuated joint '{name}' is not in the model", file=str(path))
    balls = {model.names[j]: "spherical" for j in range(1, model.njoints)
             if model.joints[j].shortname() == "JointModelSpherical"}
    spec = LoopSpec(path, loops, list(actuated), substitutions=balls, springs=_mjcf_springs(root, actuated))
    model = build_loop_model(model, spec)
    if isinstance(rows, LoopSpec):
        axes = {frozenset((l.frame_a, l.frame_b)): (l.frame_a, l.axes) for l in rows.loops}
        chosen = []
        for loop in loops:
            match = axes.get(frozenset((loop.frame_a, loop.frame_b)))
            if match is None:
                raise InputError(f"loop {loop.frame_a}-{loop.frame_b} is not in {rows.path}", file=str(path))
            if match[0] != loop.frame_a:
                raise InputError(f"loop {loop.frame_a}-{loop.frame_b} has its frames the other way round in "
                                 f"{rows.path} (its axes are in frame_a)", file=str(path))
            chosen.append(LoopClosure(loop.frame_a, loop.frame_b, loop.kind, match[1]))
        spec.loops = chosen
    elif rows == "rank":
        qpos0 = dict(reference_configurations(model)).get("qpos0", pin.neutral(model))
        spec = independent_rows(model, spec, qpos0 if q_ref is None else q_ref)
    elif rows != "all":
        raise ValueError(f"rows must be 'all', 'rank' or a LoopSpec, got {rows!r}")
    return model, spec


def _mjcf_springs(root, actuated) -> Dict[str, Spring]:
    """Passive hinge and slide joints with a ``stiffness``: MuJoCo's joint spring
    -stiffness (qpos - springref) - damping qvel (springref in degrees unless
    ``<compiler angle="radian">``, as MuJoCo reads it)."""
    compiler = root.find("compiler")
    degree = compiler is None or compiler.get("angle", "degree") == "degree"
    springs = {}
    for el in root.iter("joint"):
        name, k = el.get("name"), float(el.get("stiffness", 0) or 0)
        if name and k > 0 and name not in actuated and el.get("type", "hinge") in ("hinge", "slide"):
            rest = float(el.get("springref", 0))
            if degree and el.get("type", "hinge") == "hinge":
                rest = math.radians(rest)
            springs[name] = Spring(k, rest, float(el.get("damping", 0)))
    return springs


def independent_rows(model: pin.Model, spec: LoopSpec, q_ref: np.ndarray, tol: float = 1e-9) -> LoopSpec:
    """The spec with, per loop, only rows that add to the rank of the rows kept so far (loops
    in order, each loop's rows in order), judged at ``q_ref``: a planar cut loses its
    out-of-plane row (identically zero), a row repeating another loop's constraint is dropped.
    Rank by the singular values of the stacked rows, relative ``tol``."""
    kin = LoopKinematics(model, spec, q_ref)
    J = kin.compute(q_ref).J
    scale = max(float(np.abs(J).max()), 1e-300) if J.size else 1.0
    kept_rows = np.zeros((0, model.nv))
    loops, r = [], 0
    for loop in spec.loops:
        axes = []
        for a in loop.axes:
            row = J[r]
            r += 1
            trial = np.vstack([kept_rows, row])
            sv = np.linalg.svd(trial / scale, compute_uv=False)
            if sv[-1] > tol:
                kept_rows = trial
                axes.append(a)
        if not axes:
            raise InputError(f"loop {loop.frame_a}-{loop.frame_b} adds no independent constraint at the "
                             "reference configuration", file=str(spec.path))
        loops.append(LoopClosure(loop.frame_a, loop.frame_b, loop.kind, tuple(axes), loop.orientation))
    return LoopSpec(spec.path, loops, list(spec.actuated), dict(spec.transmissions), springs=dict(spec.springs))

"""Loop-closure sidecar YAML for closed linkages (the community convention of Pinocchio-based parallel-robot tools; loops as in [Mingo Hoffman 2024, Sec. III-A]).

    closed_loop: [[frame_a, frame_b], ...]   # the two sides of each cut joint
    type: ['3d' | '6d', ...]                 # rows kept by default: position, or full pose
    name_mot: [actuated joint names]         # every other non-fixed joint is passive
    constrained_axes: [[i, ...], ...]        # optional, per loop: rows of the relative twist
                                             # [vx vy vz wx wy wz] in frame_a that are kept
                                             # (a revolute cut 5, a planar loop 2 or 3)
    transmissions:                           # optional, per actuated prismatic joint
      joint_name: {lead: 0.005, efficiency: 0.9, max_force: 5000}

Checks: :func:`load_loops` (every frame and joint exists), :func:`check_loops` (the rows are
independent, their number equals the number of passive DoF, and the actuated joints
determine the passive ones at a reference configuration: J_lu square and well conditioned,
the loops closed there). :func:`load_mjcf_loops` reads MuJoCo ``<equality connect|weld>``
loops through Pinocchio's MJCF parser.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import pinocchio as pin

from ..errors import InputError
from .yamlio import load_yaml

DEFAULT_AXES = {"3d": (0, 1, 2), "6d": (0, 1, 2, 3, 4, 5)}


@dataclass(frozen=True)
class LoopClosure:
    frame_a: str
    frame_b: str
    axes: Tuple[int, ...]


@dataclass(frozen=True)
class Transmission:
    """A ball-screw: motor torque = force * lead / (2 pi efficiency)."""
    lead: float
    efficiency: float = 1.0
    max_force: float = float("inf")


@dataclass
class LoopSpec:
    path: Path
    loops: List[LoopClosure]
    actuated: List[str]
    transmissions: Dict[str, Transmission] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(len(l.axes) for l in self.loops)


def load_loops(path: str | Path, model: pin.Model) -> LoopSpec:
    """Parse and check a loop YAML against ``model``: every frame and joint must exist."""
    doc = load_yaml(path)
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error("expected a mapping with closed_loop, type, name_mot")
    pairs = data.get("closed_loop")
    if not isinstance(pairs, list) or not pairs:
        raise doc.error("must be a non-empty list of [frame_a, frame_b] pairs", "closed_loop")
    types = data.get("type", ["6d"] * len(pairs))
    if not isinstance(types, list) or len(types) != len(pairs):
        raise doc.error(f"needs one entry per loop ({len(pairs)})", "type")
    axes_list = data.get("constrained_axes", [None] * len(pairs))
    if not isinstance(axes_list, list) or len(axes_list) != len(pairs):
        raise doc.error(f"needs one entry per loop ({len(pairs)})", "constrained_axes")
    loops = []
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(f, str) for f in pair)):
            raise doc.error("each loop is a pair [frame_a, frame_b]", "closed_loop", i)
        for f in pair:
            if not model.existFrame(f):
                raise doc.error(f"frame '{f}' is not in the URDF", "closed_loop", i)
        kind = str(types[i]).lower()
        if kind not in DEFAULT_AXES:
            raise doc.error(f"'{types[i]}' is not 3d or 6d", "type", i)
        axes = axes_list[i]
        if axes is None:
            axes = DEFAULT_AXES[kind]
        elif not (isinstance(axes, list) and axes and all(isinstance(a, int) and 0 <= a < 6 for a in axes)
                  and len(set(axes)) == len(axes)):
            raise doc.error("each entry lists distinct row indices 0..5", "constrained_axes", i)
        loops.append(LoopClosure(pair[0], pair[1], tuple(axes)))
    actuated = data.get("name_mot")
    if not isinstance(actuated, list) or not actuated:
        raise doc.error("must list the actuated joints", "name_mot")
    for i, name in enumerate(actuated):
        if not isinstance(name, str) or not model.existJointName(name):
            raise doc.error(f"joint '{name}' is not in the URDF", "name_mot", i)
    transmissions = {}
    for name, spec in (data.get("transmissions") or {}).items():
        if name not in actuated:
            raise doc.error(f"'{name}' is not an actuated joint (name_mot)", "transmissions", name)
        try:
            transmissions[name] = Transmission(float(spec["lead"]), float(spec.get("efficiency", 1.0)),
                                               float(spec.get("max_force", float("inf"))))
        except (TypeError, KeyError, ValueError):
            raise doc.error("needs numbers lead, and optionally efficiency, max_force",
                            "transmissions", name) from None
    return LoopSpec(Path(path), loops, list(actuated), transmissions)


def check_loops(model: pin.Model, spec: LoopSpec, q_ref: np.ndarray, *, closure_tol: float = 1e-6,
                rcond_min: float = 1e-8) -> dict:
    """Load-time determinacy checks at the reference configuration ``q_ref``.

    Raises :class:`InputError` (naming the loop file) when the number of constraint rows is
    not the number of passive DoF, when the rows are dependent (rank deficient J_l), when
    J_lu is singular (the actuated joints leave some passive joint undetermined) or when the
    loops are not closed at ``q_ref``. Returns the figures checked."""
    from ..dynamics.closed_chain import LoopClosureKinematics   # dynamics imports model: lazy
    kin = LoopClosureKinematics(None, spec, model=model, q_ref=q_ref)
    where = {"file": str(spec.path)}
    if kin.m != kin.n_pas:
        raise InputError(f"{kin.m} constraint rows for {kin.n_pas} passive DoF "
                         f"({kin.n_act} actuated): the loops leave passive DoF undetermined"
                         if kin.m < kin.n_pas else
                         f"{kin.m} constraint rows for {kin.n_pas} passive DoF: too many rows "
                         "(select constrained_axes)", **where)
    st = kin.compute(q_ref)
    sv = np.linalg.svd(st.J, compute_uv=False) if st.J.size else np.ones(1)
    rank = int(np.sum(sv > sv[0] * 1e-9)) if sv.size else 0
    if rank < kin.m:
        raise InputError(f"constraint rows are dependent (rank {rank} of {kin.m}): "
                         "select independent constrained_axes", **where)
    residual = float(np.max(np.abs(st.error))) if st.error.size else 0.0
    if residual > closure_tol:
        worst = int(np.argmax(np.abs(st.error)))
        loop = _loop_of_row(spec, worst)
        raise InputError(f"loop {loop.frame_a}-{loop.frame_b} is open by {residual:.3g} at the "
                         "reference configuration", **where)
    sv_u = np.linalg.svd(st.J[:, kin.iu], compute_uv=False) if kin.n_pas else np.ones(1)
    rcond = float(sv_u[-1] / sv_u[0]) if sv_u.size and sv_u[0] > 0 else 0.0
    if rcond < rcond_min:
        raise InputError(f"the actuated joints do not determine the passive ones at the reference "
                         f"configuration (J_lu condition {1 / max(rcond, 1e-300):.3g})", **where)
    return {"rows": kin.m, "passive": kin.n_pas, "actuated": kin.n_act, "rank": rank,
            "residual": residual, "jlu_condition": 1.0 / rcond}


def _loop_of_row(spec: LoopSpec, row: int) -> LoopClosure:
    for loop in spec.loops:
        if row < len(loop.axes):
            return loop
        row -= len(loop.axes)
    return spec.loops[-1]


def load_mjcf_loops(path: str | Path, actuated: List[str] | None = None, rows="all", q_ref=None):
    """(model, LoopSpec) from an MJCF file: the tree and its constraints through Pinocchio's MJCF
    parser (``buildModelAndConstraintsFromMJCF``; a ``<freejoint>`` is the free flyer), each ``<equality connect>`` a '3d' loop and each ``<equality weld>`` a
    '6d' loop between two sites (frames of the model). The actuated joints are those of the
    ``<actuator>`` elements unless given.

    ``rows`` picks the constraint rows of each loop (MJCF has no constrained-axes field, and a
    ``connect`` keeps 3 rows, which over-constrains a planar cut):
      - ``"all"``: every row (3 per connect, 6 per weld), as MuJoCo states them;
      - ``"rank"``: an independent subset, :func:`independent_rows` at ``q_ref`` (default the
        model's neutral configuration, MJCF's qpos0, where the loops must be closed);
      - a :class:`LoopSpec` (e.g. the loop YAML): each loop keeps the constrained axes of the
        spec's loop between the same two frames."""
    import xml.etree.ElementTree as ET
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except ET.ParseError as exc:
        raise InputError(f"malformed XML: {exc}", file=str(path), line=exc.position[0]) from None
    try:
        model, points, frames = pin.buildModelAndConstraintsFromMJCF(str(path))
    except (RuntimeError, ValueError) as exc:
        raise InputError(f"not a valid MJCF: {str(exc).strip().splitlines()[0]}", file=str(path)) from None
    parsed = {"connect": list(points), "weld": list(frames)}
    loops = []
    for eq in root.iter("equality"):
        for el in eq:
            if el.tag not in ("connect", "weld"):
                continue
            a, b = el.get("site1"), el.get("site2")
            if a is None or b is None:
                raise InputError(f"<{el.tag}> needs site1 and site2", file=str(path))
            for f in (a, b):
                if not model.existFrame(f):
                    raise InputError(f"site '{f}' is not a frame of the model", file=str(path))
            # Pinocchio's parser made the same constraint (between the same joints): cross-check
            ja, jb = model.frames[model.getFrameId(a)].parentJoint, model.frames[model.getFrameId(b)].parentJoint
            match = [c for c in parsed[el.tag] if {c.joint1_id, c.joint2_id} == {ja, jb}]
            if match:
                parsed[el.tag].remove(match[0])
            else:
                raise InputError(f"Pinocchio's MJCF parser does not find the {el.tag} {a}-{b}", file=str(path))
            loops.append(LoopClosure(a, b, DEFAULT_AXES["3d" if el.tag == "connect" else "6d"]))
    if actuated is None:
        actuated = [el.get("joint") for act in root.iter("actuator") for el in act if el.get("joint")]
    for name in actuated:
        if not model.existJointName(name):
            raise InputError(f"actuated joint '{name}' is not in the model", file=str(path))
    spec = LoopSpec(path, loops, list(actuated))
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
            chosen.append(LoopClosure(loop.frame_a, loop.frame_b, match[1]))
        spec.loops = chosen
    elif rows == "rank":
        spec = independent_rows(model, spec, pin.neutral(model) if q_ref is None else q_ref)
    elif rows != "all":
        raise ValueError(f"rows must be 'all', 'rank' or a LoopSpec, got {rows!r}")
    return model, spec


def independent_rows(model: pin.Model, spec: LoopSpec, q_ref: np.ndarray, tol: float = 1e-9) -> LoopSpec:
    """The spec with, per loop, only rows that add to the rank of the rows kept so far (loops
    in order, each loop's rows in order), judged at ``q_ref``: a planar cut loses its
    out-of-plane row (identically zero), a row repeating another loop's constraint is dropped.
    Rank by the singular values of the stacked rows, relative ``tol``."""
    from ..dynamics.closed_chain import LoopClosureKinematics   # dynamics imports model: lazy
    kin = LoopClosureKinematics(None, spec, model=model, q_ref=q_ref)
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
        loops.append(LoopClosure(loop.frame_a, loop.frame_b, tuple(axes)))
    return LoopSpec(spec.path, loops, list(spec.actuated), dict(spec.transmissions))

"""Loop-closure sidecar YAML for closed linkages (community convention, NOTES-001 section 5).

    closed_loop: [[frame_a, frame_b], ...]   # the two sides of each cut joint
    type: ['3d' | '6d', ...]                 # rows kept by default: position, or full pose
    name_mot: [actuated joint names]         # every other non-fixed joint is passive
    constrained_axes: [[i, ...], ...]        # optional, per loop: rows of the relative twist
                                             # [vx vy vz wx wy wz] in frame_a that are kept
                                             # (a revolute cut 5, a planar loop 2 or 3)
    transmissions:                           # optional, per actuated prismatic joint
      joint_name: {lead: 0.005, efficiency: 0.9, max_force: 5000}
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

import pinocchio as pin

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

"""Kinematic modules and legs found in any Pinocchio tree ([Shah 2012, Secs. 2.2-2.3]).

A *kinematic module* is a maximal serial chain of 1-DoF joints: it breaks wherever a body
carries more than one child joint, so that every child module starts at the last link of
its parent module, as [Shah 2012] requires. Module 0 is the floating base.

A *leg* ([Farghdani 2025]) is the set of joints that move one contact frame and no other: the
path from the base to the contact, less the joints shared with another contact's path
(a torso joint above both legs of a biped is not part of either leg).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import pinocchio as pin


@dataclass(frozen=True)
class KinematicModule:
    index: int                      # 0 is the floating base
    parent: int                     # index of the parent module, -1 for the base
    joints: Tuple[int, ...]         # Pinocchio joint ids, inboard to outboard

    def joint_names(self, model: pin.Model) -> List[str]:
        return [model.names[j] for j in self.joints]


@dataclass(frozen=True)
class Leg:
    name: str
    joints: Tuple[int, ...]         # Pinocchio joint ids, inboard to outboard
    contact_frame: Optional[str]    # None for a leg with no contact (an arm found by name)

    def joint_names(self, model: pin.Model) -> List[str]:
        return [model.names[j] for j in self.joints]


def joint_children(model: pin.Model) -> Dict[int, List[int]]:
    children: Dict[int, List[int]] = {j: [] for j in range(model.njoints)}
    for j in range(1, model.njoints):
        children[model.parents[j]].append(j)
    return children


def find_modules(model: pin.Model) -> List[KinematicModule]:
    """Split the joint tree into serial chains, numbered outward (breadth-first)."""
    children = joint_children(model)
    root = 1 if model.njoints > 1 and model.joints[1].nv == 6 else 0
    modules = [KinematicModule(0, -1, (root,) if root else ())]
    queue: List[Tuple[int, int]] = [(c, 0) for c in children[root]]
    while queue:
        start, parent = queue.pop(0)
        chain = [start]
        while len(children[chain[-1]]) == 1:
            chain.append(children[chain[-1]][0])
        index = len(modules)
        modules.append(KinematicModule(index, parent, tuple(chain)))
        queue.extend((c, index) for c in children[chain[-1]])
    return modules


def support_path(model: pin.Model, joint: int) -> List[int]:
    """Joint ids from the first joint below the root down to ``joint``."""
    path = []
    while joint > 0 and model.joints[joint].nv != 6:
        path.append(joint)
        joint = model.parents[joint]
    return path[::-1]


def find_legs(model: pin.Model, contact_frames: Sequence[str],
              names: Optional[Sequence[str]] = None) -> List[Leg]:
    """One leg per contact frame: the joints on its support path used by no other contact."""
    paths = {}
    for frame in contact_frames:
        if not model.existFrame(frame):
            raise KeyError(frame)
        paths[frame] = support_path(model, model.frames[model.getFrameId(frame)].parentJoint)
    legs = []
    for i, frame in enumerate(contact_frames):
        shared = set().union(*(set(p) for f, p in paths.items() if f != frame)) if len(paths) > 1 else set()
        joints = tuple(j for j in paths[frame] if j not in shared)
        legs.append(Leg(names[i] if names else _leg_name(model, joints, frame), joints, frame))
    return legs


def _leg_name(model: pin.Model, joints: Sequence[int], frame: str) -> str:
    """A name for a leg: the common prefix of its joint names (``leg3_``, ``FL_``) or the frame."""
    if joints:
        names = [model.names[j] for j in joints]
        prefix = names[0]
        for n in names[1:]:
            while not n.startswith(prefix):
                prefix = prefix[:-1]
        prefix = prefix.rstrip("_-.")
        if len(prefix) >= 2:
            return prefix
    return frame

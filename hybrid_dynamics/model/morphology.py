"""What of the robot exists right now, and the maps between healthy and damaged states.

A :class:`Morphology` is Farghdani et al.'s (2025) existence numbers made concrete ([Farghdani 2025, Sec. IV-A, Definition 1, Proposition 1]):
per leg, how many of its links remain counted from the body (x_ij = 1 for j <= kept, so the
existence vector of a leg is always a prefix of ones: the "valid morphology" the paper leaves
undefined), plus locked joints with their angles. It is an immutable value: every operation
returns a new one, so a rejected change leaves the previous morphology intact.

A :class:`MorphologyMap` applies a morphology to a :class:`~hybrid_dynamics.model.robot.Robot`:
the surviving coordinates (index maps into the healthy q and v), the surviving contacts and
legs, and a Pinocchio model whose removed bodies have zero inertia. Removing a body's
inertia and deleting the rows and columns of its joints is exactly Farghdani et al.'s (2025) Algorithm 1
(existence numbers multiply the link blocks, then rows and columns are deleted); a locked
joint keeps its body, its angle is frozen and its DoF leaves the model (its child rigidly
joins the parent).

State transfer across a change (:meth:`MorphologyMap.transfer`), the documented rule:
  - the base pose and the base twist are kept (body-twist continuity, which [Farghdani 2025, Sec. IV-C] leaves open,
    item 12): the momentum of lost parts leaves with them;
  - surviving joints keep their angle and rate;
  - a newly locked joint keeps the angle it was locked at and gets zero rate;
  - a restored joint starts at its lock angle if it was locked, else at the standing pose,
    with zero rate.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, Optional, Tuple

import numpy as np
import pinocchio as pin

from ..errors import InputError


@dataclass(frozen=True)
class Morphology:
    """Existence of each leg's links (a count kept from the body) and locked joints."""
    links_kept: Tuple[Tuple[str, int], ...]           # (leg, links kept), every leg of the robot
    leg_sizes: Tuple[Tuple[str, int], ...]            # (leg, links in the healthy leg)
    locked: Tuple[Tuple[str, float], ...] = ()        # (joint, angle), sorted by joint name
    joint_limits: Tuple[Tuple[str, float, float], ...] = field(default=(), compare=False, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def healthy(cls, robot) -> "Morphology":
        m = robot.model
        sizes = tuple((leg.name, len(leg.joints)) for leg in robot.legs)
        limits = tuple((m.names[j], float(m.lowerPositionLimit[m.joints[j].idx_q]),
                        float(m.upperPositionLimit[m.joints[j].idx_q])) for j in range(2, m.njoints)
                       if m.joints[j].nq == 1)
        return cls(links_kept=sizes, leg_sizes=sizes, joint_limits=limits)

    # ------------------------------------------------------------------ queries
    @property
    def kept(self) -> Dict[str, int]:
        return dict(self.links_kept)

    @property
    def sizes(self) -> Dict[str, int]:
        return dict(self.leg_sizes)

    @property
    def locked_joints(self) -> Dict[str, float]:
        return dict(self.locked)

    def is_healthy(self) -> bool:
        return self.links_kept == self.leg_sizes and not self.locked

    def describe(self) -> str:
        parts = []
        for leg, k in self.links_kept:
            n = self.sizes[leg]
            if k == 0:
                parts.append(f"{leg} removed")
            elif k < n:
                parts.append(f"{leg} lost links {k + 1}..{n}")
        parts += [f"{j} locked at {a:.3f} rad" for j, a in self.locked]
        return "; ".join(parts) or "healthy"

    # ------------------------------------------------------------------ operations
    def remove_leg(self, leg: str) -> "Morphology":
        return self.remove_links(leg, 1)

    def remove_links(self, leg: str, first: int) -> "Morphology":
        """Remove links ``first``..n of ``leg`` (1-based, counted from the body)."""
        sizes = self.sizes
        if leg not in sizes:
            raise InputError(f"unknown leg '{leg}' (legs: {', '.join(sizes)})", field="leg")
        if not 1 <= first <= sizes[leg]:
            raise InputError(f"link index {first} is out of range 1..{sizes[leg]} for {leg}", field="link")
        kept = self.kept
        kept[leg] = min(kept[leg], first - 1)
        if not any(k > 0 for k in kept.values()):
            raise InputError("this would leave the robot with no legs", field="leg")
        return replace(self, links_kept=tuple(kept.items()))

    def lock_joint(self, joint: str, angle: float) -> "Morphology":
        limits = {name: (lo, hi) for name, lo, hi in self.joint_limits}
        if joint not in limits:
            raise InputError(f"unknown joint '{joint}'", field="joint")
        if not np.isfinite(angle):
            raise InputError(f"lock angle for {joint} is not finite", field="angle")
        locked = self.locked_joints
        locked[joint] = float(angle)
        return replace(self, locked=tuple(sorted(locked.items())))

    def restore(self, leg: Optional[str] = None, joint: Optional[str] = None) -> "Morphology":
        """Restore one leg, one joint, or (with neither) everything."""
        if leg is None and joint is None:
            return replace(self, links_kept=self.leg_sizes, locked=())
        new = self
        if leg is not None:
            if leg not in self.sizes:
                raise InputError(f"unknown leg '{leg}'", field="leg")
            kept = self.kept
            kept[leg] = self.sizes[leg]
            new = replace(new, links_kept=tuple(kept.items()))
        if joint is not None:
            locked = new.locked_joints
            if joint not in locked:
                raise InputError(f"joint '{joint}' is not locked", field="joint")
            del locked[joint]
            new = replace(new, locked=tuple(sorted(locked.items())))
        return new


class MorphologyMap:
    """A morphology applied to a robot: surviving coordinates, contacts, and a masked model.

    Reduced vectors follow Pinocchio's conventions on the surviving joints, in healthy order:
    ``q = [p, quat xyzw, joints]``, ``v = [v_base (local), w_base (local), joint rates]``.
    """

    def __init__(self, robot, morphology: Morphology):
        self.robot = robot
        self.morphology = morphology
        model = robot.model
        kept = morphology.kept
        locked = morphology.locked_joints
        removed: set = set()
        for leg in robot.legs:
            for j in leg.joints[kept[leg.name]:]:
                removed.update(model.subtrees[j])
        for name in locked:
            if model.getJointId(name) in removed:
                raise InputError(f"cannot lock '{name}': its link was removed", field="joint")
        self.removed_joints = sorted(removed)
        self.locked_joints = {model.getJointId(n): a for n, a in locked.items()}
        gone = removed | set(self.locked_joints)
        self.active_joints = [j for j in range(1, model.njoints) if j not in gone]
        self.q_index = np.concatenate([np.arange(model.joints[j].idx_q, model.joints[j].idx_q + model.joints[j].nq)
                                       for j in self.active_joints]).astype(int)
        self.v_index = np.concatenate([np.arange(model.joints[j].idx_v, model.joints[j].idx_v + model.joints[j].nv)
                                       for j in self.active_joints]).astype(int)
        self.joint_names = [model.names[j] for j in self.active_joints if model.joints[j].nv == 1]
        self.contacts = [c for c in robot.contacts
                         if model.frames[model.getFrameId(c.frame)].parentJoint not in removed]
        self.legs = [leg for leg in robot.legs if kept[leg.name] > 0]
        self.model = pin.Model(model)
        for j in self.removed_joints:
            self.model.inertias[j] = pin.Inertia.Zero()
        self._q_fill = robot.q_stand.copy()
        for j, angle in self.locked_joints.items():
            self._q_fill[model.joints[j].idx_q] = angle

    @property
    def nq(self) -> int:
        return len(self.q_index)

    @property
    def nv(self) -> int:
        return len(self.v_index)

    # ------------------------------------------------------------------ state maps
    def reduce_q(self, q_full: np.ndarray) -> np.ndarray:
        return np.asarray(q_full)[self.q_index]

    def reduce_v(self, v_full: np.ndarray) -> np.ndarray:
        return np.asarray(v_full)[self.v_index]

    def expand_q(self, q: np.ndarray) -> np.ndarray:
        """Healthy-size q: locked joints at their angle, removed ones at the standing pose."""
        full = self._q_fill.copy()
        full[self.q_index] = q
        return full

    def expand_v(self, v: np.ndarray) -> np.ndarray:
        full = np.zeros(self.robot.nv)
        full[self.v_index] = v
        return full

    def index_map(self, new: "MorphologyMap", kind: str = "v") -> Tuple[np.ndarray, np.ndarray]:
        """(old positions, new positions) of the coordinates both morphologies keep."""
        a, b = (self.v_index, new.v_index) if kind == "v" else (self.q_index, new.q_index)
        common, ia, ib = np.intersect1d(a, b, return_indices=True)
        return ia, ib

    def transfer(self, new: "MorphologyMap", q: np.ndarray, v: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Carry a reduced state (q, v) of this morphology into ``new`` (rule in the module doc)."""
        q_full = self.expand_q(q)
        for j, angle in new.locked_joints.items():
            if j not in self.locked_joints:       # newly locked: frozen where it was told
                q_full[self.robot.model.joints[j].idx_q] = angle
        v_full = self.expand_v(v)
        return new.reduce_q(q_full), new.reduce_v(v_full)

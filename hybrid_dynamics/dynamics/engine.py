"""What every modular engine shares: the robot's tree, the current morphology, reassembly
with index maps and state transfer, and input checks.

A morphology change is :meth:`ModularEngine.set_morphology`. It validates the new
morphology first and only then swaps it in, so a rejected change (no legs left, a link
index out of range, an unknown joint) raises :class:`~hybrid_dynamics.errors.InputError`
and leaves the engine exactly as it was. It returns a :class:`Reassembly`: the index maps
(old positions, new positions) of the q and v coordinates both morphologies keep, and the
state carried across by the rule of :mod:`hybrid_dynamics.model.morphology`
(``MorphologyMap.transfer``): base pose and base twist kept, surviving joints keep angle
and rate, a newly locked joint is frozen at its lock angle with zero rate, a restored joint
starts at its lock angle if it was locked, else at the standing pose, with zero rate.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ..errors import InputError
from ..model.morphology import Morphology
from .lie import check_quaternion
from .tree import TreeData

_TREES = {}


def tree_data(robot) -> TreeData:
    """One TreeData per Robot object (engines of the same robot share it)."""
    key = id(robot)
    entry = _TREES.get(key)
    if entry is None or entry[0] is not robot:
        entry = (robot, TreeData(robot))
        _TREES[key] = entry
    return entry[1]


@dataclass
class Reassembly:
    """The result of a morphology change."""
    q_map: Tuple[np.ndarray, np.ndarray]     # (old positions, new positions) in q
    v_map: Tuple[np.ndarray, np.ndarray]     # (old positions, new positions) in v
    q: Optional[np.ndarray] = None           # the transferred state, if one was given
    v: Optional[np.ndarray] = None


_R6 = np.arange(6)
_R7 = np.arange(7)


class _Coordinates:
    """Reduced coordinates of one morphology, as index arrays into the healthy q and v."""
    __slots__ = ("q_index", "v_index", "q_fill", "locked", "jmask", "qrank", "vrank")

    def __init__(self, data: TreeData, q_index, v_index, locked, jmask=None):
        self.q_index = q_index
        self.v_index = v_index
        self.locked = locked
        fill = data.q_stand
        if locked:
            fill = fill.copy()
            for b, angle in locked.items():
                fill[6 + b] = angle
        self.q_fill = fill
        if jmask is None:
            jmask = np.zeros(data.n, dtype=bool)
            jmask[v_index[6:] - 6] = True
        self.jmask = jmask                                # healthy joints present
        rank = np.cumsum(jmask)
        self.vrank = rank + 5                             # position in v of each present joint
        self.qrank = rank + 6


def _maps(old: _Coordinates, new: _Coordinates):
    both = old.jmask & new.jmask
    return ((np.concatenate((_R7, old.qrank[both])), np.concatenate((_R7, new.qrank[both]))),
            (np.concatenate((_R6, old.vrank[both])), np.concatenate((_R6, new.vrank[both]))))


class ModularEngine:
    """Base class: subclasses implement ``_assemble(morphology)`` (validate and build) and
    ``_install(built)`` (swap in), plus the dynamics."""

    name = "engine"

    def __init__(self, robot, morphology: Optional[Morphology] = None):
        self.robot = robot
        self.data = tree_data(robot)
        self.morphology = None
        self.coords = None
        self.set_morphology(morphology or Morphology.healthy(robot))

    # ------------------------------------------------------------------ morphology
    def set_morphology(self, morphology: Morphology, q: Optional[np.ndarray] = None,
                       v: Optional[np.ndarray] = None) -> Reassembly:
        built = self._assemble(morphology)           # raises before anything changes
        old = self.coords
        self._install(built)
        self.morphology = morphology
        new = self.coords
        if old is None:
            return Reassembly((np.arange(len(new.q_index)),) * 2, (np.arange(len(new.v_index)),) * 2)
        data = self.data
        out = Reassembly(*_maps(old, new))
        if q is not None:
            q_full = old.q_fill.copy()
            q_full[old.q_index] = q
            for b, angle in new.locked.items():
                if b not in old.locked:
                    q_full[6 + b] = angle
            out.q = q_full[new.q_index]
        if v is not None:
            v_full = np.zeros(data.n + 6)
            v_full[old.v_index] = v
            out.v = v_full[new.v_index]
        return out

    @property
    def nq(self) -> int:
        return len(self.coords.q_index)

    @property
    def nv(self) -> int:
        return len(self.coords.v_index)

    @property
    def q_index(self) -> np.ndarray:
        return self.coords.q_index

    @property
    def v_index(self) -> np.ndarray:
        return self.coords.v_index

    @property
    def joint_names(self):
        """The surviving 1-DoF joints, in the order of q[7:] and v[6:]."""
        names = self.data.names
        return [names[i - 5] for i in self.coords.v_index[6:]]

    def expand_q(self, q: np.ndarray) -> np.ndarray:
        full = self.coords.q_fill.copy()
        full[self.coords.q_index] = q
        return full

    # ------------------------------------------------------------------ checks
    def _check(self, q: np.ndarray, v: Optional[np.ndarray] = None) -> None:
        if len(q) != len(self.coords.q_index):
            raise InputError(f"q has {len(q)} entries, the current morphology has nq = {self.nq}", field="q")
        if v is not None and len(v) != len(self.coords.v_index):
            raise InputError(f"v has {len(v)} entries, the current morphology has nv = {self.nv}", field="v")
        check_quaternion(q)

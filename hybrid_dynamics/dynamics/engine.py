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
from .compiled_tree import Coordinates, TreeData, _maps as coordinate_maps

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


_Coordinates = Coordinates
_maps = coordinate_maps


class ModularEngine:
    """Base class: subclasses implement ``_install(built)`` (swap in) and the dynamics, and
    either ``_structure(tree)`` (what they derive from a compiled tree, once per skeleton) or
    their own ``_assemble(morphology)`` (validate and build)."""

    name = "engine"

    def _assemble(self, morphology):
        """(compiled tree, coordinates, *derived structure) of ``morphology``."""
        sk, angles = self.data.skeleton(morphology)          # raises before anything changes
        tree = sk.compiled(angles)
        coords = sk.coordinates(angles)
        derived = sk.extra.get(self.name)                    # structure only: reused per skeleton
        if derived is None:
            derived = sk.extra[self.name] = self._structure(tree)
        return (tree, coords) + derived

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
        q_map, v_map = new.maps(old)
        out = Reassembly(q_map, v_map)
        every = len(q_map[1]) == len(new.q_index)         # the new coordinates all come from the old
        if q is not None:
            # coordinates both keep come from q; the rest from the old fill (standing pose, or
            # the lock angle of a joint being restored); newly locked joints leave q
            if every:
                q_new = np.asarray(q, float)[q_map[0]]
            else:
                q_new = old.q_fill[new.q_index]
                q_new[q_map[1]] = np.asarray(q, float)[q_map[0]]
            out.q = q_new
        if v is not None:
            if every:
                v_new = np.asarray(v, float)[v_map[0]]
            else:
                v_new = np.zeros(len(new.v_index))
                v_new[v_map[1]] = np.asarray(v, float)[v_map[0]]
            out.v = v_new
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

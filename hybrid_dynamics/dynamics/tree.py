"""A robot's kinematic tree as arrays, and a morphology applied to it.

:class:`TreeData` is built once per robot from its Pinocchio model: body 0 is the floating
base, bodies 1..n are the 1-DoF joints in Pinocchio's order (so body b has healthy
``idx_q = 6 + b`` and ``idx_v = 5 + b``). For each body: parent, joint placement in the parent
body frame (R0, p0), joint axis in its own frame and kind (revolute or prismatic), spatial
inertia about the body frame origin (6x6, [linear; angular] order), its depth, its
base-attached subtree (*group*: paper 000's leg module generalised to any subtree hanging off
the base, e.g. TALOS's torso with both arms and the head), the ancestor matrix, and per leg
the bodies lost when links k..n are removed.

:meth:`TreeData.compile` applies a :class:`~hybrid_dynamics.model.morphology.Morphology`:
removed links (existence number x_ij = 0) and everything outboard of them are dropped, and a
locked joint's body is merged into its parent: its inertia is added to the parent's (moved
through the joint placement evaluated at the lock angle) and its children and frames hang
off the parent through the same fixed transform. The result, :class:`CompiledTree`, is a
smaller tree with the same arrays; its coordinates are the morphology's reduced q and v
(``q_index``, ``v_index`` index the healthy vectors, as in
:class:`~hybrid_dynamics.model.morphology.MorphologyMap`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np
import pinocchio as pin

from ..errors import InputError
from .lie import Ad_inv, rot_axis

def _joint_axis(jmodel) -> Tuple[int, np.ndarray]:
    """(kind, unit axis in the joint frame): kind 0 revolute, 1 prismatic, from the joint's
    motion subspace S = [linear; angular]."""
    if jmodel.nq != 1 or jmodel.nv != 1:
        raise InputError(f"joint type {jmodel.shortname()} is not supported by the modular engines "
                         "(revolute and prismatic 1-DoF joints only)")
    jdata = jmodel.createData()
    jmodel.calc(jdata, np.zeros(1))
    S = np.array(jdata.S).reshape(6)
    lin, ang = np.linalg.norm(S[:3]), np.linalg.norm(S[3:])
    if ang > 1e-12 and lin < 1e-12:
        return 0, S[3:] / ang
    if lin > 1e-12 and ang < 1e-12:
        return 1, S[:3] / lin
    raise InputError(f"joint type {jmodel.shortname()} is neither revolute nor prismatic")


def spatial_inertia(inertia: pin.Inertia) -> np.ndarray:
    return np.array(inertia.matrix())


def transform_inertia(I6: np.ndarray, R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """A 6x6 inertia given in frame c, expressed in frame f where f_T_c = (R, p)."""
    X = Ad_inv(R, p)
    return X.T @ I6 @ X


def _ancestors(parent: np.ndarray) -> np.ndarray:
    """anc[m, l] = 1 if body m is l or an ancestor of l (bodies 1..n; the base excluded)."""
    n = len(parent) - 1
    anc = np.zeros((n + 1, n + 1))
    for b in range(1, n + 1):
        anc[:, b] = anc[:, parent[b]]
        anc[b, b] = 1.0
    anc[0, :] = 0.0
    return anc


def _groups(parent: np.ndarray) -> np.ndarray:
    group = np.full(len(parent), -1)
    count = 0
    for b in range(1, len(parent)):
        if parent[b] == 0:
            group[b] = count
            count += 1
        else:
            group[b] = group[parent[b]]
    return group


def _modules(parent: np.ndarray) -> List[Tuple[int, Tuple[int, ...]]]:
    """Paper 003's kinematic modules: maximal serial chains, numbered outward; (parent, bodies)."""
    children: Dict[int, List[int]] = {b: [] for b in range(len(parent))}
    for b in range(1, len(parent)):
        children[parent[b]].append(b)
    modules: List[Tuple[int, Tuple[int, ...]]] = [(-1, (0,))]
    queue = [(c, 0) for c in children[0]]
    while queue:
        start, par = queue.pop(0)
        chain = [start]
        while len(children[chain[-1]]) == 1:
            chain.append(children[chain[-1]][0])
        modules.append((par, tuple(chain)))
        queue.extend((c, len(modules) - 1) for c in children[chain[-1]])
    return modules


@dataclass
class TipFrame:
    name: str
    body: int            # body index in the tree it belongs to
    R: np.ndarray        # frame placement in the body frame
    p: np.ndarray


class TreeArrays:
    """Fields shared by the healthy tree and a compiled one."""
    n: int
    parent: np.ndarray   # (n+1,) parent body, -1 for the base
    R0: np.ndarray       # (n+1, 3, 3) joint placement in the parent body frame
    p0: np.ndarray       # (n+1, 3)
    kind: np.ndarray     # (n+1,) 0 revolute, 1 prismatic (base: -1)
    axis: np.ndarray     # (n+1, 3) joint axis in the body frame
    I6: np.ndarray       # (n+1, 6, 6) spatial inertia about the body frame origin
    names: List[str]
    tips: List[TipFrame]

    def finish(self, anc=None, group=None) -> None:
        self.anc = _ancestors(self.parent) if anc is None else anc
        self.group = _groups(self.parent) if group is None else group
        self.ngroups = int(self.group.max()) + 1 if self.n else 0
        self.depth = np.zeros(self.n + 1, dtype=int)
        for b in range(1, self.n + 1):
            self.depth[b] = self.depth[self.parent[b]] + 1
        S = np.zeros((self.n + 1, 6))
        rev = self.kind == 0
        S[rev, 3:] = self.axis[rev]
        S[self.kind == 1, :3] = self.axis[self.kind == 1]
        self.S = S
        self.mass = self.I6[:, 0, 0].copy()
        self.modules = _modules(self.parent)

    def link_poses(self, th: np.ndarray, R_base: np.ndarray, p_base: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Orientation (n+1, 3, 3) and origin (n+1, 3) of every body frame, outward from the
        base pose (R_base, p_base), for joint positions ``th`` (product of exponentials)."""
        R = np.empty((self.n + 1, 3, 3))
        p = np.empty((self.n + 1, 3))
        R[0], p[0] = R_base, p_base
        for b in range(1, self.n + 1):
            par = self.parent[b]
            if self.kind[b] == 0:
                Rl, pl = self.R0[b] @ rot_axis(self.axis[b], th[b - 1]), self.p0[b]
            else:
                Rl, pl = self.R0[b], self.p0[b] + self.R0[b] @ (self.axis[b] * th[b - 1])
            R[b] = R[par] @ Rl
            p[b] = p[par] + R[par] @ pl
        return R, p


class TreeData(TreeArrays):
    """The healthy robot as arrays (see the module docstring)."""

    def __init__(self, robot):
        model = robot.model
        if model.joints[1].shortname() != "JointModelFreeFlyer":
            raise InputError("the modular engines need a free-flyer root joint")
        self.robot = robot
        n = model.njoints - 2
        self.n = n
        self.parent = np.array([-1] + [model.parents[j] - 1 for j in range(2, model.njoints)])
        self.R0 = np.zeros((n + 1, 3, 3))
        self.p0 = np.zeros((n + 1, 3))
        self.kind = np.full(n + 1, -1)
        self.axis = np.zeros((n + 1, 3))
        self.I6 = np.zeros((n + 1, 6, 6))
        self.R0[0] = np.eye(3)
        self.I6[0] = spatial_inertia(model.inertias[1])
        self.names = ["root_joint"] + [model.names[j] for j in range(2, model.njoints)]
        for b in range(1, n + 1):
            j = b + 1
            self.kind[b], self.axis[b] = _joint_axis(model.joints[j])
            M = model.jointPlacements[j]
            self.R0[b], self.p0[b] = M.rotation, M.translation
            self.I6[b] = spatial_inertia(model.inertias[j])
        self.body_of = {name: b for b, name in enumerate(self.names)}
        self.tips = []
        for c in robot.contacts:
            f = model.frames[model.getFrameId(c.frame)]
            self.tips.append(TipFrame(c.frame, f.parentJoint - 1, f.placement.rotation.copy(),
                                      f.placement.translation.copy()))
        self.finish()
        self.subtree = [np.flatnonzero(self.anc[b]) for b in range(n + 1)]
        # per leg, the bodies removed when links k.. are removed (k = 0..n_i-1, 0-based)
        self.leg_bodies = {leg.name: [j - 1 for j in leg.joints] for leg in robot.legs}
        self.leg_cut = {name: [np.flatnonzero(self.anc[b]) for b in bodies]
                        for name, bodies in self.leg_bodies.items()}
        self.q_stand = robot.q_stand.copy()

    # ------------------------------------------------------------------ morphology
    def masks(self, morphology) -> Tuple[np.ndarray, Dict[int, float]]:
        """(exist (n+1,) of 0/1, {locked body: angle}) with the checks every engine shares."""
        exist = np.ones(self.n + 1)
        for leg, k in morphology.links_kept:
            cut = self.leg_cut.get(leg)
            if cut is None:
                raise InputError(f"unknown leg '{leg}'", field="leg")
            if not 0 <= k <= len(cut):
                raise InputError(f"{leg} keeps {k} links: out of range 0..{len(cut)}", field="link")
            if k < len(cut):
                exist[cut[k]] = 0.0
        if self.leg_cut and not any(k > 0 for _, k in morphology.links_kept):
            raise InputError("the existence vector leaves no legs", field="leg")
        locked = {}
        for name, angle in morphology.locked:
            b = self.body_of.get(name, 0)
            if b == 0:
                raise InputError(f"unknown joint '{name}'", field="joint")
            if exist[b] == 0.0:
                raise InputError(f"cannot lock '{name}': its link was removed", field="joint")
            locked[b] = float(angle)
        return exist, locked

    def compile(self, morphology) -> "CompiledTree":
        return CompiledTree(self, morphology)


class CompiledTree(TreeArrays):
    """The tree with a morphology applied: removed bodies dropped, locked bodies merged."""

    def __init__(self, data: TreeData, morphology):
        exist, locked = data.masks(morphology)
        self.data = data
        self.morphology = morphology
        self.exist, self.locked = exist, locked
        n_h = data.n
        host = np.zeros(n_h + 1, dtype=int)            # compiled body carrying each healthy body
        hostR = [np.eye(3)] * (n_h + 1)                # healthy body frame in its host's frame
        hostp = [np.zeros(3)] * (n_h + 1)
        keep = [0]
        I6 = [data.I6[0].copy()]
        parent, R0, p0 = [-1], [np.eye(3)], [np.zeros(3)]
        for b in range(1, n_h + 1):
            if exist[b] == 0.0:
                continue
            par = data.parent[b]
            if b in locked:
                Rj = rot_axis(data.axis[b], locked[b]) if data.kind[b] == 0 else np.eye(3)
                pj = data.axis[b] * locked[b] if data.kind[b] == 1 else np.zeros(3)
                Rl = data.R0[b] @ Rj
                pl = data.p0[b] + data.R0[b] @ pj
                h = host[par]
                host[b] = h
                hostR[b] = hostR[par] @ Rl
                hostp[b] = hostp[par] + hostR[par] @ pl
                I6[h] = I6[h] + transform_inertia(data.I6[b], hostR[b], hostp[b])
                continue
            host[b] = len(keep)
            keep.append(b)
            parent.append(host[par])
            if hostp[par] is hostp[0] and hostR[par] is hostR[0]:
                R0.append(data.R0[b])
                p0.append(data.p0[b])
            else:
                R0.append(hostR[par] @ data.R0[b])
                p0.append(hostp[par] + hostR[par] @ data.p0[b])
            I6.append(data.I6[b].copy())
        keep_a = np.array(keep)
        self.hid = keep_a                              # healthy body of each compiled body
        self.n = len(keep) - 1
        self.parent = np.array(parent)
        self.R0, self.p0 = np.array(R0), np.array(p0)
        self.kind, self.axis = data.kind[keep_a], data.axis[keep_a]
        self.I6 = np.array(I6)
        self.names = [data.names[b] for b in keep]
        self.tips = []
        for t in data.tips:
            if exist[t.body] == 0.0:
                continue                               # a stump has no contact
            self.tips.append(TipFrame(t.name, int(host[t.body]), hostR[t.body] @ t.R,
                                      hostp[t.body] + hostR[t.body] @ t.p))
        self.q_index = np.concatenate([np.arange(7), 6 + keep_a[1:]])
        self.v_index = np.concatenate([np.arange(6), 5 + keep_a[1:]])
        # ancestry among the kept bodies is the healthy one restricted (a merged body's children
        # hang off its own ancestor); groups keep their order, renumbered without gaps
        group = data.group[keep_a].copy()
        if self.n:
            group[1:] = np.unique(group[1:], return_inverse=True)[1]
        self.finish(data.anc[np.ix_(keep_a, keep_a)], group)

    @property
    def nq(self) -> int:
        return 7 + self.n

    @property
    def nv(self) -> int:
        return 6 + self.n

"""A robot's kinematic tree as arrays.

:class:`HealthyTree` is built once per robot from its Pinocchio model: body 0 is the floating
base, bodies 1..n are the 1-DoF joints in Pinocchio's order (so body b has healthy
``idx_q = 6 + b`` and ``idx_v = 5 + b``). For each body: parent, joint placement in the parent
body frame (R0, p0), joint axis in its own frame and kind (revolute or prismatic), spatial
inertia about the body frame origin (6x6, [linear; angular] order), its depth, its
base-attached subtree (*group*: Farghdani et al.'s (2025) leg module generalised to any subtree hanging off
the base, e.g. TALOS's torso with both arms and the head), the ancestor matrix, per leg
the bodies lost when links k..n are removed, and per body an angle-free basis of everything
locking its joint changes (merged inertia, children's and tips' placements are quadratic in
(sin, 1 - cos) or in the prismatic offset). A morphology is applied to it in
dynamics/compiled_tree.py.
"""
from __future__ import annotations

from typing import List, NamedTuple, Tuple

import numpy as np
import pinocchio as pin

from ..errors import InputError
from .lie import Ad_inv, rot_axis, skew, skew_b

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
    """Shah et al.'s (2012) kinematic modules: maximal serial chains, numbered outward in body order
    (a parent module before its children); (parent module, bodies). One pass: a body continues
    its parent's chain when it is that parent's only child (the base module is the base)."""
    par = parent.tolist()
    n = len(par) - 1
    nch = np.bincount(parent[1:], minlength=n + 1).tolist() if n else [0]
    module_of = [0] * (n + 1)
    chains: List[List[int]] = [[0]]
    mparent = [-1]
    for b in range(1, n + 1):
        p = par[b]
        if p > 0 and nch[p] == 1:
            i = module_of[p]
            chains[i].append(b)
        else:
            i = len(chains)
            chains.append([b])
            mparent.append(module_of[p])
        module_of[b] = i
    return [(mp, tuple(c)) for mp, c in zip(mparent, chains)]


class TipFrame(NamedTuple):
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
        parent, kind, R0, p0, axis = self.parent, self.kind, self.R0, self.p0, self.axis
        for b in range(1, self.n + 1):
            par = parent[b]
            if kind[b] == 0:
                Rl, pl = R0[b] @ rot_axis(axis[b], th[b - 1]), p0[b]
            else:
                Rl, pl = R0[b], p0[b] + R0[b] @ (axis[b] * th[b - 1])
            R[b] = R[par] @ Rl
            p[b] = p[par] + R[par] @ pl
        return R, p


class HealthyTree(TreeArrays):
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
        # what a lock needs, per body: R0 K, R0 K^2 (Rodrigues) and R0 axis (prismatic)
        K = np.array([skew(a) for a in self.axis])
        self.R0K = self.R0 @ K
        self.R0K2 = self.R0 @ (K @ K)
        self.R0ax = np.einsum("nij,nj->ni", self.R0, self.axis)
        self.parent_list = self.parent.tolist()
        self.arange = np.arange(n + 1)
        self.kind_list = self.kind.tolist()
        self.minus_one = np.full(n + 2, -1)             # carrier of each body, and -1 for the base's parent
        self.parent_ext = self.parent.copy()
        self.parent_ext[0] = n + 1
        self._lock_bases()
        self._lock_tables()

    def _lock_bases(self) -> None:
        """Angle-free pieces of a lock. Body b's frame in its parent's at joint position th is
        linear in (c1, c2) = (sin th, 1 - cos th) (revolute) or (th, 0) (prismatic):
        R_l = R0 + c1 RA1 + c2 RA2, p_l = p0 + c1 PA1. Hence, with c = [1, c1, c2, c1^2,
        c1 c2, c2^2]: b's inertia merged into its parent's frame is ``c @ lock_inertia[b]``,
        and a child's (or tip's) placement in the host frame is ``[1, c1, c2] @ basis``."""
        n1 = self.n + 1
        rev = (self.kind == 0)[:, None, None]
        pri = (self.kind == 1)[:, None]
        RA = np.stack([self.R0, self.R0K * rev, self.R0K2 * rev], 1)             # (n+1, 3, 3, 3)
        PA = np.stack([self.p0, self.R0ax * pri, np.zeros((n1, 3))], 1)          # (n+1, 3, 3)
        self._RA, self._PA = RA, PA
        # X = Ad^-1(R_l, p_l) = X0 + c1 X1 + c2 X2 (R_l and p_l never both vary)
        RAt = np.swapaxes(RA, 2, 3)
        X = np.zeros((n1, 3, 6, 6))
        X[:, :, :3, :3] = RAt
        X[:, :, 3:, 3:] = RAt
        P0 = skew_b(self.p0)[:, None]
        PA1 = skew_b(PA[:, 1])
        X[:, :, :3, 3:] = -RAt @ P0
        X[:, 1, :3, 3:] -= np.swapaxes(self.R0, 1, 2) @ PA1 * pri[:, :, None]
        I = self.I6[:, None]
        Xt = np.swapaxes(X, 2, 3)
        T = Xt[:, :, None] @ I[:, :, None] @ X[:, None, :]                        # (n+1, 3, 3, 6, 6)
        B = np.stack([T[:, 0, 0], T[:, 0, 1] + T[:, 1, 0], T[:, 0, 2] + T[:, 2, 0],
                      T[:, 1, 1], T[:, 1, 2] + T[:, 2, 1], T[:, 2, 2]], 1)
        self.lock_inertia = B.reshape(n1, 6, 36)
        # a body's placement in its host when only its parent is locked: [R (9), p (3)]
        par = np.maximum(self.parent, 0)
        Rc = RA[par] @ self.R0[:, None]                                          # (n+1, 3, 3, 3)
        pc = np.einsum("nkij,nj->nki", RA[par], self.p0) + PA[par]
        self.child_basis = np.concatenate([Rc.reshape(n1, 3, 9), pc], 2)         # (n+1, 3, 12)
        self.tip_basis = []
        for t in self.tips:
            b = t.body
            Rt = RA[b] @ t.R
            pt = RA[b] @ t.p + PA[b]
            self.tip_basis.append(np.concatenate([Rt.reshape(3, 9), pt], 1))

    def _lock_tables(self) -> None:
        """Per body, everything its lock changes, side by side (one product per lock), and the
        per-body arrays a compiled tree gathers (one gather per morphology)."""
        n = self.n
        self.children_list = [[] for _ in range(n + 1)]
        for b in range(1, n + 1):
            self.children_list[self.parent[b]].append(b)
        # each tip's frame as carried by each possible compiled body
        self.tip_frames = [([TipFrame(t.name, h, t.R, t.p) for h in range(n + 1)], t.body) for t in self.tips]
        # per body, everything its lock changes in one basis: c @ lock_all[b] with c = [1, c1, c2,
        # c1^2, c1 c2, c2^2] is [merged inertia (36) | each child's placement (12) | each tip's (12)]
        self.tips_on = [[] for _ in range(n + 1)]
        for i, t in enumerate(self.tips):
            self.tips_on[t.body].append(i)
        pad = np.zeros((3, 12))
        self.lock_all = [np.concatenate([self.lock_inertia[b]]
                                        + [np.vstack([self.child_basis[c], pad]) for c in self.children_list[b]]
                                        + [np.vstack([self.tip_basis[i], pad]) for i in self.tips_on[b]], 1)
                         for b in range(n + 1)]
        # where each child's and tip's placement sits in that product
        self.lock_kids = [[(36 + 12 * j, c) for j, c in enumerate(self.children_list[b])] for b in range(n + 1)]
        self.lock_tips = [[(36 + 12 * (len(self.children_list[b]) + j), i) for j, i in enumerate(self.tips_on[b])]
                          for b in range(n + 1)]
        # the per-body arrays a compiled tree gathers, side by side: one gather per morphology
        self.packed = np.concatenate([self.R0.reshape(n + 1, 9), self.p0, self.I6.reshape(n + 1, 36),
                                      self.axis, self.S], 1)


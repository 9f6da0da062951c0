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

import math
from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np
import pinocchio as pin

from ..errors import InputError
from .lie import Ad_inv, rot_axis, skew

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
    """Paper 003's kinematic modules: maximal serial chains, numbered outward in body order
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
        # what a lock needs, per body: R0 K, R0 K^2 (Rodrigues) and R0 axis (prismatic)
        K = np.array([skew(a) for a in self.axis])
        self.R0K = self.R0 @ K
        self.R0K2 = self.R0 @ (K @ K)
        self.R0ax = np.einsum("nij,nj->ni", self.R0, self.axis)
        self._skeletons = {}
        self.parent_list = self.parent.tolist()
        self.arange = np.arange(n + 1)

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

    def skeleton(self, morphology) -> Tuple["Skeleton", Dict[int, float]]:
        """(the morphology's angle-free structure, {locked body: angle}).

        Structures are computed once per robot and reused: a change whose existence numbers
        and locked joints were seen before (any lock angles) costs a dictionary look-up; a new
        one is validated by :meth:`masks` (raising before anything is cached)."""
        locked = morphology.locked
        key = (morphology.links_kept, tuple(name for name, _ in locked)) if locked else morphology.links_kept
        sk = self._skeletons.get(key)
        if sk is None:
            exist, angles = self.masks(morphology)
            if len(self._skeletons) >= _CACHE:
                self._skeletons.clear()
            sk = self._skeletons[key] = Skeleton(self, key, exist, tuple(sorted(angles)),
                                                 tuple(self.body_of[name] for name, _ in locked))
            return sk, angles
        if not locked:
            return sk, {}
        return sk, {b: float(a) for b, (_, a) in zip(sk.lock_seq, locked)}

    def clear_structures(self) -> None:
        """Forget every structure computed so far (a benchmark of first-time changes)."""
        self._skeletons = {}

    def compile(self, morphology) -> "CompiledTree":
        sk, angles = self.skeleton(morphology)
        return sk.compiled(angles)

    def coordinates(self, morphology) -> "Coordinates":
        sk, angles = self.skeleton(morphology)
        return sk.coordinates(angles)


_CACHE = 4096                                         # structures kept per robot
_R6 = np.arange(6)
_R7 = np.arange(7)


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


class Coordinates:
    """Reduced coordinates of one morphology, as index arrays into the healthy q and v."""
    __slots__ = ("q_index", "v_index", "q_fill", "locked", "jmask", "qrank", "vrank", "skeleton")

    def __init__(self, data: "TreeData", q_index, v_index, locked, jmask=None, skeleton=None):
        self.q_index = q_index
        self.v_index = v_index
        self.locked = locked
        self.skeleton = skeleton
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
        rank = jmask.cumsum()
        self.vrank = rank + 5                             # position in v of each present joint
        self.qrank = rank + 6

    def with_locks(self, data: "TreeData", locked: Dict[int, float]) -> "Coordinates":
        """The same coordinates with the lock angles ``locked`` in the fill."""
        out = Coordinates.__new__(Coordinates)
        out.q_index, out.v_index, out.jmask, out.qrank, out.vrank, out.skeleton = (
            self.q_index, self.v_index, self.jmask, self.qrank, self.vrank, self.skeleton)
        fill = data.q_stand.copy()
        for b, angle in locked.items():
            fill[6 + b] = angle
        out.q_fill, out.locked = fill, locked
        return out

    def maps(self, old: "Coordinates"):
        """((old q positions, new q positions), (old v, new v)) of the coordinates both keep
        (read-only arrays, cached per pair of structures)."""
        sk, osk = self.skeleton, old.skeleton
        if sk is not None and osk is not None:
            out = sk.maps.get(osk.key)
            if out is None:
                (a, b), (c, e) = _maps(old, self)
                out = sk.maps[osk.key] = ((_readonly(a), _readonly(b)), (_readonly(c), _readonly(e)))
            return out
        return _maps(old, self)


def _maps(old: Coordinates, new: Coordinates):
    both = (old.jmask & new.jmask).nonzero()[0]
    vo, vn = old.vrank[both], new.vrank[both]
    return ((np.concatenate((_R7, vo + 1)), np.concatenate((_R7, vn + 1))),
            (np.concatenate((_R6, vo)), np.concatenate((_R6, vn))))


def _joint_motion(data: "TreeData", b: int, angle: float) -> Tuple[np.ndarray, np.ndarray]:
    """Body b's frame in its parent's frame at joint position ``angle``: R0 Rot(axis, angle)
    = R0 + sin R0 K + (1 - cos) R0 K^2 from the per-body terms precomputed in TreeData."""
    if data.kind[b] == 0:
        return data.R0[b] + math.sin(angle) * data.R0K[b] + (1.0 - math.cos(angle)) * data.R0K2[b], data.p0[b]
    return data.R0[b], data.p0[b] + data.R0ax[b] * angle


class Skeleton:
    """A morphology's structure, independent of the lock angles: the existence mask, the kept
    bodies (x_ij = 1 and not locked) and their renumbering, the index maps of q and v, and
    (built on first use, then kept) the compiled tree's angle-free arrays and what merging
    each locked body needs. Engines keep their own derived structure in ``extra``."""

    def __init__(self, data: TreeData, key, exist: np.ndarray, locked_bodies: Tuple[int, ...],
                 lock_seq: Tuple[int, ...] = ()):
        self.data = data
        self.key = key
        self.exist = exist
        self.locked_bodies = locked_bodies               # ascending (parents first)
        self.lock_seq = lock_seq                         # body of each entry of Morphology.locked
        keepmask = exist > 0
        if locked_bodies:
            keepmask[list(locked_bodies)] = False
        self.keep = keepmask.nonzero()[0]                # healthy body of each compiled body
        jmask = keepmask[1:].copy()
        self.jmask = jmask
        self.q_index = _readonly(np.concatenate((_R7, 6 + self.keep[1:])))
        self.v_index = _readonly(np.concatenate((_R6, 5 + self.keep[1:])))
        self.maps = {}
        self.extra = {}
        self._coords = Coordinates(data, self.q_index, self.v_index, {}, jmask, self)
        self._tree = None
        self._recent = {}                                # lock angles -> compiled tree (reuse)

    def coordinates(self, angles: Dict[int, float]) -> Coordinates:
        return self._coords.with_locks(self.data, angles) if angles else self._coords

    # ------------------------------------------------------------------ compiled tree
    def _build(self) -> None:
        """The angle-free part of the compiled tree: gathers over the kept bodies, and a
        Python step only per locked body."""
        d = self.data
        keep = self.keep
        host = np.zeros(d.n + 1, dtype=int)             # compiled body carrying each healthy body
        host[keep] = d.arange[:len(keep)]
        plist = d.parent_list
        for b in self.locked_bodies:                    # ascending: parents first
            host[b] = host[plist[b]]
        self.host = host
        n = len(keep) - 1
        self.n = n
        hpar = d.parent[keep]
        parent = host[hpar]
        parent[0] = -1
        self.parent = parent
        self.kind, self.axis, self.S = d.kind[keep], d.axis[keep], d.S[keep]
        self.anc = d.anc[keep][:, keep]                 # merged bodies' children hang off their ancestors
        self.depth = self.anc.sum(0).astype(int) if self.locked_bodies else d.depth[keep]
        group = d.group[keep]
        if n:                                           # groups keep their order, without gaps
            used = np.zeros(d.ngroups, dtype=int)
            used[group[1:]] = 1
            group[1:] = np.cumsum(used)[group[1:]] - 1
        self.group = group
        self.ngroups = int(group.max()) + 1 if n else 0
        self.R0, self.p0, self.I6 = d.R0[keep], d.p0[keep], d.I6[keep]
        self.child_fix = []                             # kept bodies whose healthy parent is locked
        if self.locked_bodies:
            lm = np.zeros(d.n + 1, dtype=bool)
            lm[list(self.locked_bodies)] = True
            self.child_fix = [(c, int(hpar[c])) for c in (np.flatnonzero(lm[hpar[1:]]) + 1).tolist()]
        locked = self.locked_bodies
        exist = self.exist
        host_l = host.tolist()
        self.tip_info = [(t, host_l[t.body], t.body if t.body in locked else 0)   # (tip, host, locked body)
                         for t in d.tips if exist[t.body] != 0.0]                # a stump has no contact
        self.static_tips = [TipFrame(t.name, h, t.R, t.p) for t, h, _ in self.tip_info]

    @property
    def names(self) -> List[str]:
        names = self.data.names
        return [names[b] for b in self.keep.tolist()]

    @property
    def modules(self):
        mods = self.extra.get("modules")
        if mods is None:
            if not hasattr(self, "host"):
                self._build()
            mods = self.extra["modules"] = _modules(self.parent)
        return mods

    def compiled(self, angles: Dict[int, float]) -> "CompiledTree":
        if not angles:
            if self._tree is None:
                self._build()
                self._tree = CompiledTree(self, angles)
            return self._tree
        key = tuple(angles.items())
        tree = self._recent.get(key)
        if tree is None:
            if not hasattr(self, "host"):
                self._build()
            if len(self._recent) >= 8:
                self._recent.clear()
            tree = self._recent[key] = CompiledTree(self, angles)
        return tree


class CompiledTree(TreeArrays):
    """The tree with a morphology applied: removed bodies dropped, locked bodies merged.

    Removal is an index selection over the healthy arrays (:class:`Skeleton`); a locked
    body's inertia is added to its host's through the joint placement at the lock angle, and
    only the kept children and tips of locked bodies get new placements."""

    def __init__(self, sk: Skeleton, angles: Dict[int, float]):
        data = sk.data
        self.data = data
        self.skeleton = sk
        self.exist, self.locked = sk.exist, angles
        keep = sk.keep
        self.hid = keep
        self.n, self.parent, self.kind, self.axis, self.S = sk.n, sk.parent, sk.kind, sk.axis, sk.S
        self.anc, self.depth, self.group, self.ngroups = sk.anc, sk.depth, sk.group, sk.ngroups
        self.q_index, self.v_index = sk.q_index, sk.v_index
        R0, p0, I6 = sk.R0, sk.p0, sk.I6
        if angles:
            R0, p0, I6 = R0.copy(), p0.copy(), I6.copy()
            hostR, hostp = {}, {}
            host, par_of = sk.host, data.parent
            for b in sk.locked_bodies:                  # just the locked chains
                Rl, pl = _joint_motion(data, b, angles[b])
                par = int(par_of[b])
                if par in hostR:
                    Rl, pl = hostR[par] @ Rl, hostp[par] + hostR[par] @ pl
                hostR[b], hostp[b] = Rl, pl
                h = host[b]
                I6[h] = I6[h] + transform_inertia(data.I6[b], Rl, pl)
            for c, b in sk.child_fix:
                R0[c] = hostR[b] @ R0[c]
                p0[c] = hostp[b] + hostR[b] @ p0[c]
            self.tips = [TipFrame(t.name, h, hostR[lb] @ t.R, hostp[lb] + hostR[lb] @ t.p) if lb else tip
                         for (t, h, lb), tip in zip(sk.tip_info, sk.static_tips)]
        else:
            self.tips = sk.static_tips
        self.R0, self.p0, self.I6 = R0, p0, I6
        self.mass = I6[:, 0, 0].copy()

    @property
    def names(self) -> List[str]:
        return self.skeleton.names

    @property
    def modules(self):
        return self.skeleton.modules

    @property
    def nq(self) -> int:
        return 7 + self.n

    @property
    def nv(self) -> int:
        return 6 + self.n

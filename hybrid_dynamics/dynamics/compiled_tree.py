"""A :class:`~hybrid_dynamics.model.morphology.Morphology` applied to a robot's tree.

:meth:`TreeData.compile` applies it to the healthy arrays (dynamics/tree.py): removed links
(existence number x_ij = 0) and everything outboard of them are dropped, and a locked joint's
body is merged into its parent: its inertia is added to the parent's (moved through the joint
placement evaluated at the lock angle) and its children and frames hang off the parent
through the same fixed transform. The result, :class:`CompiledTree`, is a smaller tree with
the same arrays; its coordinates are the morphology's reduced q and v (``q_index``,
``v_index`` index the healthy vectors, as in
:class:`~hybrid_dynamics.model.morphology.MorphologyMap`).

Cost of a change: a morphology acts on each base-attached subtree separately, so TreeData
precomputes, per subtree, its structure (:class:`_Piece`: kept bodies, parents, Direct form
columns, [Shah 2012] modules, tips) under every existence state of its legs and under one lock,
and uses the healthy tree's angle-free lock bases. A new morphology concatenates one piece per
subtree (:class:`Skeleton`), gathers the packed healthy arrays once, and merges each lock with
one product; structures already seen are looked up.
"""
from __future__ import annotations

import itertools
import math
from typing import Dict, List, Tuple

import numpy as np

from ..errors import InputError
from .tree import HealthyTree, TipFrame, TreeArrays, transform_inertia

_CACHE = 4096                                         # structures kept per robot
_TREES = 64                                           # compiled trees (skeleton, lock angles) kept per robot
_ENUMERATE = 256                                      # leg states per group precomputed at load
_R6 = np.arange(6)
_R7 = np.arange(7)
_BASE_QVK = np.array([np.arange(7), np.arange(-1, 6), [-1] * 6 + [0]])
_ONE = np.ones(1)
_SEQ = np.arange(1 << 14)
_SEQ.setflags(write=False)


class TreeData(HealthyTree):
    """The healthy tree and the per-subtree structures that make applying a morphology cheap
    (see the module docstring)."""

    def __init__(self, robot):
        super().__init__(robot)
        self._skeletons = {}
        self._trees = {}
        self._group_pieces()

    def _group_pieces(self) -> None:
        """Per base-attached subtree (bodies contiguous in depth-first order) the structure of
        every combination of its legs' existence numbers, computed here once: a morphology
        is then assembled by concatenating one piece per group (locks add pieces on demand)."""
        n = self.n
        groups = [np.flatnonzero(self.group == g).tolist() for g in range(self.ngroups)]
        self.group_bodies = groups
        if [b for g in groups for b in g] != list(range(1, n + 1)):
            raise InputError("the modular engines need the bodies in depth-first order")
        gl = [[] for _ in groups]
        for name, bodies in self.leg_bodies.items():
            if bodies:
                gl[int(self.group[bodies[0]])].append(name)
        self.group_legs = gl
        self._jointless = [name for name, bodies in self.leg_bodies.items() if not bodies]
        self.leg_cut_sets = {name: [set(c.tolist()) for c in cuts] for name, cuts in self.leg_cut.items()}
        tip_of = [[] for _ in groups]
        for i, t in enumerate(self.tips):
            if t.body > 0:
                tip_of[int(self.group[t.body])].append((i, t))
        self.group_tips = tip_of
        self._tips_sorted = all(int(self.group[a.body]) <= int(self.group[b.body])
                                for a, b in zip(self.tips, self.tips[1:]))
        self._pieces = []
        for g in range(len(groups)):
            sizes = [len(self.leg_bodies[name]) + 1 for name in gl[g]]
            table = {}
            if math.prod(sizes) <= _ENUMERATE:
                for ks in itertools.product(*[range(s) for s in sizes]):
                    table[ks] = _Piece(self, g, ks, ())
            self._pieces.append(table)
        # one lock in a group, under every precomputed removal state of it
        self._single_locks = [{} for _ in groups]
        for g, table in enumerate(self._pieces):
            if len(table) * len(groups[g]) > _ENUMERATE:
                continue
            for ks, pc in table.items():
                for b in pc.keep.tolist():
                    self._single_locks[g][(ks, (b,))] = _Piece(self, g, ks, (b,))
        self._lock_pieces = {}
        # the common case, one leg per group: a piece per (leg, links kept)
        self.group_list = self.group.tolist()
        self._leg_sizes = tuple((leg.name, len(leg.joints)) for leg in self.robot.legs)
        self._slots = None
        if not self._jointless and all(len(legs) <= 1 for legs in gl):
            slot = {legs[0]: g for g, legs in enumerate(gl) if legs}
            self._slots = [(slot[name], {ks[0]: pc for ks, pc in self._pieces[slot[name]].items()})
                           for name, _ in self._leg_sizes]
            self._fixed = [self._pieces[g][()] if not legs else None for g, legs in enumerate(gl)]

    def piece(self, g: int, ks: tuple, locked: tuple) -> "_Piece":
        if not locked:
            pc = self._pieces[g].get(ks)
            if pc is None:
                pc = self._pieces[g][ks] = _Piece(self, g, ks, ())
            return pc
        pc = self._single_locks[g].get((ks, locked))
        if pc is not None:
            return pc
        key = (g, ks, locked)
        pc = self._lock_pieces.get(key)
        if pc is None:
            if len(self._lock_pieces) >= _CACHE:
                self._lock_pieces.clear()
            pc = self._lock_pieces[key] = _Piece(self, g, ks, locked)
        return pc

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
        one is validated (raising before anything is cached) and assembled from the per-group
        pieces of :meth:`_group_pieces`."""
        locked = morphology.locked
        key = (morphology.links_kept, tuple(name for name, _ in locked)) if locked else morphology.links_kept
        sk = self._skeletons.get(key)
        if sk is None:
            pieces, angles, seq = self._pieces_of(morphology)
            if len(self._skeletons) >= _CACHE:
                self._skeletons.clear()
            sk = self._skeletons[key] = Skeleton(self, key, pieces, seq)
            return sk, angles
        if not locked:
            return sk, {}
        return sk, {b: float(a) for b, (_, a) in zip(sk.lock_seq, locked)}

    def _pieces_of(self, morphology):
        """Validated per-group pieces, {locked body: angle} and the body of each lock."""
        pieces = None
        if self._slots is not None and morphology.leg_sizes == self._leg_sizes:
            pieces = self._fixed.copy()                     # one leg per group: look-ups by k
            some = False
            for (g, table), (_, k) in zip(self._slots, morphology.links_kept):
                pc = table.get(k)
                if pc is None:
                    pieces = None
                    break
                pieces[g] = pc
                some = some or k > 0
            if not some:
                pieces = None
        if pieces is None:
            pieces = self._pieces_general(morphology)
        angles, seq = {}, ()
        locked = morphology.locked
        if len(locked) == 1:
            name, angle = locked[0]
            b = self.body_of.get(name, 0)
            if b == 0:
                self.masks(morphology)                      # raises the precise error
            g = self.group_list[b]
            try:
                pieces[g] = self.piece(g, pieces[g].ks, (b,))
            except _BadPiece:
                self.masks(morphology)
                raise
            return pieces, {b: float(angle)}, (b,)
        if locked:
            by_group = {}
            body_of, group = self.body_of, self.group_list
            for name, angle in morphology.locked:
                b = body_of.get(name, 0)
                if b == 0:
                    self.masks(morphology)                  # raises the precise error
                angles[b] = float(angle)
                by_group.setdefault(group[b], []).append(b)
            seq = tuple(angles)
            try:
                for g, bodies in by_group.items():
                    pieces[g] = self.piece(g, pieces[g].ks, tuple(sorted(bodies)))
            except _BadPiece:
                self.masks(morphology)
                raise
        return pieces, angles, seq

    def _pieces_general(self, morphology):
        kept = dict(morphology.links_kept)
        if len(kept) != len(self.leg_cut) or not any(k > 0 for k in kept.values()) and self.leg_cut:
            self.masks(morphology)                          # raises the precise error
            kept = {**{name: len(c) for name, c in self.leg_cut.items()}, **kept}   # unnamed legs: healthy
        pieces = []
        table = self._pieces
        try:
            for g, legs in enumerate(self.group_legs):
                ks = tuple([kept[name] for name in legs])
                pc = table[g].get(ks)
                pieces.append(pc if pc is not None else self.piece(g, ks, ()))
        except (KeyError, _BadPiece):
            self.masks(morphology)                          # raises the precise error
            raise
        for name in self._jointless:                        # legs without joints keep 0 links
            if kept.get(name, 0) != 0:
                self.masks(morphology)
        return pieces

    def clear_structures(self) -> None:
        """Forget every structure computed so far (a benchmark of first-time changes); the
        per-group pieces of removals computed at load stay."""
        self._skeletons = {}
        self._trees = {}
        self._lock_pieces = {}

    def compile(self, morphology) -> "CompiledTree":
        sk, angles = self.skeleton(morphology)
        return sk.compiled(angles)

    def coordinates(self, morphology) -> "Coordinates":
        sk, angles = self.skeleton(morphology)
        return sk.coordinates(angles)


def _seq(n: int) -> np.ndarray:
    """0..n-1 (a read-only view)."""
    return _SEQ[:n] if n <= len(_SEQ) else np.arange(n)


class _BadPiece(Exception):
    pass


class _Piece:
    """One base-attached subtree under one combination of its legs' existence numbers and
    locks, in local numbering (0.. over its kept bodies, -1 the base): kept bodies, parents,
    depths, the Direct form's leg columns and module starts, Shah et al.'s (2012) modules, tips,
    locked bodies with their hosts, and kept children of locked bodies."""
    __slots__ = ("ks", "m", "keep", "exist", "qvk", "I6e", "par", "depth", "cols", "dmods", "modules", "locked",
                 "tips")

    def __init__(self, d: TreeData, g: int, ks: tuple, locked: tuple):
        bodies = d.group_bodies[g]
        self.ks = ks
        removed = set()
        for name, k in zip(d.group_legs[g], ks):
            cuts = d.leg_cut_sets[name]
            if not 0 <= k <= len(cuts):
                raise _BadPiece(name)
            if k < len(cuts):
                removed |= cuts[k]
        lockset = set(locked)
        if lockset & removed:
            raise _BadPiece("locked a removed link")
        plist = d.parent_list
        host = {0: -1}
        keep, par, depth, cols, starts = [], [], [], [], []
        first = 0
        for b in bodies:
            if b in removed:
                continue
            p = plist[b]
            h = host[p]
            if b in lockset:
                host[b] = h
                continue
            i = len(keep)
            host[b] = i
            keep.append(b)
            par.append(h)
            if h < 0:
                depth.append(1)
                first = i
                starts.append(i)
                cols.append([0])
            else:
                depth.append(depth[h] + 1)
                cols.append(cols[h] + [i - first])
        m = len(keep)
        self.m = m
        self.keep = np.array(keep, dtype=int)
        self.qvk = np.array([self.keep + 6, self.keep + 5, self.keep]).reshape(3, -1)   # q, v positions, body
        a = bodies[0]
        ex = np.ones(len(bodies))
        if removed:
            ex[[b - a for b in removed]] = 0.0
        self.exist = ex
        self.I6e = d.I6[a:a + len(bodies)] * ex[:, None, None]      # x_ij I_l (the fast form)
        self.tips = [(i, t, host[t.body], t.body if t.body in lockset else 0)
                     for i, t in d.group_tips[g] if t.body not in removed]     # a stump has no contact
        self.par, self.depth, self.cols = par, depth, cols
        self.dmods = [(a, e) for a, e in zip(starts, starts[1:] + [m])]   # Direct modules [start, end)
        self.locked = tuple(sorted(locked))
        # Shah et al.'s (2012) modules: a body continues its parent's chain when it is its only child
        nch = [0] * m
        for h in par:
            if h >= 0:
                nch[h] += 1
        mods, module_of = [], [0] * m
        for i, h in enumerate(par):
            if h >= 0 and nch[h] == 1:
                mi = module_of[h]
                mods[mi][1].append(i)
            else:
                mi = len(mods)
                mods.append((module_of[h] if h >= 0 else -1, [i]))
            module_of[i] = mi
        self.modules = [(mp, b[0], b[-1] + 1) for mp, b in mods]    # chains are contiguous


class Coordinates:
    """Reduced coordinates of one morphology, as index arrays into the healthy q and v.

    Those of a skeleton carry its key, its cache of index maps and what their joint mask is
    made of (no reference back to the skeleton: structures are freed without the cycle
    collector)."""
    __slots__ = ("q_index", "v_index", "q_fill", "locked", "_jmask", "qrank", "vrank", "key", "cache", "src")

    def __init__(self, data: "TreeData", q_index, v_index, locked, jmask=None, skeleton=None):
        self.q_index = q_index
        self.v_index = v_index
        self.locked = locked
        fill = data.q_stand
        if locked:
            fill = fill.copy()
            for b, angle in locked.items():
                fill[6 + b] = angle
        self.q_fill = fill
        if skeleton is None:
            self.key = self.cache = self.src = None
            if jmask is None:
                jmask = np.zeros(data.n, dtype=bool)
                jmask[v_index[6:] - 6] = True
        else:
            self.key, self.cache, self.src = skeleton.key, skeleton.maps, (skeleton.pieces, skeleton.locked_bodies)
        self._jmask = jmask
        self.vrank = self.qrank = None                    # positions in v / q, on first use

    @property
    def jmask(self) -> np.ndarray:
        """The healthy joints present (existing and not locked)."""
        if self._jmask is None:
            pieces, locked = self.src
            jmask = np.concatenate([p.exist for p in pieces]) > 0
            if locked:
                jmask[[b - 1 for b in locked]] = False
            self._jmask = jmask
        return self._jmask

    def ranks(self):
        if self.vrank is None:
            rank = self.jmask.cumsum()
            self.vrank = rank + 5                         # position in v of each present joint
            self.qrank = rank + 6
        return self.vrank

    def with_locks(self, data: "TreeData", locked: Dict[int, float]) -> "Coordinates":
        """The same coordinates with the lock angles ``locked`` in the fill."""
        out = Coordinates.__new__(Coordinates)
        (out.q_index, out.v_index, out._jmask, out.qrank, out.vrank, out.key, out.cache, out.src) = (
            self.q_index, self.v_index, self._jmask, self.qrank, self.vrank, self.key, self.cache, self.src)
        fill = data.q_stand.copy()
        for b, angle in locked.items():
            fill[6 + b] = angle
        out.q_fill, out.locked = fill, locked
        return out

    def maps(self, old: "Coordinates"):
        """((old q positions, new q positions), (old v, new v)) of the coordinates both keep
        (read-only arrays, cached per pair of structures)."""
        cache = self.cache
        if cache is not None and old.key is not None:
            out = cache.get(old.key)
            if out is None:
                out = _maps(old, self)
                for pair in out:
                    for a in pair:
                        if a.flags.writeable:
                            a.setflags(write=False)
                cache[old.key] = out
            return out
        return _maps(old, self)


def _maps(old: Coordinates, new: Coordinates):
    nqo, nqn = len(old.q_index), len(new.q_index)
    if nqo == len(old.q_fill):                          # from the healthy robot: every new coordinate
        return (new.q_index, _seq(nqn)), (new.v_index, _seq(nqn - 1))
    if nqn == len(new.q_fill):                          # back to it: every old coordinate
        return (_seq(nqo), old.q_index), (_seq(nqo - 1), old.v_index)
    both = (old.jmask & new.jmask).nonzero()[0]
    vo, vn = old.ranks()[both], new.ranks()[both]
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
    each locked body needs. Everything is the concatenation of one precomputed piece per
    base-attached subtree. Engines keep their own derived structure in ``extra``."""

    _exist = _anc = None
    _built = False

    def __init__(self, data: TreeData, key, pieces: List[_Piece], lock_seq: Tuple[int, ...] = ()):
        self.data = data
        self.key = key
        self.pieces = pieces
        self.lock_seq = lock_seq                         # body of each entry of Morphology.locked
        live = [p for p in pieces if p.m]
        self.live = live
        # rows [q_index; -, v_index; -, keep] from one concatenation of the pieces' columns
        A = np.concatenate([_BASE_QVK] + [p.qvk for p in live], 1)
        A.setflags(write=False)
        self.q_index, self.v_index, self.keep = A[0], A[1, 1:], A[2, 6:]
        self.locked_bodies = tuple(sorted(lock_seq)) if lock_seq else ()   # ascending
        self.maps = {}
        self.extra = {}
        self._coords = Coordinates(data, self.q_index, self.v_index, {}, None, self)

    def coordinates(self, angles: Dict[int, float]) -> Coordinates:
        return self._coords.with_locks(self.data, angles) if angles else self._coords

    @property
    def exist(self) -> np.ndarray:
        """x_ij of every healthy body (1 for the base), 0/1 floats."""
        if self._exist is None:
            self._exist = np.concatenate([_ONE] + [p.exist for p in self.pieces])
        return self._exist

    @property
    def jmask(self) -> np.ndarray:
        """The healthy joints present (existing and not locked)."""
        return self._coords.jmask

    @property
    def anc(self) -> np.ndarray:
        """anc[m, l] = 1 if m is l or an ancestor of l, compiled bodies (merged bodies'
        children hang off their ancestors)."""
        if self._anc is None:
            keep = self.keep
            self._anc = self.data.anc[keep[:, None], keep]
        return self._anc

    # ------------------------------------------------------------------ compiled tree
    def _build(self) -> None:
        """The angle-free part of the compiled tree shared by the engines: the compiled body
        carrying each healthy body, parents through it, one gather of the packed healthy
        arrays over the kept bodies, and the tips (TipFrames precomputed per host)."""
        d = self.data
        keep = self.keep
        m1 = len(keep)
        self.n = m1 - 1
        pos = d.minus_one.copy()                        # compiled body carrying each healthy body
        pos[keep] = _SEQ[:m1]
        lb = self.locked_bodies
        if lb:
            plist = d.parent_list
            for b in lb:                                # ascending: parents first
                pos[b] = pos[plist[b]]
        self.pos = pos                                  # (its last entry: -1 for the base's parent)
        self.parent = pos[d.parent_ext[keep]]
        self.F = F = d.packed[keep]
        self.R0 = F[:, :9].reshape(m1, 3, 3)
        self.p0 = F[:, 9:12]
        self.I6 = F[:, 12:48].reshape(m1, 6, 6)
        self.axis = F[:, 48:51]
        self.S = F[:, 51:57]
        self.kind = d.kind[keep]
        posl = pos.tolist()
        self.static_tips = [frames[posl[b]] for frames, b in d.tip_frames if posl[b] >= 0]   # a stump has no contact
        if lb:
            lockset = set(lb)
            self.simple_locks = len(lb) == 1 or not any(plist[b] in lockset for b in lb)
            tips_on = d.tips_on
            slots = None
            if (tips_on[lb[0]] if len(lb) == 1 else any(tips_on[b] for b in lb)):
                slot, slots = 0, {}
                for i, (_, b) in enumerate(d.tip_frames):
                    if posl[b] >= 0:
                        slots[i] = slot
                        slot += 1
            if self.simple_locks:                       # (body, host, kept children, tips) per lock
                lk, lt = d.lock_kids, d.lock_tips
                self.lock_plan = [(b, posl[b], [(o, posl[c]) for o, c in lk[b] if posl[c] >= 0],
                                   [(o, slots[i], posl[b]) for o, i in lt[b]]) for b in lb]
            else:                                       # chains of locks: kept children and tips to move
                self.lock_host = {b: posl[b] for b in lb}
                self.child_fix = [(posl[c], b) for b in lb for c in d.children_list[b]
                                  if c not in lockset and posl[c] >= 0]
                self.tip_info = [(t, posl[t.body], t.body if t.body in lockset else 0)
                                 for t in d.tips if posl[t.body] >= 0]
        else:
            self.simple_locks = True
        self._built = True

    def take_rows(self):
        """(packed rows, R0, p0, I6) of the kept bodies for a compiled tree to modify: the
        rows gathered by :meth:`_build` the first time, a new gather afterwards."""
        if self.F is not None:
            out = self.F, self.R0, self.p0, self.I6
            self.F = None
            return out
        F = self.data.packed[self.keep]
        m1 = len(F)
        return F, F[:, :9].reshape(m1, 3, 3), F[:, 9:12], F[:, 12:48].reshape(m1, 6, 6)

    @property
    def offsets(self) -> List[int]:
        out = self.extra.get("offsets")
        if out is None:
            out, off = [], 1
            for p in self.live:
                out.append(off)
                off += p.m
            self.extra["offsets"] = out
        return out

    @property
    def direct(self):
        """The Direct form's leg modules (each the array of its bodies) and every link's local
        columns (itself and its ancestors in its module)."""
        out = self.extra.get("direct")
        if out is None:
            if not self._built:
                self._build()
            groups, cols, off = [], [None], 1
            for p in self.live:
                groups += [_SEQ[a + off:e + off] for a, e in p.dmods]
                cols += p.cols
                off += p.m
            out = self.extra["direct"] = (groups, cols)
        return out

    @property
    def depth_list(self) -> List[int]:
        return [0] + [x for p in self.live for x in p.depth]

    @property
    def host(self) -> np.ndarray:
        """Compiled body carrying each healthy body (0 for removed ones)."""
        if not self._built:
            self._build()
        return np.maximum(self.pos[:-1], 0)

    @property
    def group(self) -> np.ndarray:
        return np.array([-1] + [g for g, p in enumerate(self.live) for _ in range(p.m)])

    @property
    def ngroups(self) -> int:
        return len(self.live)

    @property
    def names(self) -> List[str]:
        names = self.data.names
        return [names[b] for b in self.keep.tolist()]

    @property
    def modules(self):
        """Shah et al.'s (2012) modules, (parent module, bodies) from the pieces' chains."""
        mods = self.extra.get("modules")
        if mods is None:
            if not self._built:
                self._build()
            mods = [(-1, (0,))]
            for p, off in zip(self.live, self.offsets):
                mo = len(mods)
                mods += [(mp + mo if mp >= 0 else 0, tuple(range(a + off, e + off))) for mp, a, e in p.modules]
            self.extra["modules"] = mods
        return mods

    def compiled(self, angles: Dict[int, float]) -> "CompiledTree":
        """The compiled tree at these lock angles (kept by the robot's TreeData, per skeleton
        and angles: a tree refers to its skeleton, never the other way)."""
        trees = self.data._trees
        key = (self.key, tuple(angles.items())) if angles else self.key
        tree = trees.get(key)
        if tree is None:
            if not self._built:
                self._build()
            if len(trees) >= _TREES:
                trees.clear()
            tree = trees[key] = CompiledTree(self, angles)
        return tree


class CompiledTree(TreeArrays):
    """The tree with a morphology applied: removed bodies dropped, locked bodies merged.

    Removal is an index selection over the healthy arrays (:class:`Skeleton`); a locked
    body's inertia is added to its host's through the joint placement at the lock angle
    (one product with the angle-free basis of :meth:`TreeData._lock_bases`), and only the
    kept children and tips of locked bodies get new placements."""

    def __init__(self, sk: Skeleton, angles: Dict[int, float]):
        data = sk.data
        self.data = data
        self.skeleton = sk
        self.locked = angles
        self.hid = sk.keep
        self.n, self.parent, self.kind, self.axis, self.S = sk.n, sk.parent, sk.kind, sk.axis, sk.S
        self.q_index, self.v_index = sk.q_index, sk.v_index
        R0, p0, I6 = sk.R0, sk.p0, sk.I6
        if angles and sk.simple_locks:
            # one product per lock gives the host's added inertia and the kept children's and
            # tips' placements, written straight into the packed rows (the skeleton's own
            # gather the first time: a skeleton with locks never serves its rows unmerged)
            F, R0, p0, I6 = sk.take_rows()
            tips = sk.static_tips
            lock_all, kind = data.lock_all, data.kind_list
            for b, h, kids, tip_slots in sk.lock_plan:
                a = angles[b]
                if kind[b] == 0:
                    c1, c2 = math.sin(a), 1.0 - math.cos(a)
                else:
                    c1, c2 = a, 0.0
                x = np.array((1.0, c1, c2, c1 * c1, c1 * c2, c2 * c2)) @ lock_all[b]
                F[h, 12:48] += x[:36]
                for o, c in kids:
                    F[c, :12] = x[o:o + 12]
                if tip_slots:
                    tips = list(tips)
                    for o, slot, th in tip_slots:
                        tips[slot] = TipFrame(tips[slot].name, th, x[o:o + 9].reshape(3, 3), x[o + 9:o + 12])
            self.tips = tips
        elif angles:                                    # a chain of locked joints
            R0, p0, I6 = R0.copy(), p0.copy(), I6.copy()
            hostR, hostp = {}, {}
            host, par_of = sk.lock_host, data.parent
            for b in sk.locked_bodies:                  # ascending: parents first
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
        self.mass = I6[:, 0, 0]

    @property
    def anc(self) -> np.ndarray:
        return self.skeleton.anc

    @property
    def exist(self) -> np.ndarray:
        return self.skeleton.exist

    @property
    def depth(self) -> np.ndarray:
        return np.array(self.skeleton.depth_list)

    @property
    def group(self) -> np.ndarray:
        return self.skeleton.group

    @property
    def ngroups(self) -> int:
        return self.skeleton.ngroups

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

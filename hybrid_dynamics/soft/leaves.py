"""A rigid Pinocchio tree with soft-rigid modules as leaves (soft feet, compliant shanks):
the combined M and h, and the material points where the ground touches.

Every rigid frame F that carries soft modules roots a small soft tree whose first module is a
massless free flyer placed at F: its speeds are F's LOCAL twist ``V_F = J_F v_r``, its
acceleration ``A_F = J_F a_r + A_b`` (``A_b``: F's spatial acceleration at ``a_r = 0``), so one
MID pass of that tree [Pustina 2024, Alg. 3] returns the leaves' loads on F and on their own
coordinates:

    [W_F  ]   [M_FF  M_Fs] [A_F]   [h_F]
    [tau_s] = [M_sF  M_ss] [a_s] + [h_s]        (h with gravity by a0 = -g, and K q + D qdot)

``W_F`` is the wrench F must apply to the leaves; it enters the rigid recursion as
``J_F^T W_F`` ([Pustina 2024, Sec. 5]: a body's wrench passed to its parent), which gives, in
q = (q_r, q_s), v = (v_r, v_s),

    M = [M_r + J^T M_FF J    J^T M_Fs]      h = [h_r + J^T (M_FF A_b + h_F)]
        [M_sF J              M_ss    ]          [M_sF A_b + h_s            ]

with every root stacked (J = [J_F1; J_F2; ...], block-diagonal M_FF). Roots whose modules are
declared alike (same joint and body fields) share one compiled tree, evaluated for all of them
in one mapped CasADi call; one Pinocchio pass serves them all.

A damaged morphology (:meth:`SoftLeaves.for_morphology`) drops the modules hung from frames of
removed links with them: the surviving roots are reassembled from the trees already built (the
same compiled functions mapped over fewer roots: nothing is derived or compiled again), on the
morphology's rigid model (removed bodies without inertia), in the healthy rigid coordinates;
the controller slices them to its own (control/soft_model_update.py).
"""
from __future__ import annotations

import copy
import json
from typing import Dict, List, Optional, Tuple

import casadi as ca
import numpy as np
import pinocchio as pin

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.soft.bodies import RigidBody
from hybrid_dynamics.soft.joints import FreeFlyerJoint
from hybrid_dynamics.soft.compiled import compiled
from hybrid_dynamics.soft.kinematics import symbolic_points
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.spec import build_module
from hybrid_dynamics.soft.symbolic import segment, skew
from hybrid_dynamics.soft.tree import SoftTree

LOCAL = pin.ReferenceFrame.LOCAL


class _LeafTree:
    """One compiled soft tree (massless free-flyer root + a chain or tree of modules): MID (M, h
    with gravity and visco-elasticity) and the contact material point, mapped over any number of
    roots (:meth:`mapped`)."""

    def __init__(self, tree: SoftTree, contact: Optional[Tuple[int, np.ndarray]]):
        self.tree = tree
        _, mid, elastic = tree.symbolic()
        q, v = ca.MX.sym("q", tree.nq), ca.MX.sym("v", tree.nv)
        M, h = mid(q, v, ca.DM(-tree.gravity))                   # a0 = -g [Pustina 2024, Sec. 6.1]
        self._mid = ca.Function("leaf_mid", [q, v], [M, h + elastic(q, v)]).expand()
        # tangents of the visco-elastic force of the leaves' own coordinates, in speed
        # coordinates (dS/dq G(q), G = dqdot/dv): what a prediction of that force needs
        s = elastic(q, v)[6:]
        G = ca.jacobian(tree.symbolic_qdot(q, v), v)
        self._spring = ca.Function("leaf_spring", [q, v], [(ca.jacobian(s, q) @ G)[:, 6:],
                                                           ca.jacobian(s, v)[:, 6:]]).expand()
        self.contact = contact
        self._point = None if contact is None else self._point_function(tree, tree.modules[contact[0]].name, contact[1])
        self.ns = tree.nv - 6
        self.compiled = False
        self._maps: Dict[int, Tuple[ca.Function, Optional[ca.Function], ca.Function]] = {}
        self.shape, self.shape_counts = self._shape_function(tree)

    @staticmethod
    def _point_function(tree: SoftTree, name: str, x: np.ndarray) -> ca.Function:
        """(q_g, v_g, R, V_F, A_b) -> the material point x of module ``name``, hung from the
        root frame F directly or through a chain of other soft modules: its offset R r from F
        in world axes (r: the distal frames of the chain above the module composed from F,
        [Pustina 2024, Eq. (9)], then the module's joint and body map, Eq. (2)), the 3 x 6 map
        X of F's LOCAL twist to its velocity, R J_r (the columns of every soft coordinate of
        the root: q_g and v_g, the tree's q and v after F's) and ``Jdot v`` (contact_points'
        docstring)."""
        qg, vg = ca.SX.sym("q", tree.nq - 7), ca.SX.sym("v", tree.nv - 6)
        R, V, A = ca.SX.sym("R", 3, 3), ca.SX.sym("V", 6), ca.SX.sym("A", 6)

        def own(j):                                  # module j's coordinates within q_g
            return segment(qg, tree.qslice[j].start - 7, tree.qslice[j].stop - 7)

        i = tree.module_index(name)
        chain, j = [], tree.parent[i]
        while j > 0:                                 # the modules between F (module 0) and i
            chain.append(j)
            j = tree.parent[j]
        Rp, tp = ca.SX.eye(3), ca.SX.zeros(3)
        for j in reversed(chain):
            Rj, tj = tree.transforms[j](own(j))
            Rp, tp = Rp @ Rj, tp + Rp @ tj
        module = tree.modules[i]
        RJ, tJ = module.joint.transform(segment(own(i), 0, module.joint.nq))
        local = module.body.map_points(np.array([x]), segment(own(i), module.joint.nq, module.nq))[0]
        r = tp + Rp @ (tJ + RJ @ local)
        qd = tree.symbolic_qdot(ca.vertcat(ca.SX.zeros(7), qg), ca.vertcat(ca.SX.zeros(6), vg))[7:]
        Jr = ca.jacobian(ca.jtimes(r, qg, qd), vg)
        rd, w = Jr @ vg, V[3:]
        bias = R @ (A[:3] + ca.cross(w, V[:3]) + ca.cross(A[3:], r) + ca.cross(w, ca.cross(w, r))
                    + 2 * ca.cross(w, rd) + ca.jtimes(rd, qg, qd))
        return ca.Function("leaf_point", [qg, vg, R, V, A],
                           [R @ r, R @ ca.horzcat(ca.SX.eye(3), -skew(r)), R @ Jr, bias])

    @staticmethod
    def _shape_function(tree: SoftTree) -> Tuple[ca.Function, List[int]]:
        """(q of the modules: the tree's q after its root's pose -> every module's centreline
        (rods: 7 points, x3 = 0..L) or its reference point, 3 x k in the root frame F, through
        the tree's own poses (a module hung from another soft module follows its deformation):
        what rviz draws; the number of points of each module, in tree order)."""
        qs = ca.MX.sym("q", tree.nq - 7)
        q = ca.vertcat(ca.DM([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]), qs)     # F itself: the identity pose
        points, counts = [], []
        for m in tree.modules[1:]:
            length = getattr(m.body, "length", 0.0)
            xs = [(m.name, [0.0, 0.0, s]) for s in np.linspace(0.0, length, 7 if length else 1)]
            points += symbolic_points(tree, xs, q)
            counts.append(len(xs))
        return ca.Function("leaf_shapes", [qs], [ca.horzcat(*points)]).expand(), counts

    def compile(self, machine_code: bool = False) -> None:
        """The functions of one root as machine code if asked and a C compiler works
        (soft/compiled.py); mapping them over roots (:meth:`mapped`) compiles nothing more."""
        if machine_code:
            self._mid, ok = compiled(self._mid)
            if self._point is not None:
                self._point, ok_p = compiled(self._point)
                ok = ok and ok_p
            self.compiled = ok

    def mapped(self, k: int) -> Tuple[ca.Function, Optional[ca.Function], ca.Function]:
        """(MID, contact point, spring tangents) mapped over ``k`` roots (kept per k: a
        morphology seen before costs nothing)."""
        fns = self._maps.get(k)
        if fns is None:
            fns = self._maps[k] = (self._mid.map(k), self._point.map(k) if self._point is not None else None,
                                   self._spring.map(k))
        return fns


def _group_key(specs) -> str:
    """Modules of a root, without names: alike roots share one compiled tree."""
    names = {s.name: i for i, s in enumerate(specs)}
    return json.dumps([[names.get(s.parent), s.joint, s.block.get("body"), s.block.get("contact")]
                       for s in specs], sort_keys=True, default=str)


class SoftLeaves:
    """The soft modules of ``robot.soft_modules`` hung from the rigid model (``model``: the
    robot's by default). Coordinates: ``q = (q_r, q_s)``, ``v = (v_r, v_s)``; the soft
    coordinates are grouped by root frame (roots in order of first declaration), each group in
    manifest order."""

    def __init__(self, robot, model: pin.Model = None, machine_code: bool = False):
        specs = robot.soft_modules
        if not specs:
            raise InputError(f"robot '{robot.name}' declares no soft_modules", field="soft_modules")
        self.robot = robot
        self._built: Dict[str, _LeafTree] = {}
        for root in dict.fromkeys(s.root for s in specs):
            group = [s for s in specs if s.root == root]
            key = _group_key(group)
            if key not in self._built:
                self._built[key] = self._build(robot, group)
        for t in self._built.values():
            t.compile(machine_code)
        self.compiled = all(t.compiled for t in self._built.values())
        self._assemble(robot.model if model is None else model, specs)
        self.kept = np.arange(self.ns)

    def _assemble(self, model: pin.Model, specs) -> None:
        """Roots, coordinate slices and mapped calls of the modules ``specs`` on ``model``."""
        self.model = model
        self.data = self.model.createData()
        self.roots: List[str] = list(dict.fromkeys(s.root for s in specs))
        self.root_ids = [self.model.getFrameId(r) for r in self.roots]
        groups = [[s for s in specs if s.root == r] for r in self.roots]
        self.leaf_tree: List[_LeafTree] = [self._built[_group_key(g)] for g in groups]
        self.trees = list(dict.fromkeys(self.leaf_tree))
        self.tree_roots = [[g for g, t in enumerate(self.leaf_tree) if t is tree] for tree in self.trees]
        self.calls = [tree.mapped(len(roots)) for tree, roots in zip(self.trees, self.tree_roots)]
        self.nq_r, self.nv_r = self.model.nq, self.model.nv
        self.ns = sum(t.ns for t in self.leaf_tree)
        self.nq, self.nv = self.nq_r + self.ns, self.nv_r + self.ns
        self.slices: Dict[str, slice] = {}          # each module's coordinates within q_s
        self.group_slices: List[slice] = []
        k = 0
        for group, t in zip(groups, self.leaf_tree):
            self.group_slices.append(slice(k, k + t.ns))
            for i, s in enumerate(group, start=1):
                sl = t.tree.vslice[i]
                self.slices[s.name] = slice(k + sl.start - 6, k + sl.stop - 6)
            k += t.ns
        self.names = list(self.slices)
        self.module_names = [[s.name for s in group] for group in groups]
        self.contact_modules = [s for group in groups for s in group if s.has_contact]
        self.contact_roots = [s.root for s in self.contact_modules]
        self._mass = sum(float(m.body.weights.sum()) for t in self.leaf_tree for m in t.tree.modules)
        G = len(self.roots)
        self.J = np.zeros((6 * G, self.nv_r))
        self.A_b = np.zeros(6 * G)
        self.V = np.zeros(6 * G)

    def for_morphology(self, mmap) -> "SoftLeaves":
        """The leaves of a :class:`~hybrid_dynamics.model.morphology.MorphologyMap`: every module
        hung from a frame of a removed link leaves with it; the others keep their trees, on
        ``mmap.model`` (healthy-size rigid coordinates, removed bodies without inertia).
        ``kept``: the surviving soft coordinates' positions in the healthy ``q_s``."""
        gone = set(mmap.removed_joints)
        model = mmap.model
        alive = {r for r in self.roots if model.frames[model.getFrameId(r)].parentJoint not in gone}
        healthy = {r: self.group_slices[g] for g, r in enumerate(self.roots)}
        view = copy.copy(self)
        view._assemble(model, [s for s in self.robot.soft_modules if s.root in alive])
        view.kept = np.concatenate([self.kept[healthy[r]] for r in view.roots]).astype(int) \
            if view.roots else np.zeros(0, int)
        return view

    @staticmethod
    def _build(robot, group) -> _LeafTree:
        """The soft tree of one root's modules (a chain or tree of any depth, the contact on
        any of them); a module with a relaxed distal face must be the last of its chain (its
        face is not a frame a child can hang from, [Pustina 2024, Assumption 2])."""
        modules = [Module("root", FreeFlyerJoint(), RigidBody(0.0))]
        local = {s.name: f"m{i}" for i, s in enumerate(group)}
        for s in group:
            module = build_module(robot.soft_doc, s.where, s.block, local.get(s.parent, "root"), s.joint)
            module.name = local[s.name]
            modules.append(module)
            carried = [c.name for c in group if c.parent == s.name]
            if module.body.relax_face and carried:
                raise robot.soft_doc.error(f"soft module '{s.name}': its distal face is relaxed (relax_face), "
                                           f"so it must be the last of its chain; '{carried[0]}' hangs from it",
                                           *s.where, "body", "relax_face")
        tree = SoftTree(modules, gravity=np.array(robot.model.gravity.linear))
        touching = [(i, s) for i, s in enumerate(group, start=1) if s.has_contact]
        return _LeafTree(tree, (touching[0][0], touching[0][1].contact) if touching else None)

    @property
    def mass(self) -> float:
        """Mass of the soft modules."""
        return self._mass

    def neutral(self, q_r: np.ndarray) -> np.ndarray:
        """``(q_r, q_s = 0)``: every soft module at rest."""
        return np.concatenate([q_r, np.zeros(self.ns)])

    # ------------------------------------------------------------------ one evaluation
    def update(self, q: np.ndarray, v: np.ndarray, rigid_terms: bool = True) -> None:
        """Rigid kinematics (``pin.computeAllTerms`` unless the caller ran it on ``self.data``)
        and every root's Jacobian, twist and bias acceleration (LOCAL) at (q, v)."""
        model, data = self.model, self.data
        q_r, v_r = q[:self.nq_r], v[:self.nv_r]
        if rigid_terms:
            pin.computeAllTerms(model, data, q_r, v_r)
        pin.updateFramePlacements(model, data)
        for g, fid in enumerate(self.root_ids):
            self.J[6 * g:6 * g + 6] = pin.getFrameJacobian(model, data, fid, LOCAL)
            self.A_b[6 * g:6 * g + 6] = pin.getFrameAcceleration(model, data, fid, LOCAL).vector
        np.dot(self.J, v_r, out=self.V)
        self._q_s, self._v_s = q[self.nq_r:], v[self.nv_r:]

    def _tree_inputs(self, t: _LeafTree, roots: List[int]):
        """(q, v) columns of tree ``t``, one per root of ``roots`` (indices into ``self.roots``)."""
        data = self.data
        Q = np.empty((t.tree.nq, len(roots)))
        V = np.empty((t.tree.nv, len(roots)))
        for c, g in enumerate(roots):
            oMf = data.oMf[self.root_ids[g]]
            Q[:3, c] = oMf.translation
            Q[3:7, c] = pin.Quaternion(oMf.rotation).coeffs()
            Q[7:, c] = self._q_s[self.group_slices[g]]
            V[:6, c] = self.V[6 * g:6 * g + 6]
            V[6:, c] = self._v_s[self.group_slices[g]]
        return Q, V

    def mass_and_nle(self, q: np.ndarray, v: np.ndarray, rigid_terms: bool = True) -> Tuple[np.ndarray, np.ndarray]:
        """(M, h) of the whole robot (module docstring); ``h = C v + g + K q_s + D v_s``."""
        self.update(q, v, rigid_terms)
        r = self.nv_r
        M = np.zeros((self.nv, self.nv))
        h = np.empty(self.nv)
        M[:r, :r] = self.data.M
        h[:r] = self.data.nle
        for t, roots, (mid, _, _) in zip(self.trees, self.tree_roots, self.calls):
            Mt, ht = mid(*self._tree_inputs(t, roots))            # [Pustina 2024, Alg. 3]
            n, k = t.tree.nv, len(roots)
            Mt = np.array(Mt).reshape(n, k, n).transpose(1, 0, 2)  # (k, n, n), one per root
            ht = np.array(ht).T                                    # (k, n)
            G6 = np.array([np.arange(6 * g, 6 * g + 6) for g in roots])
            J, A = self.J[G6], self.A_b[G6]                        # (k, 6, r), (k, 6)
            Jflat = J.reshape(6 * k, r)
            M[:r, :r] += Jflat.T @ (Mt[:, :6, :6] @ J).reshape(6 * k, r)
            W = np.einsum("kab,kb->ka", Mt[:, :6, :6], A) + ht[:, :6]   # the leaves' wrench on F
            h[:r] += Jflat.T @ W.ravel()
            coupling = np.einsum("kai,kas->kis", J, Mt[:, :6, 6:])        # J^T M_Fs
            hs = np.einsum("ksa,ka->ks", Mt[:, 6:, :6], A) + ht[:, 6:]
            for c, g in enumerate(roots):
                s = slice(r + self.group_slices[g].start, r + self.group_slices[g].stop)
                M[:r, s] = coupling[c]
                M[s, :r] = coupling[c].T
                M[s, s] = Mt[c, 6:, 6:]
                h[s] = hs[c]
        return M, h

    def spring_tangents(self) -> Tuple[np.ndarray, np.ndarray]:
        """(K, D): the tangents d s / d q_s and d s / d v_s of the visco-elastic force of the
        soft coordinates at the state of the last :meth:`update` (ns x ns, block-diagonal by
        root; constant for linear Kelvin-Voigt bodies)."""
        K, D = np.zeros((self.ns, self.ns)), np.zeros((self.ns, self.ns))
        for t, roots, (_, _, spring) in zip(self.trees, self.tree_roots, self.calls):
            Kt, Dt = (np.array(x).reshape(t.ns, len(roots), t.ns) for x in spring(*self._tree_inputs(t, roots)))
            for c, g in enumerate(roots):
                sl = self.group_slices[g]
                K[sl, sl], D[sl, sl] = Kt[:, c], Dt[:, c]
        return K, D

    def contact_points(self, q: np.ndarray, v: np.ndarray, updated: bool = False):
        """World positions (k, 3), Jacobians (3k x nv, world linear velocity of each contact
        material point) and ``Jdot v`` (3k) of the contact points, root by root. With r the
        point in its root frame F (rotation R, LOCAL twist (v_F, w), bias acceleration
        (a_b, alpha_b)), v_g the speeds of every soft module hung from F (the point's module
        and the chain above it) and r' = J_r v_g its velocity in F:

            J = R [J_F,lin - [r]x J_F,ang | J_r],
            Jdot v = R (a_b + w x v_F + alpha_b x r + w x (w x r) + 2 w x r' + Jdot_r v_g)
        """
        if not updated:
            self.update(q, v)
        r0 = self.nv_r
        rows: Dict[int, Tuple] = {}
        for t, roots, (_, point_fn, _) in zip(self.trees, self.tree_roots, self.calls):
            if point_fn is None:
                continue
            Qg = np.column_stack([self._q_s[self.group_slices[g]] for g in roots])
            Vg = np.column_stack([self._v_s[self.group_slices[g]] for g in roots])
            k = len(roots)
            G6 = np.array([np.arange(6 * g, 6 * g + 6) for g in roots])
            Rf = np.hstack([self.data.oMf[self.root_ids[g]].rotation for g in roots])
            off, X, Js, bias = (np.array(x) for x in point_fn(Qg, Vg, Rf, self.V[G6].T, self.A_b[G6].T))
            Jrig = np.einsum("kij,kjn->kin", X.reshape(3, k, 6).transpose(1, 0, 2), self.J[G6])
            Jsoft = Js.reshape(3, k, t.ns).transpose(1, 0, 2)
            pos = np.array([self.data.oMf[self.root_ids[g]].translation for g in roots]) + off.T
            bias = bias.T
            for c, g in enumerate(roots):
                J = np.zeros((3, self.nv))
                J[:, :r0] = Jrig[c]
                J[:, r0 + self.group_slices[g].start:r0 + self.group_slices[g].stop] = Jsoft[c]
                rows[g] = (pos[c], J, bias[c])
        order = [rows[g] for g in sorted(rows)]
        if not order:                              # every contact module was lost with its link
            return np.zeros((0, 3)), np.zeros((0, self.nv)), np.zeros(0)
        return (np.array([o[0] for o in order]), np.vstack([o[1] for o in order]),
                np.concatenate([o[2] for o in order]))

    def shapes(self, q: np.ndarray, data: pin.Data) -> Dict[str, np.ndarray]:
        """World points (k, 3) of each soft module (rods: the deformed centreline; a module hung
        from another soft module placed by the tree's recursion on its parent's deformation), at
        ``q = (q_r, q_s)``; ``data`` (of ``self.model``) gets the kinematics."""
        pin.framesForwardKinematics(self.model, data, q[:self.nq_r])
        q_s = q[self.nq_r:]
        out: Dict[str, np.ndarray] = {}
        for g, t in enumerate(self.leaf_tree):
            oMf = data.oMf[self.root_ids[g]]
            world = (oMf.rotation @ np.array(t.shape(q_s[self.group_slices[g]]))).T + oMf.translation
            ends = np.cumsum(t.shape_counts)
            for name, end, count in zip(self.module_names[g], ends, t.shape_counts):
                out[name] = world[end - count:end]
        return out

    def deformation(self, q: np.ndarray) -> Dict[str, np.ndarray]:
        """Each soft module's own coordinates."""
        q_s = q[self.nq_r:]
        return {n: q_s[s] for n, s in self.slices.items()}

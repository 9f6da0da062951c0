"""Loop-closure kinematics of closed linkages ([Mingo Hoffman 2024, Sec. III-A]): closure error,
its Jacobian and drift, the projection onto base + actuated coordinates, position closure and
passive-state completion. The constrained dynamics built on it live in
:mod:`hybrid_dynamics.dynamics.closed_chain`.

Notation ([Mingo Hoffman 2024, Sec. III-A]): the spanning tree has coordinates theta =
[theta_u (passive); theta_a (actuated)] (here scattered in Pinocchio's order; ``iu``/``ia``
index v). Each cut joint keeps the rows ``axes`` of the relative motion of frame_b in frame_a;
stacked they give the closure error e_l (m), its Jacobian J_l (m x nv, zero base columns) and
the drift J_l_dot v.

    J_m   = -J_lu^+ J_la                                     ([Mingo Hoffman 2024, Eq. (7)])
    G     = d theta / d theta_a,  G_f = blkdiag(I_6, G)       ([Mingo Hoffman 2024, Sec. III-A])
    v     = G_f v_m,   a = G_f a_m + drift,  drift_u = -J_lu^+ J_l_dot v

Position rows: the linear rows are R_a^T (p_b - p_a); the angular rows of a '6d' cut are
log3(R_a^T R_b R_ref^T) with R_ref = I (the two frames coincide; ``orientation: reference``
in the loop YAML measures from the reference pose instead). Their Jacobian is exact at any
pose: d/dt log3(R) = Jlog3(R^T) omega_rel (omega_rel the relative angular velocity in frame a;
Jlog3(R^T) = J_l^-1 of the rotation, the identity at closure), so Newton closes from any
starting orientation, not only near the reference.

Rank: the Jacobian of a description written for Pinocchio's 3D/6D constraints has dependent
rows (a '6d' cut on a planar loop: 6 rows, rank 3) and may leave internal motions free (a
rod's spin about its own axis). The ranks r_l of J_l and r_u of J_lu are found at the
reference pose (closed); at every state J_lu is then solved by LU when it is square and of
full rank there (the loops determine every passive joint), else by its truncated SVD keeping
the r_u largest singular values: least squares over the rows, least norm over the n_u - r_u
free internal motions (the declared rule ``internal_motion: least_norm``). rcond is then
sigma_{r_u} / sigma_1, which falls near a singularity as LAPACK's estimate does.

One call of ``computeJointJacobiansTimeVariation`` gives the placements, J and J_dot of every
joint; the relative Jacobians of all cuts are then formed together in numpy, in world
coordinates: the relative twist of b w.r.t. a is (J_B - J_A) v (spatial, at the world origin),
expressed in frame a at the point p_b by T = [[R_a^T, -R_a^T [p_b]x], [0, R_a^T]]. One batched
product R_a^T [I | -[p_b]x | p_b - p_a | J_dot-terms] gives the constrained rows of T, the
closure error and the drift of every cut at once; J_l^T = J^T T_rows^T masked by the joints
between the cut frames.

For a serial robot (no loops) the projection is the identity and the drift zero.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pinocchio as pin
from scipy.optimize import least_squares

from ..errors import InputError
from .loop_kernels import closure_terms, complete, factor_and_solve, lu_factor, lu_solve, lu_solve_blocks, project


_WA_OM = np.array([2, 0])


def placement_view(model: pin.Model, data: pin.Data) -> Optional[np.ndarray]:
    """Read-only (njoints x 12) view of ``data.oMi``, [R column-major | t] per joint, so that
    the placements are read without one Python call per joint. Only when Pinocchio stores them
    as one contiguous array of 12 doubles per joint (checked against the values); else None."""
    try:
        oMi = data.oMi
        nj = model.njoints
        addr = lambda a: a.__array_interface__["data"][0]   # noqa: E731
        r0 = oMi[0].rotation
        base = addr(r0)
        stride = addr(oMi[1].rotation) - base if nj > 1 else 96
        if stride < 96 or r0.strides != (8, 24):
            return None
        for j in range(nj):
            R, t = oMi[j].rotation, oMi[j].translation
            if addr(R) != base + j * stride or addr(t) != base + j * stride + 72 or R.strides != (8, 24) \
                    or t.strides != (8,):
                return None
        view = np.lib.stride_tricks.as_strided(r0, shape=(nj, 12), strides=(stride, 8), writeable=False)
        q = pin.integrate(model, pin.neutral(model), 0.3 * np.sin(1.0 + np.arange(model.nv)))
        pin.forwardKinematics(model, data, q)
        ref = np.array([np.concatenate([M.rotation.T.reshape(-1), M.translation]) for M in oMi])
        return view if np.array_equal(view, ref) else None
    except Exception:   # pragma: no cover - any other storage: the per-joint path
        return None


def numerical_rank(A: np.ndarray, tol: float = 1e-8) -> int:
    """Singular values above ``tol`` times the largest."""
    s = np.linalg.svd(A, compute_uv=False) if A.size else np.zeros(0)
    return int(np.sum(s > s[0] * tol)) if s.size and s[0] > 0 else 0


@dataclass
class LoopState:
    """Closure quantities at one configuration (and velocity, when given)."""
    error: np.ndarray            # e_l (m,)
    J: np.ndarray                # J_l (m, nv)
    drift_acc: Optional[np.ndarray] = None   # J_l_dot v (m,)


class SingularLinkage(RuntimeError):
    """J_lu is (near) singular: the actuators do not determine the passive joints here."""


class PassiveSolve:
    """J_lu at one state, factored for J_lu x = b and J_lu^T y = c (least squares, least norm).

    LU (LAPACK getrf, rcond by gecon) when ``rank`` is None (square J_lu of full rank), else
    the SVD truncated to ``rank`` singular values (rcond = sigma_rank / sigma_1); its discarded
    right singular vectors are ``null``, an orthonormal basis of the free internal motions
    (n_u x (n_u - rank); n_u x 0 on the LU path)."""

    __slots__ = ("lu", "piv", "U", "s", "Vt", "rcond", "null", "blocks")

    def __init__(self, Jlu: np.ndarray, rank: Optional[int]):
        self.U = self.s = self.Vt = self.lu = self.piv = self.blocks = None
        self.null = np.zeros((Jlu.shape[1], 0))
        if not Jlu.size:
            self.lu, self.piv, self.rcond = Jlu, np.zeros(0, dtype=np.int32), 1.0
        elif rank is None:
            self.lu, self.piv = np.ascontiguousarray(Jlu), np.empty(Jlu.shape[0], dtype=np.int32)
            self.rcond = lu_factor(self.lu, self.piv)
        else:
            U, s, Vt = np.linalg.svd(Jlu, full_matrices=True)
            self.rcond = float(s[rank - 1] / s[0]) if rank and s[0] > 0 else (1.0 if not rank else 0.0)
            self.U, self.s, self.Vt, self.null = U[:, :rank], s[:rank], Vt[:rank], Vt[rank:].T

    @classmethod
    def factored(cls, lu: np.ndarray, piv: np.ndarray, rcond: float, blocks=None) -> "PassiveSolve":
        """Square J_lu already factored by :func:`~.loop_kernels.lu_factor`, or in the block
        layout ``blocks`` (:meth:`LoopKinematics.lu_blocks`) by :func:`~.loop_kernels.factor_and_solve`."""
        fac = cls.__new__(cls)
        fac.U = fac.s = fac.Vt = None
        fac.lu, fac.piv, fac.rcond, fac.blocks = lu, piv, rcond, blocks
        fac.null = np.zeros((lu.shape[1], 0))
        return fac

    def solve(self, b: np.ndarray) -> np.ndarray:
        """x = J_lu^+ b (b: m or m x k)."""
        if self.U is None:
            return self._lu_solve(b, False)
        y = self.U.T @ b
        return self.Vt.T @ (y / (self.s if y.ndim == 1 else self.s[:, None]))

    def solve_t(self, c: np.ndarray) -> np.ndarray:
        """y = J_lu^+T c: the least-norm multipliers of J_lu^T y = c."""
        if self.U is None:
            return self._lu_solve(c, True)
        return self.U @ ((self.Vt @ c) / self.s)

    def _lu_solve(self, b: np.ndarray, trans: bool) -> np.ndarray:
        if not self.lu.size:
            return np.zeros((0,) + b.shape[1:])
        X = np.array(b, dtype=float).reshape(b.shape[0], -1)
        if self.blocks is None:
            lu_solve(self.lu, self.piv, X, trans)
        else:
            lu_solve_blocks(self.lu, self.piv, X, trans, *self.blocks[:4])
        return X.reshape(b.shape)


class LoopKinematics:
    """Loop-closure kinematics of a robot with closed linkages (``robot.loops``).

    ``LoopKinematics(model, spec, q_ref)``; the main entry points are :meth:`projection`,
    :meth:`close` (position closure from any pose), :meth:`complete` (passive velocities and
    accelerations from the actuated ones) and :meth:`closed_pose` (a closed pose near a given
    one, actuators free).

    ``measured``: passive joints measured like the actuators (Cassie's shin and heel springs
    have encoders). They join the independent coordinates (``actuated_joints``, ``ia``, after
    the motors), so the loops complete the other passive joints from both: the free internal
    motions the springs are are then set by the springs' measurement instead of least norm
    (``internal_motion: springs``). For estimation only: they carry no actuator.
    """

    def __init__(self, model: pin.Model, spec=None, q_ref=None, measured: Sequence[str] = ()):
        self.model = model
        self.data = self.model.createData()
        self.spec = spec
        m = self.model
        self.nv, self.nq = m.nv, m.nq
        self.floating = m.njoints > 1 and m.joints[1].nv == 6
        self.nb = 6 if self.floating else 0
        self._coordinates(measured)
        self._cut_structure()
        self._product_tables()
        # G: d theta / d theta_a (nv - nb rows scattered to nv), G_f with the base block
        self.G_f = np.zeros((self.nv, self.nb + self.n_act))
        self.G_f[:self.nb, :self.nb] = np.eye(self.nb)
        self.G_f[self.ia, self.nb + np.arange(self.n_act)] = 1.0
        self.q_ref = pin.neutral(m) if q_ref is None else np.array(q_ref, dtype=float)
        self._R_ref = [np.eye(3) for _ in range(self.L)]
        measured = [k for k in self._ang_loops if getattr(self.loops[k], "orientation", "coincide") == "reference"]
        if measured:          # orientation: reference -> angular rows from the relative orientation at q_ref
            pin.forwardKinematics(m, self.data, self.q_ref)
            F = self._frames()
            for k in measured:
                self._R_ref[k] = F[2 * k, :, :3].T @ F[2 * k + 1, :, :3]
        self.last_rcond = 1.0
        self.last_null = np.zeros((self.n_pas, 0))     # free internal motions at the last factored state
        self.set_ranks(self.q_ref)

    def _coordinates(self, measured: Sequence[str]) -> None:
        """The 1-DoF joints split into actuated (with the ``measured`` passive ones) and passive,
        with their velocity and configuration indices."""
        m, spec = self.model, self.spec
        first = 1 + (1 if self.floating else 0)
        self.joint_names = [m.names[j] for j in range(first, m.njoints)]
        for j in range(first, m.njoints):
            if m.joints[j].nq != 1 or m.joints[j].nv != 1:
                raise InputError(f"joint '{m.names[j]}' is a {m.joints[j].shortname()}: closed-chain models "
                                 "take 1-DoF joints (list it under joint_name / joint_type in the loop YAML "
                                 "to have it replaced by revolutes)",
                                 file=str(spec.path) if spec is not None else None)
        if spec is None:
            self.actuated_joints = list(self.joint_names)
            self.loops = []
        else:
            wrong = [n for n in measured if n not in self.joint_names or n in spec.actuated]
            if wrong:
                raise InputError(f"measured joints {', '.join(map(str, wrong))} are not passive joints of the model",
                                 file=str(spec.path), field="springs")
            self.actuated_joints = list(spec.actuated) + list(measured)
            self.loops = list(spec.loops)
        act = set(self.actuated_joints)
        self.passive_joints = [n for n in self.joint_names if n not in act]
        vidx = lambda n: m.joints[m.getJointId(n)].idx_v   # noqa: E731
        qidx = lambda n: m.joints[m.getJointId(n)].idx_q   # noqa: E731
        self.ia = np.array([vidx(n) for n in self.actuated_joints], dtype=int)
        self.iu = np.array([vidx(n) for n in self.passive_joints], dtype=int)
        self.qa = np.array([qidx(n) for n in self.actuated_joints], dtype=int)
        self.qu = np.array([qidx(n) for n in self.passive_joints], dtype=int)
        self.n_act, self.n_pas = len(self.ia), len(self.iu)

    def _cut_structure(self) -> None:
        """Per cut: the joints and placements of its two frames, the supports' signs (S: b's
        chain minus a's; MAB: each chain alone) and the constrained rows (loop k, axis a)."""
        m = self.model
        L = self.L = len(self.loops)
        self.m = sum(len(l.axes) for l in self.loops)
        self._ja = np.zeros(L, dtype=int)
        self._jb = np.zeros(L, dtype=int)
        self._Ma: List[pin.SE3] = []
        self._Mb: List[pin.SE3] = []
        S = np.zeros((L, self.nv))
        MAB = np.zeros((2 * L, self.nv))
        rows = []
        self._ang_loops = []
        for k, loop in enumerate(self.loops):
            fa, fb = m.frames[m.getFrameId(loop.frame_a)], m.frames[m.getFrameId(loop.frame_b)]
            self._ja[k], self._jb[k] = fa.parentJoint, fb.parentJoint
            self._Ma.append(fa.placement)
            self._Mb.append(fb.placement)
            for j in m.supports[fa.parentJoint]:
                if j > 0:
                    cols = slice(m.joints[j].idx_v, m.joints[j].idx_v + m.joints[j].nv)
                    S[k, cols] -= 1
                    MAB[k, cols] = 1
            for j in m.supports[fb.parentJoint]:
                if j > 0:
                    cols = slice(m.joints[j].idx_v, m.joints[j].idx_v + m.joints[j].nv)
                    S[k, cols] += 1
                    MAB[L + k, cols] = 1
            rows.extend(6 * k + a for a in loop.axes)
            if any(a >= 3 for a in loop.axes):
                self._ang_loops.append(k)
        self._S, self._MAB = S, MAB
        self._rows = np.array(rows, dtype=int)

    def _product_tables(self) -> None:
        """Index and coefficient tables that turn each cycle's closure terms into a few batched
        products (one gather from data.oMi, one einsum per term)."""
        L, S, MAB = self.L, self._S, self._MAB
        # joints of the cuts, interleaved (a_0, b_0, a_1, b_1, ...): one gather from data.oMi
        inter = [int(j) for k in range(L) for j in (self._ja[k], self._jb[k])]
        self._get_joints = operator.itemgetter(*inter) if len(inter) > 1 else (lambda xs: ())
        self._inter = np.array(inter, dtype=int)
        self._Hab = np.array([M.homogeneous for k in range(L) for M in (self._Ma[k], self._Mb[k])]
                             ).reshape(2 * L, 4, 4)
        self._Z = np.ones((L, 2, 4))                     # (p_a, 1, p_b, 1) per loop
        self._oMi12 = placement_view(self.model, self.data) if L else None
        # linear rows only and the placements readable as one array: the compiled terms
        self._compiled = bool(L) and self._oMi12 is not None and not self._ang_loops
        self._no_v = np.zeros(self.nv)
        self._eye_act = np.eye(self.n_act)
        # constrained rows: loop k, axis a; each is one row of T = [[R_a^T, -R_a^T [p_b]x], [0, R_a^T]]
        self._kr = np.array([k for k, lp in enumerate(self.loops) for _ in lp.axes], dtype=int)
        self._ar = np.array([a for lp in self.loops for a in lp.axes], dtype=int)
        self._ar3 = self._ar % 3
        self._ang = np.flatnonzero(self._ar >= 3)
        self._all_lin = self._ang.size == 0
        self._SrT = np.ascontiguousarray(S[self._kr].T) if L else np.zeros((self.nv, 0))   # (nv, m)
        # (J v) @ _M3T = [relative twist | V_B | V_A] per loop, (J_dot v) @ _ST = J_dot (S v)
        self._M3T = np.ascontiguousarray(np.vstack([S, MAB[L:], MAB[:L]]).T) if L else np.zeros((self.nv, 0))
        self._ST = np.ascontiguousarray(S.T)
        self._vel = np.zeros((6, 4 * L))
        # K = [I | -[p_b]x | p_b - p_a | top | bot] (3 x 9 per loop) = (p_a, 1, p_b, 1) @ _E, so that
        # R_a^T K gives the rows of T, the closure error and (with the velocity terms in the last
        # two columns) the drift in one product; K [nu; om] = nu + om x p_b
        eps = np.zeros((3, 3, 3))                        # Levi-Civita: [p]x[j, k] = -eps[j, k, l] p_l
        eps[0, 1, 2] = eps[1, 2, 0] = eps[2, 0, 1] = 1.0
        eps[0, 2, 1] = eps[2, 1, 0] = eps[1, 0, 2] = -1.0
        E = np.zeros((8, 3, 9))
        E[3, :, :3] = np.eye(3)
        E[4:7, :, 3:6] = eps.transpose(2, 0, 1)          # -[e_i]x
        E[4:7, :, 6] = np.eye(3)
        E[:3, :, 6] = -np.eye(3)
        self._E = E.reshape(8, 27)
        # -w_A x u + om x p_b_dot as one product: outer products (j, k, pair) @ _Ec
        self._Ec = np.stack([-eps.transpose(1, 2, 0), eps.transpose(1, 2, 0)], axis=2).reshape(18, 3)
        self._Jlog = np.zeros((L, 3, 3))

    def set_ranks(self, q: np.ndarray, tol: float = 1e-8) -> None:
        """Ranks of J_l and J_lu at ``q`` (a closed pose): r_l, r_u, the number of free internal
        motions n_pas - r_u, and the factorisation used at every later state (LU when J_lu is
        square of full rank, else the SVD truncated to r_u)."""
        self.rank_l = self.rank_u = 0
        if self.m:
            J = self.compute(q).J
            self.rank_l, self.rank_u = numerical_rank(J, tol), numerical_rank(J[:, self.iu], tol)
        self.n_free = self.n_pas - self.rank_u
        self._svd_rank = None if (self.m == self.n_pas == self.rank_u) else self.rank_u
        self._blocks = self.lu_blocks() if self._svd_rank is None and self.m else None
        self._work = None                        # projection_into's buffers, made at its first call
        self._work_est = None                    # completion_terms' buffers, likewise

    def lu_blocks(self):
        """The block layout of a square J_lu (module doc of :mod:`.loop_kernels`), from the
        chains alone (J_l's row of loop k is zero outside the joints between its cut frames,
        at every state): loops and passive joints joined when a loop moves the joint, each
        connected group a block, its rows and columns in their original order. (rows, cols,
        first, end, pos): block position p holds row ``rows[p]`` and column ``cols[p]``, its
        block spans [first[p], end[p]), column c sits at ``pos[c]``. One dense block when a
        group is not square (J_lu is then singular anyway)."""
        m, n = self.m, self.n_pas
        parent = list(range(m + n))              # union-find over rows (0..m) and columns (m..)

        def root(i):
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i
        for r in range(m):
            for c in np.flatnonzero(self._S[self._kr[r], self.iu]):
                parent[root(r)] = root(m + int(c))
        groups = {}
        for i in range(m + n):
            groups.setdefault(root(i), ([], []))[i >= m].append(i if i < m else i - m)
        ordered = sorted(groups.values(), key=lambda g: min(g[1]) if g[1] else n)
        if any(len(rs) != len(cs) for rs, cs in ordered):
            ordered = [(list(range(m)), list(range(n)))]
        rows, cols, first, end = [], [], [], []
        for rs, cs in ordered:
            a = len(rows)
            rows += sorted(rs)
            cols += sorted(cs)
            first += [a] * len(rs)
            end += [a + len(rs)] * len(rs)
        pos = np.empty(n, dtype=np.intp)
        pos[cols] = np.arange(n)
        return tuple(np.array(x, dtype=np.intp) for x in (rows, cols, first, end)) + (pos,)

    # ------------------------------------------------------------------ kinematics
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_oMi12"] = None                   # a view of this object's data: rebuilt on load
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.L:
            self._oMi12 = placement_view(self.model, self.data)
            self._compiled = self._oMi12 is not None and not self._ang_loops

    def _frames(self):
        """F (2L x 3 x 4): world placements [R | p] of frame_a, frame_b of every cut, interleaved."""
        if self._oMi12 is not None:          # [R (column-major) | t] of the cut joints in one gather
            M = self._oMi12[self._inter].reshape(2 * self.L, 4, 3).transpose(0, 2, 1)
        else:
            M = np.array([X.homogeneous[:3] for X in self._get_joints(self.data.oMi.tolist())])
        return np.matmul(M, self._Hab)

    def _evaluate(self, q, v=None, jacobian=True):
        """One Pinocchio pass, then (e_l, J_l^T (nv x m, C order) or None, J_l_dot v or None)."""
        m, d, L = self.model, self.data, self.L
        if v is not None:
            pin.computeJointJacobiansTimeVariation(m, d, q, v)
        elif jacobian:
            pin.computeJointJacobians(m, d, q)
        else:
            pin.forwardKinematics(m, d, q)
        if self._compiled and (jacobian or v is not None):
            return self.terms_from(d, self._oMi12, v)
        F = self._frames()
        Rt = F[0::2, :3, :3].transpose(0, 2, 1)                 # R_a^T
        Z = self._Z
        Z[:, :, :3] = F[:, :, 3].reshape(L, 2, 3)
        K = (Z.reshape(L, 8) @ self._E).reshape(L, 3, 9)
        if v is not None:
            W = self._vel
            np.matmul(d.J * v, self._M3T, out=W[:, :3 * L])      # relative twist, V_B, V_A
            np.matmul(d.dJ * v, self._ST, out=W[:, 3 * L:])      # J_dot (S v)
            X = W.reshape(6, 4, L).transpose(2, 0, 1)           # (L, 6, 4)
            U = np.matmul(K[:, :, :6], X)                       # u = nu + om x p_b, p_b_dot, -, w
            Om = X[:, 3:]                                       # om, w_B, w_A, dom
            a1 = Om[:, :, _WA_OM]                               # (L, 3, 2): w_A, om
            P = a1[:, :, None, :] * U[:, None, :, :2]           # (L, 3, 3, 2)
            np.add(U[:, :, 3], P.reshape(L, 18) @ self._Ec, out=K[:, :, 7])
            if not self._all_lin:
                K[:, :, 8] = Om[:, :, 3] - np.cross(Om[:, :, 2], Om[:, :, 0])   # dom - w_A x om
        T = np.matmul(Rt, K)                                    # (L, 3, 9)
        Ts = T[self._kr, self._ar3]                             # (m, 9)
        e = Ts[:, 6]
        drift = Ts[:, 7] if v is not None else None
        Trow = Ts[:, :6]
        if not self._all_lin:
            ang, kr, ar = self._ang, self._kr, self._ar
            e, Trow = e.copy(), Trow.copy()
            Trow[ang, 3:] = Ts[ang, :3]
            Trow[ang, :3] = 0.0
            Ra, Rb = F[0::2, :3, :3], F[1::2, :3, :3]
            Jl = self._Jlog
            for k in self._ang_loops:
                Rk = Ra[k].T @ Rb[k] @ self._R_ref[k].T
                ek = pin.log3(Rk)
                Jl[k] = pin.Jlog3(Rk.T)                          # d log3(R) / dt = Jlog3(R^T) omega_rel
                sel = ang[kr[ang] == k]
                e[sel] = ek[ar[sel] - 3]
            # angular rows: Jlog3(R^T) R_a^T (a loop's three angular rows mixed by Jlog3)
            Trow[ang, 3:] = np.einsum("ij,ijk->ik", Jl[kr[ang], ar[ang] - 3], Rt[kr[ang]])
            if drift is not None:
                drift = drift.copy()
                drift[ang] = np.einsum("ij,ij->i", Jl[kr[ang], ar[ang] - 3], T[kr[ang], :, 8])
        JT = None
        if jacobian or v is not None:
            JT = np.matmul(d.J.T, Trow.T)
            JT *= self._SrT
        return e, JT, drift

    @property
    def compiled(self) -> bool:
        """Whether :meth:`terms_from` serves this robot: every constrained row linear, and
        Pinocchio's joint placements readable as one array (:func:`placement_view`)."""
        return self._compiled

    def terms_from(self, data: pin.Data, placements: np.ndarray, v: Optional[np.ndarray] = None):
        """(e_l, J_l^T, J_l_dot v or None) from a Pinocchio pass already run on ``data`` (joint
        placements and ``J``; ``dJ`` too with ``v``: ``computeAllTerms`` or
        ``computeJointJacobiansTimeVariation``), in one compiled call (:mod:`.loop_kernels`).
        ``placements``: :func:`placement_view` of ``data``. Only when :attr:`compiled`."""
        oMi = placements
        e = np.empty(self.m)
        JT = np.empty((self.nv, self.m))
        drift = np.empty(self.m) if v is not None else None
        closure_terms(oMi, self._inter, self._Hab, self._S, self._MAB, self._kr, self._ar, data.J,
                      data.dJ if v is not None else data.J, v if v is not None else self._no_v,
                      v is not None, e, JT, drift if v is not None else e)
        return e, JT, drift

    def compute(self, q: np.ndarray, v: Optional[np.ndarray] = None) -> LoopState:
        """e_l, J_l and (with ``v``) the drift J_l_dot v, from one Pinocchio pass."""
        if self.L == 0:
            return LoopState(np.zeros(0), np.zeros((0, self.nv)), None if v is None else np.zeros(0))
        e, JT, drift = self._evaluate(q, v)
        return LoopState(e, JT.T, drift)

    def residual(self, q: np.ndarray) -> np.ndarray:
        """Closure error e_l(q) (positions only)."""
        if self.L == 0:
            return np.zeros(0)
        return self._evaluate(q, None, jacobian=False)[0]

    # ------------------------------------------------------------------ linear algebra
    def factor(self, JT: np.ndarray) -> PassiveSolve:
        """J_lu at one state, from J_l^T (nv x m): LU or truncated SVD (see the module doc)."""
        fac = PassiveSolve(JT[self.iu].T, self._svd_rank)      # Fortran order: LAPACK may overwrite
        self.last_rcond, self.last_null = fac.rcond, fac.null
        return fac

    def factor_solve(self, JT: np.ndarray, W: np.ndarray, extra: np.ndarray):
        """J_lu factored (:meth:`factor`) and ``X = J_lu^+ [J_la W, extra]`` (``W``: n_act x k,
        ``extra``: m x p): one compiled call on the LU path. Returns (factors, X); X is not
        meaningful when J_lu is singular (rcond 0)."""
        if self._svd_rank is not None or not self.m:
            fac = self.factor(JT)
            return fac, fac.solve(np.hstack([JT[self.ia].T @ W, extra]))
        lu = np.zeros((self.m, self.n_pas))
        piv = np.empty(self.m, dtype=np.int32)
        X = np.empty((self.m, W.shape[1] + extra.shape[1]))
        rcond = factor_and_solve(JT, self.iu, self.ia, W, extra, *self._blocks, lu, piv, X)
        fac = PassiveSolve.factored(lu, piv, rcond, self._blocks)
        self.last_rcond, self.last_null = rcond, fac.null
        return fac, X

    def projection(self, q: np.ndarray, v: Optional[np.ndarray] = None,
                   state: Optional[LoopState] = None) -> Tuple[np.ndarray, np.ndarray]:
        """(G_f, drift): every consistent v = G_f v_m, a = G_f a_m + drift ([Mingo Hoffman 2024, Appendix B]).

        ``v`` is the current (consistent) velocity, needed for the drift (zero without it).
        Raises :class:`SingularLinkage` when J_lu is numerically singular."""
        G = self.G_f.copy()
        drift = np.zeros(self.nv)
        if self.L == 0:
            return G, drift
        if state is None:
            state = self.compute(q, v)
        Jm, d_u = self._projection_terms(state.J, state.drift_acc)
        G[self.iu, self.nb:] = Jm
        if d_u is not None:
            drift[self.iu] = d_u
        return G, drift

    @property
    def fused(self) -> bool:
        """Whether :meth:`projection_into` serves this robot: :attr:`compiled` and J_lu square
        of full rank (the LU path)."""
        return self._compiled and self._blocks is not None

    def projection_into(self, data: pin.Data, placements: np.ndarray, v: np.ndarray, G: np.ndarray,
                        drift: np.ndarray) -> None:
        """:meth:`projection` from a Pinocchio pass already run on ``data`` (as
        :meth:`terms_from`, with ``dJ``), written in place: the passive rows of ``G`` (a copy
        of ``G_f``; its other rows are never written) and of ``drift`` (zero elsewhere), in one
        compiled call (:func:`~.loop_kernels.project`): the same numbers as :meth:`projection`.
        Only when :attr:`fused`. Raises :class:`SingularLinkage` when J_lu is singular."""
        w = self._work
        if w is None:
            m = self.m
            w = self._work = (np.empty(m), np.empty((self.nv, m)), np.empty(m), np.zeros((m, m)),
                              np.empty(m, dtype=np.int32), np.empty((m, self.n_act + 1)))
        rcond = project(placements, self._inter, self._Hab, self._S, self._MAB, self._kr, self._ar, data.J,
                        data.dJ, v, self.iu, self.ia, *self._blocks, *w, G, drift)
        self.last_rcond = rcond
        if rcond < 1e-12:
            raise SingularLinkage(f"J_lu is singular (rcond {rcond:.1e})")

    def completion_terms(self, q: np.ndarray, v_a: np.ndarray, d_a: np.ndarray):
        """What the passive-state estimator needs at ``q`` (one Pinocchio pass): (e_l,
        X = J_lu^+ [-J_la v_a, J_la d_a, e_l] (n_pas x 3), rcond, max |e_l|); X is not
        meaningful when J_lu is singular (rcond 0). When :attr:`fused`, one compiled call after
        the pass (:func:`~.loop_kernels.complete`: the same numbers as :meth:`factor_solve`)."""
        if not self.fused:
            e, JT, _ = self._evaluate(q)
            W = np.empty((self.n_act, 2))
            np.negative(v_a, out=W[:, 0])
            W[:, 1] = d_a
            fac, X = self.factor_solve(JT, W, e[:, None])
            return e, X, fac.rcond, float(np.abs(e).max())
        w = self._work_est
        if w is None:
            m = self.m
            w = self._work_est = (np.empty(m), np.empty((self.nv, m)), np.zeros((m, m)), np.empty(m, dtype=np.int32),
                                  np.empty((m, 3)))
        pin.computeJointJacobians(self.model, self.data, q)
        X = np.empty((self.n_pas, 3))
        rcond, residual = complete(self._oMi12, self._inter, self._Hab, self._S, self._MAB, self._kr, self._ar,
                                   self.data.J, self.iu, self.ia, v_a, d_a, *self._blocks, *w, X)
        self.last_rcond = rcond
        return w[0], X, rcond, residual

    def _projection_terms(self, J, drift_acc):
        """(J_m, drift_u = -J_lu^+ J_l_dot v or None); raises SingularLinkage."""
        extra = np.zeros((self.m, 0)) if drift_acc is None else drift_acc[:, None]
        fac, X = self.factor_solve(J.T, self._eye_act, extra)
        if fac.rcond < 1e-12:
            raise SingularLinkage(f"J_lu is singular (rcond {fac.rcond:.1e})")
        np.negative(X, out=X)
        return X[:, :self.n_act], (X[:, self.n_act] if drift_acc is not None else None)

    # ------------------------------------------------------------------ positions
    def close(self, q0: np.ndarray, *, tol: float = 1e-10, max_iter: int = 30, damping: float = 1e-6,
              max_step: float = 0.3) -> Tuple[np.ndarray, dict]:
        """Position closure: passive joints of ``q0`` moved (damped Newton on the exact Jacobian,
        actuated joints and base held) until ||e_l||_inf <= tol. Warm-start from the previous
        solution to stay on the same assembly branch; each step is clipped to ``max_step`` rad
        (branch continuity). When Newton does not converge (a start far from closure: a '6d'
        cut half a turn out), a least-squares solve on a residual smooth over all of SO(3)
        (R - I instead of log3) brings it close and Newton finishes.
        Returns (q, info) with info = {iterations, residual, converged, rcond}."""
        q, info = self._newton(np.array(q0, dtype=float), self.qu, self.iu, tol, max_iter, damping, max_step)
        if not info["converged"] and self.n_pas:
            q = self._smooth_solve(np.array(q0, dtype=float), self.qu, self.iu)
            q, more = self._newton(q, self.qu, self.iu, tol, max_iter, damping, max_step)
            more["iterations"] += info["iterations"]
            info = more
        return q, info

    def closed_pose(self, q0: np.ndarray, tol: float = 1e-10) -> Tuple[np.ndarray, dict]:
        """A closed pose near ``q0`` with every joint free (actuated ones too): the reference pose
        found at load when a description's neutral pose is open."""
        joints = np.concatenate([self.qu, self.qa]).astype(int)
        cols = np.concatenate([self.iu, self.ia]).astype(int)
        q = self._smooth_solve(np.array(q0, dtype=float), joints, cols)
        q, info = self._newton(q, joints, cols, tol, 50, 1e-6, 0.3)
        turns = [self.model.joints[self.model.getJointId(n)].idx_q for n in self.joint_names
                 if self.model.joints[self.model.getJointId(n)].shortname().startswith("JointModelR")]
        q[turns] = np.mod(q[turns] + math.pi, 2 * math.pi) - math.pi     # revolutes: same closure
        return q, info

    def _newton(self, q, qi, vi, tol, max_iter, damping, max_step):
        info = {"iterations": 0, "residual": 0.0, "converged": True, "rcond": 1.0}
        if self.L == 0:
            return q, info
        for it in range(max_iter + 1):
            st = self.compute(q)
            r = float(np.max(np.abs(st.error)))
            info.update(iterations=it, residual=r)
            if not np.isfinite(r):
                break
            if r <= tol:
                info["converged"] = True
                info["rcond"] = self.factor(st.J.T).rcond
                return q, info
            if it == max_iter:
                break
            Ju = st.J[:, vi]
            mu = damping * min(1.0, r)
            # damped normal equations; rank-deficient J_lu (free internal motions): least-norm step
            try:
                dq = -np.linalg.solve(Ju.T @ Ju + mu * np.eye(len(vi)), Ju.T @ st.error)
            except np.linalg.LinAlgError:
                dq = -np.linalg.lstsq(Ju, st.error, rcond=1e-12)[0]
            step = np.max(np.abs(dq))
            if step > max_step:
                dq *= max_step / step
            q[qi] += dq
        info["converged"] = False
        return q, info

    def _smooth_residual(self, q: np.ndarray) -> np.ndarray:
        """Closure residual smooth on all of SO(3): the linear rows, and for a cut with all three
        angular rows R_a^T R_b R_ref^T - I (9 entries, zero only at closure; a subset of angular
        rows keeps its log3 entries)."""
        pin.forwardKinematics(self.model, self.data, q)
        F = self._frames()
        out = []
        for k, loop in enumerate(self.loops):
            Ra, Rb, pa, pb = F[2 * k, :, :3], F[2 * k + 1, :, :3], F[2 * k, :, 3], F[2 * k + 1, :, 3]
            lin = [a for a in loop.axes if a < 3]
            ang = [a - 3 for a in loop.axes if a >= 3]
            out.append((Ra.T @ (pb - pa))[lin])
            R = Ra.T @ Rb @ self._R_ref[k].T
            out.append((R - np.eye(3)).ravel() if len(ang) == 3 else pin.log3(R)[ang])
        return np.concatenate(out)

    def _smooth_jacobian(self, q: np.ndarray) -> np.ndarray:
        """Jacobian (rows of :meth:`_smooth_residual`, nv columns), exact: the linear rows and
        the log3 rows are those of J_l; for R = R_a^T R_b R_ref^T, dR = [w]x R with
        w = R_a^T (omega_b - omega_a), so d vec(R) / dq_i = vec([w_i]x R)."""
        J = self.compute(q).J                       # fills data.J (world) and the placements
        F = self._frames()
        out, r = [], 0
        for k, loop in enumerate(self.loops):
            rows = J[r:r + len(loop.axes)]
            r += len(loop.axes)
            ang = [i for i, a in enumerate(loop.axes) if a >= 3]
            out.append(rows[[i for i, a in enumerate(loop.axes) if a < 3]])
            if len(ang) == 3:
                Ra = F[2 * k, :, :3]
                R = Ra.T @ F[2 * k + 1, :, :3] @ self._R_ref[k].T
                W = Ra.T @ (self.data.J[3:] * self._S[k])          # R_a^T omega_rel, per column
                out.append(np.cross(W.T[:, :, None], R[None], axis=1).reshape(self.nv, 9).T)
            else:
                out.append(rows[ang])
        return np.vstack(out)

    def _smooth_solve(self, q: np.ndarray, qi: np.ndarray, cols: np.ndarray) -> np.ndarray:
        def fun(x):
            q[qi] = x
            return self._smooth_residual(q)

        def jac(x):
            q[qi] = x
            return self._smooth_jacobian(q)[:, cols]
        x0 = q[qi].copy()
        if not np.any(self._smooth_residual(q)):
            return q
        sol = least_squares(fun, x0, jac=jac, method="trf", xtol=1e-14, ftol=1e-14, gtol=1e-14,
                            max_nfev=200 * (len(qi) + 1))
        q[qi] = sol.x
        return q

    def determined(self, q: np.ndarray, dq_u: np.ndarray) -> np.ndarray:
        """The part of a passive-joint difference the actuators determine: ``dq_u`` without its
        free internal motions at ``q`` (the null space of J_lu); ``dq_u`` itself without any."""
        if not self.n_free:
            return dq_u
        V = np.linalg.svd(self.compute(q).J[:, self.iu])[2][:self.rank_u]
        return V.T @ (V @ dq_u)

    def with_actuated(self, q: np.ndarray, q_a: Sequence[float]) -> np.ndarray:
        out = np.array(q, dtype=float)
        out[self.qa] = q_a
        return out

    # ------------------------------------------------------------------ completion
    def complete(self, q: np.ndarray, v_a: np.ndarray, a_a: Optional[np.ndarray] = None,
                 v_base: Optional[np.ndarray] = None, a_base: Optional[np.ndarray] = None):
        """Passive velocities (and accelerations) from the actuated ones at a closed q:
        v_u = J_m v_a, a_u = J_m a_a - J_lu^+ J_l_dot v. Returns (v, a) in R^nv."""
        vm = np.concatenate([np.zeros(self.nb) if v_base is None else v_base, v_a])
        G, _ = self.projection(q)
        v = G @ vm
        if a_a is None:
            return v, None
        am = np.concatenate([np.zeros(self.nb) if a_base is None else a_base, a_a])
        G, drift = self.projection(q, v)
        return v, G @ am + drift

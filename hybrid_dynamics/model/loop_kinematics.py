"""Closed linkages ([Mingo Hoffman 2024, Sec. III, Appendices A-B]): loop-closure kinematics, the
projection onto base + actuated coordinates, passive-state completion, constrained inverse
dynamics and the actuator-force <-> motor-torque mapping.

Notation ([Mingo Hoffman 2024, Sec. III-A]): the spanning tree has coordinates theta = [theta_u (passive); theta_a
(actuated)] (here scattered in Pinocchio's order; ``iu``/``ia`` index v). Each cut joint keeps
the rows ``axes`` of the relative motion of frame_b in frame_a; stacked they give the closure
error e_l (m), its Jacobian J_l (m x nv, zero base columns) and the drift J_l_dot v.

    J_m   = -J_lu^-1 J_la                                    (eq. 7)
    G     = d theta / d theta_a,  G_f = blkdiag(I_6, G)       (section 2.6)
    v     = G_f v_m,   a = G_f a_m + drift,  drift_u = -J_lu^-1 J_l_dot v
    tau_a = (G_f^T rnea(q, v, a))[6:]                          (fixed base: section 2.3)

One call of ``computeJointJacobiansTimeVariation`` gives the placements, J and J_dot of every
joint; the relative Jacobians of all cuts are then formed together in numpy, in world
coordinates: the relative twist of b w.r.t. a is (J_B - J_A) v (spatial, at the world origin),
expressed in frame a at the point p_b by T = [[R_a^T, -R_a^T [p_b]x], [0, R_a^T]]. One batched
product R_a^T [I | -[p_b]x | p_b - p_a | J_dot-terms] gives the constrained rows of T, the
closure error and the drift of every cut at once; J_l^T = J^T T_rows^T masked by the joints
between the cut frames. J_lu is factored once per pass (LAPACK getrf + gecon) and reused for
J_m, the drift and (transposed) the multipliers of the fixed-base ID, which never forms G_f.

For a serial robot (no loops) the projection is the identity and the drift zero.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pinocchio as pin
from scipy.linalg import lapack

_getrf, _getrs, _gecon, _lange = lapack.dgetrf, lapack.dgetrs, lapack.dgecon, lapack.dlange

from ..errors import InputError
from .lie import cross3, skew_b


_WA_OM = np.array([2, 0])


def _placement_view(model: pin.Model, data: pin.Data) -> Optional[np.ndarray]:
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


@dataclass
class LoopState:
    """Closure quantities at one configuration (and velocity, when given)."""
    error: np.ndarray            # e_l (m,)
    J: np.ndarray                # J_l (m, nv)
    drift_acc: Optional[np.ndarray] = None   # J_l_dot v (m,)


class SingularLinkage(RuntimeError):
    """J_lu is (near) singular: the actuators do not determine the passive joints here."""


class LoopClosureKinematics:
    """Loop-closure kinematics of a robot with closed linkages (``robot.loops``).

    ``LoopClosureKinematics(robot)``; the main entry points are :meth:`projection`,
    :meth:`close` (position closure), :meth:`complete` (passive positions, velocities and
    accelerations from the actuated ones), :meth:`inverse_dynamics` (fixed base) and the
    actuator mappings :meth:`motor_torque` / :meth:`actuator_force`.
    """

    def __init__(self, robot, loops=None, model: Optional[pin.Model] = None, q_ref=None):
        self.model = model if model is not None else robot.model
        self.data = self.model.createData()
        self.spec = loops if loops is not None else getattr(robot, "loops", None)
        m = self.model
        self.nv, self.nq = m.nv, m.nq
        self.floating = m.njoints > 1 and m.joints[1].nv == 6
        self.nb = 6 if self.floating else 0
        self.joint_names = [m.names[j] for j in range(1 + (1 if self.floating else 0), m.njoints)]
        for j in range(1 + (1 if self.floating else 0), m.njoints):
            if m.joints[j].nq != 1 or m.joints[j].nv != 1:
                raise InputError(f"joint '{m.names[j]}' is not a 1-DoF joint: closed-chain models need "
                                 "revolute or prismatic joints")
        if self.spec is None:
            self.actuated_joints = list(self.joint_names)
            self.loops = []
        else:
            self.actuated_joints = list(self.spec.actuated)
            self.loops = list(self.spec.loops)
        act = set(self.actuated_joints)
        self.passive_joints = [n for n in self.joint_names if n not in act]
        vidx = lambda n: m.joints[m.getJointId(n)].idx_v   # noqa: E731
        qidx = lambda n: m.joints[m.getJointId(n)].idx_q   # noqa: E731
        self.ia = np.array([vidx(n) for n in self.actuated_joints], dtype=int)
        self.iu = np.array([vidx(n) for n in self.passive_joints], dtype=int)
        self.qa = np.array([qidx(n) for n in self.actuated_joints], dtype=int)
        self.qu = np.array([qidx(n) for n in self.passive_joints], dtype=int)
        self.n_act, self.n_pas = len(self.ia), len(self.iu)
        L = len(self.loops)
        self.L = L
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
        # joints of the cuts, interleaved (a_0, b_0, a_1, b_1, ...): one gather from data.oMi
        inter = [int(j) for k in range(L) for j in (self._ja[k], self._jb[k])]
        self._get_joints = operator.itemgetter(*inter) if len(inter) > 1 else (lambda xs: ())
        self._inter = np.array(inter, dtype=int)
        self._Hab = np.array([M.homogeneous for k in range(L) for M in (self._Ma[k], self._Mb[k])]
                             ).reshape(2 * L, 4, 4)
        self._Z = np.ones((L, 2, 4))                     # (p_a, 1, p_b, 1) per loop
        self._oMi12 = _placement_view(self.model, self.data) if L else None
        self._rows = np.array(rows, dtype=int)
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
        E = np.zeros((8, 3, 9))
        E[3, :, :3] = np.eye(3)
        E[4:7, :, 3:6] = -skew_b(np.eye(3))
        E[4:7, :, 6] = np.eye(3)
        E[:3, :, 6] = -np.eye(3)
        self._E = E.reshape(8, 27)
        # -w_A x u + om x p_b_dot as one product: outer products (j, k, pair) @ _Ec
        eps = np.zeros((3, 3, 3))
        eps[0, 1, 2] = eps[1, 2, 0] = eps[2, 0, 1] = 1.0
        eps[0, 2, 1] = eps[2, 1, 0] = eps[1, 0, 2] = -1.0
        self._Ec = np.stack([-eps.transpose(1, 2, 0), eps.transpose(1, 2, 0)], axis=2).reshape(18, 3)
        self._R_ref = [np.eye(3) for _ in range(L)]
        # G: d theta / d theta_a (nv - nb rows scattered to nv), G_f with the base block
        self.G_f = np.zeros((self.nv, self.nb + self.n_act))
        self.G_f[:self.nb, :self.nb] = np.eye(self.nb)
        self.G_f[self.ia, self.nb + np.arange(self.n_act)] = 1.0
        if q_ref is None and robot is not None:
            q_ref = getattr(robot, "q_stand", None)
        self.q_ref = pin.neutral(m) if q_ref is None else np.array(q_ref, dtype=float)
        if self._ang_loops:   # angular rows are measured from the relative orientation at q_ref
            pin.forwardKinematics(m, self.data, self.q_ref)
            F = self._frames()
            for k in self._ang_loops:
                self._R_ref[k] = F[2 * k, :, :3].T @ F[2 * k + 1, :, :3]
        self.last_rcond = 1.0

    # ------------------------------------------------------------------ kinematics
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_oMi12"] = None                   # a view of this object's data: rebuilt on load
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.L:
            self._oMi12 = _placement_view(self.model, self.data)

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
                K[:, :, 8] = Om[:, :, 3] - cross3(Om[:, :, 2], Om[:, :, 0])   # dom - w_A x om
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
            for k in self._ang_loops:
                ek = pin.log3(Ra[k].T @ Rb[k] @ self._R_ref[k].T)
                sel = ang[kr[ang] == k]
                e[sel] = ek[ar[sel] - 3]
            if drift is not None:
                drift = drift.copy()
                drift[ang] = Ts[ang, 8]
        JT = None
        if jacobian or v is not None:
            JT = np.matmul(d.J.T, Trow.T)
            JT *= self._SrT
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
    def _factor(self, J: np.ndarray):
        """LU of J_lu with a reciprocal condition estimate (LAPACK gecon, 1-norm)."""
        return self._lu(J.T)

    def _lu(self, JT: np.ndarray):
        """:meth:`_factor` from J_l^T (nv x m): (lu, piv, rcond)."""
        Jlu = JT[self.iu].T                       # Fortran order, a copy LAPACK may overwrite
        if not Jlu.size:
            self.last_rcond = 1.0
            return Jlu, np.zeros(0, dtype=np.int32), 1.0
        anorm = _lange("1", Jlu)
        lu, piv, info = _getrf(Jlu, overwrite_a=1)
        rcond = _gecon(lu, anorm, "1")[0] if info == 0 else 0.0
        self.last_rcond = float(rcond)
        return lu, piv, rcond

    @staticmethod
    def _solve(fac, b):
        lu, piv, _ = fac
        return _getrs(lu, piv, b)[0]

    def _solve_jm(self, J: np.ndarray, fac, extra: Optional[np.ndarray] = None):
        """J_lu^-1 [J_la, extra] in one LAPACK call: (J_m, J_lu^-1 extra or None)."""
        na = self.n_act
        R = np.empty((na + (extra is not None), J.shape[0]))
        R[:na] = J.T[self.ia]
        if extra is not None:
            R[na] = extra
        X = _getrs(fac[0], fac[1], R.T, overwrite_b=1)[0]
        Jm = X[:, :na]
        np.negative(Jm, out=Jm)
        return Jm, (X[:, na] if extra is not None else None)

    def jm(self, state: LoopState, fac=None) -> np.ndarray:
        """J_m = -J_lu^-1 J_la (n_pas x n_act)."""
        fac = fac or self._factor(state.J)
        return self._solve_jm(state.J, fac)[0]

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

    def _projection_terms(self, J, drift_acc):
        """(J_m, drift_u = -J_lu^-1 J_l_dot v or None); raises SingularLinkage."""
        fac = self._factor(J)
        if fac[2] < 1e-12:
            raise SingularLinkage(f"J_lu is singular (rcond {fac[2]:.1e})")
        Jm, s = self._solve_jm(J, fac, drift_acc)
        if s is not None:
            np.negative(s, out=s)
        return Jm, s

    # ------------------------------------------------------------------ positions
    def close(self, q0: np.ndarray, *, tol: float = 1e-10, max_iter: int = 30, damping: float = 1e-6,
              max_step: float = 0.3) -> Tuple[np.ndarray, dict]:
        """Position closure: passive joints of ``q0`` moved (damped Newton, actuated joints and
        base held) until ||e_l||_inf <= tol. Warm-start from the previous solution to stay on
        the same assembly branch; each step is clipped to ``max_step`` rad (branch continuity).
        Returns (q, info) with info = {iterations, residual, converged, rcond}."""
        q = np.array(q0, dtype=float)
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
                info["rcond"] = self._factor(st.J)[2]
                return q, info
            if it == max_iter:
                break
            Ju = st.J[:, self.iu]
            mu = damping * min(1.0, r)
            dq = -np.linalg.solve(Ju.T @ Ju + mu * np.eye(self.n_pas), Ju.T @ st.error)
            step = np.max(np.abs(dq))
            if step > max_step:
                dq *= max_step / step
            q[self.qu] += dq
        info["converged"] = False
        return q, info

    def with_actuated(self, q: np.ndarray, q_a: Sequence[float]) -> np.ndarray:
        out = np.array(q, dtype=float)
        out[self.qa] = q_a
        return out

    # ------------------------------------------------------------------ completion
    def complete(self, q: np.ndarray, v_a: np.ndarray, a_a: Optional[np.ndarray] = None,
                 v_base: Optional[np.ndarray] = None, a_base: Optional[np.ndarray] = None):
        """Passive velocities (and accelerations) from the actuated ones at a closed q:
        v_u = J_m v_a, a_u = J_m a_a - J_lu^-1 J_l_dot v. Returns (v, a) in R^nv."""
        vm = np.concatenate([np.zeros(self.nb) if v_base is None else v_base, v_a])
        G, _ = self.projection(q)
        v = G @ vm
        if a_a is None:
            return v, None
        am = np.concatenate([np.zeros(self.nb) if a_base is None else a_base, a_a])
        G, drift = self.projection(q, v)
        return v, G @ am + drift

    # ------------------------------------------------------------------ dynamics
    def inverse_dynamics(self, q: np.ndarray, v: np.ndarray, a_a: np.ndarray,
                         G_f: Optional[np.ndarray] = None, drift: Optional[np.ndarray] = None):
        """Fixed base (base at rest): actuator forces tau_a = (G_f^T rnea(q, v, a))[nb:]
        with a = G_f [0; a_a] + drift ([Mingo Hoffman 2024, Sec. III-A]). Returns (tau_a, a)."""
        if G_f is None and self.L:
            # one pass and one LU of J_lu, G_f never formed:
            #   a_u = -J_lu^-1 (J_la a_a + J_l_dot v),  tau_a = tau_a' - J_la^T J_lu^-T tau_u'
            e, JT, dacc = self._evaluate(q, v)
            lu, piv, rcond = self._lu(JT)
            if rcond < 1e-12:
                raise SingularLinkage(f"J_lu is singular (rcond {rcond:.1e})")
            a_a = np.asarray(a_a, dtype=float)
            Jla_T = JT[self.ia]
            a = np.zeros(self.nv)
            a[self.ia] = a_a
            a[self.iu] = _getrs(lu, piv, np.negative(a_a @ Jla_T + dacc), overwrite_b=1)[0]
            tau = pin.rnea(self.model, self.data, q, v, a)
            lam = _getrs(lu, piv, tau[self.iu], trans=1, overwrite_b=1)[0]
            return tau[self.ia] - Jla_T @ lam, a
        if G_f is None:
            G_f, drift = self.projection(q, v)
        a = G_f[:, self.nb:] @ a_a
        if drift is not None:
            a = a + drift
        tau = pin.rnea(self.model, self.data, q, v, a)
        return G_f[:, self.nb:].T @ tau, a

    # ------------------------------------------------------------------ actuators
    def transmissions(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lead, efficiency, max_force) per actuated joint (lead nan: no screw)."""
        n = self.n_act
        lead, eta, fmax = np.full(n, np.nan), np.ones(n), np.full(n, np.inf)
        if self.spec is not None:
            for i, name in enumerate(self.actuated_joints):
                t = self.spec.transmissions.get(name)
                if t is not None:
                    lead[i], eta[i], fmax[i] = t.lead, t.efficiency, t.max_force
        return lead, eta, fmax

    def motor_torque(self, force: np.ndarray) -> np.ndarray:
        """Motor torque producing each actuator force through its ball screw:
        tau_m = F L / (2 pi eta) ([Mingo Hoffman 2024, Sec. VI-B]). Joints without a screw pass through."""
        lead, eta, _ = self.transmissions()
        return np.where(np.isnan(lead), force, force * np.nan_to_num(lead) / (2 * math.pi * eta))

    def actuator_force(self, motor_torque: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`motor_torque`: F = tau_m 2 pi eta / L."""
        lead, eta, _ = self.transmissions()
        safe = np.where(np.isnan(lead), 1.0, lead)
        return np.where(np.isnan(lead), motor_torque, motor_torque * 2 * math.pi * eta / safe)

    def force_limits(self) -> np.ndarray:
        """Actuator force limit per actuated joint: the screw's max_force, else the URDF effort."""
        _, _, fmax = self.transmissions()
        eff = self.model.effortLimit[self.ia]
        return np.where(np.isfinite(fmax), fmax, eff)


# ============================================================================ floating base
@dataclass
class IDResult:
    """One constrained inverse-dynamics solution ([Mingo Hoffman 2024, Sec. III-B, Eqs. (25)-(29), Appendix B])."""
    dv: np.ndarray               # nu_dot (nv)
    forces: np.ndarray           # contact point forces, world axes (3c)
    tau: np.ndarray              # actuator forces (n_act), as solved
    lam: np.ndarray              # loop multipliers (m)
    tau_joint: Optional[np.ndarray]   # serial-equivalent joint torques
    motor_torque: np.ndarray     # through lead and efficiency
    saturated: np.ndarray        # bool per actuator: |tau| at the force limit
    status: str
    form: str                    # "three-step" or "projected"


def contact_points(model: pin.Model, data: pin.Data, contacts, q=None, v=None):
    """(J_c (3c x nv), J_c_dot v (3c)) of every contact point, world axes, after
    ``forwardKinematics(q, v, 0)`` and ``computeJointJacobians`` have run on ``data``."""
    rows, bias = [], []
    LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    for c in contacts:
        fid = model.getFrameId(c.frame)
        J = pin.getFrameJacobian(model, data, fid, LWA)
        R = data.oMf[fid].rotation
        a0 = pin.getFrameClassicalAcceleration(model, data, fid, LWA)
        vel = pin.getFrameVelocity(model, data, fid, LWA)
        w, alpha = vel.angular, a0.angular
        for p in c.points:
            r = R @ p
            rx = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
            rows.append(J[:3] - rx @ J[3:])
            bias.append(a0.linear + np.cross(alpha, r) + np.cross(w, np.cross(w, r)))
    if not rows:
        return np.zeros((0, model.nv)), np.zeros(0)
    return np.vstack(rows), np.concatenate(bias)


def _refine_active_set(P, c, A, l, u, x, y, tol: float = 1e-7):
    """Exact solution on the active set OSQP found: the KKT system of the equality-constrained
    QP (equalities and active bounds), solved by least squares since contact rows are
    redundant (4 points per foot give rank 6). Gives the optimum to machine precision, so the
    three-step and projected forms can be compared to 1e-9."""
    Ax = A @ x
    lower = (np.abs(Ax - l) < tol * (1 + np.abs(l))) & (y < 0)
    upper = (np.abs(Ax - u) < tol * (1 + np.abs(u))) & (y > 0)
    eq = np.isclose(l, u)
    act = eq | lower | upper
    b = np.where(upper & ~eq, u, l)[act]
    # diagonal scaling (variables by sqrt(diag P), rows by their norm): the weights span
    # many decades (base task vs. force regularisation), the scaled KKT system does not
    dvar = 1.0 / np.sqrt(np.maximum(np.diag(P), 1e-300))
    Ps = P * dvar[:, None] * dvar[None, :]
    As = A[act] * dvar[None, :]
    rs = 1.0 / np.maximum(np.linalg.norm(As, axis=1), 1e-300)
    As, b = As * rs[:, None], b * rs
    n, k = P.shape[0], As.shape[0]
    K = np.block([[Ps, As.T], [As, np.zeros((k, k))]])
    sol = np.linalg.lstsq(K, np.concatenate([-c * dvar, b]), rcond=None)[0]
    xr = sol[:n] * dvar
    # keep the refinement only if it is feasible (the active set was right)
    slack = 1e-8 * (1 + np.abs(A @ xr))
    if np.all(A @ xr >= l - slack) and np.all(A @ xr <= u + slack):
        return xr
    return x


class ClosedChainInverseDynamics:
    """Floating-base constrained inverse dynamics with contacts ([Mingo Hoffman 2024, Sec. III-B, Eqs. (25)-(29), Appendix B]).

    QP over (nu_dot, F) (three-step form) or (nu_dot_m, F) (projected form):
        min ||nu_dot_base - a_base_ref||^2 + eps ||nu_dot||^2 + gamma ||F||^2
        s.t. base rows of the dynamics, contact accelerations zero, loop accelerations zero
             (three-step only: the projected form has them built in), linearised friction
             pyramids F_z >= 0, |F_x|, |F_y| <= mu F_z, and the actuator force limits.
    then lambda = J_lu^-T (M_u nu_dot + h_u - J_cu^T F)                          (eq. 28)
         tau    = M_a nu_dot + h_a - J_ca^T F - J_la^T lambda                     (eq. 29)
    or, projected, tau = [G_f^T (M nu_dot + h - J_c^T F)]_a                      (eqs. 67-70).
    The base task is on the spatial base acceleration (Pinocchio's nu_dot[:6], base frame).
    """

    def __init__(self, robot, kin: Optional[LoopClosureKinematics] = None, eps: float = 1e-5,
                 gamma: float = 1e-6, mu: Optional[float] = None, force_limits: bool = True):
        self.robot = robot
        self.kin = kin or LoopClosureKinematics(robot)
        self.model = self.kin.model
        self.data = self.model.createData()
        self.eps, self.gamma = eps, gamma
        self.mu = robot.friction if mu is None else mu
        self.force_limits = force_limits
        m = self.model
        serial = [n for leg in robot.legs for n in leg.joint_names(m)]
        self.serial_joints = [n for n in serial if n in set(self.kin.passive_joints)]
        self.i_serial = np.array([m.joints[m.getJointId(n)].idx_v for n in self.serial_joints], dtype=int)

    def terms(self, q, v, contacts):
        """M, h, J_c, J_c_dot v, loop state, (G_f, drift) at (q, v)."""
        m, d = self.model, self.data
        M = pin.crba(m, d, q)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.nonLinearEffects(m, d, q, v)
        pin.forwardKinematics(m, d, q, v, np.zeros(m.nv))
        pin.computeJointJacobians(m, d, q)
        pin.updateFramePlacements(m, d)
        Jc, dJc = contact_points(m, d, contacts)
        st = self.kin.compute(q, v)
        G_f, drift = self.kin.projection(q, v, st)
        return M, h, Jc, dJc, st, G_f, drift

    def serial_torques(self, G_f: np.ndarray, tau: np.ndarray) -> Optional[np.ndarray]:
        """tau_j = (P J_m)^-T tau: serial-equivalent joint torques doing the same power."""
        Js = G_f[self.i_serial, self.kin.nb:]
        if Js.shape[0] != Js.shape[1]:
            return None
        return np.linalg.solve(Js.T, tau)

    def solve(self, q, v, a_base_ref=None, contacts=None, form: str = "three-step") -> IDResult:
        import osqp
        from scipy import sparse
        kin = self.kin
        contacts = self.robot.contacts if contacts is None else contacts
        M, h, Jc, dJc, st, G_f, drift = self.terms(q, v, contacts)
        nv, nb, na, nc = kin.nv, kin.nb, kin.n_act, Jc.shape[0]
        a_ref = np.zeros(6) if a_base_ref is None else np.asarray(a_base_ref, float)
        # nu_dot = Z x + z0 with x the QP's acceleration variables
        if form == "three-step":
            Z, z0 = np.eye(nv), np.zeros(nv)
        elif form == "projected":
            Z, z0 = G_f, drift
        else:
            raise ValueError(form)
        nx = Z.shape[1]
        n = nx + nc
        # cost 1/2 x^T P x + c^T x
        Sb = np.zeros((6, nv))
        Sb[:, :6] = np.eye(6)
        A_b = Sb @ Z
        P = np.zeros((n, n))
        c = np.zeros(n)
        P[:nx, :nx] = 2 * (A_b.T @ A_b + self.eps * Z.T @ Z)
        c[:nx] = 2 * (A_b.T @ (Sb @ z0 - a_ref) + self.eps * Z.T @ z0)
        P[nx:, nx:] = 2 * self.gamma * np.eye(nc)
        # equalities
        eq_A, eq_b = [], []
        row = np.zeros((6, n))                                       # base rows (26a)
        row[:, :nx] = M[:6] @ Z
        row[:, nx:] = -Jc[:, :6].T
        eq_A.append(row)
        eq_b.append(-(M[:6] @ z0 + h[:6]))
        if nc:                                                       # contacts (25b)
            row = np.zeros((nc, n))
            row[:, :nx] = Jc @ Z
            eq_A.append(row)
            eq_b.append(-(Jc @ z0 + dJc))
        if form == "three-step" and kin.m:                           # loops (25c)
            row = np.zeros((kin.m, n))
            row[:, :nx] = st.J
            eq_A.append(row)
            eq_b.append(-st.drift_acc)
        A_eq, b_eq = np.vstack(eq_A), np.concatenate(eq_b)
        # inequalities: friction pyramids, actuator limits
        in_A, lo, hi = [], [], []
        for i in range(nc // 3):
            fr = np.zeros((5, n))
            k = nx + 3 * i
            fr[0, k + 2] = 1.0
            fr[1, [k, k + 2]] = (1.0, self.mu)
            fr[2, [k, k + 2]] = (-1.0, self.mu)
            fr[3, [k + 1, k + 2]] = (1.0, self.mu)
            fr[4, [k + 1, k + 2]] = (-1.0, self.mu)
            in_A.append(fr)
            lo.append(np.zeros(5))
            hi.append(np.full(5, np.inf))
        Ga = G_f[:, nb:]
        if self.force_limits and na:                                 # tau linear in (x, F)
            T = np.zeros((na, n))
            T[:, :nx] = Ga.T @ M @ Z
            T[:, nx:] = -Ga.T @ Jc.T
            t0 = Ga.T @ (M @ z0 + h)
            fmax = kin.force_limits()
            in_A.append(T)
            lo.append(-fmax - t0)
            hi.append(fmax - t0)
        A = np.vstack([A_eq] + in_A)
        l = np.concatenate([b_eq] + lo)
        u = np.concatenate([b_eq] + hi)
        solver = osqp.OSQP()
        solver.setup(sparse.csc_matrix(np.triu(P)), c, sparse.csc_matrix(A), l, u, verbose=False,
                     eps_abs=1e-10, eps_rel=1e-10, max_iter=20000, polishing=True,
                     polish_refine_iter=10)
        res = solver.solve()
        status = res.info.status
        x = res.x
        if status == "solved":
            x = _refine_active_set(P, c, A, l, u, res.x, res.y)
        dv = Z @ x[:nx] + z0
        F = x[nx:]
        rhs = M @ dv + h - Jc.T @ F
        if form == "three-step":
            lam = np.linalg.solve(st.J[:, kin.iu].T, rhs[kin.iu]) if kin.m else np.zeros(0)
            tau = rhs[kin.ia] - st.J[:, kin.ia].T @ lam
        else:
            tau = Ga.T @ rhs
            lam = np.linalg.solve(st.J[:, kin.iu].T, rhs[kin.iu]) if kin.m else np.zeros(0)
        fmax = kin.force_limits()
        return IDResult(dv, F, tau, lam, self.serial_torques(G_f, tau), kin.motor_torque(tau),
                        np.abs(tau) >= fmax * (1 - 1e-6), status, form)

"""Constrained dynamics of closed linkages ([Mingo Hoffman 2024, Sec. III]): fixed-base inverse
dynamics, the actuator-force <-> motor-torque mapping, and floating-base constrained inverse
dynamics with contacts (three-step and projected forms). The loop kinematics they use are
:class:`hybrid_dynamics.model.loop_kinematics.LoopKinematics`.

Fixed base, loops that determine every passive joint (r_u = n_u; rows possibly dependent):

    a_u   = -J_lu^+ (J_la a_a + J_l_dot v)
    tau_a = tau'_a - J_la^T lambda,  lambda = J_lu^+T tau'_u,  tau' = rnea(q, v, a) - tau_s
                                                   ([Mingo Hoffman 2024, Eqs. (28)-(29)])

With free internal motions (r_u < n_u) their accelerations are not set by the actuators but
by the dynamics, with zero force on every passive joint: a_u, tau_a and the multipliers of r_l
independent rows W^T J_l (W: leading left singular vectors of J_l) solve together

    M_u a_u - S_a^T tau_a - J_r^T lambda = -(M_a a_a + h),   J_r,u a_u = -(J_r,a a_a + W^T J_l_dot v)

in least squares (least norm for motions without inertia), with h less the springs' forces tau_s
of passive joints (``springs`` of the loop YAML, MJCF joint stiffness; Cassie's shin and heel).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
import osqp
import pinocchio as pin
from scipy import sparse

from ..model.loop_kinematics import LoopKinematics, LoopState, SingularLinkage

__all__ = ["LoopClosureKinematics", "LoopState", "SingularLinkage", "ClosedChainInverseDynamics",
           "IDResult", "contact_points"]


class LoopClosureKinematics(LoopKinematics):
    """:class:`LoopKinematics` of a robot (``robot.loops``, ``robot.q_stand``) with its fixed-base
    inverse dynamics (:meth:`inverse_dynamics`), actuator mappings (:meth:`motor_torque`,
    :meth:`actuator_force`, :meth:`force_limits`) and the free internal motions that carry
    inertia (:meth:`inertial_free_motions`)."""

    # a free internal motion whose inertia is below this fraction of the largest joint-space
    # diagonal entry of M carries none (a massless link): least norm, not a dynamic DoF. Rod
    # spins are kept: Cassie-like's (1e-6 of the largest entry) change the actuated
    # accelerations by 0.3 % when dropped
    FREE_INERTIA = 1e-10

    def __init__(self, robot, loops=None, model: Optional[pin.Model] = None, q_ref=None, measured=()):
        if q_ref is None and robot is not None:
            q_ref = getattr(robot, "q_stand", None)
        super().__init__(model if model is not None else robot.model,
                         loops if loops is not None else getattr(robot, "loops", None), q_ref, measured)
        springs = self.spec.springs if self.spec is not None else {}
        m = self.model
        self._spring_v = np.array([m.joints[m.getJointId(n)].idx_v for n in springs], dtype=int)
        self._spring_q = np.array([m.joints[m.getJointId(n)].idx_q for n in springs], dtype=int)
        self._spring_k, self._spring_rest, self._spring_d = (
            np.array([[getattr(s_, a) for s_ in springs.values()] for a in ("stiffness", "rest", "damping")])
            if springs else np.zeros((3, 0)))
        self.n_inertial = 0
        if self.n_free:
            self.factor(self.compute(self.q_ref).J.T)
            M = self._mass(self.q_ref)
            inertia = np.linalg.eigvalsh(self.last_null.T @ M[np.ix_(self.iu, self.iu)] @ self.last_null)
            self.n_inertial = int(np.sum(inertia > self.FREE_INERTIA * np.diag(M)[self.nb:].max()))

    @property
    def has_springs(self) -> bool:
        """Whether any passive joint carries a spring (:meth:`spring_forces` not always zero)."""
        return bool(self._spring_v.size)

    def spring_forces(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Generalized forces of the passive joints' springs (nv): -k (q - rest) - d v on each
        spring joint (``springs`` of the loop YAML, MJCF joint stiffness), zero elsewhere."""
        tau = np.zeros(self.nv)
        if self._spring_v.size:
            tau[self._spring_v] = -self._spring_k * (q[self._spring_q] - self._spring_rest) \
                - self._spring_d * v[self._spring_v]
        return tau

    def _mass(self, q: np.ndarray) -> np.ndarray:
        M = pin.crba(self.model, self.data, q)
        return np.triu(M) + np.triu(M, 1).T

    def inertial_free_motions(self, M: np.ndarray) -> np.ndarray:
        """Orthonormal basis (n_u x n_inertial) of the free internal motions with inertia at the
        last factored state (after :meth:`projection`): the null space of J_lu restricted to the
        eigenvectors of its inertia N^T M_uu N with the n_inertial largest eigenvalues. Their
        accelerations follow from the dynamics (zero generalized force along them), as in
        Pinocchio's constraintDynamics; the others (rod spins) by least norm."""
        N = self.last_null
        if not self.n_inertial:
            return N[:, :0]
        Muu = M[np.ix_(self.iu, self.iu)]
        _, V = np.linalg.eigh(N.T @ Muu @ N)
        return N @ V[:, -self.n_inertial:]

    def inverse_dynamics(self, q: np.ndarray, v: np.ndarray, a_a: np.ndarray,
                         G_f: Optional[np.ndarray] = None, drift: Optional[np.ndarray] = None):
        """Fixed base (base at rest): actuator forces for the actuated accelerations ``a_a`` at a
        closed (q, v) (module doc). Returns (tau_a, a). With ``G_f`` (and ``drift``) given:
        tau_a = (G_f^T rnea(q, v, a))[nb:], a = G_f [0; a_a] + drift."""
        a_a = np.asarray(a_a, dtype=float)
        if G_f is None and self.L and self.n_free:
            return self._inverse_dynamics_free(q, v, a_a)
        if G_f is None and self.L:
            # one pass and one factorisation of J_lu, G_f never formed:
            #   a_u = -J_lu^+ (J_la a_a + J_l_dot v),  tau_a = tau_a' - J_la^T J_lu^+T tau_u'
            e, JT, dacc = self._evaluate(q, v)
            fac = self.factor(JT)
            if fac.rcond < 1e-12:
                raise SingularLinkage(f"J_lu is singular (rcond {fac.rcond:.1e})")
            Jla_T = JT[self.ia]
            a = np.zeros(self.nv)
            a[self.ia] = a_a
            a[self.iu] = fac.solve(np.negative(a_a @ Jla_T + dacc))
            tau = pin.rnea(self.model, self.data, q, v, a) - self.spring_forces(q, v)
            lam = fac.solve_t(tau[self.iu])                 # [Mingo Hoffman 2024, Eq. (28)]
            return tau[self.ia] - Jla_T @ lam, a            # [Mingo Hoffman 2024, Eq. (29)]
        if G_f is None:
            G_f, drift = self.projection(q, v)
        a = G_f[:, self.nb:] @ a_a
        if drift is not None:
            a = a + drift
        tau = pin.rnea(self.model, self.data, q, v, a) - self.spring_forces(q, v)
        return G_f[:, self.nb:].T @ tau, a

    def _inverse_dynamics_free(self, q, v, a_a):
        """Free internal motions: a_u, tau_a and lambda together (module doc)."""
        st = self.compute(q, v)
        U, s, _ = np.linalg.svd(st.J, full_matrices=False)
        W = U[:, :self.rank_l]
        Jr, dr = W.T @ st.J, W.T @ st.drift_acc
        M = self._mass(q)
        h = pin.nonLinearEffects(self.model, self.data, q, v) - self.spring_forces(q, v)
        nb, nu, na, r = self.nb, self.n_pas, self.n_act, self.rank_l
        rows = slice(nb, self.nv)                     # the base is held: its rows carry no equation
        K = np.zeros((self.nv - nb + r, nu + na + r))
        K[:self.nv - nb, :nu] = M[rows][:, self.iu]
        K[self.ia - nb, nu + np.arange(na)] = -1.0
        K[:self.nv - nb, nu + na:] = -Jr[:, rows].T
        K[self.nv - nb:, :nu] = Jr[:, self.iu]
        rhs = np.concatenate([-(M[rows][:, self.ia] @ a_a + h[rows]), -(Jr[:, self.ia] @ a_a + dr)])
        x = np.linalg.lstsq(K, rhs, rcond=1e-12)[0]
        a = np.zeros(self.nv)
        a[self.ia], a[self.iu] = a_a, x[:nu]
        return x[nu:nu + na], a

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

    Free internal motions with inertia (N, :meth:`LoopClosureKinematics.inertial_free_motions`)
    add the equalities N^T (M nu_dot + h - J_c^T F) = 0 (no actuator and no loop force acts
    along them), and the projected form's variables their accelerations.

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
        h = pin.nonLinearEffects(m, d, q, v) - self.kin.spring_forces(q, v)
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
        kin = self.kin
        contacts = self.robot.contacts if contacts is None else contacts
        M, h, Jc, dJc, st, G_f, drift = self.terms(q, v, contacts)
        nv, nb, na, nc = kin.nv, kin.nb, kin.n_act, Jc.shape[0]
        a_ref = np.zeros(6) if a_base_ref is None else np.asarray(a_base_ref, float)
        # free internal motions with inertia (Cassie's springs): their accelerations follow from
        # the dynamics, N^T (M nu_dot + h - J_c^T F) = 0 (no actuator, no loop force: J_l N = 0)
        Nf = np.zeros((nv, kin.n_inertial))
        Nf[kin.iu] = kin.inertial_free_motions(M)
        # nu_dot = Z x + z0 with x the QP's acceleration variables
        if form == "three-step":
            Z, z0 = np.eye(nv), np.zeros(nv)
        elif form == "projected":
            Z, z0 = np.hstack([G_f, Nf]), drift
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
        if Nf.shape[1]:                                              # free motions' rows
            row = np.zeros((Nf.shape[1], n))
            row[:, :nx] = Nf.T @ M @ Z
            row[:, nx:] = -(Jc @ Nf).T
            scale = 1.0 / np.maximum(np.abs(row).max(axis=1), 1e-300)  # a rod's spin: rows of 1e-6
            eq_A.append(row * scale[:, None])
            eq_b.append(-(Nf.T @ (M @ z0 + h)) * scale)
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
            lam = kin.factor(st.J.T).solve_t(rhs[kin.iu]) if kin.m else np.zeros(0)
            tau = rhs[kin.ia] - st.J[:, kin.ia].T @ lam
        else:
            tau = Ga.T @ rhs
            lam = kin.factor(st.J.T).solve_t(rhs[kin.iu]) if kin.m else np.zeros(0)
        fmax = kin.force_limits()
        return IDResult(dv, F, tau, lam, self.serial_torques(G_f, tau), kin.motor_torque(tau),
                        np.abs(tau) >= fmax * (1 - 1e-6), status, form)

"""Hamel equations on SE(3) x R^n for any free-flyer Pinocchio model [Feurstein 2021, Sec. 3.1-3.2].

Velocity nu = [nu_b; qd] with nu_b the base body twist [linear; angular] (Pinocchio's LOCAL
free-flyer velocity). The equations of motion [Feurstein 2021, Eq. (3.38)]

    M nu_dot + C nu + G = [F_b; tau]

with M = crba(q) (depends on the joint coordinates only) and the *Hamel* (non-passive) Coriolis
matrix [Feurstein 2021, Eq. (3.39)]

    C_b  = Mdot_bb - a_b^T M_bb             C_bq = Mdot_bq - a_b^T M_bq
    C_qb = Mdot_bq^T - 1/2 M_{b,q}          C_q  = Mdot_qq - M_{bq,q} - 1/2 M_{q,q}

where a_b = ad(nu_b), row i of M_{b,q} is nu_b^T dM_bb/dq_i, of M_{bq,q} nu_b^T dM_bq/dq_i and of
M_{q,q} qd^T dM_qq/dq_i. The gradient matrices are exact, without finite differences: (dM/dq_i) a
is column 6+i of computeRNEADerivatives(q, 0, a) with gravity off (tau = M(q) a there), and
Mdot = C_pin + C_pin^T with C_pin = computeCoriolisMatrix. The thesis's proof (3.57)/(3.58)
moves -M_{bq,q} between C_qb and C_q; C nu and the first six rows (the ones the decoupling
result uses) are the same either way; this module keeps (3.39).

The passive Coriolis matrix [Feurstein 2021, Eq. (3.83)] C^p = sum_j J_j^T (Psi_j J_j +
Lambda_j Jdot_j), Psi_j = Lambda_j a_j - a_j^T Lambda_j, a_j = ad(nu_j), with J_j the LOCAL joint
Jacobian and Lambda_j the spatial inertia at joint frame j (the thesis prints its lower-left
block as -m o^, a sign typo: Lambda is symmetric). Mdot = C^p + C^p^T; C^p differs from
Pinocchio's computeCoriolisMatrix, though both give the same C nu.

Momenta [Feurstein 2021, Sec. 3.2]: h_b = M_bb nu_b + M_bq qd; the CoM frame c aligned with
the inertial frame, H_cb = (R_ib, o_ib - o_ic); h_c = A_cb^{-T} h_b (Pinocchio's centroidal
momentum); A_g = A_cb^{-T} [M_bb M_bq] (ccrba's Ag); I_g = A_cb^{-T} M_bb A_cb^{-1}; the locked
velocity nu_b^loc = nu_b + M_bb^{-1} M_bq qd = M_bb^{-1} h_b.

A Pinocchio *planar* root joint (configuration [x, y, cos th, sin th], velocity the SE(2) body
twist [v_x, v_y, w]) gives the same equations on SE(2) x R^n [Feurstein 2021, Sec. 4.1] with
the SE(2) adjoints (a_nu = [[w S, -S v], [0, 0]]): the planar hoppers use this path.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..errors import InputError
from .lie import Ad2, Ad_inv, S2, ad, ad2, vee3


@dataclass
class Centroidal:
    """The centroidal quantities at one state (all in the inertially aligned CoM frame c)."""
    com: np.ndarray            # o_ic
    A_cb: np.ndarray           # big adjoint of H_cb: nu_c = A_cb nu_b (6 x 6, or 3 x 3 on SE(2))
    h_c: np.ndarray            # [linear; angular] momentum about the CoM
    A_g: np.ndarray            # centroidal momentum matrix, h_c = A_g nu
    I_g: np.ndarray            # locked (composite) inertia about the CoM


def check_state(nq: int, nv: int, q, v=None) -> tuple:
    """q (and v) as float arrays of the model's sizes, finite, else InputError naming them."""
    q = np.asarray(q, float)
    if q.shape != (nq,):
        raise InputError(f"q has shape {q.shape}, the model needs ({nq},)", field="q")
    if not np.isfinite(q).all():
        raise InputError(f"q has non-finite entries at {np.flatnonzero(~np.isfinite(q)).tolist()}", field="q")
    if v is None:
        return q, None
    v = np.asarray(v, float)
    if v.shape != (nv,):
        raise InputError(f"v has shape {v.shape}, the model needs ({nv},)", field="v")
    if not np.isfinite(v).all():
        raise InputError(f"v has non-finite entries at {np.flatnonzero(~np.isfinite(v)).tolist()}", field="v")
    return q, v


class FloatingHamel:
    """M, Hamel C, passive C^p, G and the momenta of a free-flyer (SE(3)) or planar (SE(2))
    floating-base model, by Pinocchio."""

    def __init__(self, model: pin.Model):
        roots = {"JointModelFreeFlyer": 6, "JointModelPlanar": 3}
        if model.njoints < 2 or model.joints[1].shortname() not in roots:
            raise InputError("the decoupled dynamics need a model whose root joint is a free flyer or "
                             "a planar joint", field="root_joint")
        self.nb = roots[model.joints[1].shortname()]
        self._ad = ad if self.nb == 6 else ad2
        self.model = model
        self.data = model.createData()
        self._zero_g = pin.Model(model)
        self._zero_g.gravity = pin.Motion.Zero()
        self._zero_g_data = self._zero_g.createData()
        self.n = model.nv - self.nb

    # ------------------------------------------------------------------ inertia
    def mass_matrix(self, q) -> np.ndarray:
        """M = crba(q), symmetrised from its upper triangle [Feurstein 2021, Eq. (3.31)]."""
        q, _ = check_state(self.model.nq, self.model.nv, q)
        M = pin.crba(self.model, self.data, q)
        return np.triu(M) + np.triu(M, 1).T

    def mass_matrix_derivative(self, q, v) -> np.ndarray:
        """Mdot = sum_i dM/dq_i qd_i = C_pin + C_pin^T."""
        q, v = check_state(self.model.nq, self.model.nv, q, v)
        Cp = pin.computeCoriolisMatrix(self.model, self.data, q, v)
        return Cp + Cp.T

    def gradient_product(self, q, a) -> np.ndarray:
        """(dM/dq_i) a for every joint i as the columns of an (nv x n) matrix (RNEA derivatives,
        gravity off, zero velocity: tau = M(q) a)."""
        dtau_dq = pin.computeRNEADerivatives(self._zero_g, self._zero_g_data, q, np.zeros(self.model.nv),
                                             np.asarray(a, float))[0]
        return np.array(dtau_dq[:, self.nb:])

    def gravity(self, q) -> np.ndarray:
        q, _ = check_state(self.model.nq, self.model.nv, q)
        return pin.computeGeneralizedGravity(self.model, self.data, q).copy()

    # ------------------------------------------------------------------ Coriolis
    def hamel_coriolis(self, q, v, M: np.ndarray = None, Mdot: np.ndarray = None) -> np.ndarray:
        """The non-passive Hamel C of [Feurstein 2021, Eq. (3.39)] (nv x nv)."""
        q, v = check_state(self.model.nq, self.model.nv, q, v)
        M = self.mass_matrix(q) if M is None else M
        Mdot = self.mass_matrix_derivative(q, v) if Mdot is None else Mdot
        nv, b = self.model.nv, self.nb
        nub, qd = v[:b], v[b:]
        D_b = self.gradient_product(q, np.concatenate([nub, np.zeros(self.n)]))   # cols: dM/dq_i [nu_b; 0]
        D_q = self.gradient_product(q, np.concatenate([np.zeros(b), qd]))          # cols: dM/dq_i [0; qd]
        M_b_q, M_bq_q, M_q_q = D_b[:b].T, D_b[b:].T, D_q[b:].T                     # rows i of (3.39)
        ab_T = self._ad(nub).T
        C = np.empty((nv, nv))
        C[:b, :b] = Mdot[:b, :b] - ab_T @ M[:b, :b]
        C[:b, b:] = Mdot[:b, b:] - ab_T @ M[:b, b:]
        C[b:, :b] = Mdot[b:, :b] - 0.5 * M_b_q
        C[b:, b:] = Mdot[b:, b:] - M_bq_q - 0.5 * M_q_q
        return C

    def passive_coriolis(self, q, v) -> np.ndarray:
        """The thesis's passive C^p = sum_j J_j^T (Psi_j J_j + Lambda_j Jdot_j) [Feurstein 2021, Eq. (3.83)]."""
        q, v = check_state(self.model.nq, self.model.nv, q, v)
        model, data = self.model, self.data
        pin.computeJointJacobiansTimeVariation(model, data, q, v)
        pin.forwardKinematics(model, data, q, v)
        C = np.zeros((model.nv, model.nv))
        for j in range(1, model.njoints):
            J = pin.getJointJacobian(model, data, j, pin.LOCAL)
            Jd = pin.getJointJacobianTimeVariation(model, data, j, pin.LOCAL)
            L = model.inertias[j].matrix()
            a = ad(data.v[j].vector)
            C += J.T @ ((L @ a - a.T @ L) @ J + L @ Jd)      # spatial sum: also right for a planar root
        return C

    # ------------------------------------------------------------------ momenta
    def base_momentum(self, q, v, M: np.ndarray = None) -> np.ndarray:
        """h_b = dL/dnu_b = M_bb nu_b + M_bq qd [Feurstein 2021, Eq. (3.40)]."""
        q, v = check_state(self.model.nq, self.model.nv, q, v)
        M = self.mass_matrix(q) if M is None else M
        return M[:self.nb] @ v

    def locked_velocity(self, q, v, M: np.ndarray = None) -> np.ndarray:
        """nu_b^loc = nu_b + M_bb^{-1} M_bq qd [Feurstein 2021, Sec. 3.2.3]."""
        M = self.mass_matrix(q) if M is None else M
        return np.linalg.solve(M[:self.nb, :self.nb], self.base_momentum(q, v, M))

    def centroidal(self, q, v, M: np.ndarray = None) -> Centroidal:
        """h_c, A_g, I_g in the inertially aligned CoM frame [Feurstein 2021, Prop. 3.2.1]."""
        q, v = check_state(self.model.nq, self.model.nv, q, v)
        M = self.mass_matrix(q) if M is None else M
        b = self.nb
        Mbb = M[:b, :b]
        if b == 6:
            R = pin.Quaternion(q[6], *q[3:6]).normalized().toRotationMatrix()
            o_bc = vee3(Mbb[3:, :3]) / Mbb[0, 0]                       # lower-left block m o_bc^
            A_cb_invT = Ad_inv(R, -R @ o_bc).T                         # A_cb = Ad(R_ib, o_ib - o_ic)
        else:
            th = np.arctan2(q[3], q[2])
            R = np.array([[q[2], -q[3]], [q[3], q[2]]])
            o_bc = -S2 @ Mbb[:2, 2] / Mbb[0, 0]                        # upper-right block m S o_bc (4.9)
            A_cb_invT = np.linalg.inv(Ad2(th, -R @ o_bc)).T
        com = q[:len(o_bc)] + R @ o_bc                                 # o_ic = o_ib + R_ib o_bc
        A_g = A_cb_invT @ M[:b]
        I_g = A_cb_invT @ Mbb @ A_cb_invT.T
        return Centroidal(com=com, A_cb=np.linalg.inv(A_cb_invT.T), h_c=A_g @ v, A_g=A_g, I_g=I_g)

    def hamel_rhs_check(self, q, v, C: np.ndarray) -> np.ndarray:
        """C nu - (rnea(q, v, 0) - G): the residual of [Feurstein 2021, Prop. 3.1.1]."""
        b = pin.rnea(self.model, self.data, q, v, np.zeros(self.model.nv)) - self.gravity(q)
        return C @ v - b

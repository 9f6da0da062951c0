"""The CoM frame aligned with the locked velocity [Feurstein 2021, Sec. 3.2.4].

A frame c whose motion relative to the base is the locked velocity's joint part obeys the
right-trivialised alignment condition (Hdot_bc H_bc^{-1})^v = T(q) qd with T = M_bb^{-1} M_bq
(6 x n, columns T^i). Its translation follows the CoM by construction, so only R_bc is
integrated: Rdot_bc R_bc^T = (T_w qd)^. H_bc is a function of q (the frame is well defined)
if and only if [Feurstein 2021, Eq. (3.72)], after Saccon et al.,

    dT^i/dq_j - dT^j/dq_i + [T^i, T^j] = 0   for all i, j

(always true for n = 1). dT/dq_i = M_bb^{-1}(dM_bq/dq_i - dM_bb/dq_i T) is exact: the columns
of dM/dq_i come from RNEA derivatives (``FloatingHamel.gradient_product``). Asking for the frame
of a model where (3.72) fails raises InputError: its orientation would depend on the path.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .floating_hamel import FloatingHamel, check_state
from .lie import exp_so3, hat, vee

INTEGRABILITY_TOL = 1e-8


class LockedComFrame:
    """The connection T(q), its curvature (3.72) and the integrated orientation R_bc(q)."""

    def __init__(self, hamel: FloatingHamel):
        self.hamel = hamel
        model = hamel.model
        if model.nq != model.nv + 1:
            raise InputError("the locked CoM frame integrates along straight lines in joint space: every "
                             "joint below the free flyer must have one coordinate per velocity", field="joints")

    def connection(self, q) -> np.ndarray:
        M = self.hamel.mass_matrix(q)
        return np.linalg.solve(M[:6, :6], M[:6, 6:])

    def connection_derivatives(self, q) -> np.ndarray:
        """dT/dq_i for every joint i, shape (n, 6, n)."""
        q, _ = check_state(self.hamel.model.nq, self.hamel.model.nv, q)
        nv, n = self.hamel.model.nv, self.hamel.n
        M = self.hamel.mass_matrix(q)
        dM = np.empty((n, nv, nv))
        for k in range(nv):                                   # column k of every dM/dq_i
            dM[:, :, k] = self.hamel.gradient_product(q, np.eye(nv)[k]).T
        T = np.linalg.solve(M[:6, :6], M[:6, 6:])
        return np.linalg.solve(M[:6, :6], dM[:, :6, 6:] - dM[:, :6, :6] @ T)

    def curvature(self, q) -> np.ndarray:
        """F_ij = (dT^i/dq_j - dT^j/dq_i + [T^i^, T^j^])^v of (3.72), shape (n, n, 6)."""
        T = self.connection(q)
        dT = self.connection_derivatives(q)                   # dT[j][:, i] = dT^i/dq_j
        n = T.shape[1]
        F = np.zeros((n, n, 6))
        for i in range(n):
            for j in range(i + 1, n):
                Hi, Hj = hat(T[:, i]), hat(T[:, j])
                F[i, j] = dT[j][:, i] - dT[i][:, j] + vee(Hi @ Hj - Hj @ Hi)
                F[j, i] = -F[i, j]
        return F

    def integrability_residual(self, q) -> float:
        return float(np.abs(self.curvature(q)).max(initial=0.0))

    def orientation(self, q, q_ref, R_ref: np.ndarray = None, steps: int = 200) -> np.ndarray:
        """R_bc at q from R_bc(q_ref) = R_ref, integrated on SO(3) along the straight joint path
        (exponential midpoint rule); InputError if (3.72) fails on the path."""
        q, _ = check_state(self.hamel.model.nq, self.hamel.model.nv, q)
        q_ref, _ = check_state(self.hamel.model.nq, self.hamel.model.nv, q_ref)
        for s in np.linspace(0.0, 1.0, 5):
            residual = self.integrability_residual(q_ref + s * (q - q_ref))
            if residual > INTEGRABILITY_TOL:
                raise InputError(f"the CoM frame aligned with the locked velocity is not integrable for this "
                                 f"robot: the curvature of (3.72) is {residual:.3g} on the path, so R_bc "
                                 f"depends on the path; use the inertially aligned CoM frame", field="com_frame")
        R = np.eye(3) if R_ref is None else np.asarray(R_ref, float)
        dq = (q[7:] - q_ref[7:]) / steps
        for k in range(steps):
            qm = q_ref.copy()
            qm[7:] += (k + 0.5) * dq
            R = exp_so3(self.connection(qm)[3:] @ dq) @ R     # Rdot R^T = (T_w qd)^
        return R

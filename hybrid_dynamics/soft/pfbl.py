"""Partial feedback linearisation of the collocated dynamics of an underactuated soft-rigid
robot [Pustina 2024, Sec. 7.1] (the controller of Pustina et al. 2024 it cites).

With ``M qdd + h = A(q) u`` and actuation coordinates y(q) whose Jacobian is ``J_y = A^T``
(tendon contractions, chamber volumes, or actuated joints with ``A = S^T``), the paper writes
the law in decoupling coordinates theta = (y, z):

    u = (M_aa - M_au M_uu^-1 M_ua) a + c_a - M_au M_uu^-1 (c_u + g_u + s_u),
    a = ydd_d + K_D (yd_d - yd) + K_P (y_d - y).

For any complement z the Schur complement is ``(M_theta^-1)_aa^-1 = (J_y M^-1 J_y^T)^-1`` and
the terms in h and the output's bias give the same input written in q:

    u = Lambda (a - Jdot_y v + J_y M^-1 h),   Lambda = (J_y M^-1 J_y^T)^-1,

so that ``ydd = J_y qdd + Jdot_y v = a`` exactly: the output error obeys
``e'' + K_D e' + K_P e = 0``. This needs no inverse map q(theta); M and h come from one MID
call.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class CollocatedPFBL:
    """Gains ``kp``, ``kd`` (scalars or vectors over the outputs)."""
    kp: np.ndarray
    kd: np.ndarray

    def input(self, M, h, Jy, Jdot_v, y, yd, y_ref, yd_ref, ydd_ref) -> np.ndarray:
        """u for the state's (M, h, J_y, Jdot_y v, y, ydot) and the reference (y, yd, ydd)."""
        a = ydd_ref + self.kd * (yd_ref - yd) + self.kp * (y_ref - y)
        MinvJt = np.linalg.solve(M, Jy.T)
        Lam = np.linalg.inv(Jy @ MinvJt)
        return Lam @ (a - Jdot_v + MinvJt.T @ h)

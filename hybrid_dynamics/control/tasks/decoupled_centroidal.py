"""Centroidal task on the x-rows of the decoupled equations [Feurstein 2021, Eq. (3.80)].

The decoupling transform ``T = [[T_x, T_x K], [0, I]]``, ``K = M_bb^{-1} M_bq``, in the velocity
form ``T_x = A_cb`` (c: the CoM frame aligned with the inertial frame) makes the external
velocity ``v_x = A_cb nu_b^loc = [ċ; ω_loc]``: the CoM velocity and the locked angular velocity
of the whole robot, world axes. The x-rows of the transformed equations are

    M_x v̇_x + C_x v_x + G_x = F_x = T_x^{-T} F_b,    M_x = I_g,  C_x v_x = İ_g v_x,  G_x = [-m g; 0]

(:func:`~hybrid_dynamics.dynamics.decoupling.velocity_form_rows`). ``T_yx = 0`` keeps the joint
torques out of ``F_x`` [Feurstein 2021, Sec. 3.3.1] and the Hamel ``C_xy`` is zero [Feurstein
2021, Prop. 3.3.1], so with ``F_b = J_b^T f`` the contact forces' base wrench (``J_b`` the base
columns of the stance points' Jacobians), ``F_x = T_x^{-T} J_b^T f = sum_i [f_i; (p_i - c) x f_i]``
and the external acceleration depends on the contact forces alone (:func:`force_rows`):

    v̇_x = A_x f + c_x,   A_x = I_g^{-1} T_x^{-T} J_b^T,   c_x = -I_g^{-1} (G_x + İ_g v_x).

The task is ``|| W (v̇_x - v̇_x,des) ||^2`` with ``W^2 = diag(weight I3, angular_weight I3)`` and

    v̇_x,des = [c̈_ref + kp (c_ref - c) + kd (ċ_ref - ċ);
               ω̇_ref + kp_angular log(R_ref R^T) + kd_angular (ω_ref - ω_loc)],

R the base orientation. The linear rows are :class:`~.com.ComTask`'s exactly (I_g's linear
block is ``m I``); the angular rows regulate the locked angular velocity, i.e. the centroidal
angular momentum ``I_c ω_loc``, towards the base's reference motion (by default feed-forward
and damping only, with a small weight: a standing robot's ``ω_loc`` is a fraction of its base's,
the base orientation itself is the internal task's, :mod:`.internal_impedance`). Rows whose
reference is absent have zero weight. With no stance contact the task is inert (ballistic).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from .base import Task


def force_rows(state, layout):
    """(A_x, c_x) with ``v̇_x = A_x f_stance + c_x`` by the x-rows (no joint torque in them),
    computed once per cycle and stance pattern."""
    key = id(layout)
    rows = state.cache.get(key)
    if rows is None:
        x = state.decoupled_rows
        J_b = layout.Jf[:, :6] if isinstance(layout.f_stance, slice) else layout.Jf[layout.f_stance - layout.n, :6]
        c_x = -x.M_x_inv @ x.C_x_v_x
        c_x[:3] += state.gravity                                   # -I_g^{-1} G_x
        rows = state.cache[key] = ((x.M_x_inv @ x.T_x_invT) @ J_b.T, c_x)
    return rows


class DecoupledCentroidalTask(Task):
    name = "decoupled_centroidal"

    def __init__(self, config: dict):
        super().__init__(config)
        self.angular_weight = float(config["angular_weight"])
        self.kp_angular = float(config["kp_angular"])
        self.kd_angular = float(config["kd_angular"])

    def active(self, refs) -> bool:
        return (self.weight > 0.0 and refs.com is not None) or \
            (self.angular_weight > 0.0 and refs.base_orientation is not None)

    def rows(self, state, layout, refs):
        """(A, b, w): the task is ``|| diag(w)^(1/2) (A f_stance - b) ||^2`` (six rows)."""
        A, c_x = force_rows(state, layout)
        x = state.decoupled_rows
        b = -c_x
        w = np.zeros(6)
        if refs.com is not None:
            t = refs.com
            b[:3] += t.acceleration + self.kp * (t.position - state.com) + self.kd * (t.velocity - x.v_x[:3])
            w[:3] = self.weight
        if refs.base_orientation is not None:
            t = refs.base_orientation
            b[3:] += t.angular_acceleration + self.kd_angular * (t.angular_velocity - x.v_x[3:])
            if self.kp_angular:
                b[3:] += self.kp_angular * pin.log3(t.rotation() @ state.base_placement.rotation.T)
            w[3:] = self.angular_weight
        return A, b, w

    def add(self, H, g, state, layout, refs) -> None:
        if not layout.nf_stance:
            return
        A, b, w = self.rows(state, layout, refs)
        wAt = A.T * w
        H[layout.ff] += wAt @ A
        g[layout.f_stance] -= wAt @ b

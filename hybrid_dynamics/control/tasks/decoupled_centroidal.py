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
and the external acceleration depends on the contact forces alone:

    v̇_x = A_x f + c_x,   A_x = I_g^{-1} T_x^{-T} J_b^T  (:func:`force_rows`),
    c_x = -I_g^{-1} (G_x + İ_g v_x) = [g; -I_c^{-1} İ_c ω_loc].

The task is ``|| W (v̇_x - v̇_x,des) ||^2`` with ``W^2 = diag(weight I3, angular_weight I3)`` and

    v̇_x,des = [c̈_ref + kp (c_ref - c) + kd (ċ_ref - ċ);
               ω̇_ref + kp_angular log(R_ref R^T) + kd_angular (ω_ref - ω_loc)],

R the base orientation. The linear rows, ``c̈ = (1/m) sum_i f_i + g``, are :class:`~.com.ComTask`'s
exactly (I_g's linear block is ``m I``, constant): this task is a ComTask plus the angular
rows, which regulate the locked angular velocity, i.e. the centroidal angular momentum
``I_c ω_loc``, towards the base's reference motion (feed-forward and damping unless
``kp_angular``). They are off by default (``angular_weight`` 0): a standing robot's ``ω_loc`` is
a fraction of its base's (about 0.1 for jethexa, 0.8 for TALOS, whose feet hold the legs back),
so they compete with the base orientation, which is the internal task's
(:mod:`.internal_impedance`). Rows whose reference is absent have zero weight. With no stance
contact the task is inert (ballistic).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from .com import ComTask


def force_rows(state, layout) -> np.ndarray:
    """A_x: ``v̇_x = A_x f_stance + c_x`` by the x-rows (no joint torque in them), computed once
    per cycle and stance pattern."""
    key = id(layout)
    A_x = state.cache.get(key)
    if A_x is None:
        x = state.decoupled_rows
        J_b = layout.Jf[:, :6] if isinstance(layout.f_stance, slice) else layout.Jf[layout.f_stance - layout.n, :6]
        A_x = state.cache[key] = (x.M_x_inv @ x.T_x_invT) @ J_b.T
    return A_x


class DecoupledCentroidalTask(ComTask):
    name = "decoupled_centroidal"

    def __init__(self, config: dict):
        super().__init__(config)
        self.angular_weight = float(config["angular_weight"])
        self.kp_angular = float(config["kp_angular"])
        self.kd_angular = float(config["kd_angular"])
        self.constant_hessian = self.angular_weight == 0.0          # then the linear rows alone

    def active(self, refs) -> bool:
        return super().active(refs) or (self.angular_weight > 0.0 and refs.base_orientation is not None)

    def angular_rows(self, state, layout, refs):
        """(A, b): the angular x-rows ``I_c^{-1} (sum_i r_i x f_i - İ_c ω_loc) = ω̇_loc`` asked to
        equal ``ω̇_loc,des``, as ``A f_stance = b``."""
        x = state.decoupled_rows
        t = refs.base_orientation
        b = t.angular_acceleration + self.kd_angular * (t.angular_velocity - x.v_x[3:]) \
            + x.M_x_inv[3:, 3:] @ state.decoupled_coriolis[3:]                       # - c_x
        if self.kp_angular:
            b += self.kp_angular * pin.log3(t.rotation() @ state.base_rotation.T)
        return force_rows(state, layout)[3:], b

    def add(self, H, g, state, layout, refs) -> None:
        if not layout.nf_stance:
            return
        if refs.com is not None and self.weight > 0.0:
            self.add_hessian(H, layout)
            self.add_gradient(g, state, layout, refs)
        if refs.base_orientation is not None and self.angular_weight > 0.0:
            A, b = self.angular_rows(state, layout, refs)
            wAt = self.angular_weight * A.T
            H[layout.ff] += wAt @ A
            g[layout.f_stance] -= wAt @ b

"""Impedance of chosen frames written in decoupled coordinates: J^int for the joints, the
x-rows for the rest [Feurstein 2021, Sec. 3.3.4].

The axiomatic decomposition splits a frame's twist into an external part, the twist it would
have if the robot were locked and moved with ``nu_b^loc``, and an internal part,
``nu_j = nu_j^ext + nu_j^int`` with ``nu_j^int = J_j^int qd``, ``J_j^int = J_jq - A_jb K``. In
world axes at the frame origin (LOCAL_WORLD_ALIGNED), with ``v_x = [ċ; ω_loc]`` the external
velocity of the decoupled x-rows (:mod:`.decoupled_centroidal`) and ``r = p_j - c``,

    nu_j^ext = X_j v_x,   X_j = [[I, -[r]x], [0, I]],     nu_j^int = nu_j - X_j v_x = J_int v,
    J_int = J_j - X_j I_g^{-1} A_g

(``I_g^{-1} A_g v = v_x``; the base columns of ``J_int`` vanish, since ``X_j A_cb = J_jb``: the
internal part moves with the joint accelerations only, the y-coordinates). The frame's
acceleration is then the sum of the two parts,

    nu̇_j = [J_int dv + J̇_j v - X_j I_g^{-1} (Ȧ_g v - İ_g v_x) - [ω_loc x (ṗ_j - ċ); 0]]    (internal)
          + [X_j (A_x f + c_x) + [ω_loc x (ṗ_j - ċ); 0]]                                  (external)

with ``v̇_x = A_x f + c_x`` the torque-free x-rows (:mod:`.decoupled_centroidal`):
the task's rows act on the joint accelerations through ``J_int`` and on the contact forces
through the x-rows, never on the base acceleration directly. It asks for an impedance

    nu̇_j = a_ref + kp e_j + kd (nu_ref - nu_j),   e_j = [c_ref + R_ref o_j - p_j; log(R_ref R_bj R_j^T)],

``o_j`` and ``R_bj`` the frame's offset from the CoM and its orientation in the base frame at
the standing pose, references from the base-orientation target (``R_ref``, ``ω_ref``,
``ω̇_ref``) and the CoM target (``c_ref``, ``ċ_ref``, ``c̈_ref``; rotation of ``o_j`` left out
of the feed-forward); rows without a reference only damp the internal velocity (``-kd
nu_int``). Rows: ``angular`` (default: the base orientation), ``linear`` or ``all``. On the
constraint manifold the x-rows are exact, so the base's angular rows have the same optimum
as the standard base-orientation task (:mod:`.base_pose`) with the same gains and weight.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from ...dynamics.lie import skew
from ...errors import InputError
from .base import Task
from .decoupled_centroidal import force_rows

ROWS = {"angular": slice(3, 6), "linear": slice(0, 3), "all": slice(0, 6)}


class InternalImpedanceTask(Task):
    name = "internal_impedance"

    def __init__(self, config: dict, model, q_stand: np.ndarray):
        super().__init__(config)
        self.rows = ROWS[config["rows"]]
        data = model.createData()
        q = np.array(q_stand, float)
        q[:7] = [0, 0, 0, 0, 0, 0, 1]                                  # base at the identity
        pin.framesForwardKinematics(model, data, q)
        com = pin.centerOfMass(model, data, q)
        self.frames = []                                              # (frame id or -1, o_j, R_bj)
        for name in config["frames"]:
            if name == "base":
                fid, oMj = -1, data.oMi[1]
            elif model.existFrame(name):
                fid = model.getFrameId(name)
                oMj = data.oMf[fid]
            else:
                raise InputError(f"frame '{name}' is not in the model; name a frame of the URDF or 'base'",
                                 field="tasks.internal_impedance.frames")
            self.frames.append((fid, oMj.translation - com, oMj.rotation.copy()))

    def active(self, refs) -> bool:
        return self.weight > 0.0 and bool(self.frames)

    def external(self, r: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """The task's rows of ``X_j Y``, X_j = [[I, -[r]x], [0, I]] (the external twist at the
        frame from v_x), by blocks: the angular rows are Y's own."""
        if self.rows.start >= 3:
            return Y[3:]
        linear = Y[:3] - skew(r) @ Y[3:]
        return linear if self.rows.stop == 3 else np.concatenate([linear, Y[3:]])

    def target(self, refs, nu_j, nu_int, o_j, R_bj, oMj) -> np.ndarray:
        """The impedance's acceleration (the task's rows)."""
        a = -self.kd * nu_int
        rows = self.rows
        if refs.com is not None and rows.start < 3:
            t = refs.com
            R_ref = np.eye(3) if refs.base_orientation is None else refs.base_orientation.rotation()
            a[:3] = t.acceleration + self.kp * (t.position + R_ref @ o_j - oMj.translation) \
                + self.kd * (t.velocity - nu_j[:3])
        if refs.base_orientation is not None and rows.stop > 3:
            t = refs.base_orientation
            a[rows.stop - rows.start - 3:] = t.angular_acceleration + self.kd * (t.angular_velocity - nu_j[3:]) \
                + self.kp * pin.log3(t.rotation() @ R_bj @ oMj.rotation.T)
        return a

    def rows_of(self, state, layout, frame, refs):
        """(A, b) of one frame (``frame`` an entry of ``self.frames``): the task is
        ``w ||A x - b||^2`` over the QP variables ``x = (dv, f)``; ``A[:, :n]`` are J_int's rows,
        ``A[:, f_stance]`` the x-rows' (``X_j A_x``)."""
        # internal + external: the ±[ω_loc x (ṗ_j - ċ)] and the ±X_j I_g^{-1} İ_g v_x cancel, so
        # nu̇_j = J_int dv + X_j A_x f + J̇_j v - X_j I_g^{-1} (Ȧ_g v + G_x)
        fid, o_j, R_bj = frame
        x = state.decoupled_rows
        A_g, dAg_v = state.centroidal_matrix()
        J, drift = state.frame_terms(fid)
        oMj = state.data.oMi[1] if fid < 0 else pin.updateFramePlacement(state.model, state.data, fid)
        rows = self.rows
        r = oMj.translation - state.com
        XM = self.external(r, x.M_x_inv)
        nu_j = J @ state.v_m
        b = self.target(refs, nu_j, nu_j[rows] - self.external(r, x.v_x), o_j, R_bj, oMj) - drift[rows] \
            + XM @ (dAg_v + state.G_x)
        A = np.zeros((rows.stop - rows.start, layout.nx))
        A[:, :layout.n] = J[rows] - XM @ A_g                           # J_int's rows
        if layout.nf_stance:                                           # else ballistic: no force term
            A[:, layout.f_stance] = self.external(r, force_rows(state, layout))
        return A, b

    def add(self, H, g, state, layout, refs) -> None:
        for frame in self.frames:
            A, b = self.rows_of(state, layout, frame, refs)
            wAt = self.weight * A.T
            H += wAt @ A
            g -= wAt @ b

"""The feet's positions and velocities relative to the base, from the legs' joints alone: the
leg kinematics that the base estimator measures (estimation/base_estimator.py).

With the base at the origin and at rest, the world frame is the base frame. One Pinocchio
pass, ``computeJointJacobians`` at ``q0 = [0, identity, qj]``, fills every joint's placement
``oMi`` and the world Jacobian ``J`` (each column the spatial velocity, at the world origin,
of one joint's unit rate). Foot frame i sits at ``H_i`` in its joint ``j_i``, so

    r_i  = R_j h_i + t_j                                  (its origin)
    rd_i = sum_c (J_lin[:, c] + J_ang[:, c] x r_i) qd_c  (c: the columns supporting j_i)

``rd_i`` is the velocity of the point r_i from the twist at the origin (linear part plus
angular velocity across the lever r_i), which is Pinocchio's ``getFrameVelocity`` in
``LOCAL_WORLD_ALIGNED``, its linear part. Both come out of one compiled call (numba) that
reads ``oMi`` and ``J`` in place, instead of two Pinocchio calls and two row copies per foot.

Where Pinocchio's placements cannot be read as one array (``placement_view`` is None: another
storage layout), the feet are read frame by frame with ``updateFramePlacement`` and
``getFrameVelocity``, the same quantities. test/estimation/test_foot_kinematics.py holds both
to those Pinocchio calls.
"""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np
import pinocchio as pin
from numba import float64, intp, njit, types, void

from ..model.loop_kinematics import placement_view

# one signature, any layout ('A'): compiled when first built, cached on disk
F1, F2, F3 = float64[:], float64[:, :], float64[:, :, :]
RO2 = types.Array(float64, 2, "A", readonly=True)      # Pinocchio's placements, a read-only view


@njit(void(RO2, intp[:], F3, F2, F2, F1, F2, F2), cache=True)
def feet(oMi, joints, placement, support, J, v, r, rd):
    """``r[i]``, ``rd[i]``: frame i's origin and its velocity (module docstring) from the
    joints' placements ``oMi`` (njoints x 12, [R column-major | t]) and the world Jacobian
    ``J`` (6 x nv) at the joint rates ``v``; frame i is ``placement[i]`` (4 x 4) in joint
    ``joints[i]``, whose supporting columns are where ``support[i]`` is non-zero."""
    nv = J.shape[1]
    for i in range(joints.shape[0]):
        j = joints[i]
        H = placement[i]
        for a in range(3):
            s = oMi[j, 9 + a]
            for c in range(3):
                s += oMi[j, 3 * c + a] * H[c, 3]
            r[i, a] = s
        p0, p1, p2 = r[i, 0], r[i, 1], r[i, 2]
        v0 = v1 = v2 = w0 = w1 = w2 = 0.0
        for c in range(nv):
            if support[i, c] != 0.0 and v[c] != 0.0:
                qd = v[c]
                v0 += J[0, c] * qd
                v1 += J[1, c] * qd
                v2 += J[2, c] * qd
                w0 += J[3, c] * qd
                w1 += J[4, c] * qd
                w2 += J[5, c] * qd
        rd[i, 0] = v0 + w1 * p2 - w2 * p1
        rd[i, 1] = v1 + w2 * p0 - w0 * p2
        rd[i, 2] = v2 + w0 * p1 - w1 * p0


class FootKinematics:
    """Frames ``frame_ids`` of a floating-base ``model`` (every joint after the free flyer of
    one degree of freedom): :meth:`__call__` ``(qj, vj) -> (r, rd)``, each (n, 3), new arrays."""

    def __init__(self, model: pin.Model, frame_ids: Sequence[int]):
        self.model = model
        self.data = model.createData()
        self.frame_ids = list(frame_ids)
        n = len(self.frame_ids)
        self._q0 = pin.neutral(model)
        self._v0 = np.zeros(model.nv)
        self._joints = np.array([model.frames[f].parentJoint for f in self.frame_ids], dtype=np.intp)
        self._placement = np.ascontiguousarray(
            np.array([model.frames[f].placement.homogeneous for f in self.frame_ids]).reshape(n, 4, 4))
        self._support = np.zeros((n, model.nv))
        for i, j in enumerate(self._joints):
            for k in model.supports[int(j)]:
                if k > 0:
                    jm = model.joints[k]
                    self._support[i, jm.idx_v:jm.idx_v + jm.nv] = 1.0
        self._oMi = placement_view(model, self.data)
        pin.computeJointJacobians(model, self.data, self._q0)
        J = self.data.J
        self._J = J if self._oMi is not None and not J.flags.owndata else None

    def __call__(self, qj: np.ndarray, vj: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        q0, v0 = self._q0, self._v0
        q0[7:] = qj
        v0[6:] = vj
        n = len(self.frame_ids)
        r = np.empty((n, 3))
        rd = np.empty((n, 3))
        if self._J is not None:
            pin.computeJointJacobians(self.model, self.data, q0)
            feet(self._oMi, self._joints, self._placement, self._support, self._J, v0, r, rd)
            return r, rd
        model, data = self.model, self.data
        pin.forwardKinematics(model, data, q0, v0)
        for i, fid in enumerate(self.frame_ids):
            r[i] = pin.updateFramePlacement(model, data, fid).translation
            rd[i] = pin.getFrameVelocity(model, data, fid, pin.LOCAL_WORLD_ALIGNED).linear
        return r, rd

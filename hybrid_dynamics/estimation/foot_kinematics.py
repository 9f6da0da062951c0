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

Only the joints on the feet's paths from the base are computed: a model reduced to them
(:func:`carrying_model`; the others locked, none of them on such a path), so the feet come out
of the same products in the same order, bit for bit, from a pass over 12 joints instead of
hybrid_biped's 44 or TALOS's 32 (``computeJointJacobians`` 0.7 against 1.8 us).

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


def carrying_model(model: pin.Model, frame_ids: Sequence[int]):
    """The joints that carry frames ``frame_ids`` (those on their paths from the base) as a
    model of their own: ``(reduced model, its frame ids, its joints' columns in qj)``, or
    ``(model, frame_ids, None)`` when every joint carries one. The other joints are locked
    (``buildReducedModel``): none of them lies on a path to a frame, so the frames' placements
    and velocities are the whole model's, from the same products in the same order."""
    carried = set()
    for f in frame_ids:
        carried.update(model.supports[model.frames[f].parentJoint])
    lock = [j for j in range(2, model.njoints) if j not in carried]
    if not lock:
        return model, list(frame_ids), None
    reduced = pin.buildReducedModel(model, lock, pin.neutral(model))
    ids = [reduced.getFrameId(model.frames[f].name, model.frames[f].type) for f in frame_ids]
    # (one degree of freedom per joint: its column in qj is its column in vj)
    cols = np.array([model.joints[model.getJointId(reduced.names[j])].idx_q - 7
                     for j in range(2, reduced.njoints)], dtype=np.intp)
    return reduced, ids, cols


@njit(void(F1, F1, intp[:], F1, F1), cache=True)
def carried(qj, vj, cols, q0, v0):
    """The carrying joints' positions and rates into the reduced model's ``q0[7:]``, ``v0[6:]``
    (one call instead of two numpy gathers, 0.4 against 0.8-2 us)."""
    for k in range(cols.shape[0]):
        q0[7 + k] = qj[cols[k]]
        v0[6 + k] = vj[cols[k]]


class FootKinematics:
    """Frames ``frame_ids`` of a floating-base ``model`` (every joint after the free flyer of
    one degree of freedom): :meth:`__call__` ``(qj, vj) -> (r, rd)``, each (n, 3), new arrays.
    Only the joints that carry the frames are computed (:func:`carrying_model`: hybrid_biped's
    12 of 44 joints, TALOS's 12 of 32); ``qj``, ``vj`` are the whole model's joints."""

    def __init__(self, model: pin.Model, frame_ids: Sequence[int]):
        model, frame_ids, self._cols = carrying_model(model, frame_ids)
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
        if self._cols is None:
            q0[7:] = qj
            v0[6:] = vj
        else:
            carried(qj, vj, self._cols, q0, v0)
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

"""Posture task on the joint accelerations: ``dv_j = kp (q_ref - q_j) - kd v_j``.

The reference is the robot's standing pose, with the joints named in
``References.posture`` replaced. A selection task: it adds ``w`` to the diagonal.
"""
from __future__ import annotations

from .. import kernels
from .base import Task


class PostureTask(Task):
    name = "posture"
    constant_hessian = True

    def __init__(self, config: dict, joints):
        super().__init__(config)
        self.joints = joints          # the formulation's JointSet (names, q/v indices, q_ref)

    def add_hessian(self, H, layout) -> None:
        idx = self.joints.v_cols
        H[idx, idx] += self.weight

    def reference(self, refs):
        """The joints' reference angles this cycle."""
        js = self.joints
        return js.q_ref if refs.posture is None else js.reference(refs.posture)

    def add_gradient(self, g, state, layout, refs) -> None:
        kernels.posture_gradient(g, self.joints.v_cols, self.reference(refs), state.q_joints, state.v_joints,
                                 self.weight * self.kp, self.weight * self.kd)

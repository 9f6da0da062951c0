"""Joint-space tracking of locomotion references: leg inverse kinematics + joint PD.

This is Farghdani et al.'s (2025) leg controller ([Farghdani 2025, Sec. VI]: IK of tip targets in the body
frame, the body taken to be where the plan puts it, then joint PD), kept as the baseline the
whole-body QP controller is compared with and as the fallback when that controller is not
installed. Gains: ``K_P = 50 N m/rad`` as in the paper; the paper's ``K_D = 1`` makes the
servo loop unstable at a 1 ms step with Table II's link inertias (Kd dt / I ~ 0.7), so
``K_D = 0.3``; no integral term (it winds up against the torque limit).

Inverse kinematics: damped Newton steps on each leg's 3 x n position Jacobian (LOCAL_WORLD_
ALIGNED with the base at the origin), warm-started from the previous solution, clipped to
the joint limits; works for any serial leg, a locked joint simply keeps its angle.
"""
from __future__ import annotations

from typing import Dict

import numpy as np
import pinocchio as pin


class JointTracker:
    def __init__(self, robot, kp: float = 50.0, kd: float = 0.3, iterations: int = 3, damping: float = 1e-4):
        self.robot = robot
        self.model = robot.model
        self.data = self.model.createData()
        self.kp, self.kd = kp, kd
        self.iterations = iterations
        self.damping = damping
        m = self.model
        self.leg_frames = {}
        for leg in robot.legs:
            if leg.contact_frame:
                cols = np.array([m.joints[j].idx_v for j in leg.joints])
                rows_q = np.array([m.joints[j].idx_q for j in leg.joints])
                self.leg_frames[leg.contact_frame] = (m.getFrameId(leg.contact_frame), cols, rows_q)
        self.q_ik = robot.q_stand.copy()
        self.q_ik[:7] = (0, 0, 0, 0, 0, 0, 1)
        self.lower = m.lowerPositionLimit.copy()
        self.upper = m.upperPositionLimit.copy()
        self.frozen: set = set()          # q indices not to move (locked joints)
        self.joint_names = robot.joint_names

    def set_locked(self, q_indices) -> None:
        self.frozen = set(int(i) for i in q_indices)

    def solve_ik(self, targets_base: Dict[str, np.ndarray]) -> np.ndarray:
        """Joint angles (healthy q of the joints, size nq - 7) placing each foot at its target
        expressed in the base frame."""
        m, d, q = self.model, self.data, self.q_ik
        for _ in range(self.iterations):
            pin.computeJointJacobians(m, d, q)
            pin.updateFramePlacements(m, d)
            for frame, target in targets_base.items():
                fid, cols, rows_q = self.leg_frames[frame]
                err = target - d.oMf[fid].translation
                J = pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED)[:3, cols]
                free = np.array([r not in self.frozen for r in rows_q])
                Jf = J[:, free]
                dq = Jf.T @ np.linalg.solve(Jf @ Jf.T + self.damping * np.eye(3), err)
                q[rows_q[free]] = np.clip(q[rows_q[free]] + dq, self.lower[rows_q[free]], self.upper[rows_q[free]])
        return q[7:].copy()

    def torques(self, q: np.ndarray, v: np.ndarray, reference) -> np.ndarray:
        """Joint torques (all 1-DoF joints, Pinocchio order) tracking ``reference``
        (a :class:`~.planner.LocomotionReference`) from the measured joints of ``q``, ``v``."""
        base = reference.base_position
        quat = reference.base_orientation
        R = pin.Quaternion(quat[3], *quat[:3]).toRotationMatrix()
        targets = {f: R.T @ (ref.position - base) for f, ref in reference.feet.items() if f in self.leg_frames}
        q_des = self.solve_ik(targets)
        return self.kp * (q_des - q[7:]) - self.kd * v[6:]

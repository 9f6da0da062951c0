"""Quasi-static contact-wrench estimation from actuator forces ([Mingo Hoffman 2024, Sec. VI-B]).

The feet have no force sensors. With nu = nu_dot = 0 the projected dynamics read
G^T g = tau + G^T J_c^T F (actuated rows; G^T J_l^T = 0 removes the loop forces), so

    F = (J_c,m^T)^+ (g_a + J_m^T g_u - tau_meas),    J_c,m = J_c,a + J_c,u J_m

(the consistent sign of eq. 47). J_c,m^T is n_act x 3c and under-determined: the result is
the minimum-norm point-force set, whose resultant wrench per foot is exact whenever the leg
Jacobian is invertible (the split among a foot's four points is not observable). Base rows
are not used (as in the paper); ``use_base_rows=True`` adds them. Measured motor torques are
turned into forces with the ball-screw data (tau = tau_m 2 pi eta / L). A 2nd-order
Butterworth low-pass (5 Hz by default) filters the forces; per-foot CoP and the ZMP follow
for flat ground (z up).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np
import pinocchio as pin

from ..dynamics.closed_chain import LoopClosureKinematics, contact_points


@dataclass
class WrenchEstimate:
    forces: np.ndarray                 # (n_points, 3), world axes
    foot_force: Dict[str, np.ndarray]  # contact frame -> total force (3)
    cop: Dict[str, Optional[np.ndarray]]   # contact frame -> centre of pressure (world), None if unloaded
    zmp: Optional[np.ndarray]          # (x, y) over all feet


class ButterworthFilter:
    """Streaming 2nd-order Butterworth low-pass (bilinear transform), one per signal."""

    def __init__(self, cutoff_hz: float, rate_hz: float, size: int):
        k = np.tan(np.pi * cutoff_hz / rate_hz)
        norm = 1.0 / (1.0 + np.sqrt(2.0) * k + k * k)
        self.b = np.array([k * k, 2 * k * k, k * k]) * norm
        self.a = np.array([1.0, 2 * (k * k - 1) * norm, (1 - np.sqrt(2.0) * k + k * k) * norm])
        self.x = np.zeros((2, size))
        self.y = np.zeros((2, size))
        self.started = False

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if not self.started:               # start at steady state on the first sample
            self.x[:] = x
            self.y[:] = x
            self.started = True
        y = self.b[0] * x + self.b[1] * self.x[0] + self.b[2] * self.x[1] - self.a[1] * self.y[0] - self.a[2] * self.y[1]
        self.x[1], self.x[0] = self.x[0], x
        self.y[1], self.y[0] = self.y[0], y
        return y


class WrenchEstimator:
    def __init__(self, robot, kin: Optional[LoopClosureKinematics] = None, use_base_rows: bool = False,
                 cutoff_hz: Optional[float] = 5.0, rate_hz: float = 1000.0, contacts=None):
        self.robot = robot
        self.kin = kin or LoopClosureKinematics(robot)
        self.model = self.kin.model
        self.data = self.model.createData()
        self.contacts = robot.contacts if contacts is None else contacts
        self.use_base_rows = use_base_rows
        npts = sum(len(c.points) for c in self.contacts)
        self.filter = ButterworthFilter(cutoff_hz, rate_hz, 3 * npts) if cutoff_hz else None

    def estimate(self, q: np.ndarray, tau: np.ndarray, *, motor_torque: bool = False,
                 filtered: bool = False) -> WrenchEstimate:
        """Contact forces from actuator forces ``tau`` (or motor torques) at a static pose ``q``."""
        kin, m, d = self.kin, self.model, self.data
        tau = kin.actuator_force(np.asarray(tau, float)) if motor_torque else np.asarray(tau, float)
        g = pin.computeGeneralizedGravity(m, d, q) - kin.spring_forces(q, np.zeros(m.nv))   # springs: docs/loops.md
        pin.forwardKinematics(m, d, q, np.zeros(m.nv), np.zeros(m.nv))
        pin.computeJointJacobians(m, d, q)
        pin.updateFramePlacements(m, d)
        Jc, _ = contact_points(m, d, self.contacts)
        G_f, _ = kin.projection(q)
        nb = kin.nb
        JcG = Jc @ G_f
        if self.use_base_rows:
            A = JcG.T
            b = G_f.T @ g - np.concatenate([np.zeros(nb), tau])
        else:
            A = JcG[:, nb:].T
            b = (G_f.T @ g)[nb:] - tau
        F = np.linalg.pinv(A, rcond=1e-10) @ b
        if filtered and self.filter is not None:
            F = self.filter(F)
        F = F.reshape(-1, 3)
        foot_force, cop = {}, {}
        k = 0
        num, den = np.zeros(2), 0.0
        for c in self.contacts:
            fid = m.getFrameId(c.frame)
            M = d.oMf[fid]
            pts = np.array([M.act(p) for p in c.points])
            f = F[k:k + len(c.points)]
            k += len(c.points)
            foot_force[c.frame] = f.sum(axis=0)
            fz = f[:, 2].sum()
            cop[c.frame] = (f[:, 2] @ pts) / fz if fz > 1e-6 else None
            num += f[:, 2] @ pts[:, :2]
            den += fz
        zmp = num / den if den > 1e-6 else None
        return WrenchEstimate(F, foot_force, cop, zmp)

"""A plant without MuJoCo: Pinocchio's constrained forward dynamics with every contact held.

For robots without an MJCF (TALOS here). Each contact of the robot is a bilateral rigid
constraint anchored where it stands at :meth:`RigidContactPlant.reset`: a sole (surface
contact) a 6D constraint, a point foot a 3D one, with Baumgarte stabilisation (``kp``, ``kd``).
``pin.constraintDynamics`` gives the acceleration for the applied torques, and a semi-implicit
Euler step on the group (``pin.integrate``) advances the state. Its contacts neither slide nor
lift: it is the ideal plant for comparing controllers on the same motion, not a test of
friction or balance margins (MuJoCo's :class:`~.plant.Plant` is).

The interface is the part of :class:`~.plant.Plant` a controller loop needs: ``q()``, ``v()``
(Pinocchio's convention, healthy size), ``set_torques`` (array in ``actuated_joints`` order,
clipped to the URDF effort limits), ``step()``, ``time``, ``contact_forces()``.
"""
from __future__ import annotations

from typing import Dict

import numpy as np
import pinocchio as pin

from ..errors import InputError


class RigidContactPlant:
    def __init__(self, robot, dt: float = 1e-3, kp: float = 400.0, kd: float = 40.0):
        self.robot = robot
        self.model = m = robot.model
        self.data = m.createData()
        self.dt = float(dt)
        self.kp, self.kd = float(kp), float(kd)
        self.actuated_joints = list(robot.actuated_joints)
        self._va = np.array([m.joints[m.getJointId(n)].idx_v for n in self.actuated_joints], int)
        self.effort_limit = np.where(m.effortLimit[self._va] > 0, m.effortLimit[self._va], np.inf)
        self._tau = np.zeros(m.nv)
        self.time = 0.0
        self.reset()

    @property
    def timestep(self) -> float:
        return self.dt

    def reset(self, q=None, v=None) -> None:
        """The state (default: standing, at rest) and the contact anchors where the contacts are."""
        m, d = self.model, self.data
        self._q = np.array(self.robot.q_stand if q is None else q, float)
        self._v = np.zeros(m.nv) if v is None else np.array(v, float)
        pin.framesForwardKinematics(m, d, self._q)
        self.constraints = pin.StdVec_RigidConstraintModel()
        for c in self.robot.contacts:
            f = m.frames[m.getFrameId(c.frame)]
            kind = pin.ContactType.CONTACT_6D if c.kind == "surface" else pin.ContactType.CONTACT_3D
            cm = pin.RigidConstraintModel(kind, m, f.parentJoint, f.placement, 0, d.oMf[m.getFrameId(c.frame)],
                                          pin.ReferenceFrame.LOCAL)
            cm.setBaumgarteCorrectorParameters(pin.BaumgarteCorrectorParameters(self.kp, self.kd))
            cm.name = c.frame
            self.constraints.append(cm)
        self.constraint_data = pin.StdVec_RigidConstraintData()
        for cm in self.constraints:
            self.constraint_data.append(cm.createData())
        pin.initConstraintDynamics(m, d, self.constraints, self.constraint_data)
        self.prox = pin.ProximalSettings(1e-12, 1e-10, 20)
        self.time = 0.0

    def q(self) -> np.ndarray:
        return self._q.copy()

    def v(self) -> np.ndarray:
        return self._v.copy()

    def set_torques(self, tau) -> None:
        tau = np.asarray(tau, float)
        if tau.shape != (len(self._va),):
            raise InputError(f"expected {len(self._va)} torques, got {tau.shape}")
        self._tau[self._va] = np.clip(np.where(np.isfinite(tau), tau, 0.0), -self.effort_limit, self.effort_limit)

    def step(self, n: int = 1) -> None:
        m, d = self.model, self.data
        for _ in range(n):
            a = pin.constraintDynamics(m, d, self._q, self._v, self._tau, self.constraints,
                                       self.constraint_data, self.prox)
            self._v = self._v + self.dt * a
            self._q = pin.integrate(m, self._q, self.dt * self._v)
            self.time += self.dt

    def contact_forces(self) -> Dict[str, np.ndarray]:
        """The constraint forces of the last step (the contact frame's LOCAL axes; 3 or 6)."""
        return {cm.name: cd.contact_force.vector.copy() for cm, cd in zip(self.constraints, self.constraint_data)}

"""Simulation 2 of [Pustina 2024, Sec. 7.2]: a hybrid arm of N = 8 bodies, a UR arm (6 rigid
modules from example-robot-data), a slender rod (GVS with a constant strain basis: PCC with elongation, 3 DoF) actuated by three
tendons and a soft gripper (LVP stretch and source, Table 5) opened by pressure, in three
phases: (i) t in [0, 3) s, a cubic rest-to-rest joint trajectory of the arm by PFBL in joint
space (K_P = 100, K_D = 10), soft parts passive; (ii) t in [3, 5) s, the rod regulated to
q_f = (-pi/2, pi/4, -0.02) by ``u = A^-1 [K_P (q_f - q) - K_D qdot + g + s]`` (the model term
from one ``ID(q, 0, 0)``); (iii) t in [5, 6] s, a feed-forward pressure of 2 MPa.

From the paper: the rod (radius 0.02 m, rest length 0.3 m, rho = 1070 kg/m^3, elastic
coefficient 0.17857 MPa, damping 0.1 s, three tendons at 120 deg, 0.015 m from the backbone),
the gripper (rho = 960 kg/m^3, elastic coefficient 22.2 MPa, damping 0.05 s, Table 5, its
distal face relaxed), the phases, their references and the gains of phase (i). Choices the
paper leaves out (also in the reproduction's JSON):

- the arm: example-robot-data ships the UR10, not the UR10e (same kinematic structure, other
  lengths and masses); its joints are the arm's modules, its tool frame the rod's base;
- the rod's elastic coefficient read as C = mu / 2 of the neo-Hookean law with nu = 0.4 (as
  for the LVP bodies), i.e. E = 4 (1 + nu) C = 1.0 MPa, and damping ``0.1 s * K``; the
  rod's three coordinates are the two bending angles and the change of length of one CC
  segment (the GVS strain basis with constant bending and elongation);
- tendons: straight lines between 7 via points each along the rod's perimeter line at the
  backbone offset (the paper models them as in Renda et al. 2022), tensions not clipped at 0;
- the gripper: length 0.06 m and radius 0.02 m (not given), the elastic coefficient as the
  neo-Hookean C, damping ``eta K(q) qdot``; its chamber: the cavity the source primitive opens
  on the axis, bounded in our model by the material cylinder of radius 4 mm (any radius inside
  the body gives the same change of volume) over the whole body, and closed by a flat top;
  the pressure acts through ``dV/dq`` (its work on the chamber's walls), or with
  ``reading="surfaces"`` (``reproduce paper002 --sim2-chamber surfaces``) through the
  chamber's top on the stretch and its lateral wall on the source (soft/actuation.py), where
  the chamber's radius sets the top's area;
- phase (ii) gains, which the paper does not give: K_P = diag(2 N m, 2 N m, 2000 N/m),
  K_D = diag(0.2 N m s, 0.2 N m s, 40 N s/m) (the bending stiffness E I / L of the rod is
  0.42 N m/rad, its axial E A / L 4.2 kN/m);
- during (ii) and (iii) the arm's PFBL holds its final joint reference and the rod's law holds
  q_f; the arm's PFBL accounts for the tendon and pressure forces of the same instant;
- the start: the whole arm straight (q = 0) at rest, soft parts at their equilibrium under
  gravity (the rod hangs, bent 0.70 rad); integration by scipy's BDF (rtol 1e-6): the
  gripper's modes are stiff; its Newton iteration uses the approximate closed-loop Jacobian of
  :func:`stiff_jacobian` (scipy's finite differences took 22 right-hand sides each);
- ``run`` takes shorter phases for the test (the arm's cubic is scaled in time; the rod's and
  gripper's laws are unchanged).
"""
from __future__ import annotations

from typing import Dict, Tuple

import numpy as np
import pinocchio as pin

from hybrid_dynamics.paths import example_robot_data_dir
from hybrid_dynamics.soft import bodies as B
from hybrid_dynamics.soft.actuation import Actuation, Chamber, Tendon
from hybrid_dynamics.soft.from_pinocchio import modules_from_pinocchio
from hybrid_dynamics.soft.joints import FixedJoint, Placement
from hybrid_dynamics.soft.lvp import LVPBody
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.motion import Statics, load_tangent, simulate
from hybrid_dynamics.soft.pfbl import CollocatedPFBL
from hybrid_dynamics.soft.tree import SoftTree

ARM_URDF = "ur_description/urdf/ur10_robot.urdf"
ROD_LENGTH, ROD_RADIUS, ROD_DENSITY, ROD_E, ROD_DAMPING = 0.3, 0.02, 1070.0, 1.0e6, 0.1
TENDON_OFFSET, TENDON_VIA = 0.015, 7
GRIPPER_LENGTH, GRIPPER_RADIUS, GRIPPER_DENSITY, GRIPPER_C, GRIPPER_ETA = 0.06, 0.02, 960.0, 22.2e6, 0.05
CHAMBER_RADIUS = 0.004
PHASES = (3.0, 5.0, 6.0)                                  # ends of phases (i), (ii), (iii), s
ARM_FINAL = np.array([np.pi / 2, -np.pi / 4, -np.pi / 4, -np.pi / 5, np.pi / 8, -np.pi / 2])
ARM_KP, ARM_KD = 100.0, 10.0
ROD_FINAL = np.array([-np.pi / 2, np.pi / 4, -0.02])
ROD_KP, ROD_KD = np.array([2.0, 2.0, 2000.0]), np.array([0.2, 0.2, 40.0])
PRESSURE = 2.0e6


def hybrid_arm(reading: str = "volume") -> Tuple[SoftTree, Actuation]:
    """The eight-body tree (arm joints first, then rod, then gripper) and its actuation
    (three tendons, one chamber whose pressure acts through ``reading``: ``volume``, its
    ``dV/dq``, or ``surfaces``, the chamber's top on the stretch and its lateral wall on the
    source, soft/actuation.py)."""
    model = pin.buildModelFromUrdf(str(example_robot_data_dir() / ARM_URDF))
    modules = modules_from_pinocchio(model)
    tool = model.frames[model.getFrameId("tool0")].placement
    rod = B.constant_curvature(ROD_LENGTH, ROD_RADIUS, ROD_DENSITY, planar=False, elongation=True,
                               youngs_modulus=ROD_E, poisson=0.4, damping_time=ROD_DAMPING, n_axial=4)
    modules.append(Module("rod", FixedJoint(Placement(np.array(tool.rotation), np.array(tool.translation))), rod,
                          model.names[model.njoints - 1]))
    gripper = LVPBody(GRIPPER_LENGTH, GRIPPER_RADIUS, GRIPPER_DENSITY, ["stretch_tip", "source"], GRIPPER_C,
                      GRIPPER_ETA, n_axial=4, relax_face=True)
    modules.append(Module("gripper", FixedJoint(), gripper, "rod"))
    tree = SoftTree(modules)
    angles = 2 * np.pi * np.arange(3) / 3
    tendons = [Tendon(f"tendon{k}", tuple(("rod", (TENDON_OFFSET * np.cos(a), TENDON_OFFSET * np.sin(a), s))
                                          for s in np.linspace(0.0, ROD_LENGTH, TENDON_VIA)))
               for k, a in enumerate(angles)]
    chamber = Chamber("chamber", "gripper", CHAMBER_RADIUS, 0.0, GRIPPER_LENGTH, reading=reading)
    return tree, Actuation(tree, tendons, [chamber])


def arm_reference(t: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cubic rest-to-rest joint trajectory from 0 to ``ARM_FINAL`` over phase (i), then held."""
    s = min(max(t / PHASES[0], 0.0), 1.0)
    inside = 0.0 < t < PHASES[0]
    shape = (3 * s ** 2 - 2 * s ** 3, (6 * s - 6 * s ** 2) / PHASES[0] * inside,
             (6 - 12 * s) / PHASES[0] ** 2 * inside)
    return tuple(c * ARM_FINAL for c in shape)


class ThreePhaseController:
    """The inputs of the three phases: arm torques (6), tendon tensions (3), pressure (1)."""

    def __init__(self, tree: SoftTree, actuation: Actuation, phases=PHASES):
        self.tree, self.actuation, self.phases = tree, actuation, phases
        self.arm = CollocatedPFBL(np.full(6, ARM_KP), np.full(6, ARM_KD))
        self.S = np.eye(tree.nv)[:6]
        self.rod = slice(6, 9)

    def soft_inputs(self, t: float, q, v) -> np.ndarray:
        """(tendon tensions, pressure) of phases (ii) and (iii)."""
        u = np.zeros(self.actuation.m)
        if t >= self.phases[0]:
            g_s = self.tree.inverse_dynamics(q, np.zeros(self.tree.nv), np.zeros(self.tree.nv))
            A = self.actuation.matrix(q)[self.rod, :3]
            r = self.rod
            u[:3] = np.linalg.solve(A, ROD_KP * (ROD_FINAL - q[r]) - ROD_KD * v[r] + g_s[r])
        if t >= self.phases[1]:
            u[3] = PRESSURE
        return u

    def __call__(self, t: float, q, v) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(arm torques, soft inputs, the acceleration they give) at time t."""
        soft = self.soft_inputs(t, q, v)
        M, h = self.tree.mid(q, v)
        h_rest = h - self.actuation.force(q, soft)
        y_ref, yd_ref, ydd_ref = arm_reference(t * PHASES[0] / self.phases[0])
        scale = PHASES[0] / self.phases[0]
        tau = self.arm.input(M, h_rest, self.S, np.zeros(6), q[:6], v[:6], y_ref, yd_ref * scale,
                             ydd_ref * scale ** 2)
        return tau, soft, np.linalg.solve(M, self.S.T @ tau - h_rest)


def stiff_jacobian(tree: SoftTree, actuation: Actuation, control: ThreePhaseController):
    """(t, q, v) -> an approximate d(qdot, vdot)/d(q, v) of the three-phase closed loop for the
    implicit integrator. The arm's PFBL (outputs q_arm, ``S = [I 0]``) leaves
    ``vdot = M^-1 S^T Lambda a - P h_r`` with ``P = M^-1 - M^-1 S^T Lambda S M^-1`` and
    ``h_r = h - A u``. From (ii) on, the tendons put ``f = K_P (q_f - q) - K_D qdot + g + s``
    on the rod's rows exactly, so h_r's tangents are ``K(p) + E K_P E^T - E E^T K_0`` and
    ``D(p) + E K_D E^T`` (K, D: the tangents of ``h - A u`` with the chamber's pressure p,
    K_0: that of ``g + s`` at rest, the rod law's model term; all by AD,
    :func:`~hybrid_dynamics.soft.motion.load_tangent`; E: the rod's rows); a's are ``-K_P``,
    ``-K_D`` on the arm's. The change of M is left out (as for the helicoid,
    soft/helicoid.py)."""
    n, rod = tree.nv, control.rod
    loads = load_tangent(tree, actuation)
    E = np.eye(n)[:, rod]
    S = control.S

    def jacobian(t, q, v):
        M, _ = tree.mid(q, v)
        Minv = np.linalg.inv(M)
        MinvSt = Minv @ S.T
        Lam = np.linalg.inv(S @ MinvSt)
        P = Minv - MinvSt @ Lam @ MinvSt.T
        G = MinvSt @ Lam @ S
        u = np.zeros(actuation.m)
        if t >= control.phases[0]:
            u[3:] = control.soft_inputs(t, q, v)[3:]                   # the pressure only
        K, D = loads(q, v, u)
        if t >= control.phases[0]:
            K0 = loads(q, np.zeros(n))[0]
            K = K + E @ np.diag(ROD_KP) @ E.T - E @ E.T @ K0
            D = D + E @ np.diag(ROD_KD) @ E.T
        return np.block([[np.zeros((n, n)), np.eye(n)], [-P @ K - ARM_KP * G, -P @ D - ARM_KD * G]])
    return jacobian


def run(phases=PHASES, samples: int = 121, reading: str = "volume") -> Dict[str, np.ndarray]:
    """The closed loop over the three phases (``phases``: their end times; shorter ones scale
    the arm's cubic in time; ``reading``: the chamber's, :func:`hybrid_arm`)."""
    tree, act = hybrid_arm(reading)
    control = ThreePhaseController(tree, act, phases)
    free = list(range(6, tree.nq))
    q0 = Statics(tree, free).solve(np.zeros(tree.nq))

    t, qs, vs = simulate(tree, q0, np.zeros(tree.nv), phases[-1], samples=samples, method="BDF", rtol=1e-6,
                         atol=1e-9, acceleration=lambda t, q, v: control(t, q, v)[2],
                         jacobian=stiff_jacobian(tree, act, control))
    inputs = [np.concatenate(control(tk, q, v)[:2]) for tk, q, v in zip(t, qs, vs)]
    refs = [arm_reference(tk * PHASES[0] / phases[0])[0] for tk in t]
    return {"t": t, "q": qs, "v": vs, "u": np.array(inputs), "arm_ref": np.array(refs),
            "volume": np.array([act.coordinates(q, v)[0][3] for q, v in zip(qs, vs)])}

"""Farghdani et al.'s (2025) hexapod simulation ([Farghdani 2025, Sec. VI, Eq. (64), Tables III-IV]): penalty contact (Table III),
tripod gait (Table IV, eq. 64), closed-form 3-DoF leg IK and joint PID, integrated with the
modular model (:class:`~hybrid_dynamics.dynamics.hamel.HamelFast`) on SE(3) x R^n.

Choices where the paper is silent or inconsistent (not fixed by [Farghdani 2025]):
  * Contact (Table III): at each existing foot, penetration z = foot height - foot radius
    (10 mm sphere); when z < 0, f_n = -k_z z - d_z z_dot clamped at f_n >= 0 (no adhesion),
    tangential f_t = -d_t v_t (pure viscous, no Coulomb friction), k_z = 1e4 N/m,
    d_z = 150 N s/m, d_t = 50 N s/m; ground plane z = 0; no moment; stumps never touch.
  * Gait (Table IV, eq. 64): tripods {1,4,5} and {2,3,6} half a cycle apart, T_g = 1.3 s.
    Our x is the paper's walking direction y. In the body frame each foot target is its
    nominal point (hip + 0.128 m outward along the leg, the paper's p_x = x_h would put the
    foot on the coxa axis, where the IK is singular) plus dx = -L_sl/2 cos(s), s = 2 pi t/T_g
    + phi_i, with L_sl = 5 cm. Swing is the half-cycle with the foot moving forward
    (sin s > 0): z = -H_0 + L_sh/2 (1 - cos 2s); support: z = -H_0 - L_sd/2 (1 - cos 2s)
    (the step depth presses down). L_sh = 1.2 cm (the printed 12 cm would lift the foot to
    hip height), L_sd = 1 mm, H_0 = 0.12 m. The factor Phi_i (1 - 2/N_g) is read as the
    phase Phi_i in {0, pi}.
  * Control: closed-form IK (knee-up branch) of the foot targets, then a joint PID with the
    paper's gains K_P = 50, K_D = 1, K_I = 10 (N m / rad, ideal torque sources, no saturation),
    integral clamped at +-0.2 rad s. A leg that lost its distal links holds its coxa at 0.
  * Integration: semi-implicit Euler, v += dt v_dot, q <- q (+) v dt with the base on SE(3)
    (g <- g exp(V^ dt)), dt = 1 ms, the PID's K_D and the contact dampers taken at the end of
    the step (linearly implicit; explicitly, the stiffest damped mode, max eig M^-1 K_D =
    4.2e3 1/s, would need dt < 0.47 ms).
  * Start: standing on all existing feet (the gait's t = 0 targets), base at rest at
    H_0 + foot radius.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from .hamel import HamelFast
from .lie import integrate

K_Z, D_Z, D_T = 1.0e4, 150.0, 50.0                   # Table III
L_SL, L_SH, L_SD, T_G, H_0 = 0.05, 0.012, 0.001, 1.3, 0.12   # Table IV (choices in the doc)
KP, KD, KI = 50.0, 1.0, 10.0
I_CLAMP = 0.2
FOOT_RADIUS = 0.01
RADIAL = 0.128


_DAMP = np.diag([D_T, D_T, D_Z])


def contact_forces(p: np.ndarray, vel: np.ndarray):
    """Table III penalty contact at the ground plane z = 0: (forces, -d forces / d velocity)."""
    z = p[:, 2] - FOOT_RADIUS
    fn = -K_Z * z - D_Z * vel[:, 2]
    on = (z < 0.0) & (fn > 0.0)                          # touching and pushing (no adhesion)
    f = np.zeros_like(p)
    f[:, 2] = fn
    f[:, :2] = -D_T * vel[:, :2]
    f *= on[:, None]
    return f, _DAMP[None, :, :] * on[:, None, None]


@dataclass
class LegGeometry:
    name: str
    hip: np.ndarray          # coxa joint position in the body frame
    yaw: float               # leg frame yaw
    lengths: tuple           # coxa, femur, tibia
    phase: float             # 0 or pi
    joints: List[str]


def leg_geometry(robot) -> List[LegGeometry]:
    """Hip position, yaw and link lengths of every leg, read from the model at zero."""
    m = robot.model
    groups = robot.gait_groups or [[leg.name for leg in robot.legs]]
    out = []
    for leg in robot.legs:
        j1, j2, j3 = leg.joints
        P1 = m.jointPlacements[j1]
        yaw = math.atan2(P1.rotation[1, 0], P1.rotation[0, 0])
        L1 = float(np.linalg.norm(m.jointPlacements[j2].translation))
        L2 = float(np.linalg.norm(m.jointPlacements[j3].translation))
        foot = m.frames[m.getFrameId(leg.contact_frame)]
        L3 = float(np.linalg.norm(foot.placement.translation))
        phase = 0.0 if leg.name in groups[0] else math.pi
        out.append(LegGeometry(leg.name, P1.translation.copy(), yaw, (L1, L2, L3), phase,
                               [m.names[j] for j in leg.joints]))
    return out


def leg_ik(leg: LegGeometry, target: np.ndarray) -> np.ndarray:
    """Closed-form IK of a coxa-femur-tibia leg, knee-up branch; target in the body frame."""
    L1, L2, L3 = leg.lengths
    d = target - leg.hip
    c, s = math.cos(leg.yaw), math.sin(leg.yaw)
    x, y, z = c * d[0] + s * d[1], -s * d[0] + c * d[1], d[2]
    coxa = math.atan2(y, x)
    r = math.hypot(x, y) - L1
    D = (r * r + z * z - L2 * L2 - L3 * L3) / (2 * L2 * L3)
    tibia = math.acos(max(-1.0, min(1.0, D)))
    femur = math.atan2(-z, r) - math.atan2(L3 * math.sin(tibia), L2 + L3 * math.cos(tibia))
    return np.array([coxa, femur, tibia])


def foot_target(leg: LegGeometry, t: float) -> np.ndarray:
    """Eq. (64) with the choices of the module doc, body frame."""
    s = 2 * math.pi * t / T_G + leg.phase
    c, sn = math.cos(leg.yaw), math.sin(leg.yaw)
    nominal = leg.hip + RADIAL * np.array([c, sn, 0.0]) + np.array([0.0, 0.0, -H_0])
    dx = -0.5 * L_SL * math.cos(s)
    bump = 0.5 * (1 - math.cos(2 * s))
    dz = L_SH * bump if math.sin(s) > 0 else -L_SD * bump
    return nominal + np.array([dx, 0.0, dz])


@dataclass
class SimulationResult:
    duration: float
    dt: float
    steps: int
    wall_time: float
    real_time_factor: float
    base_start: np.ndarray
    base_end: np.ndarray
    min_height: float
    max_tilt_deg: float
    mean_forward_speed: float
    morphology: str
    trace: Optional[Dict[str, np.ndarray]] = None


def simulate(robot, morphology, duration: float = 5.0, dt: float = 1e-3,
             record_every: int = 0) -> SimulationResult:
    """Walk the tripod gait for ``duration`` seconds with ``morphology`` (e.g. Farghdani et al.'s (2025) S2)."""
    engine = HamelFast(robot, morphology)
    legs = leg_geometry(robot)
    names = engine.joint_names
    col = {n: i for i, n in enumerate(names)}
    kept = morphology.kept
    plans = []                                              # (leg, columns of its surviving joints)
    for leg in legs:
        cols = [col[j] for j in leg.joints if j in col]
        plans.append((leg, cols, kept[leg.name] == len(leg.joints)))
    q = robot.q_stand[engine.q_index].copy()
    q[:7] = (0.0, 0.0, H_0 + FOOT_RADIUS, 0.0, 0.0, 0.0, 1.0)

    def targets(t):
        out = np.zeros(len(names))
        for leg, cols, whole in plans:
            if whole:
                out[cols] = leg_ik(leg, foot_target(leg, t))
            elif cols:
                out[cols] = 0.0
        return out

    q[7:] = targets(0.0)
    v = np.zeros(engine.nv)
    integral = np.zeros(len(names))
    steps = int(round(duration / dt))
    start = q[:3].copy()
    min_h, max_tilt = q[2], 0.0
    trace = {"t": [], "base": [], "height": []} if record_every else None
    prev_target = targets(0.0)
    tau = np.zeros(engine.nv)
    t0 = time.perf_counter()
    for k in range(steps):
        t = k * dt
        target = targets(t)
        target_rate = (target - prev_target) / dt if k else np.zeros_like(target)
        prev_target = target
        err = target - q[7:]
        integral = np.clip(integral + err * dt, -I_CLAMP, I_CLAMP)
        tau[6:] = KP * err + KD * target_rate + KI * integral   # - KD theta_dot: implicit below
        vdot, _ = engine.forward_dynamics_contact(q, v, tau, contact_forces, dt=dt, joint_damping=KD)
        v = v + dt * vdot
        q = integrate(q, v, dt)
        min_h = min(min_h, q[2])
        up = 1 - 2 * (q[3] ** 2 + q[4] ** 2)                # R_sb[2, 2]
        max_tilt = max(max_tilt, math.degrees(math.acos(max(-1.0, min(1.0, up)))))
        if record_every and k % record_every == 0:
            trace["t"].append(t)
            trace["base"].append(q[:7].copy())
            trace["height"].append(q[2])
    wall = time.perf_counter() - t0
    if trace:
        trace = {k_: np.array(v_) for k_, v_ in trace.items()}
    return SimulationResult(duration, dt, steps, wall, wall / duration, start, q[:3].copy(), float(min_h),
                            float(max_tilt), float((q[0] - start[0]) / duration), morphology.describe(), trace)

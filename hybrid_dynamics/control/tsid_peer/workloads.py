"""The benchmark workloads: sequences of states with their stance patterns and references.

Each workload is a list of :class:`Sample` at the control period (1 ms):

``sway``
    The robot stands on every contact; its joints oscillate (0.02 rad, 0.5 Hz) around the
    standing pose and the CoM reference circles (1 cm). Nothing presses on a cone or a limit:
    most cycles have no active inequality.
``walk``
    The gait the demo uses, from the robot's ``gait_groups``: the groups alternate, each
    swinging half a period (tripod for the hexapod, trot for the quadruped, single support
    for the bipeds). Relative to the base a swing foot moves forward and up (a sine arch of
    ``step_height``) and a stance foot sweeps back, through a linearised leg IK at the
    standing pose (``dq = J_leg^+ dp``); the base moves forward at the stride speed, so the
    stance feet stand still in the world. The swing-foot task holds each swing foot 5 mm above
    where it is. The
    CoM reference (the current CoM and its velocity) asks for a horizontal acceleration that circles at the gait frequency with
    magnitude ``2 mu g`` at its peaks: more than the friction pyramids of the stance feet can
    give, so near the peaks the stance forces sit on their pyramid facets.

Closed chains (``hybrid_biped``): the actuated joints move (sway around the standing pose; in
the walk, an arch of a quarter of their margin to the nearer limit each half period, while the stance
alternates and the swing sole is held up) and the passive joints follow by
position closure (:meth:`~hybrid_dynamics.dynamics.closed_chain.LoopClosureKinematics.close`,
to 1e-12) and velocity completion, so every state has its loops closed: :func:`closure_residual`
is what the benchmark checks before timing.

Torque limits that bind some of the time: :func:`~hybrid_dynamics.control.tsid_peer.binding_torque_scale` runs the controller on a
workload without torque limits and returns the scale of the URDF limits at which the most
loaded joint's peak torque is 15 % over its limit (the benchmark then times the workload with
that scale, TSID with the same limits).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import numpy as np
import pinocchio as pin

from ...dynamics.closed_chain import LoopClosureKinematics
from ...errors import InputError

WORKLOADS = ("sway", "walk")


@dataclass
class Sample:
    """One control cycle's input: state, stance and references (world frame)."""
    q: np.ndarray
    v: np.ndarray
    com: Tuple[np.ndarray, np.ndarray, np.ndarray]          # position, velocity, acceleration
    stance: Tuple[bool, ...]                                 # in ``robot.contacts`` order
    swing: Dict[str, Tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)


def workload(robot, name: str, cycles: int, dt: float = 0.001) -> List[Sample]:
    if name == "sway":
        return sway(robot, cycles, dt)
    if name == "walk":
        return walk(robot, cycles, dt)
    raise InputError(f"unknown workload '{name}' (known: {', '.join(WORKLOADS)})", field="workload")


def _still_joints(robot) -> np.ndarray:
    """Joints of legs ending in a sole: they keep their standing angles in the sway, so the
    soles stay flat (TSID takes a sole's friction cone about the sole's normal, we about the
    ground's)."""
    m = robot.model
    still = np.zeros(m.nv - 6, bool)
    surfaces = {c.frame for c in robot.contacts if c.kind == "surface"}
    for leg in robot.legs:
        if leg.contact_frame in surfaces:
            for j in leg.joints:
                still[m.joints[j].idx_v - 6] = True
    return still


def _com0(robot) -> np.ndarray:
    d = robot.model.createData()
    pin.centerOfMass(robot.model, d, robot.q_stand)
    return d.com[0].copy()


def sway(robot, cycles: int, dt: float = 0.001, amplitude: float = 0.02, seed: int = 0) -> List[Sample]:
    """Standing sway (module docstring). Serial robots: joints kept 0.01 rad inside their
    limits (where they then stand still). Closed chains: only the actuated joints sway, the
    loops are closed at every sample."""
    m = robot.model
    w = 2 * np.pi * 0.5
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0, 2 * np.pi, m.nv - 6)
    c0 = _com0(robot)
    stance = (True,) * len(robot.contacts)
    closer = _Closer(robot) if robot.loops is not None else None
    still = _still_joints(robot) if closer is None else ~closer.actuated_mask
    lo = m.lowerPositionLimit[7:] + 0.01
    hi = m.upperPositionLimit[7:] - 0.01
    amp = np.where(still, 0.0, amplitude)
    if closer is not None:         # the actuators stay in the middle half of their margin
        amp = np.minimum(amp, 0.5 * _margin(robot))
    out = []
    for k in range(cycles):
        t = k * dt
        dq = amp * np.sin(w * t + phase)
        dv = amp * w * np.cos(w * t + phase)
        com = (c0 + 0.01 * np.array([np.cos(w * t), np.sin(w * t), 0.0]), np.zeros(3), np.zeros(3))
        if closer is not None:
            q, v = closer.state(robot.q_stand[7:] + dq, dv, np.zeros(6))
        else:
            q = robot.q_stand.copy()
            v = np.zeros(m.nv)
            q[7:] += dq
            v[6:] = dv
            outside = (q[7:] < lo) | (q[7:] > hi)
            q[7:] = np.clip(q[7:], lo, hi)
            v[6:][outside] = 0.0
        out.append(Sample(q, v, com, stance))
    return out


def _margin(robot) -> np.ndarray:
    """Per joint (v order, without the base): distance of the standing pose to its nearer
    position limit."""
    m = robot.model
    q = robot.q_stand[7:]
    return np.minimum(q - m.lowerPositionLimit[7:], m.upperPositionLimit[7:] - q)


class _Closer:
    """Closed chains: full states with the loops closed from actuated positions and rates."""

    def __init__(self, robot):
        self.kin = LoopClosureKinematics(robot)
        m = robot.model
        self.actuated_mask = np.zeros(m.nv - 6, bool)
        for name in robot.actuated_joints:
            self.actuated_mask[m.joints[m.getJointId(name)].idx_v - 6] = True
        self.q = robot.q_stand.copy()

    def state(self, q_joints, v_joints, v_base):
        q = self.q.copy()
        q[7:][self.actuated_mask] = q_joints[self.actuated_mask]
        q, info = self.kin.close(q, tol=1e-12)
        if not info["converged"]:
            raise InputError(f"the loops do not close at a benchmark state (residual {info['residual']:.2e})")
        self.q = q
        v, _ = self.kin.complete(q, v_joints[self.actuated_mask], v_base=v_base)
        return q, v


def closure_residual(robot, samples: List[Sample]) -> float:
    """Largest loop-closure error (m or rad) over the samples; 0 for serial robots."""
    if robot.loops is None:
        return 0.0
    kin = LoopClosureKinematics(robot)
    return max(float(np.max(np.abs(kin.residual(s.q)))) for s in samples)


def _leg_ik(robot):
    """Per leg: (joint q indices, v indices, 3 x k pseudo-inverse of the foot's linear
    Jacobian over the leg's joints at the standing pose, in the base frame)."""
    m = robot.model
    d = m.createData()
    q = robot.q_stand
    pin.computeJointJacobians(m, d, q)
    pin.updateFramePlacements(m, d)
    legs = {}
    for leg in robot.legs:
        if leg.contact_frame is None:
            continue
        iq = np.array([m.joints[j].idx_q for j in leg.joints])
        iv = np.array([m.joints[j].idx_v for j in leg.joints])
        J = pin.getFrameJacobian(m, d, m.getFrameId(leg.contact_frame), pin.LOCAL_WORLD_ALIGNED)[:3, iv]
        legs[leg.name] = (iq, iv, np.linalg.pinv(J))
    return legs


def walk(robot, cycles: int, dt: float = 0.001, step_height: float = 0.025, stride: float = 0.04,
         period: float = None) -> List[Sample]:
    """Walking workload (module docstring)."""
    if len(robot.gait_groups) != 2:
        raise InputError(f"{robot.name}: the walking workload needs two gait groups", field="gait_groups")
    if period is None:
        period = 1.3 if len(robot.contacts) > 4 else 0.8      # the demo's tripod; trot and steps
    m = robot.model
    w = 2 * np.pi / period
    group = {leg: g for g, legs in enumerate(robot.gait_groups) for leg in legs}
    a_peak = 2.0 * robot.friction * 9.81
    speed = stride / (period / 2)
    closer = _Closer(robot) if robot.loops is not None else None
    legs = None if closer is not None else _leg_ik(robot)
    amp = None if closer is None else np.where(closer.actuated_mask, np.minimum(0.02, 0.25 * _margin(robot)), 0.0)
    d = m.createData()
    out = []
    for k in range(cycles):
        t = k * dt
        s = (t % period) / period                           # gait phase
        swinging = 0 if s < 0.5 else 1
        u = (s % 0.5) * 2.0                                 # phase within the half period
        stance = tuple(group.get(c.leg, -1) != swinging for c in robot.contacts)
        q = robot.q_stand.copy()
        v = np.zeros(m.nv)
        v[0] = speed
        q[0] = speed * t
        if closer is not None:                              # the actuators move, loops closed
            dq = amp * np.sin(np.pi * u)
            dv = amp * np.pi * np.cos(np.pi * u) / (period / 2)
            q, v = closer.state(robot.q_stand[7:] + dq, dv, np.array([speed, 0, 0, 0, 0, 0]))
            q[0] = speed * t
        else:
            for leg in robot.legs:
                if leg.name not in legs:
                    continue
                iq, iv, Jinv = legs[leg.name]
                if group.get(leg.name) == swinging:          # forward and up, relative to the base
                    p = np.array([stride * (u - 0.5), 0.0, step_height * np.sin(np.pi * u)])
                    pd = np.array([stride, 0.0, step_height * np.pi * np.cos(np.pi * u)]) / (period / 2)
                else:                                        # sweeps back under the base
                    p = np.array([-stride * (u - 0.5), 0.0, 0.0])
                    pd = np.array([-stride, 0.0, 0.0]) / (period / 2)
                q[iq] += Jinv @ p
                v[iv] = Jinv @ pd
        pin.framesForwardKinematics(m, d, q)
        pin.centerOfMass(m, d, q, v)
        swing = {}
        for c, down in zip(robot.contacts, stance):
            if not down:
                p = d.oMf[m.getFrameId(c.frame)].translation
                swing[c.frame] = (p + np.array([0.0, 0.0, 0.005]), np.zeros(3), np.zeros(3))
        # the CoM is asked for an acceleration its stance feet's pyramids cannot all give
        a = a_peak * np.array([np.cos(w * t), np.sin(w * t), 0.0])
        out.append(Sample(q, v, (d.com[0].copy(), d.vcom[0].copy(), a), stance, swing))
    return out


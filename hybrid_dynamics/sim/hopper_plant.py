"""[Feurstein 2021]'s planar hopper in MuJoCo: an independent plant for the hopper controllers.

The MJCF is generated from the same hopper YAML (``hopper.model.load_description``): the base
moves on slide x, slide y and hinge z joints (MuJoCo's generalized velocity [xdot, ydot,
thetadot, qd], inertial, where the thesis's is the body twist [R^T odot, w, qd]); each point mass
is a body welded to its frame (a 1e-9 kg m^2 inertia stands in for the point's zero); the knee is
a hinge (revolute) or a slide (prismatic); the foot is a site. Gravity is -g along y and
MuJoCo's own contacts are off: the floor is the thesis's viscoelastic floor, evaluated from
MuJoCo's foot site and its Jacobian (``mj_jacSite``) and applied as a generalized force, with the
same signs, touchdown anchor and phase hysteresis as ``hopper.simulate``. The controller
(``hopper.controller``) reads the state, its forces are mapped to MuJoCo's coordinates
(Q_mj = [R Q_v; Q_w; Q_q]) and applied through ``qfrc_applied``, held for ``control_dt`` (1e-4 s,
a 10 kHz controller; the floor force is updated every step). MuJoCo integrates (RK4, fixed step
1e-5 s), so the plant's dynamics, kinematics and integration share nothing with
``hopper.simulate``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List

import mujoco
import numpy as np

from ..errors import InputError
from ..hopper.controller import HopperController
from ..hopper.model import Hopper, HopperDescription
from ..hopper.simulate import FALLEN_COM_HEIGHT, LIFT_HEIGHT

POINT_INERTIA = 1e-9


def _masses_xml(masses, prefix: str) -> str:
    return "".join(f'<body name="{prefix}_m{k}" pos="{x} {y} 0"><inertial pos="0 0 0" mass="{max(m, 1e-9)}" '
                   f'diaginertia="{POINT_INERTIA} {POINT_INERTIA} {POINT_INERTIA + I}"/></body>'
                   for k, (m, (x, y), I) in enumerate(masses))


def hopper_mjcf(desc: HopperDescription) -> str:
    """The planar MJCF of a hopper description."""
    inner = f'<site name="foot" pos="{desc.foot[0]} {desc.foot[1]} 0" size="0.005"/>'
    for name, kind, (x, y), masses in reversed(desc.joints):
        joint = (f'<joint name="{name}" type="hinge" axis="0 0 1"/>' if kind == "revolute"
                 else f'<joint name="{name}" type="slide" axis="1 0 0"/>')
        inner = f'<body name="{name}_body" pos="{x} {y} 0">{joint}{_masses_xml(masses, name)}{inner}</body>'
    return (f'<mujoco model="{desc.name}"><compiler angle="radian"/>'
            f'<option gravity="0 {-desc.gravity} 0" timestep="1e-5" integrator="RK4"><flag contact="disable"/></option>'
            f'<worldbody><body name="base"><joint name="x" type="slide" axis="1 0 0"/>'
            f'<joint name="y" type="slide" axis="0 1 0"/><joint name="theta" type="hinge" axis="0 0 1"/>'
            f'{_masses_xml(desc.base_masses, "base")}{inner}</body></worldbody></mujoco>')


@dataclass
class MujocoHopperLog:
    t: np.ndarray
    x: np.ndarray                 # [o_x, o_y, theta, q]
    touchdowns: List[float]
    liftoffs: List[float]
    fallen: bool


class MujocoHopper:
    def __init__(self, hopper: Hopper, controller: HopperController, dt: float = 1e-5, control_dt: float = 1e-4,
                 lift_height: float = LIFT_HEIGHT):
        self.hopper, self.controller, self.lift_height = hopper, controller, lift_height
        self._control_every = max(1, int(round(control_dt / dt)))
        self.model = mujoco.MjModel.from_xml_string(hopper_mjcf(hopper.desc))
        self.model.opt.timestep = dt
        self.data = mujoco.MjData(self.model)
        self._site = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, "foot")
        self._jac = np.zeros((3, self.model.nv))

    def set_state(self, x, v) -> None:
        """Thesis state (body twist) to MuJoCo's (inertial rates)."""
        x, v = np.asarray(x, float), np.asarray(v, float)
        if not (np.isfinite(x).all() and np.isfinite(v).all()):
            raise InputError("the hopper state has non-finite entries", field="state")
        c, s = math.cos(x[2]), math.sin(x[2])
        self.data.qpos[:] = x
        self.data.qvel[:] = np.r_[c * v[0] - s * v[1], s * v[0] + c * v[1], v[2:]]
        mujoco.mj_forward(self.model, self.data)

    def thesis_state(self):
        x = self.data.qpos.copy()
        c, s = math.cos(x[2]), math.sin(x[2])
        qv = self.data.qvel
        return x, np.r_[c * qv[0] + s * qv[1], -s * qv[0] + c * qv[1], qv[2:]]

    def run(self, x0, v0, duration: float) -> MujocoHopperLog:
        m, d, fl = self.model, self.data, self.hopper.desc.floor
        self.set_state(x0, v0)
        steps = int(round(duration / m.opt.timestep))
        every = max(1, int(round(1e-3 / m.opt.timestep)))
        ts, xs, touchdowns, liftoffs = [], [], [], []
        contact, stance, anchor, fallen = False, False, 0.0, False
        Q_ctrl = np.zeros(m.nv)
        for k in range(steps):
            foot = d.site_xpos[self._site][:2]
            mujoco.mj_jacSite(m, d, self._jac, None, self._site)
            J = self._jac[:2]
            foot_vel = J @ d.qvel
            if not contact and foot[1] < 0:
                contact, anchor = True, float(foot[0])
                if not stance:
                    touchdowns.append(d.time)
                stance = True
            elif contact and foot[1] >= 0:
                contact = False
            if stance and not contact and foot[1] > self.lift_height:
                stance = False
                liftoffs.append(d.time)
            F = np.zeros(2)
            if contact:
                F = np.array([-fl.Kx * (foot[0] - anchor) - fl.Dx * foot_vel[0],
                              max(-fl.Ky * foot[1] - fl.Dy * foot_vel[1], 0.0)])
            if k % self._control_every == 0:
                x, v = self.thesis_state()
                geo = self.hopper.geometry(x, v)
                Q = self.controller.command(x, v, geo, self.hopper.kinetic_energy(x, v), stance).total
                c, s = math.cos(x[2]), math.sin(x[2])
                Q_ctrl = np.r_[c * Q[0] - s * Q[1], s * Q[0] + c * Q[1], Q[2:]]
                if geo.com[1] < FALLEN_COM_HEIGHT:
                    fallen = True
                    break
            d.qfrc_applied[:] = Q_ctrl + J.T @ F
            if k % every == 0:
                ts.append(d.time)
                xs.append(d.qpos.copy())
            mujoco.mj_step(m, d)
            if not np.isfinite(d.qpos).all():
                raise InputError(f"the MuJoCo hopper's state became non-finite at t = {d.time:.6f} s", field="state")
        return MujocoHopperLog(t=np.array(ts), x=np.array(xs), touchdowns=touchdowns, liftoffs=liftoffs, fallen=fallen)

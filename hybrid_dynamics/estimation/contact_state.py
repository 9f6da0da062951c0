"""Which feet are on the ground: from joint efforts (a contact-force estimate), from foot
heights, or from a gait schedule, with hysteresis so a foot does not chatter.

Force estimate (quasi-static, legged robots' usual one): the leg rows of the equation of
motion with negligible leg accelerations give ``tau_leg = h_leg(q, v) - J_leg^T f``, so
``f = (J_leg^T)^+ (h_leg - tau_leg)`` with ``J_leg`` the LOCAL_WORLD_ALIGNED linear Jacobian
of the contact frame restricted to the leg's joints (``f`` is then a world-aligned force).

Decision, per contact, in this order:
  1. ``mode: schedule`` and a schedule given: the schedule;
  2. efforts available: vertical force above ``force_on`` switches on, below ``force_off`` off;
  3. otherwise: foot height above the ground below ``height_on`` on, above ``height_off`` off.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Optional

import numpy as np
import pinocchio as pin

from ..errors import InputError, reject_unknown_settings


@dataclass
class ContactStateConfig:
    mode: str = "auto"             # auto | schedule | force | height
    force_on: float = 8.0          # N, vertical force that means contact
    force_off: float = 3.0         # N
    height_on: float = 0.01        # m above the ground
    height_off: float = 0.025      # m
    ground_height: float = 0.0

    @classmethod
    def from_dict(cls, data: Optional[Mapping] = None) -> "ContactStateConfig":
        data = dict(data or {})
        reject_unknown_settings(cls, data, "contact-state", "contacts")
        if "mode" in data and data["mode"] not in ("auto", "schedule", "force", "height"):
            raise InputError(f"contact mode '{data['mode']}' is not auto, schedule, force or height",
                             field="contacts.mode")
        return cls(**{k: (str(v) if k == "mode" else float(v)) for k, v in data.items()})


class ContactForceEstimator:
    """Quasi-static contact forces from measured joint efforts (module docstring)."""

    def __init__(self, robot):
        self.robot = robot
        self.model = robot.model
        self.data = self.model.createData()
        self.frames = {}
        for c in robot.contacts:
            leg = next((l for l in robot.legs if l.contact_frame == c.frame), None)
            cols = [self.model.joints[j].idx_v for j in leg.joints] if leg else []
            self.frames[c.frame] = (self.model.getFrameId(c.frame), np.array(cols, dtype=int))

    def forces(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> Dict[str, np.ndarray]:
        """World-aligned contact forces; ``q``, ``v`` healthy-size, ``tau`` the nv-6 joint efforts."""
        model, data = self.model, self.data
        h = pin.rnea(model, data, q, v, np.zeros(model.nv))
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        out = {}
        for frame, (fid, cols) in self.frames.items():
            if len(cols) == 0:
                out[frame] = np.zeros(3)
                continue
            J = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)[:3, cols]
            rhs = h[cols] - tau[cols - 6]
            out[frame] = np.linalg.lstsq(J.T, rhs, rcond=None)[0]
        return out


class ContactStateEstimator:
    """Contact flags with hysteresis (module docstring)."""

    def __init__(self, robot, config: Optional[ContactStateConfig | Mapping] = None):
        self.config = config if isinstance(config, ContactStateConfig) else ContactStateConfig.from_dict(config)
        self.frames = [c.frame for c in robot.contacts]
        self.state: Dict[str, bool] = {f: True for f in self.frames}
        self.source = "initial"

    def reset(self) -> None:
        self.state = {f: True for f in self.frames}

    def update(self, heights: Optional[Mapping[str, float]] = None,
               forces_z: Optional[Mapping[str, float]] = None,
               schedule: Optional[Mapping[str, bool]] = None) -> Dict[str, bool]:
        cfg = self.config
        mode = cfg.mode
        if mode in ("auto", "schedule") and schedule is not None:
            self.source = "schedule"
            for f in self.frames:
                self.state[f] = bool(schedule.get(f, False))
        elif mode in ("auto", "force") and forces_z is not None:
            self.source = "force"
            for f in self.frames:
                fz = forces_z.get(f)
                if fz is None or not np.isfinite(fz):
                    continue
                if self.state[f] and fz < cfg.force_off:
                    self.state[f] = False
                elif not self.state[f] and fz > cfg.force_on:
                    self.state[f] = True
        elif mode in ("auto", "height") and heights is not None:
            self.source = "height"
            for f in self.frames:
                z = heights.get(f)
                if z is None or not np.isfinite(z):
                    continue
                z -= cfg.ground_height
                if self.state[f] and z > cfg.height_off:
                    self.state[f] = False
                elif not self.state[f] and z < cfg.height_on:
                    self.state[f] = True
        return dict(self.state)

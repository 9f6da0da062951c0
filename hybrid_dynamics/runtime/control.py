"""Full state -> effort command through the whole-body QP
(:class:`~hybrid_dynamics.control.controller.WholeBodyController`), in the order of the
controller's ``joints`` parameter, with the safe-mode damping command beside it.

Safe mode: when inputs are stale (no accepted IMU or joint state for ``stale_timeout``),
missing or never received, the command is joint damping ``tau = -kd_safe * qd`` on the
surviving actuated joints (clipped to their effort limits; zero while the joint states
themselves are stale, see ``StateCore.safe_velocities``), until fresh data returns: the
first cycle with fresh accepted samples of both is a QP cycle again. Nothing here ever
returns NaN, and no command exceeds the URDF effort limits: the QP keeps torques inside them,
but its fallback (gravity compensation and damping when the QP has no solution) does not, so
the command is saturated at the limits like an actuator would be, and the saturated cycles are
counted (``saturated``, on /diagnostics).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pinocchio as pin

from ..control.controller import WholeBodyController
from ..control.kernels import finite
from ..control.references import References
from ..errors import InputError
from ..estimation.base_estimator import BaseState
from ..model.morphology import Morphology, MorphologyMap


def hold_references(robot, mmap, q_full: np.ndarray) -> References:
    """Stand still where the robot is: CoM held at its current position, level base,
    standing posture (``control.references.References.hold``)."""
    com = pin.centerOfMass(mmap.model, mmap.model.createData(), mmap.expand_q(mmap.reduce_q(q_full)))
    return References.hold(com=com.copy())


class ControlCore:
    """Full state -> effort command in ``joints`` order (removed/locked/passive joints get 0)."""

    def __init__(self, robot, params: Mapping):
        self.robot = robot
        self.params = params
        joints = list(params.get("joints") or robot.actuated_joints)
        unknown = [j for j in joints if j not in robot.joint_names]
        if unknown:
            raise InputError(f"joints not in robot {robot.name}: {', '.join(unknown)}", field="joints")
        self.joints = joints
        self.kd_safe = float(params.get("safe_mode_damping", 1.0))
        config = dict(params.get("controller") or {})
        if params.get("solver"):
            config["solver"] = params["solver"]
        if params.get("update_rate"):
            config["dt"] = 1.0 / float(params["update_rate"])
        self.controller = WholeBodyController(robot, config)
        self.kind = "qp"                # reported on /diagnostics and by the benches
        self.allowed_contacts = set(params.get("contacts") or [c.frame for c in robot.contacts])
        unknown = self.allowed_contacts - {c.frame for c in robot.contacts}
        if unknown:
            raise InputError(f"contacts not in robot {robot.name}: {', '.join(sorted(unknown))}", field="contacts")
        self.references = None          # set_references(), or hold where the first state is
        self.command = np.zeros(len(joints))
        self.last_output = None
        self.fallbacks = 0
        self.nonfinite = 0
        self.saturated = 0
        self._jidx = {n: robot.model.joints[robot.model.getJointId(n)].idx_v - 6 for n in robot.joint_names}
        effort = robot.model.effortLimit[6:]        # safe-mode torques stay within the URDF's
        self.tau_max = np.where(np.isfinite(effort) & (effort > 0), effort, np.inf)
        self.set_morphology(Morphology.healthy(robot))

    def set_morphology(self, morph: Morphology) -> None:
        mmap = MorphologyMap(self.robot, morph)
        self.controller.set_morphology(mmap)
        self.map = mmap
        self.morphology = morph
        surviving = set(mmap.joint_names)
        actuated = set(self.robot.actuated_joints)
        self.live = [(i, n) for i, n in enumerate(self.joints) if n in surviving and n in actuated]
        self.live_idx = np.array([i for i, _ in self.live], dtype=int)
        order = {n: k for k, n in enumerate(self.controller.formulation.joints.names)}
        self.live_src = np.array([order[n] for _, n in self.live], dtype=int)   # in the QP's torques
        self.live_v = np.array([self._jidx[n] for _, n in self.live], dtype=int)
        self.live_limit = self.tau_max[self.live_v]
        self.contact_frames = [c.frame for c in mmap.contacts]

    def set_references(self, references) -> None:
        """Task references (control/references.py) from a gait or reference source."""
        self.references = references

    def cycle(self, state: BaseState, stance: Mapping[str, bool]) -> np.ndarray:
        """The command for one cycle (a view on a preallocated array)."""
        q = self.map.reduce_q(state.q)
        v = self.map.reduce_v(state.v)
        leaves = self.controller.active_leaves
        if leaves is not None:           # soft feet (those still there): measured coordinates, else at rest
            q_s = state.q_soft[leaves.kept] if state.q_soft is not None else np.zeros(leaves.ns)
            v_s = state.v_soft[leaves.kept] if state.v_soft is not None else np.zeros(leaves.ns)
            q, v = np.concatenate([q, q_s]), np.concatenate([v, v_s])
        if self.references is None:
            self.references = hold_references(self.robot, self.map, state.q)
        st = {f: bool(stance.get(f, False)) and f in self.allowed_contacts for f in self.contact_frames}
        out = self.controller.update(q, v, st, self.references)
        self.last_output = out
        cmd = self.command
        cmd[:] = 0.0
        cmd[self.live_idx] = out.tau_vector[self.live_src]
        if getattr(out, "fallback", False):
            self.fallbacks += 1
        if not finite(cmd):
            self.nonfinite += 1
            return self.safe(state.v[6:])
        return self._saturate(cmd)

    def _saturate(self, cmd: np.ndarray) -> np.ndarray:
        """``cmd`` clipped in place to the effort limits of the surviving actuated joints."""
        if len(self.live_idx):
            live = cmd[self.live_idx]
            if np.any(np.abs(live) > self.live_limit):
                self.saturated += 1
                cmd[self.live_idx] = np.clip(live, -self.live_limit, self.live_limit)
        return cmd

    def safe(self, vj: np.ndarray) -> np.ndarray:
        """Joint damping on the surviving actuated joints (``vj`` healthy-size rates), within
        the URDF effort limits: what safe mode publishes (docs/ros.md, "Safe mode")."""
        cmd = self.command
        cmd[:] = 0.0
        if len(self.live_idx):
            vals = -self.kd_safe * np.asarray(vj)[self.live_v]
            cmd[self.live_idx] = np.where(np.isfinite(vals), vals, 0.0)
        return self._saturate(cmd)

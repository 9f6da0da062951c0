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
from numba import float64, intp, njit

from ..control.controller import WholeBodyController
from ..control.references import References
from ..errors import InputError
from ..estimation.base_estimator import BaseState
from ..model.morphology import Morphology, MorphologyMap


def hold_references(robot, mmap, q_full: np.ndarray) -> References:
    """Stand still where the robot is: CoM held at its current position, level base,
    standing posture (``control.references.References.hold``)."""
    com = pin.centerOfMass(mmap.model, mmap.model.createData(), mmap.expand_q(mmap.reduce_q(q_full)))
    return References.hold(com=com.copy())


@njit(intp(float64[:], intp[:], float64[:], intp[:], float64[:]), cache=True)
def live_command(cmd, live, values, src, limit):
    """``cmd`` zero but for ``cmd[live[k]] = values[src[k]]``, clipped to ``-limit[k]..limit[k]``;
    returns -1 when a written value is not finite (``cmd`` then as written, unclipped), 1 when
    one was beyond its limit (every one clipped), else 0. One call instead of numpy's gather,
    ``any(abs(.) > .)`` and ``clip`` (about 10 us a cycle)."""
    cmd[:] = 0.0
    for k in range(live.shape[0]):
        cmd[live[k]] = values[src[k]]
    for k in range(live.shape[0]):
        if not np.isfinite(cmd[live[k]]):
            return -1
    beyond = 0
    for k in range(live.shape[0]):
        if abs(cmd[live[k]]) > limit[k]:
            beyond = 1
    if beyond:
        for k in range(live.shape[0]):
            cmd[live[k]] = min(max(cmd[live[k]], -limit[k]), limit[k])
    return beyond


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
        self._in_order = np.arange(len(self.live), dtype=np.intp)      # safe(): values already gathered
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
        if getattr(out, "fallback", False):
            self.fallbacks += 1
        code = live_command(self.command, self.live_idx, out.tau_vector, self.live_src, self.live_limit)
        if code < 0:
            self.nonfinite += 1
            return self.safe(state.v[6:])
        self.saturated += code
        return self.command

    def safe(self, vj: np.ndarray) -> np.ndarray:
        """Joint damping on the surviving actuated joints (``vj`` healthy-size rates), within
        the URDF effort limits: what safe mode publishes (docs/ros.md, "Safe mode")."""
        vals = -self.kd_safe * np.asarray(vj, dtype=float)[self.live_v]
        vals = np.where(np.isfinite(vals), vals, 0.0)
        self.saturated += live_command(self.command, self.live_idx, vals, self._in_order, self.live_limit)
        return self.command

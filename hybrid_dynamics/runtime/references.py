"""Reference sources: what the controller tracks in each cycle (a gait following /cmd_vel
and the morphology, the closed-chain biped's weight shift, or a hold where the robot stands).

A source has ``update(t, estimate) -> (References, planned stance)`` (``estimate``: the
cycle's :class:`~hybrid_dynamics.estimation.base_estimator.BaseState`).
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
import pinocchio as pin

from ..control.balance import WeightShift, WeightShiftReference
from ..control.locomotion import LocomotionConfig, LocomotionPlanner
from ..control.references import OrientationTarget, References, Target
from ..errors import InputError
from ..estimation.base_estimator import BaseState
from ..model.morphology import Morphology, MorphologyMap


def to_references(ref):
    """A :class:`~hybrid_dynamics.control.locomotion.LocomotionReference` as the controller's
    :class:`~hybrid_dynamics.control.references.References` (stance feet are contacts, swing
    feet tracked; no orientation target while the body sits down, its orientation task off)."""
    return References(
        com=Target(ref.com_position, ref.base_linear_velocity, ref.base_linear_acceleration),
        base_orientation=None if ref.base_orientation is None else
        OrientationTarget(ref.base_orientation, ref.base_angular_velocity, ref.base_angular_acceleration),
        swing_feet={f: Target(x.position, x.velocity, x.acceleration) for f, x in ref.feet.items() if not x.stance})


class GaitCore:
    """/cmd_vel and the morphology -> controller references and the planned stance, through
    :class:`~hybrid_dynamics.control.locomotion.LocomotionPlanner` (the logic lives there).

    The controller node owns one (``gait: true``) and calls :meth:`update` at the start of
    each cycle with the estimate; the library scenario loop (sim/runner.py) uses the same
    class, so both paths plan identically."""

    def __init__(self, robot, config: Optional[Mapping] = None):
        self.robot = robot
        self.planner = LocomotionPlanner(robot, LocomotionConfig.from_dict(config))
        self.frames = [c.frame for c in robot.contacts]
        self._data = robot.model.createData()
        self.command = (0.0, 0.0, 0.0)
        self.started = False
        self.mmap: Optional[MorphologyMap] = None
        self._mdata = None
        self.reference = None
        self.stance = {f: True for f in self.frames}

    def _measured_com(self, q: np.ndarray, v: np.ndarray):
        """The CoM of what is left and its velocity at the estimate ``(q, v)`` (healthy-size):
        the planner aborts a static gait's swing under which it sinks, and sits a body down
        whose capture point leaves the feet. (The feet come with the estimate: the base
        estimator's kinematics at the same ``q``, ``BaseState.feet``.)"""
        if self.mmap is None:
            com = pin.centerOfMass(self.robot.model, self._data, q, v)
            return com, self._data.vcom[0].copy()
        com = pin.centerOfMass(self.mmap.model, self._mdata, self.mmap.expand_q(self.mmap.reduce_q(q)),
                               self.mmap.expand_v(self.mmap.reduce_v(v)))
        return com, self._mdata.vcom[0].copy()

    def set_command(self, vx: float, vy: float, wz: float) -> None:
        vals = (float(vx), float(vy), float(wz))
        if not all(np.isfinite(vals)):
            return
        self.command = vals
        if self.started:
            self.planner.set_command(*vals)

    def set_morphology(self, morph: Morphology, t: float) -> None:
        self.mmap = None if morph.is_healthy() else MorphologyMap(self.robot, morph)
        self._mdata = None if self.mmap is None else self.mmap.model.createData()
        if self.started:
            self.planner.set_morphology(self.mmap, t)

    def start(self, t: float, q: np.ndarray) -> None:
        """Start standing where the robot is (``q`` healthy-size), then follow the command."""
        self.planner.morphology_map = self.mmap
        self.planner.reset(t, q)
        self.planner.set_command(*self.command)
        self.started = True

    def update(self, t: float, estimate: BaseState):
        """(References, planned stance: frame -> bool) at time ``t`` for the state estimate
        (healthy-size ``q``; ``feet``, the world position of every contact frame, confirm a
        landing foot's touch-down)."""
        q = estimate.q
        if not self.started:
            self.start(t, q)
        com, vcom = self._measured_com(q, estimate.v)
        R = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
        ref = self.planner.update(t, estimate.feet, com, vcom, R, R @ estimate.v[3:6], q[:3])
        self.reference = ref
        self.stance = {f: ref.feet[f].stance if f in ref.feet else False for f in self.frames}
        return to_references(ref), self.stance


# ============================================================================ reference sources
REFERENCE_SOURCES = ("gait", "weight_shift", "hold")


def make_reference_source(robot, params: Mapping):
    """(kind, source) for the controller's ``references`` parameter (ros/params.py):

    - ``gait`` (or ``references`` empty and ``gait: true``): :class:`GaitCore`, the
      locomotion planner following /cmd_vel and the morphology, with the ``locomotion``
      settings (``LocomotionConfig`` fields);
    - ``weight_shift``: ``control.balance.WeightShiftReference`` (the closed-chain balance's
      references: CoM held where the robot stands at the first cycle plus the lateral weight
      shift of the ``weight_shift`` settings, ``WeightShift`` fields), every foot down;
    - ``hold`` (or empty without a gait): None, the controller holds where it first stands.

    A source has ``update(t, estimate) -> (References, stance)``."""
    kind = str(params.get("references") or ("gait" if params.get("gait") else "hold"))
    if kind not in REFERENCE_SOURCES:
        raise InputError(f"references '{kind}' is not {', '.join(REFERENCE_SOURCES)}", field="references")
    if kind == "gait":
        return kind, GaitCore(robot, params.get("locomotion"))
    if kind == "weight_shift":
        return kind, WeightShiftReference(robot, WeightShift.from_dict(params.get("weight_shift")))
    return kind, None

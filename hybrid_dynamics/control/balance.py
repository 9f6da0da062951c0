"""Closed-chain balance: a biped with closed linkages standing and shifting its weight
(Mingo Hoffman et al.'s (2024) hardware test: the CoM moves laterally over one foot and back).

One control cycle of :class:`ClosedChainBalance` (what a driver gives in, actuator forces out):

  actuated joint encoders only                       -> q_a, v_a (``robot.actuated_joints``)
  passive-state completion ([Mingo Hoffman 2024, Sec. VI-A])   -> estimation.PassiveStateEstimator
  floating base from the IMU and both stance feet    -> estimation.BaseEstimator
  CoM reference: hold, then the lateral weight shift -> :class:`WeightShift`
  QP inverse dynamics on the projected dynamics      -> control.WholeBodyController
  actuator forces (N along each ball screw)          -> ``BalanceOutput.tau``

The passive estimator runs at the control rate: ``dt = 1 / rate``, ``beta dt = 1`` (the
actuated state lands on each measurement) and ``alpha dt <= 0.5`` (half the closure error
removed per cycle). Its estimate is constraint-consistent, so the controller's projection
``v = G_f v_m`` holds on it.

:func:`run_balance` drives any plant with the sensor interface of ``sim.plant.Plant``
(``joint_states()``, ``imu()``, ``set_torques()``, ``step(n)``, ``time``, ``timestep``); it
does not import MuJoCo (this is the control layer), and a caller may pass ``observe`` to read
the plant's ground truth every cycle.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional

import numpy as np
import pinocchio as pin

from ..errors import InputError, reject_unknown_settings
from ..estimation.base_estimator import BaseEstimator, BaseState, ImuSample
from ..estimation.passive_state import PassiveEstimate, PassiveStateEstimator
from .controller import ControlOutput, WholeBodyController
from .references import OrientationTarget, References, Target


@dataclass
class WeightShift:
    """Lateral CoM motion: ``stand`` s still, then ``cycles`` shifts of ``period`` s each,
    alternately towards the left foot (+y) and the right foot (-y), each
    ``y = +-amplitude (1 - cos(2 pi tau / period)) / 2`` (over the foot and back, zero velocity
    at both ends), then still again."""
    stand: float = 2.0          # s
    amplitude: float = 0.06     # m (the feet are 0.10 m either side of the pelvis centre)
    period: float = 4.0         # s, one shift out and back
    cycles: int = 4

    @classmethod
    def from_dict(cls, data: Optional[Mapping] = None) -> "WeightShift":
        data = dict(data or {})
        reject_unknown_settings(cls, data, "weight-shift", "balance")
        out = cls(**{k: (int(v) if k == "cycles" else float(v)) for k, v in data.items()})
        if out.period <= 0 or out.stand < 0 or out.cycles < 0 or out.amplitude < 0:
            raise InputError("weight shift: period > 0, stand, cycles, amplitude >= 0", field="balance")
        return out

    @property
    def end(self) -> float:
        return self.stand + self.cycles * self.period

    def offset(self, t: float):
        """(y, y_dot, y_ddot) of the CoM offset at ``t`` s after the start."""
        tau = t - self.stand
        if tau <= 0.0 or tau >= self.cycles * self.period:
            return 0.0, 0.0, 0.0
        k = int(tau // self.period)
        sign = 1.0 if k % 2 == 0 else -1.0
        w = 2 * math.pi / self.period
        ph = w * (tau - k * self.period)
        a = sign * self.amplitude / 2
        return a * (1 - math.cos(ph)), a * w * math.sin(ph), a * w * w * math.cos(ph)


@dataclass
class BalanceOutput:
    tau: Dict[str, float]             # actuated joint -> actuator force (N)
    control: ControlOutput
    passive: PassiveEstimate
    state: BaseState                  # complete estimated state (q, v)
    com_reference: np.ndarray
    estimate_time: float              # s, passive + base estimation
    control_time: float               # s, the QP controller


class WeightShiftReference:
    """The references of the weight shift: CoM held where the robot stands when it starts
    (heading as it is, base level), plus :class:`WeightShift`'s lateral offset; every foot
    stays down. :class:`ClosedChainBalance` and the ROS controller node (``references:
    weight_shift``, ros/pipeline.py) both take their references from here."""

    def __init__(self, robot, shift: Optional[WeightShift] = None):
        self.robot = robot
        self.shift = shift or WeightShift()
        self.model = robot.model
        self.data = self.model.createData()
        self.stance = {c.frame: True for c in robot.contacts}
        self.t0: Optional[float] = None
        self.com0: Optional[np.ndarray] = None
        self.yaw0 = np.array([0.0, 0.0, 0.0, 1.0])

    @property
    def started(self) -> bool:
        return self.t0 is not None

    def start(self, t: float, q: np.ndarray) -> None:
        """Hold where the robot stands at ``t`` (estimated configuration ``q``, full size)."""
        self.t0 = float(t)
        self.com0 = pin.centerOfMass(self.model, self.data, q).copy()
        R = pin.Quaternion(q[6], *q[3:6]).toRotationMatrix()
        yaw = math.atan2(R[1, 0], R[0, 0])
        self.yaw0 = np.array([0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)])

    def reference(self, t: float) -> References:
        y, yd, ydd = self.shift.offset(t - self.t0)
        e = np.array([0.0, 1.0, 0.0])
        return References(com=Target(self.com0 + y * e, yd * e, ydd * e),
                          base_orientation=OrientationTarget(self.yaw0))

    def update(self, t: float, q: np.ndarray):
        """(References, stance) at ``t``; the first call starts the hold at ``q``."""
        if self.t0 is None:
            self.start(t, q)
        return self.reference(t), self.stance


def passive_estimator(robot, rate: float) -> PassiveStateEstimator:
    """The passive-state estimator at a control rate: ``beta dt = 1`` (the actuated state lands
    on each measurement) and ``alpha dt <= 0.5``; given stamps (``update(..., t=)``) it caps
    the gains at 1/dt of the true interval, the same values at this rate."""
    dt = 1.0 / float(rate)
    return PassiveStateEstimator(robot, dt=dt, alpha=min(100.0, 0.5 / dt), beta=min(1000.0, 1.0 / dt))


class ClosedChainBalance:
    """Estimation + QP control of a closed-chain robot standing on all its feet."""

    def __init__(self, robot, *, rate: float = 200.0, controller: Optional[Mapping] = None,
                 shift: Optional[WeightShift] = None):
        if robot.loops is None:
            raise InputError(f"robot '{robot.name}' has no closed loops (ClosedChainBalance is for closed chains)")
        self.robot = robot
        self.rate = float(rate)
        self.passive = passive_estimator(robot, self.rate)
        self.kin = self.passive.kin
        self.base = BaseEstimator(robot)
        self.controller = WholeBodyController(robot, dict(controller or {}))
        self.references = WeightShiftReference(robot, shift)
        self.shift = self.references.shift
        self.stance = self.references.stance

    @property
    def com0(self) -> Optional[np.ndarray]:
        return self.references.com0

    def reference(self, t: float) -> References:
        return self.references.reference(t)

    def update(self, t: float, q_a: np.ndarray, v_a: np.ndarray, imu: ImuSample) -> BalanceOutput:
        """One cycle at time ``t`` from the actuated joints (``robot.actuated_joints`` order)."""
        t0 = time.perf_counter()
        est = self.passive.update(q_a, v_a, t=t)
        state = self.base.update(t, est.q[7:], est.v[6:], imu, self.stance)
        t1 = time.perf_counter()
        refs, _ = self.references.update(t, state.q)     # the first cycle: hold where it stands
        out = self.controller.update(state.q, state.v, self.stance, refs)
        t2 = time.perf_counter()
        return BalanceOutput(out.tau, out, est, state, refs.com.position.copy(), t1 - t0, t2 - t1)


@dataclass
class BalanceLog:
    t: List[float] = field(default_factory=list)
    outputs: List[BalanceOutput] = field(default_factory=list)
    observed: List[object] = field(default_factory=list)


def run_balance(plant, robot, duration: float, *, rate: float = 200.0, controller: Optional[Mapping] = None,
                shift: Optional[WeightShift] = None, observe: Optional[Callable] = None,
                keep_outputs: bool = False) -> BalanceLog:
    """Closed loop on ``plant`` for ``duration`` s: sensors -> :class:`ClosedChainBalance`
    -> ``plant.set_torques`` (actuator forces), the plant stepped at its own timestep between
    control cycles. ``observe(plant, output)`` is called after every cycle (its results are
    logged); it returns something falsy or a value to keep."""
    decimation = max(1, int(round(1.0 / (rate * plant.timestep))))
    bal = ClosedChainBalance(robot, rate=1.0 / (decimation * plant.timestep), controller=controller, shift=shift)
    index = None
    log = BalanceLog()
    end = plant.time + duration
    while plant.time < end - 1e-9:
        names, qa, va, _ = plant.joint_states()
        if index is None:
            index = np.array([list(names).index(n) for n in bal.kin.actuated_joints])
        imu = plant.imu()
        out = bal.update(plant.time, qa[index], va[index],
                         ImuSample(imu.orientation, imu.angular_velocity, imu.linear_acceleration))
        plant.set_torques(out.tau)
        log.t.append(plant.time)
        if keep_outputs:
            log.outputs.append(out)
        if observe is not None:
            log.observed.append(observe(plant, out))
        plant.step(decimation)
    log.balance = bal
    return log

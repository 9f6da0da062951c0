"""Floating-base state from the IMU and the leg kinematics of stance legs.

The orientation and the angular rate come from the IMU (its orientation is trusted, as on
legged_control and most quadrupeds: the IMU's own filter is better than anything we could
do with a leg odometry yaw). Position and linear velocity come from a linear Kalman filter
in the style of Bloesch et al. (2013) / legged_control's ``LinearKalmanFilter``:

state      x = [p (3), v (3), p_f1 (3), ..., p_fn (3)]      world frame, one foot per contact
process    p+ = p + dt v + dt^2/2 a,  v+ = v + dt a,  p_f+ = p_f       a = R a_imu + g
           foot process noise small in stance, huge in swing (a swinging foot is free)
measure    p_fi - p = R r_i(q)                      leg kinematics (r_i in the base frame)
           v        = -R (w x r_i + J_i(q) qd)      a stance foot does not move
           p_fi,z   = ground_height + radius_i      a stance foot is on the ground
           every swing-foot row gets a huge noise, so it has no weight.

The velocity rows of the n feet all measure the same v with independent noises: they enter as
one row triple, their precision-weighted mean with the combined variance, which is a
sufficient statistic for v (the posterior is the same as with the n triples); their scatter
about the mean, sum_i |v_i - v_mean|^2 / r_i, is what the n triples add to the innovation
statistic, and is added to it. The step itself (predict, correct, health) is one compiled
call, estimation/kalman_step.py.

Health (checked every cycle): the state and covariance are finite, the covariance of the
base position and velocity is positive definite and below ``max_covariance``, and the
innovation is within the gate (its normalised square nu^T S^-1 nu per measured row below
``innovation_gate``: a measurement that many standard deviations away means the state, not
the sensor, is wrong, since the inputs passed the plausibility limits of
estimation/plausibility.py). An unhealthy filter is reset and runs the current sample as its
first one (base height from the stance feet, as at start); :attr:`BaseEstimator.health`
says why and counts the restarts.

Conventions are Pinocchio's (docs/ARCHITECTURE.md): ``q = [p, quat xyzw, joints]``,
``v = [R^T v_world, w_local, joint rates]``. Vectors passed in and out are *healthy-size*
(every 1-DoF joint of the robot, in Pinocchio's order); joints a morphology removed are
simply ignored (their contacts are never measured).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Sequence

import numpy as np
import pinocchio as pin

from ..errors import reject_unknown_settings
from . import base_frame, kalman_step
from .foot_kinematics import FootKinematics


GRAVITY = np.array([0.0, 0.0, -9.81])


@dataclass
class ImuSample:
    """One IMU reading: orientation of the IMU frame in the world (quaternion x y z w),
    angular velocity and specific force (accelerometer) in the IMU frame."""
    orientation: np.ndarray
    angular_velocity: np.ndarray
    linear_acceleration: np.ndarray


@dataclass
class BaseState:
    """The full robot state: healthy-size ``q``, ``v`` (Pinocchio conventions) and the
    covariance of the filter's base position and world linear velocity (6 x 6)."""
    q: np.ndarray
    v: np.ndarray
    covariance: np.ndarray
    feet: Dict[str, np.ndarray] = field(default_factory=dict)   # world foot positions (kinematics)
    q_soft: Optional[np.ndarray] = None     # soft modules' coordinates, as measured (soft feet)
    v_soft: Optional[np.ndarray] = None


@dataclass
class BaseEstimatorConfig:
    """Noise densities (standard deviations) of the linear Kalman filter."""
    accel_noise: float = 0.5          # m/s^2, process noise on the velocity
    position_noise: float = 0.005     # m/sqrt(s), process noise on the base position
    stance_foot_noise: float = 0.002  # m/sqrt(s), a stance foot may slip this much
    swing_foot_noise: float = 100.0   # m/sqrt(s): a swinging foot is unconstrained
    kinematics_noise: float = 0.002   # m, foot position from encoders
    velocity_noise: float = 0.05      # m/s, foot velocity from encoders
    height_noise: float = 0.005       # m, stance foot height above the ground
    swing_measurement_noise: float = 1e3
    ground_height: float = 0.0
    use_foot_height: bool = True
    innovation_gate: float = 1.0e4    # mean nu^T S^-1 nu per measured row: beyond, re-initialise
    max_covariance: float = 1.0e2     # m^2, (m/s)^2: bound on the base block of the covariance

    @classmethod
    def from_dict(cls, data: Optional[Mapping] = None) -> "BaseEstimatorConfig":
        data = dict(data or {})
        reject_unknown_settings(cls, data, "base estimator", "estimator")
        return cls(**{k: type(getattr(cls, k))(v) for k, v in data.items()})


@dataclass
class EstimatorHealth:
    """The filter's self-check: ``healthy`` after the last cycle, ``reason`` of the last
    re-initialisation, how many there were, and the last innovation statistic (mean
    normalised innovation squared per measured row)."""
    healthy: bool = True
    reason: str = ""
    resets: int = 0
    innovation: float = 0.0


class BaseEstimator:
    """IMU orientation + stance-leg kinematics, linear KF on base position and velocity."""

    def __init__(self, robot, config: Optional[BaseEstimatorConfig | Mapping] = None):
        self.robot = robot
        self.config = config if isinstance(config, BaseEstimatorConfig) else BaseEstimatorConfig.from_dict(config)
        self.model = robot.model
        self.frames = [c.frame for c in robot.contacts]
        # height of each contact frame on the ground: a foot sphere's centre is its radius up
        self.contact_heights = self.config.ground_height + np.array([c.radius for c in robot.contacts])
        self.frame_ids = [self.model.getFrameId(f) for f in self.frames]
        self.nc = len(self.frames)
        self.nx = 6 + 3 * self.nc
        self.active = np.ones(self.nc, dtype=bool)        # contacts the morphology keeps
        # rotation of the IMU frame in the base frame (a fixed frame on the base body)
        self.R_bi = np.eye(3)
        self.p_bi = np.zeros(3)
        if robot.imu_frame and self.model.existFrame(robot.imu_frame):
            d = self.model.createData()
            pin.framesForwardKinematics(self.model, d, pin.neutral(self.model))
            M = d.oMf[self.model.getFrameId(robot.imu_frame)]
            base = d.oMi[1]
            rel = base.actInv(M)
            self.R_bi = rel.rotation.copy()
            self.p_bi = rel.translation.copy()
        c = self.config
        variances = np.empty(8)
        for index, sigma in ((kalman_step.POSITION, c.position_noise), (kalman_step.ACCEL, c.accel_noise),
                             (kalman_step.STANCE_FOOT, c.stance_foot_noise), (kalman_step.SWING_FOOT, c.swing_foot_noise),
                             (kalman_step.KINEMATICS, c.kinematics_noise), (kalman_step.VELOCITY, c.velocity_noise),
                             (kalman_step.HEIGHT, c.height_noise), (kalman_step.UNMEASURED, c.swing_measurement_noise)):
            variances[index] = sigma ** 2
        self._variances = variances
        self._compile_step()
        self.feet = FootKinematics(self.model, self.frame_ids)     # the legs' own foot positions and velocities, base at the origin
        self._R, self._w_b, self._a_w = np.empty((3, 3)), np.empty(3), np.empty(3)   # this cycle's, base_frame
        self.health = EstimatorHealth()
        self.reset()

    def _compile_step(self) -> None:
        """Compile the filter step (or load it from numba's on-disk cache: about 6 s the first
        time on a machine, 0.3 s after) now, on arguments of the types update() passes, so
        that no control cycle waits for it."""
        r = np.zeros((self.nc, 3))
        kalman_step.step(np.zeros(self.nx), np.eye(self.nx), 1e-3, GRAVITY.copy(), r, r.copy(), r.copy(),
                         np.zeros(3), np.eye(3), self.contact_heights, self.active.copy(), self.active,
                         self._variances, self.config.use_foot_height, self.config.innovation_gate, True,
                         self.config.max_covariance)

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        self.x = np.zeros(self.nx)
        self.P = np.eye(self.nx) * 1e-2
        self.t: Optional[float] = None
        self.initialized = False
        self.last: Optional[BaseState] = None

    def set_active_contacts(self, frames: Sequence[str]) -> None:
        """Contacts that exist in the current morphology (others are never measured)."""
        keep = set(frames)
        self.active = np.array([f in keep for f in self.frames], dtype=bool)

    # ------------------------------------------------------------------ update
    def update(self, t: float, qj: np.ndarray, vj: np.ndarray, imu: ImuSample,
               stance: Mapping[str, bool]) -> BaseState:
        """One filter step at time ``t`` (s) with healthy-size joint positions/velocities."""
        if self.initialized:
            fault = self._fault()                             # the state this cycle starts from
            if fault:
                return self._restart(fault, t, qj, vj, imu, stance)
        cfg = self.config
        qj = np.asarray(qj, dtype=float)
        vj = np.asarray(vj, dtype=float)
        R, w_b, a_w = self._R, self._w_b, self._a_w             # base orientation in the world, rate, acceleration
        base_frame.base_motion(np.asarray(imu.orientation, dtype=float), np.asarray(imu.angular_velocity, dtype=float),
                               np.asarray(imu.linear_acceleration, dtype=float), self.R_bi, GRAVITY, R, w_b, a_w)
        r, rd = self.feet(qj, vj)
        r_w = r @ R.T                                          # rows: R r_i
        contact = np.array([bool(stance.get(f, False)) for f in self.frames]) & self.active

        fresh = not self.initialized
        if fresh:
            self._initialize(r_w, contact)
            self.t = t
        dt = min(max(float(t - self.t), 0.0), 0.1)          # plain floats: np.clip of a scalar is ~10 calls
        self.t = t

        # ---- predict and correct (estimation/kalman_step.py, compiled)
        nis, code = kalman_step.step(self.x, self.P, dt, a_w, r, rd, r_w, w_b, R, self.contact_heights, contact,
                                     self.active, self._variances, cfg.use_foot_height, cfg.innovation_gate,
                                     fresh, cfg.max_covariance)
        self.health.innovation = nis
        if code == kalman_step.INNOVATION_BEYOND_GATE:
            return self._restart(f"innovation {nis:.3g} per row beyond the gate {cfg.innovation_gate:g}",
                                 t, qj, vj, imu, stance)
        fault = self._fault_reason(code)
        if fault and not fresh:
            return self._restart(fault, t, qj, vj, imu, stance)
        self.health.healthy = not fault
        return self._state(R, w_b, qj, vj, r_w)

    def _fault(self) -> str:
        """Why the state is unhealthy, or '' (finite, the base covariance bounded, the
        diagonal positive, the base block positive definite: kalman_step.state_fault)."""
        return self._fault_reason(kalman_step.state_fault(self.x, self.P, self.config.max_covariance))

    def _fault_reason(self, code: int) -> str:
        """The sentence for a health code of kalman_step ('' if healthy)."""
        if code == kalman_step.HEALTHY:
            return ""
        if code == kalman_step.COVARIANCE_TOO_LARGE:
            worst = float(self.P.diagonal()[:6].max())
            return f"base covariance {worst:.3g} beyond {self.config.max_covariance:g}"
        return {kalman_step.NOT_FINITE: "state or covariance not finite",
                kalman_step.COVARIANCE_NOT_POSITIVE: "covariance not positive",
                kalman_step.BASE_NOT_POSITIVE_DEFINITE: "base covariance not positive definite",
                kalman_step.INNOVATION_NOT_POSITIVE_DEFINITE: "innovation covariance not positive definite",
                }[code]

    def _restart(self, reason: str, *sample) -> BaseState:
        """Say why, then run this sample through a reset filter, as the first one."""
        h = self.health
        h.reason = reason
        h.resets += 1
        self.reset()
        state = self.update(*sample)
        h.healthy = False
        return state

    def _initialize(self, r_w: np.ndarray, contact: np.ndarray) -> None:
        use = contact if contact.any() else self.active
        p = np.zeros(3)
        if use.any():
            p[2] = float(np.max(self.contact_heights[use] - r_w[use, 2]))
        self.x[:] = 0.0
        self.x[0:3] = p
        for i in range(self.nc):
            self.x[6 + 3 * i:9 + 3 * i] = p + r_w[i]
        self.P[:] = np.eye(self.nx) * 1e-4
        self.initialized = True

    def _state(self, R, w_b, qj, vj, r_w) -> BaseState:
        q = np.empty(self.model.nq)
        v = np.empty(self.model.nv)
        base_frame.state_vectors(self.x, R, w_b, qj, vj, q, v)
        feet = dict(zip(self.frames, self.x[0:3] + r_w))
        self.last = BaseState(q, v, self.P[0:6, 0:6].copy(), feet)
        return self.last

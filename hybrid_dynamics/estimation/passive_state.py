"""Passive-state estimation of closed linkages ([Mingo Hoffman 2024, Sec. VI-A, Eqs. (37)-(40)]).

Only the actuated joints are measured; the passive ones follow from the loop closures.

:class:`PassiveStateEstimator` is the stabilised velocity-level estimator of section 2.8,
run once per control cycle (1 kHz):

    theta_dot_a,k = theta_dot_a_meas + beta (theta_a_meas - theta_a,k)
    theta_dot_u*  = J_m(theta_k) theta_dot_a,k - alpha J_lu^-1 e_l(theta_k)
    theta_k+1     = theta_k + dt [theta_dot_u*; theta_dot_a,k]          (explicit Euler)

The sign makes the closure error obey e_dot = -alpha e (the paper writes +alpha with e
taken the other way). alpha * dt and beta * dt must stay below 1; alpha * dt = 1 is one Newton
step per cycle. The paper uses alpha = 1, beta = 1000; our default alpha = 100 keeps the
closure error of a fast motion under 1e-6 (Euler drift grows like dt^2 |theta_ddot| / alpha).
Given the measurement time (``update(..., t=stamp)``) the Euler step is taken at the next
update over the true interval, with alpha and beta capped at 1/dt: the estimator then runs at
whatever rate the joint states arrive (a ROS pipeline at 250 Hz, a 200 Hz control loop).

Each update returns the estimate at the measurement time: positions theta_k with the
actuated ones replaced by the measurement and the passive ones moved to first order with
them (theta_u,k + J_m (theta_a_meas - theta_a,k): at a control rate below 1 kHz the actuators
move between cycles and the prediction lags a fast transient), and the constraint-consistent velocities
[J_m v_a_meas; v_a_meas]. The conditioning of J_lu is watched (LAPACK rcond): near a
singularity, when a measured actuator leaves its stroke (with ``stroke_margin``), or when
the measured actuators cannot close the loops (outside the workspace: checked by a Newton
re-closure whenever the measurement jumps by more than ``jump_tol`` in one cycle),
the estimator keeps its last valid state, returns it with ``valid = False`` and says why in
``status``. Health: an internal state or an estimate that is not finite, or a loop residual
beyond ``residual_max`` that re-closing cannot repair, restarts the estimator from the next
measurement (as at the first one; the last valid estimate is kept meanwhile); ``health``
(``estimation.base_estimator.EstimatorHealth``) counts the restarts and says why. :func:`calibrate` is the encoder calibration of section 2.9.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np
from numba import boolean, float64, intp, njit, void

from ..dynamics.closed_chain import LoopClosureKinematics
from .base_estimator import EstimatorHealth

F1, F2, I1 = float64[:], float64[:, :], intp[:]

OK = "ok"
NEAR_SINGULAR = "near_singular"
OUT_OF_WORKSPACE = "out_of_workspace"


@njit(boolean(F1, F1, F1, F2, I1, I1, I1, I1, F1, F1), cache=True)
def _complete(theta, q_a, v_a, X, qa, qu, ia, iu, q, v):
    """The estimate at the measurement, in one compiled call: ``q`` = theta with the actuators
    measured and the passive joints moved by J_m (q_a - theta_a) (``X[:, 1]``); ``v`` gets the
    measured rates and J_m v_a (``X[:, 0]``). Whether both are finite."""
    q[:] = theta
    for k in range(qa.shape[0]):
        q[qa[k]] = q_a[k]
        v[ia[k]] = v_a[k]
    for k in range(X.shape[0]):
        q[qu[k]] += X[k, 1]
        v[iu[k]] = X[k, 0]
    for x in (q, v):
        for i in range(x.shape[0]):
            if not np.isfinite(x[i]):
                return False
    return True


@njit(void(F1, I1, I1, F1, F1, F2, float64, float64, float64), cache=True)
def _euler_step(theta, qa, qu, v_a, err_a, X, dt, beta, alpha):
    """theta += dt [J_m v_a + beta J_m d_a - alpha J_lu^-1 e_l; v_a + beta d_a] (eqs. 37-40),
    ``X`` = [J_m v_a, J_m d_a, J_lu^-1 e_l]."""
    for k in range(qa.shape[0]):
        theta[qa[k]] += dt * (v_a[k] + beta * err_a[k])
    for k in range(X.shape[0]):
        theta[qu[k]] += X[k, 0] * dt + X[k, 1] * (dt * beta) + X[k, 2] * (-dt * alpha)


@njit(boolean(F1), cache=True)
def _finite(x):
    """Whether every entry of ``x`` is finite (np.isfinite(x).all() without its three calls)."""
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


@njit(float64(F1, F1, I1, F1, F1, F1), cache=True)
def _offset(theta, q_a, qa, lo, hi, d):
    """``d`` = theta_a - q_a (the prediction minus the measurement) and its largest |entry|;
    -1 when a measured actuator lies outside [lo, hi] (``d`` then not written). Finite inputs."""
    for k in range(q_a.shape[0]):
        if q_a[k] < lo[k] or q_a[k] > hi[k]:
            return -1.0
    largest = 0.0
    for k in range(q_a.shape[0]):
        d[k] = theta[qa[k]] - q_a[k]
        largest = max(largest, abs(d[k]))
    return largest


@dataclass
class PassiveEstimate:
    """The completed state: ``q`` (nq) and ``v`` (nv) in Pinocchio's order."""
    q: np.ndarray
    v: np.ndarray
    residual: float              # max |e_l| at q [m or rad]
    rcond: float                 # reciprocal condition of J_lu (1-norm estimate)
    valid: bool
    status: str = OK             # ok | near_singular | out_of_workspace
    message: str = ""


class PassiveStateEstimator:
    """Stabilised passive-state estimator; feed it the actuated joints only.

    ``update(q_a, v_a)`` takes the actuated positions and velocities in the order of
    ``kin.actuated_joints`` (``update_named`` takes dicts). The floating base, if any, is
    passed through from ``q_base`` (7) / ``v_base`` (6) and does not affect the loops. A robot
    whose loop YAML declares ``internal_motion: springs`` has its spring joints measured too
    (they follow the motors in ``actuated_joints``): the internal motions they are, which the
    loops leave free, take the measured values rather than least norm.
    """

    def __init__(self, robot_or_kin, dt: float = 1e-3, alpha: float = 100.0, beta: float = 1000.0,
                 rcond_min: float = 1e-6, residual_max: float = 1e-3, jump_tol: float = 5e-3,
                 stroke_margin: float = 0.1):
        if isinstance(robot_or_kin, LoopClosureKinematics):
            self.kin = robot_or_kin
        else:
            spec = robot_or_kin.loops
            springs = list(spec.springs) if spec is not None and spec.internal_motion == "springs" else []
            self.kin = LoopClosureKinematics(robot_or_kin, measured=springs)
        if not (0 < alpha * dt <= 1 and 0 <= beta * dt <= 1):
            raise ValueError("alpha * dt and beta * dt must lie in (0, 1]")
        self.dt, self.alpha, self.beta = dt, alpha, beta
        self.rcond_min, self.residual_max = rcond_min, residual_max
        self.jump_tol = jump_tol
        m, qa = self.kin.model, self.kin.qa
        self.stroke_margin = stroke_margin
        margin = stroke_margin * (m.upperPositionLimit[qa] - m.lowerPositionLimit[qa])
        self._stroke = (m.lowerPositionLimit[qa] - margin, m.upperPositionLimit[qa] + margin)
        self.theta: Optional[np.ndarray] = None     # internal q (nq)
        self.last_valid: Optional[PassiveEstimate] = None
        self._pending = None                        # Euler step waiting for the next stamp
        self.health = EstimatorHealth()             # restarts from a measurement

    @property
    def actuated_joints(self) -> List[str]:
        return self.kin.actuated_joints

    # ------------------------------------------------------------------ set-up
    def initialise(self, q_a: Sequence[float], q_guess: Optional[np.ndarray] = None) -> PassiveEstimate:
        """Close the loops at the measured actuators (Newton from ``q_guess``, the last
        estimate, or the reference configuration)."""
        kin = self.kin
        start = q_guess if q_guess is not None else (self.theta if self.theta is not None else kin.q_ref)
        q, info = kin.close(kin.with_actuated(start, q_a))
        if not info["converged"]:
            return self._invalid(OUT_OF_WORKSPACE, f"the measured actuators do not close the loops "
                                 f"(residual {info['residual']:.3g} after {info['iterations']} iterations)")
        self.theta = q
        est = PassiveEstimate(q.copy(), np.zeros(kin.nv), info["residual"], info["rcond"], True)
        if info["rcond"] < self.rcond_min:
            return self._invalid(NEAR_SINGULAR, f"J_lu near singular (rcond {info['rcond']:.2e})")
        self.last_valid = est
        return est

    def _cannot_close(self, q_a, info):
        return self._invalid(OUT_OF_WORKSPACE, f"actuators {np.round(q_a, 4).tolist()} cannot close "
                             f"the loops (residual {info['residual']:.3g})")

    def _invalid(self, status: str, message: str) -> PassiveEstimate:
        if self.last_valid is not None:
            self.theta = self.last_valid.q.copy()
            lv = self.last_valid
            return PassiveEstimate(lv.q.copy(), lv.v.copy(), lv.residual, self.kin.last_rcond, False, status, message)
        nan = PassiveEstimate(self.kin.q_ref.copy(), np.zeros(self.kin.nv), float("nan"),
                              self.kin.last_rcond, False, status, message)
        return nan

    # ------------------------------------------------------------------ cycle
    def update(self, q_a: np.ndarray, v_a: np.ndarray, q_base: Optional[np.ndarray] = None,
               v_base: Optional[np.ndarray] = None, t: Optional[float] = None) -> PassiveEstimate:
        """One cycle. With the measurement time ``t`` (s) the Euler step uses the time since
        the previous measurement (the gains capped so that alpha dt <= 1, beta dt <= 1), so
        the estimator runs at any message rate; without it, the constructor's ``dt``."""
        kin = self.kin
        if self._pending is not None:          # the previous cycle's Euler step, now dt is known
            self._advance(self._pending, None if t is None else float(t))
            self._pending = None
        if self.theta is not None and not _finite(self.theta):
            self.restart("internal state not finite")
        q_a = np.asarray(q_a, dtype=float)
        v_a = np.asarray(v_a, dtype=float)
        # one dot product is non-finite whenever an entry is (overflow: checked exactly)
        if not math.isfinite(q_a @ v_a) and not (np.isfinite(q_a).all() and np.isfinite(v_a).all()):
            return self._invalid(OUT_OF_WORKSPACE, "non-finite actuator measurement")
        if self.theta is None:
            est = self.initialise(q_a)
            if not est.valid:
                return est
        th = self.theta
        lo, hi = self._stroke
        nd = np.empty(kin.n_act)               # prediction minus measurement
        jump = _offset(th, q_a, kin.qa, lo, hi, nd)
        if jump < 0.0:
            bad = [f"{n} = {x:.4g} not in [{a:.4g}, {b:.4g}]"
                   for n, x, a, b in zip(kin.actuated_joints, q_a, lo, hi) if not a <= x <= b]
            source = f" (strokes with a {self.stroke_margin:g} margin, from the limits of " \
                     f"{kin.spec.path} or its URDF)" if kin.spec is not None else ""
            return self._invalid(OUT_OF_WORKSPACE, f"actuators outside their stroke: {'; '.join(bad)}{source}")
        if jump > self.jump_tol:
            # a jump no velocity explains: re-close at the measurement before going on
            q, info = kin.close(kin.with_actuated(th, q_a))
            if not info["converged"]:
                return self._cannot_close(q_a, info)
            self.theta = th = q
            nd = th[kin.qa] - q_a
        if q_base is not None:
            th[:7] = q_base
        if not kin.L:                          # serial: nothing passive to complete
            return self._serial(th, q_a, v_a, v_base, t)
        # one solve with J_lu factored (LU, or truncated SVD: least norm over free internal motions):
        # J_m v_a, J_m (q_a - theta_a) = -J_lu^+ J_la [v_a, q_a - theta_a] and the closure
        # correction J_lu^+ e_l (J_m itself is never formed), at the prediction (one Pinocchio pass)
        e, X, rcond, residual = kin.completion_terms(th, v_a, nd)
        if rcond < self.rcond_min:
            return self._invalid(NEAR_SINGULAR, f"J_lu near singular (rcond {rcond:.2e}): "
                                 "the actuators do not determine the passive joints here")
        if residual > self.residual_max or not math.isfinite(residual):
            # the estimate lost the loops: re-close at the measurement from the last valid state
            guess = self.last_valid.q if self.last_valid is not None else kin.q_ref
            q, info = kin.close(kin.with_actuated(guess, q_a))
            if not info["converged"]:
                return self._cannot_close(q_a, info)
            self.theta = th = q
            nd = th[kin.qa] - q_a
            e, X, rcond, _ = kin.completion_terms(th, v_a, nd)
            residual = info["residual"]
        # X (n_pas, 3): J_m v_a, J_m d_a, J_lu^+ e_l
        v = np.zeros(kin.nv)
        if v_base is not None:
            v[:kin.nb] = v_base
        q_out = np.empty_like(th)
        # first-order completion at the measurement: the passive joints follow the actuators'
        # offset from the prediction through J_m (closure error second order in the offset)
        if not _complete(th, q_a, v_a, X, kin.qa, kin.qu, kin.ia, kin.iu, q_out, v):
            self.restart("estimate not finite")
            return self._invalid(OUT_OF_WORKSPACE, "estimate not finite: restarting from the next measurement")
        self.health.healthy = True
        est = PassiveEstimate(q_out, v, residual, rcond, True)
        # stabilised passive velocity (eq. 37) and Euler step (eq. 40): with a time stamp the
        # step is taken at the next update, over the true interval
        step = (X, v_a.copy(), np.negative(nd), t)
        if t is None:
            self._advance(step, None)
        else:
            self._pending = step
        self.last_valid = est
        return est

    def restart(self, reason: str) -> None:
        """Forget the state: the next update initialises from its measurement (health)."""
        self.theta = None
        self._pending = None
        self.health.resets += 1
        self.health.reason = reason
        self.health.healthy = False

    def _serial(self, th, q_a, v_a, v_base, t) -> PassiveEstimate:
        kin = self.kin
        v = np.zeros(kin.nv)
        if v_base is not None:
            v[:kin.nb] = v_base
        v[kin.ia] = v_a
        q_out = th.copy()
        q_out[kin.qa] = q_a
        est = PassiveEstimate(q_out, v, 0.0, 1.0, True)
        step = (np.zeros((0, 3)), v_a.copy(), q_a - th[kin.qa], t)
        if t is None:
            self._advance(step, None)
        else:
            self._pending = step
        self.last_valid = est
        return est

    def _advance(self, step, t_next: Optional[float]) -> None:
        """theta += dt [J_m va_k - alpha J_lu^-1 e; va_k], va_k = v_a + beta (theta_a_meas -
        theta_a) (eqs. 37-40); dt from the stamps when both are known, gains capped at 1/dt.
        ``step`` = (X = [J_m v_a, J_m d_a, J_lu^-1 e_l], v_a, d_a = theta_a_meas - theta_a, t)."""
        X, v_a, err_a, t = step
        dt = self.dt
        if t is not None and t_next is not None:
            dt = min(max(t_next - t, 0.0), 0.1)
        if dt <= 0.0:
            return
        alpha, beta = min(self.alpha, 1.0 / dt), min(self.beta, 1.0 / dt)
        _euler_step(self.theta, self.kin.qa, self.kin.qu, v_a, err_a, X, dt, beta, alpha)

    def update_named(self, positions: Dict[str, float], velocities: Dict[str, float], **kw) -> PassiveEstimate:
        """Like :meth:`update`, with actuated joints matched by name (every one required)."""
        missing = [n for n in self.actuated_joints if n not in positions or n not in velocities]
        if missing:
            raise KeyError(f"missing actuated joints: {', '.join(missing)}")
        return self.update(np.array([positions[n] for n in self.actuated_joints]),
                           np.array([velocities[n] for n in self.actuated_joints]), **kw)


# ---------------------------------------------------------------------------- calibration
@dataclass
class CalibrationResult:
    q: np.ndarray                          # calibrated configuration
    offsets: Dict[str, float]              # actuated joint -> value to add to its relative reading
    iterations: int
    error_norms: List[float] = field(default_factory=list)
    converged: bool = True


def calibrate(kin: LoopClosureKinematics, absolute: Dict[str, float], relative: Dict[str, float],
              q0: Optional[np.ndarray] = None, alpha: float = 1.0, dt: float = 1.0, eps: float = 1e-10,
              max_iter: int = 50) -> CalibrationResult:
    """Encoder calibration ([Mingo Hoffman 2024, Sec. VI-A]).

    ``absolute``: joint -> absolute reading (passive joints with rotary encoders, absolute
    linear encoders). ``relative``: actuated joint -> its relative (motor-side) reading.
    Stacks J = [J_l; E] and e = [e_l; theta_E - theta_meas] and iterates J theta_dot = -alpha e,
    theta += dt theta_dot (alpha dt = 1: Newton) until ||e|| < eps. The actuator offsets are
    then theta_a - relative reading. Needs len(absolute) + rows = number of joints."""
    m = kin.model
    names = list(absolute)
    idx_v = np.array([m.joints[m.getJointId(n)].idx_v for n in names], dtype=int)
    idx_q = np.array([m.joints[m.getJointId(n)].idx_q for n in names], dtype=int)
    meas = np.array([absolute[n] for n in names], dtype=float)
    nj = kin.nv - kin.nb
    if kin.m + len(names) != nj:
        raise ValueError(f"{kin.m} loop rows + {len(names)} absolute readings != {nj} joints")
    q = np.array(kin.q_ref if q0 is None else q0, dtype=float)
    for n, val in relative.items():         # start from the relative readings
        q[m.joints[m.getJointId(n)].idx_q] = val
    q[idx_q] = meas
    norms = []
    E = np.zeros((len(names), kin.nv))
    E[np.arange(len(names)), idx_v] = 1.0
    for it in range(max_iter):
        st = kin.compute(q)
        e = np.concatenate([st.error, q[idx_q] - meas])
        norms.append(float(np.linalg.norm(e)))
        if norms[-1] < eps:
            break
        J = np.vstack([st.J, E])[:, kin.nb:]
        dq = -alpha * np.linalg.solve(J, e)
        q[7 if kin.floating else 0:] += dt * dq
    offsets = {n: float(q[m.joints[m.getJointId(n)].idx_q] - relative[n]) for n in relative}
    return CalibrationResult(q, offsets, len(norms) - 1, norms, norms[-1] < eps)

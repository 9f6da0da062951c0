"""The compiled base filter step (estimation/kalman_step.py) against the textbook linear
Kalman filter written here in numpy with its measurement matrix formed: every foot's
position, velocity (one triple per foot, not merged) and height rows, ``K = P C^T S^-1``.
Inputs: the synthetic swaying and swinging trajectory of test_base_estimator.py with sensor
noise, lies about the stance, and contacts a morphology removed."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.estimation import kalman_step
from hybrid_dynamics.estimation.base_estimator import GRAVITY, BaseEstimator, ImuSample
from hybrid_dynamics.model.robot import load_robot
from test_base_estimator import trajectory


def pinocchio_feet(est, qj, vj):
    """The feet relative to the base, each frame read from Pinocchio (the base at the origin)."""
    model = est.model
    data = model.createData()
    q0, v0 = pin.neutral(model), np.zeros(model.nv)
    q0[7:], v0[6:] = qj, vj
    pin.forwardKinematics(model, data, q0, v0)
    r = np.array([pin.updateFramePlacement(model, data, f).translation for f in est.frame_ids])
    rd = np.array([pin.getFrameVelocity(model, data, f, pin.LOCAL_WORLD_ALIGNED).linear for f in est.frame_ids])
    return r, rd


def textbook_step(est, x, P, dt, qj, vj, imu, contact):
    """One predict-correct of the filter in base_estimator's module docstring, C formed, with
    the base's orientation and the feet from Pinocchio. Returns x, P, the innovation
    statistic and the base's orientation R."""
    cfg, nc, nx = est.config, est.nc, est.nx
    quat = np.asarray(imu.orientation)
    R = pin.Quaternion(quat[3], quat[0], quat[1], quat[2]).normalized().toRotationMatrix() @ est.R_bi.T
    w = est.R_bi @ imu.angular_velocity
    a = R @ (est.R_bi @ imu.linear_acceleration) + GRAVITY
    A = np.eye(nx)
    A[0:3, 3:6] = dt * np.eye(3)
    x = A @ x
    x[0:3] += 0.5 * dt * dt * a
    x[3:6] += dt * a
    q_feet = np.where(contact, cfg.stance_foot_noise ** 2, cfg.swing_foot_noise ** 2) * max(dt, 1e-4)
    Q = np.diag(np.concatenate([np.full(3, cfg.position_noise ** 2 * dt), np.full(3, cfg.accel_noise ** 2 * dt),
                                np.repeat(q_feet, 3)]))
    P = A @ P @ A.T + Q
    r, rd = pinocchio_feet(est, qj, vj)
    big = cfg.swing_measurement_noise ** 2
    C = np.zeros((7 * nc, nx))
    z = np.zeros(7 * nc)
    r_diag = np.zeros(7 * nc)
    for i in range(nc):
        p_rows, v_rows, h_row = slice(3 * i, 3 * i + 3), slice(3 * nc + 3 * i, 3 * nc + 3 * i + 3), 6 * nc + i
        C[p_rows, 0:3], C[p_rows, 6 + 3 * i:9 + 3 * i] = -np.eye(3), np.eye(3)
        z[p_rows] = R @ r[i]
        r_diag[p_rows] = cfg.kinematics_noise ** 2 if est.active[i] else big
        C[v_rows, 3:6] = np.eye(3)
        z[v_rows] = -R @ (np.cross(w, r[i]) + rd[i])
        r_diag[v_rows] = cfg.velocity_noise ** 2 if contact[i] else big
        C[h_row, 8 + 3 * i] = 1.0
        z[h_row] = est.contact_heights[i]
        r_diag[h_row] = cfg.height_noise ** 2 if contact[i] else big
    S = C @ P @ C.T + np.diag(r_diag)
    nu = z - C @ x
    K = P @ C.T @ np.linalg.inv(S)
    nis = nu @ np.linalg.solve(S, nu) / max(np.count_nonzero(r_diag < big), 1)
    return x + K @ nu, P - K @ C @ P, nis, R


@pytest.mark.parametrize("robot_name", ["jethexa", "solo12"])
def test_the_compiled_step_is_the_textbook_filter(robot_name):
    robot = load_robot(robot_name)
    est = BaseEstimator(robot)
    rng = np.random.default_rng(7)
    samples = trajectory(robot, seconds=0.6, swing_group=1)
    frames = est.frames
    compared = {"swing": 0, "removed": 0, "nis": []}
    for k, (t, q, v, _vw, acc, stance) in enumerate(samples):
        if k == len(samples) // 2:
            est.set_active_contacts(frames[1:])          # a leg lost: its foot no longer measured
        qj = q[7:] + rng.normal(0, 1e-3, len(q) - 7)
        vj = v[6:] + rng.normal(0, 2e-2, len(v) - 6)
        imu = ImuSample(q[3:7], v[3:6] + rng.normal(0, 1e-2, 3), acc + rng.normal(0, 0.1, 3))
        if k % 7 == 3:                                    # the stance lied about (a foot said down is up)
            stance = {f: not s for f, s in stance.items()}
        if not est.initialized:
            est.update(t, qj, vj, imu, stance)
            continue
        x0, P0, dt = est.x.copy(), est.P.copy(), min(max(t - est.t, 0.0), 0.1)
        contact = np.array([bool(stance.get(f, False)) for f in frames]) & est.active
        x_ref, P_ref, nis_ref, R = textbook_step(est, x0, P0, dt, qj, vj, imu, contact)
        s = est.update(t, qj, vj, imu, stance)
        assert est.health.resets == 0
        scale = np.abs(P_ref).max()
        assert np.abs(est.x - x_ref).max() < 1e-10 * max(1.0, np.abs(x_ref).max())
        assert np.abs(est.P - P_ref).max() < 1e-10 * scale
        assert est.health.innovation == pytest.approx(nis_ref, rel=1e-7)
        # the state out in Pinocchio's conventions: q = [p, quaternion of R, qj], v = [R^T v, w, vj]
        quat = pin.Quaternion(R)
        quat.normalize()
        assert np.array_equal(s.q[:3], est.x[:3]) and np.array_equal(s.q[7:], qj) and np.array_equal(s.v[6:], vj)
        assert np.abs(s.q[3:7] - quat.coeffs()).max() < 1e-15
        assert np.abs(s.v[:3] - R.T @ est.x[3:6]).max() < 1e-14 * max(1.0, np.abs(est.x[3:6]).max())
        assert np.abs(s.v[3:6] - est.R_bi @ imu.angular_velocity).max() < 1e-15
        compared["swing"] += int((~contact & est.active).any())
        compared["removed"] += int((~est.active).any())
        compared["nis"].append(nis_ref)
    # not vacuous: swinging feet and a removed contact were in the compared steps, and the
    # innovation was not zero (the velocity rows' scatter is part of it)
    assert compared["swing"] > 10 and compared["removed"] > 10
    assert min(compared["nis"]) > 0.0


def test_health_codes_name_what_is_wrong():
    robot = load_robot("jethexa")
    est = BaseEstimator(robot)
    x, P = np.zeros(est.nx), np.eye(est.nx)
    assert kalman_step.state_fault(x, P, 1e2) == kalman_step.HEALTHY
    x[4] = np.nan
    assert kalman_step.state_fault(x, P, 1e2) == kalman_step.NOT_FINITE
    x[4] = 0.0
    P[2, 2] = 1e3
    assert kalman_step.state_fault(x, P, 1e2) == kalman_step.COVARIANCE_TOO_LARGE
    P[2, 2] = 1.0
    P[10, 10] = -1.0
    assert kalman_step.state_fault(x, P, 1e2) == kalman_step.COVARIANCE_NOT_POSITIVE
    P[10, 10] = 1.0
    P[0, 1] = P[1, 0] = 2.0                             # positive diagonal, indefinite base block
    assert kalman_step.state_fault(x, P, 1e2) == kalman_step.BASE_NOT_POSITIVE_DEFINITE
    est.P[:] = P
    est.initialized = True
    assert est._fault() == "base covariance not positive definite"

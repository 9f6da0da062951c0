"""Estimator health: the base filter and the passive-state estimator check their own state
each cycle and, when it is unhealthy, start again from the current sample. The reference is
a fresh estimator given the same sample; ground truth is the synthetic trajectory of
test_base_estimator.py (Pinocchio kinematics)."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.estimation.base_estimator import BaseEstimator, ImuSample
from hybrid_dynamics.estimation.passive_state import PassiveStateEstimator
from hybrid_dynamics.model.robot import load_robot
from test_base_estimator import trajectory


@pytest.fixture(scope="module")
def robot():
    return load_robot("jethexa")


def feed(est, samples, rng=None, lie_stance=False):
    out = []
    for t, q, v, vw, acc, stance in samples:
        qj = q[7:] + (rng.normal(0, 1e-3, len(q) - 7) if rng is not None else 0)
        vj = v[6:] + (rng.normal(0, 2e-2, len(v) - 6) if rng is not None else 0)
        imu = ImuSample(q[3:7], v[3:6] + (rng.normal(0, 1e-2, 3) if rng is not None else 0),
                        acc + (rng.normal(0, 0.1, 3) if rng is not None else 0))
        out.append(est.update(t, qj, vj, imu, {f: True for f in stance} if lie_stance else stance))
    return out


def test_no_reinitialisation_on_noisy_motion_swing_and_wrong_stance(robot):
    """The gate must not fire on what a working robot produces: sway with sensor noise, a
    swinging tripod, and the same swing with the filter wrongly told every foot is down."""
    for swing, lie in ((None, False), (1, False), (1, True)):
        est = BaseEstimator(robot)
        feed(est, trajectory(robot, seconds=1.0, swing_group=swing), np.random.default_rng(3), lie)
        assert est.health.resets == 0 and est.health.healthy
        assert 0 < est.health.innovation < 1e-2 * est.config.innovation_gate


def _corrupt_velocity(est):
    est.x[3:6] = 1e300                 # what one accelerometer reading of 1e308 leaves behind


def _corrupt_nan(est):
    est.x[0] = np.nan


def _corrupt_covariance(est):
    est.P[0:6, 0:6] = -np.eye(6)


def _corrupt_growth(est):
    est.P[0:6, 0:6] += 1e6 * np.eye(6)


@pytest.mark.parametrize("corrupt,reason", [(_corrupt_velocity, "innovation"), (_corrupt_nan, "not finite"),
                                            (_corrupt_covariance, "not positive"), (_corrupt_growth, "beyond")])
def test_unhealthy_filter_restarts_from_the_next_sample(robot, corrupt, reason):
    samples = trajectory(robot, seconds=0.8)
    est = BaseEstimator(robot)
    feed(est, samples[:100])
    corrupt(est)
    first = feed(est, samples[100:101])[0]
    assert est.health.resets == 1 and not est.health.healthy and reason in est.health.reason
    fresh = feed(BaseEstimator(robot), samples[100:])              # a filter started on that sample
    assert np.allclose(first.q, fresh[0].q, atol=1e-12) and np.allclose(first.v, fresh[0].v, atol=1e-12)
    rest = feed(est, samples[101:])
    assert est.health.healthy and est.health.resets == 1
    assert np.allclose(rest[-1].q, fresh[-1].q, atol=1e-9) and np.allclose(rest[-1].v, fresh[-1].v, atol=1e-9)
    t, q, v, vw, acc, stance = samples[-1]                         # observable: height, velocity
    assert abs(rest[-1].q[2] - q[2]) < 5e-3
    R = pin.Quaternion(rest[-1].q[3:7]).toRotationMatrix()
    assert np.linalg.norm(R @ rest[-1].v[:3] - vw) < 0.02


def test_passive_estimator_restarts_when_its_state_is_not_finite():
    robot = load_robot("hybrid_biped")
    kin_est = PassiveStateEstimator(robot)
    kin = kin_est.kin
    rng = np.random.default_rng(0)
    q_a = kin.q_ref[kin.qa] + rng.uniform(-1e-3, 1e-3, len(kin.qa))
    v_a = np.zeros(len(kin.qa))
    for k in range(5):
        kin_est.update(q_a, v_a, t=0.002 * k)
    kin_est.theta[kin.qu[0]] = np.nan
    out = kin_est.update(q_a, v_a, t=0.010)
    assert kin_est.health.resets == 1 and "not finite" in kin_est.health.reason
    fresh = PassiveStateEstimator(robot).update(q_a, v_a, t=0.010)
    assert out.valid and np.allclose(out.q, fresh.q, atol=1e-9) and np.allclose(out.v, fresh.v, atol=1e-9)
    assert np.abs(kin.compute(out.q).error).max() < 1e-8            # the loops closed again

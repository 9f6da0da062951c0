"""The Lie-group module against Pinocchio (SE(3)) and scipy's matrix exponential (SE(2)), on
random inputs and on the Taylor and angle-pi branches."""
import math

import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import expm

from hybrid_dynamics.dynamics import lie

RNG = np.random.default_rng(17)
ANGLES = [0.0, 1e-9, 1e-6, 3e-5, 1e-4, 2e-4, 0.3, 2.0, math.pi - 1e-7, math.pi - 1e-3]


def _twists():
    for th in ANGLES:
        axis = RNG.normal(size=3)
        axis /= np.linalg.norm(axis)
        yield np.concatenate([RNG.normal(size=3), th * axis])


@pytest.mark.parametrize("xi", list(_twists()))
def test_exp_log_se3_equal_pinocchio_on_every_branch(xi):
    R, p = lie.exp_se3(xi)
    M = pin.exp6(pin.Motion(xi[:3], xi[3:]))
    assert np.allclose(R, M.rotation, atol=1e-13) and np.allclose(p, M.translation, atol=1e-12)
    assert np.allclose(lie.exp_so3(xi[3:]), pin.exp3(xi[3:]), atol=1e-13)
    assert np.allclose(lie.log_so3(R), pin.log3(R), atol=1e-6 if np.linalg.norm(xi[3:]) > 3 else 1e-12)
    assert np.allclose(lie.log_se3(R, p), xi, atol=1e-6 if np.linalg.norm(xi[3:]) > 3 else 1e-11)


def test_log_so3_at_exactly_pi_returns_a_rotation_vector_of_length_pi():
    for axis in np.eye(3).tolist() + [list(RNG.normal(size=3))]:
        axis = np.array(axis) / np.linalg.norm(axis)
        w = lie.log_so3(lie.rot_axis(axis, math.pi))
        assert abs(np.linalg.norm(w) - math.pi) < 1e-12
        assert np.allclose(lie.exp_so3(w), lie.rot_axis(axis, math.pi), atol=1e-12)


def test_adjoints_hat_vee_and_cross_products_equal_pinocchio():
    for _ in range(5):
        M = pin.SE3.Random()
        a, b, f = RNG.normal(size=6), RNG.normal(size=6), RNG.normal(size=6)
        ma, mb = pin.Motion(a[:3], a[3:]), pin.Motion(b[:3], b[3:])
        assert np.allclose(lie.Ad(M.rotation, M.translation), M.action, atol=1e-14)
        assert np.allclose(lie.Ad_inv(M.rotation, M.translation), M.inverse().action, atol=1e-14)
        assert np.allclose(lie.ad(a), ma.action, atol=1e-14)
        assert np.allclose(lie.ad(a) @ b, ma.cross(mb).vector, atol=1e-14)
        assert np.allclose(lie.force_cross(a, f), ma.cross(pin.Force(f[:3], f[3:])).vector, atol=1e-14)
        assert np.allclose(lie.vee(lie.hat(a)), a)
        bracket = lie.hat(a) @ lie.hat(b) - lie.hat(b) @ lie.hat(a)
        assert np.allclose(lie.vee(bracket), lie.ad(a) @ b, atol=1e-14)
        assert np.allclose(lie.cross3(a[:3], b[:3]), np.cross(a[:3], b[:3]))
        stacked = RNG.normal(size=(4, 3))
        assert np.allclose(lie.cross3(stacked, a[:3]), np.cross(stacked, a[:3]))
        assert np.allclose(lie.skew_b(stacked)[2], lie.skew(stacked[2]))
        assert np.allclose(lie.vee3(lie.skew(a[:3])), a[:3])
        quat = lie.rot_to_quat(M.rotation)
        assert quat[3] >= 0 and np.allclose(lie.quat_to_rot(quat), M.rotation, atol=1e-14)


def test_integrate_equals_pinocchio_on_a_free_flyer():
    model = pin.buildSampleModelHumanoidRandom()
    for scale in (1e-9, 1e-3, 1.0):
        q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        v = scale * RNG.normal(size=model.nv)
        assert np.allclose(lie.integrate(q, v, 0.7), pin.integrate(model, q, 0.7 * v), atol=1e-13)


def _planar_in_se3(nu):
    return np.array([nu[0], nu[1], 0.0, 0.0, 0.0, nu[2]])


@pytest.mark.parametrize("w", [0.0, 1e-8, 5e-5, 2e-4, 1.3, -3.0])
def test_se2_exp_log_adjoints_equal_the_matrix_exponential_and_the_se3_embedding(w):
    nu = np.array([*RNG.normal(size=2), w])
    H = expm(lie.hat2(nu))
    th, o = lie.exp_se2(nu)
    assert np.allclose(H[:2, :2], lie.rot2(th), atol=1e-14) and np.allclose(H[:2, 2], o, atol=1e-14)
    assert np.allclose(lie.log_se2(th, o), nu, atol=1e-12)
    assert np.allclose(lie.vee2(lie.hat2(nu)), nu)
    rows = [0, 1, 5]
    R3 = lie.rot_axis(np.array([0.0, 0.0, 1.0]), th)
    assert np.allclose(lie.Ad2(th, o), lie.Ad(R3, np.array([*o, 0.0]))[np.ix_(rows, rows)], atol=1e-14)
    other = RNG.normal(size=3)
    assert np.allclose(lie.ad2(nu) @ other, (lie.ad(_planar_in_se3(nu)) @ _planar_in_se3(other))[rows])
    q = np.array([0.3, -0.2, 0.4, 1.0])
    v = np.array([*nu, 0.5])
    out = lie.integrate_se2(q, v, 0.1)
    H0 = np.eye(3)
    H0[:2, :2], H0[:2, 2] = lie.rot2(q[2]), q[:2]
    H1 = H0 @ expm(0.1 * lie.hat2(nu))
    assert np.allclose(out[:2], H1[:2, 2], atol=1e-14)
    assert np.allclose(lie.rot2(out[2]), H1[:2, :2], atol=1e-14) and out[3] == pytest.approx(1.05)

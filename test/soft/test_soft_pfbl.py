"""Collocated partial feedback linearisation [Pustina 2024, Sec. 7.1]: the input of
``soft/pfbl.py`` (written in q) equals the paper's law written in decoupling coordinates
theta = (y, z), formed here from M, h, J_y and a complement Z, and it makes ydd equal the
commanded a, on random systems."""
import numpy as np
import pytest

from hybrid_dynamics.soft.pfbl import CollocatedPFBL


@pytest.mark.parametrize("seed", range(5))
def test_pfbl_equals_the_papers_law_in_decoupling_coordinates(seed):
    rng = np.random.default_rng(seed)
    n, m = 7, 3
    X = rng.standard_normal((n, n))
    M = X @ X.T + n * np.eye(n)
    h, v = rng.standard_normal(n), rng.standard_normal(n)
    Jy, Jdot_v = rng.standard_normal((m, n)), rng.standard_normal(m)
    y, yd = rng.standard_normal(m), rng.standard_normal(m)
    y_ref, yd_ref, ydd_ref = rng.standard_normal(m), rng.standard_normal(m), rng.standard_normal(m)
    kp, kd = rng.uniform(1, 20, m), rng.uniform(0.5, 5, m)
    control = CollocatedPFBL(kp, kd)
    u = control.input(M, h, Jy, Jdot_v, y, yd, y_ref, yd_ref, ydd_ref)

    # theta = (y, z), z = Z q (a constant complement): theta_dot = J_theta v, theta_dd =
    # J_theta vdot + (Jdot_y v, 0); M vdot + h = J_y^T u becomes
    # M_theta theta_dd + h_theta = (u, 0) with h_theta = J_theta^-T h - M_theta (Jdot_y v, 0).
    Z = rng.standard_normal((n - m, n))
    Jt = np.vstack([Jy, Z])
    Jt_inv = np.linalg.inv(Jt)
    Mt = Jt_inv.T @ M @ Jt_inv
    ht = Jt_inv.T @ h - Mt @ np.concatenate([Jdot_v, np.zeros(n - m)])
    a = ydd_ref + kd * (yd_ref - yd) + kp * (y_ref - y)
    Maa, Mau, Muu = Mt[:m, :m], Mt[:m, m:], Mt[m:, m:]
    u_paper = (Maa - Mau @ np.linalg.solve(Muu, Mau.T)) @ a + ht[:m] - Mau @ np.linalg.solve(Muu, ht[m:])
    assert np.abs(u - u_paper).max() < 1e-9 * np.abs(u_paper).max()

    vdot = np.linalg.solve(M, Jy.T @ u - h)
    assert np.abs(Jy @ vdot + Jdot_v - a).max() < 1e-9 * np.abs(a).max()

"""The compiled kernels of the QP assembly (control/kernels.py) against the numpy assembly
they replaced, written out here as it was: the same matrices and vectors to 1e-12 on random
inputs (random sizes, contacts, stance patterns, points and rotations), including the cases
a branch of the numpy code handled (a sole's angular rows, a swing contact's free rows, a
joint whose bounds cross)."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control import kernels
from hybrid_dynamics.control.constraints import INF
from hybrid_dynamics.dynamics.lie import skew, skew_b

TOL = 1e-12


def close(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    assert np.abs(b).max() > 0.1          # something was compared
    assert np.abs(a - b).max() <= TOL * max(1.0, np.abs(b).max())


@pytest.fixture(params=range(5))
def rng(request):
    return np.random.default_rng(100 + request.param)


def rotation(rng):
    return pin.exp3(rng.standard_normal(3))


def test_swing_feet(rng):
    nc, n = 6, int(rng.integers(12, 40))
    J6, drift, v = rng.standard_normal((nc, 6, n)), rng.standard_normal((nc, 6)), rng.standard_normal(n)
    feet = np.sort(rng.choice(nc, 3, replace=False))
    nrows = rng.choice([3, 6], 3)
    pos, ref = rng.standard_normal((nc, 3)), rng.standard_normal((3, 3, 3))
    w, kp, kd = 100.0, 400.0, 40.0
    H0, g0 = rng.standard_normal((n + 5, n + 5)), rng.standard_normal(n + 5)
    H, g = H0.copy(), g0.copy()
    kernels.swing_feet(H, g, J6, drift, feet.astype(np.intp), nrows.astype(np.intp), v, pos, ref, w, kp, kd)
    Hr, gr = H0.copy(), g0.copy()
    for j, i in enumerate(feet):           # the numpy task, foot by foot
        vel = J6[i] @ v
        a_des = ref[j, 2] + kp * (ref[j, 0] - pos[i]) + kd * (ref[j, 1] - vel[:3])
        if nrows[j] == 6:
            J, b = J6[i], np.concatenate([a_des, -kd * vel[3:]]) - drift[i]
        else:
            J, b = J6[i][:3], a_des - drift[i][:3]
        Hr[:n, :n] += w * J.T @ J
        gr[:n] -= w * J.T @ b
    close(H, Hr)
    close(g, gr)


def test_joint_acceleration_bounds(rng):
    k = 18
    q, v = rng.uniform(-2, 2, k), rng.uniform(-8, 8, k)
    q_min, q_max = -np.abs(rng.uniform(0.5, 2, k)), np.abs(rng.uniform(0.5, 2, k))
    v_max, T, dt, a_max = rng.uniform(3, 10, k), 0.05, 0.02, 1500.0
    q[0], v[0] = q_max[0] + 0.1, 5.0          # past its stop and moving further: brake
    q[1], v[1] = q_min[1] - 0.02, 0.0         # past its stop at rest: hold, not sent back
    q[2], v[2], v_max[2] = q_max[2] - 0.01, -25.0, 3.0      # too fast inwards: bounds cross
    q[3:] = rng.uniform(q_min[3:], q_max[3:])  # the others inside their range
    q[3], v[3] = q_min[3] + 0.01, -40.0        # to be stopped faster than a_max allows
    lo, hi = np.zeros(k), np.zeros(k)
    free = np.sort(rng.choice(np.arange(4, k), 4, replace=False)).astype(np.intp)   # legs in the air
    kernels.joint_acceleration_bounds(lo, hi, q, v, q_min, q_max, v_max, free, T, dt, a_max, INF)
    c = 2.0 / (T * T)
    # inside its range a joint keeps the full bound; past a stop the stop is where it stands
    lr = np.maximum((-v_max - v) / dt, c * (np.minimum(q_min, q) - q - v * T))
    hr = np.minimum((v_max - v) / dt, c * (np.maximum(q_max, q) - q - v * T))
    lr, hr = np.clip(lr, -a_max, a_max), np.clip(hr, -a_max, a_max)
    bad = lr > hr
    assert bad[2] and not bad[[0, 1]].any()
    lr[bad], hr[bad] = hr[bad].copy(), lr[bad].copy()
    held = np.setdiff1d(np.arange(k), free)
    close(lo[held], lr[held])
    close(hi[held], hr[held])
    assert (lo[free] == -INF).all() and (hi[free] == INF).all()
    assert lo[3] == hi[3] == a_max                                              # the cap binds
    assert np.isclose(hi[0], max(-2.0 * v[0] / T, -a_max)) and lo[0] < hi[0]    # stops, goes no further
    assert lo[1] == 0.0 < hi[1]                                                 # may stay where it is
    inside = np.setdiff1d(np.arange(3, k), free)
    close(hi[inside], np.clip(np.minimum((v_max - v) / dt, c * (q_max - q - v * T)), -a_max, a_max)[inside])


def test_dynamics_rows(rng):
    n, nf = 30, 12
    M, h, Jf = rng.standard_normal((n, n)), rng.standard_normal(n), rng.standard_normal((nf, n))
    rows = np.sort(rng.choice(n, 8, replace=False)).astype(np.intp)
    bound = rng.uniform(1, 5, 8)
    C, lo, hi = np.zeros((8, n + nf)), np.zeros(8), np.zeros(8)
    kernels.dynamics_rows(C, lo, hi, M, h, Jf, rows, n, -1.0, 1.0, bound)
    close(C, np.hstack([M[rows], -Jf[:, rows].T]))
    close(lo, -bound - h[rows])
    close(hi, bound - h[rows])


def test_sole_wrench(rng):
    k, w, W6 = 4, 1e-4 * rng.uniform(1, 3), rng.uniform(0.5, 2, 6)
    points = rng.standard_normal((k, 3)) * 0.1
    WG = W6[:, None] * np.vstack([np.hstack([np.eye(3)] * k), np.hstack([skew(p) for p in points])])
    K = np.ascontiguousarray((w * WG.T @ WG).reshape(k, 3, k, 3).transpose(0, 2, 1, 3))
    G = (w * W6[2] * WG[2]).reshape(k, 3)
    R, share, start, nx = rotation(rng), rng.uniform(10, 100), 5, 30
    H0, g0 = rng.standard_normal((nx, nx)), rng.standard_normal(nx)
    H, g = H0.copy(), g0.copy()
    kernels.sole_wrench(H, g, start, R, K, G, k * share)
    A = (WG.reshape(6, k, 3) @ R.T).reshape(6, 3 * k)      # the numpy task: W6 G blkdiag(R^T)
    b = W6 * np.array([0, 0, k * share, 0, 0, 0])
    sl = slice(start, start + 3 * k)
    H0[sl, sl] += w * A.T @ A
    g0[sl] -= w * A.T @ b
    close(H, H0)
    close(g, g0)


def test_sole_wrenches(rng):
    """The force regularisation's one call with soles: a point (3 columns), a sole of 4 corners
    and one of 3, out of order in a wider problem, against the previous assembly (numpy's
    diagonal and gradient, then one sole_wrench call per sole): the same numbers, bit for bit."""
    w, W6 = 1e-4, rng.uniform(0.5, 2, 6)
    corners = (4, 3)
    starts = np.array([20, 8], np.intp)                         # the 3-corner sole first in x
    nx = 40
    cols = np.concatenate([np.arange(5, 8), np.arange(8, 17), np.arange(20, 32)]).astype(np.intp)
    diag, gradient = rng.uniform(1e-8, 1e-3, len(cols)), rng.standard_normal(len(cols))
    frames = np.array([2, 0], np.intp)
    R = np.array([rotation(rng) for _ in range(3)])
    K, G = np.zeros((2, 4, 4, 3, 3)), np.zeros((2, 4, 3))
    scales = rng.uniform(10, 100, 2)
    for s, k in enumerate((4, 3)):
        points = rng.standard_normal((k, 3)) * 0.1
        WG = W6[:, None] * np.vstack([np.hstack([np.eye(3)] * k), np.hstack([skew(p) for p in points])])
        K[s, :k, :k] = (w * WG.T @ WG).reshape(k, 3, k, 3).transpose(0, 2, 1, 3)
        G[s, :k] = (w * W6[2] * WG[2]).reshape(k, 3)
    H0, g0 = rng.standard_normal((nx, nx)), rng.standard_normal(nx)
    H, g, H_in = H0.copy(), g0.copy(), H0.copy()
    kernels.sole_wrenches(H, g, cols, diag, gradient, starts, frames, np.array(corners, np.intp), K, G, scales, R)
    H0[cols, cols] += diag
    g0[cols] -= gradient
    for s, k in enumerate(corners):
        kernels.sole_wrench(H0, g0, starts[s], R[frames[s]], np.ascontiguousarray(K[s, :k, :k]), G[s, :k], scales[s])
    np.testing.assert_array_equal(H, H0)
    np.testing.assert_array_equal(g, g0)
    for sl in (slice(8, 17), slice(20, 32)):                  # each sole's block was written
        assert np.abs(H[sl, sl] - H_in[sl, sl]).max() > 1e-6
    np.testing.assert_array_equal(H[32:, :], H_in[32:, :])     # nothing past the last sole


def test_com_gradient(rng):
    nx, cols = 40, np.arange(22, 40).astype(np.intp)
    acc, pos, vel, com, vcom = rng.standard_normal((5, 3))
    gravity, kp, kd, scale = np.array([0, 0, -9.81]), 100.0, 20.0, 100.0 / 2.5
    g0 = rng.standard_normal(nx)
    g = g0.copy()
    kernels.com_gradient(g, cols, acc, pos, vel, com, vcom, gravity, kp, kd, scale)
    a_des = acc + kp * (pos - com) + kd * (vel - vcom)
    g0[cols] -= np.tile(scale * (a_des - gravity), len(cols) // 3)
    close(g, g0)
    # the force regularisation's gradient without force references: ``g[f_z] -= w W_z share``,
    # as the numpy ``g[f_stance].reshape(-1, 3)[:, 2] -= ...`` it replaced
    g = g0.copy()
    kernels.per_point_gradient(g, cols, 0.0, 0.0, scale)
    g0[cols[2::3]] -= scale
    close(g, g0)


def test_contact_rows(rng):
    nc, n, kd = 4, 25, 3.0
    J6, drift, v = rng.standard_normal((nc, 6, n)), rng.standard_normal((nc, 6)), rng.standard_normal(n)
    included, nrows = np.array([0, 2, 3], np.intp), np.array([3, 6, 3], np.intp)
    stance = np.array([True, True, False])
    m = int(nrows.sum())
    C, lo, hi = np.zeros((m, n + 9)), np.zeros(m), np.zeros(m)
    kernels.contact_rows(C, lo, hi, J6, drift, included, nrows, stance, v, kd, INF)
    rows = np.concatenate([J6[i][:r] for i, r in zip(included, nrows)])
    lr = -(np.concatenate([drift[i][:r] for i, r in zip(included, nrows)]) + kd * rows @ v)
    hr = lr.copy()
    lr[-3:], hr[-3:] = -INF, INF                   # the swing contact's rows are free
    close(C[:, :n], rows)
    close(lo[:-3], lr[:-3])
    close(hi[:-3], hr[:-3])
    assert (lo[-3:] == -INF).all() and (hi[-3:] == INF).all()


def test_actuated_torques(rng):
    n, nf = 24, 9
    M, h, Jf = rng.standard_normal((n, n)), rng.standard_normal(n), rng.standard_normal((nf, n))
    act, dv, f = np.arange(6, n).astype(np.intp), rng.standard_normal(n), rng.standard_normal(nf)
    tau = np.zeros(len(act))
    assert kernels.actuated_torques(tau, M, h, Jf, act, dv, f)
    close(tau, M[act] @ dv + h[act] - Jf[:, act].T @ f)
    dv[int(rng.integers(n))] = np.nan                   # a non-finite solution is reported
    assert not kernels.actuated_torques(tau, M, h, Jf, act, dv, f)
    dv[:] = 0.0
    f[0] = np.inf
    assert not kernels.actuated_torques(tau, M, h, Jf, act, dv, f)


def test_orientation_gradient(rng):
    R, R_ref = rotation(rng), rotation(rng)
    v, w_ref, a_ref = rng.standard_normal(12), rng.standard_normal(3), rng.standard_normal(3)
    weight, kp, kd = 100.0, 100.0, 20.0
    g0 = rng.standard_normal(12)
    g = g0.copy()
    kernels.orientation_gradient(g, R_ref, R, v, w_ref, a_ref, weight, kp, kd)
    e = pin.log3(R_ref @ R.T)
    a_des = a_ref + kp * e + kd * (w_ref - R @ v[3:6])
    g0[3:6] -= weight * (R.T @ a_des)
    close(g, g0)


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-6, 1e-3, 0.3, 1.5, 3.0, np.pi - 1e-3, np.pi - 1e-7, np.pi])
def test_log3_of_product_is_pinocchios(rng, angle):
    """The compiled ``log(R_ref R^T)`` against ``pin.log3``: at random rotations, near the
    identity (its series) and near pi (the singular branch within precision<2> of pi)."""
    R = rotation(rng)
    axis = rng.standard_normal(3)
    axis /= np.linalg.norm(axis)
    for near, R_ref in ((False, rotation(rng)), (True, pin.exp3(angle * axis) @ R)):
        e = np.empty(3)
        kernels.log3_of_product(e, R_ref, R)
        ref = pin.log3(R_ref @ R.T)
        # near pi both signs of the axis are the same rotation: compare the rotations there
        err = np.abs(e - ref).max() if np.pi - np.linalg.norm(ref) > 1e-3 else np.abs(pin.exp3(e) - pin.exp3(ref)).max()
        assert err <= 1e-12 * max(1.0, np.abs(ref).max()) or (np.pi - np.linalg.norm(ref) <= 1e-3 and err <= 1e-9)
        if near and angle < 1.0:
            assert np.abs(e - angle * axis).max() <= 1e-12


def test_point_jacobians(rng):
    n, points, R = 38, rng.standard_normal((4, 3)) * 0.1, rotation(rng)
    J = rng.standard_normal((6, n))
    Jp = np.zeros((12, n))
    kernels.point_jacobians(Jp, J, R, points)
    r = points @ R.T
    close(Jp, (J[:3] - skew_b(r) @ J[3:]).reshape(-1, n))


def test_posture_gradient(rng):
    k, nx = 18, 40
    cols = np.arange(6, 6 + k).astype(np.intp)
    q_ref, q, v = rng.standard_normal((3, k))
    wkp, wkd = 25.0, 10.0
    g0 = rng.standard_normal(nx)
    g = g0.copy()
    kernels.posture_gradient(g, cols, q_ref, q, v, wkp, wkd)
    g0[cols] -= wkp * (q_ref - q) - wkd * v
    close(g, g0)


def test_finite_and_crossed(rng):
    x = rng.standard_normal(30)
    assert kernels.finite(x) and kernels.finite(x[::2])
    for bad in (np.nan, np.inf, -np.inf):
        y = x.copy()
        y[17] = bad
        assert not kernels.finite(y)
    lo, hi = x - 1.0, x + 1.0
    assert not kernels.crossed(lo, hi)
    hi[5] = lo[5] - 1e-12
    assert kernels.crossed(lo, hi)


def test_kkt_equality_minimiser(rng):
    from scipy.linalg import lapack
    from hybrid_dynamics.control.solvers.kkt import equality_minimiser
    nx, neq, nin = 30, 12, 20
    B = rng.standard_normal((nx, nx))
    H, g = B @ B.T + np.eye(nx), rng.standard_normal(nx)
    A, b, C = rng.standard_normal((neq, nx)), rng.standard_normal(neq), rng.standard_normal((nin, nx))
    K = np.block([[H, A.T], [A, np.zeros((neq, neq))]])   # the numpy path: LAPACK dgesv
    x_ref = lapack.dgesv(K, np.concatenate([-g, b]))[2][:nx]
    cx = C @ x_ref
    x, feasible = equality_minimiser(H, g, A, b, C, cx - 1.0, cx + 1.0, 1e-9)
    close(x, x_ref)
    assert feasible
    u = cx + 1.0
    u[3] = cx[3] - 1e-6                                     # one row violated
    assert not equality_minimiser(H, g, A, b, C, cx - 1.0, u, 1e-9)[1]
    with pytest.raises(np.linalg.LinAlgError):              # an empty equality row: singular
        A[1] = 0.0
        equality_minimiser(H, g, A, b, C, cx - 1.0, cx + 1.0, 1e-9)


def test_rows_check(rng):
    from hybrid_dynamics.control.solvers.kkt import rows_check
    C, x = rng.standard_normal((20, 12)), rng.standard_normal(12)
    cx = C @ x
    lo, hi = cx - rng.uniform(0.1, 1, 20), cx + rng.uniform(0.1, 1, 20)
    assert rows_check(C, x, lo, hi, 1e-9, False) and not rows_check(C, x, lo, hi, 1e-7, True)
    hi[7] = cx[7] + 1e-8                                   # at its bound: active, still within
    assert rows_check(C, x, lo, hi, 1e-9, False) and rows_check(C, x, lo, hi, 1e-7, True)
    lo[3] = cx[3] + 1e-6                                   # violated
    assert not rows_check(C, x, lo, hi, 1e-9, False)
    assert rows_check(C[::2], x, lo[::2], hi[::2], 1e-9, False)   # strided rows (views), row 3 left out


def test_reduced_problem(rng):
    """The elimination's reduced QP against the numpy and LAPACK steps it replaced
    (dtrtrs for x0, then the products), and x0 + Q2 y satisfying A x = b for any y."""
    from scipy.linalg import lapack
    from hybrid_dynamics.control.solvers.kkt import reduced_problem
    nx, neq, nin = int(rng.integers(20, 40)), int(rng.integers(6, 15)), 25
    B = rng.standard_normal((nx, nx))
    H, g = B @ B.T + np.eye(nx), rng.standard_normal(nx)
    A, b, C = rng.standard_normal((neq, nx)), rng.standard_normal(neq), rng.standard_normal((nin, nx))
    l, u = rng.standard_normal(nin) - 2.0, rng.standard_normal(nin) + 2.0
    qr, tau, _, _ = lapack.dgeqrf(A.T)
    P = np.zeros((nx, nx), order="F")
    P[:, :neq] = qr
    Q = lapack.dorgqr(P, tau)[0]
    x0, Q2, Hy, gy, Cy, ly, uy = reduced_problem(Q, qr[:neq, :neq], b, H, g, C, l, u)
    w = lapack.dtrtrs(qr[:neq, :neq], b, lower=0, trans=1)[0]
    x0_ref, Q2_ref = Q[:, :neq] @ w, Q[:, neq:]
    close(x0, x0_ref)
    close(Q2, Q2_ref)
    close(Hy, Q2_ref.T @ (H @ Q2_ref))
    close(gy, Q2_ref.T @ (H @ x0_ref + g))
    close(Cy, C @ Q2_ref)
    close(ly, l - C @ x0_ref)
    close(uy, u - C @ x0_ref)
    y = rng.standard_normal(nx - neq)
    close(A @ (x0 + Q2 @ y), b)

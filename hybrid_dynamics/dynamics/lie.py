"""The package's one Lie-group module: SE(3) and SE(2), twists ordered [linear; angular]
(Pinocchio, Murray-Li-Sastry; [Feurstein 2021, Sec. 2.2 and 3.1]).

SE(3):
- ``skew(w)`` / ``vee3(W)``: so(3) hat and vee; ``hat(xi)`` / ``vee(X)``: se(3) hat and vee.
- ``Ad(R, p) = [[R, p^ R], [0, R]]`` (the big adjoint A_xy, twists of y to x), ``Ad_inv``.
- ``ad(xi) = [[w^, v^], [0, w^]]`` (the little adjoint a_nu; ``ad(a) b`` is the motion cross
  product); ``-ad(V).T @ P = force_cross(V, P)``.
- ``exp_so3`` / ``log_so3``, ``exp_se3`` / ``log_se3`` with Taylor branches near the identity
  (and the angle-pi branch of log_so3); ``quat_to_rot`` / ``rot_to_quat`` in Pinocchio's
  (x, y, z, w); ``integrate`` is the group integrator on SE(3) x R^n.

SE(2) (twist [v_x, v_y, w], ``S = [[0, -1], [1, 0]]``, [Feurstein 2021, Sec. 4.1]):
- ``rot2``, ``hat2`` / ``vee2``, ``Ad2(th, o) = [[R, -S o], [0, 1]]``, ``ad2(nu) =
  [[w S, -S v], [0, 0]]``, ``exp_se2`` / ``log_se2``, ``integrate_se2`` on SE(2) x R^n.

Batched helpers take arrays whose last axes are the usual ones (``skew_b((n, 3)) -> (n, 3, 3)``,
``cross3``, ``force_cross``).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import InputError

QUAT_TOLERANCE = 1e-6
TAYLOR_ANGLE = 1e-4          # below this rotation angle the series branches are exact to 1e-17
S2 = np.array([[0.0, -1.0], [1.0, 0.0]])


def cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b for (..., 3) arrays (np.cross costs several times more at these sizes)."""
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        a0, a1, a2 = a
        b0, b1, b2 = b
        return np.array((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0))
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(np.shape(a), np.shape(b)))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def skew(w) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def skew_b(w: np.ndarray) -> np.ndarray:
    """Batched skew matrices: (..., 3) -> (..., 3, 3)."""
    out = np.zeros(w.shape[:-1] + (3, 3))
    out[..., 0, 1] = -w[..., 2]
    out[..., 0, 2] = w[..., 1]
    out[..., 1, 0] = w[..., 2]
    out[..., 1, 2] = -w[..., 0]
    out[..., 2, 0] = -w[..., 1]
    out[..., 2, 1] = w[..., 0]
    return out


def vee3(W: np.ndarray) -> np.ndarray:
    """The vector of a 3x3 skew matrix (its lower-triangle entries)."""
    return np.array([W[2, 1], W[0, 2], W[1, 0]])


def hat(xi) -> np.ndarray:
    out = np.zeros((4, 4))
    out[:3, :3] = skew(xi[3:])
    out[:3, 3] = xi[:3]
    return out


def vee(X: np.ndarray) -> np.ndarray:
    return np.array([X[0, 3], X[1, 3], X[2, 3], X[2, 1], X[0, 2], X[1, 0]])


def Ad(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    out = np.zeros((6, 6))
    out[:3, :3] = R
    out[3:, 3:] = R
    out[:3, 3:] = skew(p) @ R
    return out


def Ad_inv(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    out = np.zeros((6, 6))
    Rt = R.T
    out[:3, :3] = Rt
    out[3:, 3:] = Rt
    out[:3, 3:] = -Rt @ skew(p)
    return out


def inverse3(A: np.ndarray) -> np.ndarray:
    """The inverse of a 3 x 3 matrix by cofactors (np.linalg.inv costs several times more at this
    size); a singular A gives non-finite entries."""
    a, b, c, d, e, f, g, h, i = np.asarray(A, float).ravel().tolist()
    C0, C1, C2 = e * i - f * h, f * g - d * i, d * h - e * g        # cofactors of the first row
    det = a * C0 + b * C1 + c * C2
    return np.array([[C0, c * h - b * i, b * f - c * e],
                     [C1, a * i - c * g, c * d - a * f],
                     [C2, b * g - a * h, a * e - b * d]]) / det


def ad(xi) -> np.ndarray:
    out = np.zeros((6, 6))
    W = skew(xi[3:])
    out[:3, :3] = W
    out[3:, 3:] = W
    out[:3, 3:] = skew(xi[:3])
    return out


def force_cross(V: np.ndarray, P: np.ndarray) -> np.ndarray:
    """-ad(V)^T P (the force cross product V x* P) for vectors stacked on the last axis."""
    out = np.empty(np.broadcast_shapes(V.shape, P.shape))
    out[..., :3] = cross3(V[..., 3:], P[..., :3])
    out[..., 3:] = cross3(V[..., :3], P[..., :3]) + cross3(V[..., 3:], P[..., 3:])
    return out


def rot_axis(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by ``angle`` about the unit ``axis`` (Rodrigues)."""
    K = skew(axis)
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def _so3_coefficients(th: float):
    """sin(th)/th, (1 - cos th)/th^2, (th - sin th)/th^3, with their series below TAYLOR_ANGLE."""
    if th < TAYLOR_ANGLE:
        t2 = th * th
        return 1.0 - t2 / 6.0, 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0
    return math.sin(th) / th, (1.0 - math.cos(th)) / (th * th), (th - math.sin(th)) / th ** 3


def exp_so3(w: np.ndarray) -> np.ndarray:
    th = float(np.linalg.norm(w))
    a, b, _ = _so3_coefficients(th)
    W = skew(w)
    return np.eye(3) + a * W + b * (W @ W)


def log_so3(R: np.ndarray) -> np.ndarray:
    """The rotation vector w with exp_so3(w) = R, |w| <= pi."""
    c = min(1.0, max(-1.0, 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)))
    th = math.acos(c)
    if th < TAYLOR_ANGLE:
        return (1.0 + th * th / 6.0) * 0.5 * vee3(R - R.T)
    if math.pi - th < 1e-6:
        # near pi, (R + R^T)/2 - cos(th) I = (1 - cos th) n n^T: the axis from its largest column,
        # the sign from the (small) skew part 2 sin(th) n
        B = 0.5 * (R + R.T) - c * np.eye(3)
        i = int(np.argmax(np.diag(B)))
        n = B[:, i] / np.linalg.norm(B[:, i])
        if float(vee3(R - R.T) @ n) < 0.0:
            n = -n
        return th * n
    return th / (2.0 * math.sin(th)) * vee3(R - R.T)


def exp_se3(xi: np.ndarray):
    """exp(hat(xi)) as (R, p)."""
    v, w = np.asarray(xi[:3], float), np.asarray(xi[3:], float)
    th = float(np.linalg.norm(w))
    a, b, c = _so3_coefficients(th)
    W = skew(w)
    WW = W @ W
    return np.eye(3) + a * W + b * WW, v + b * (W @ v) + c * (WW @ v)


def log_se3(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The twist xi with exp_se3(xi) = (R, p)."""
    w = log_so3(R)
    th = float(np.linalg.norm(w))
    if th < TAYLOR_ANGLE:
        k = 1.0 / 12.0 + th * th / 720.0
    else:
        k = (1.0 - th * math.sin(th) / (2.0 * (1.0 - math.cos(th)))) / (th * th)
    W = skew(w)
    return np.concatenate([p - 0.5 * (W @ p) + k * (W @ (W @ p)), w])


def quat_to_rot(quat_xyzw) -> np.ndarray:
    x, y, z, w = quat_xyzw
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def rot_to_quat(R: np.ndarray) -> np.ndarray:
    """Rotation matrix to Pinocchio's (x, y, z, w), w >= 0."""
    t = R[0, 0] + R[1, 1] + R[2, 2]
    if t > 0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = np.array([(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s])
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = np.zeros(4)
        q[3] = (R[k, j] - R[j, k]) / s
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[k] = (R[k, i] + R[i, k]) / s
    return q if q[3] >= 0 else -q


def check_quaternion(q: np.ndarray) -> None:
    """Raise InputError unless q[3:7] (Pinocchio's base quaternion) has unit norm."""
    n = q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]
    if not abs(n - 1.0) <= 2 * QUAT_TOLERANCE:
        raise InputError(f"the base quaternion q[3:7] = {np.round(q[3:7], 6).tolist()} is not unit "
                         f"(norm {math.sqrt(max(n, 0.0)):.6g})", field="q")


def integrate(q: np.ndarray, v: np.ndarray, dt: float) -> np.ndarray:
    """q (+) v dt on SE(3) x R^n: g <- g exp(hat(V_b) dt), joints by Euler (Pinocchio's
    integrate), in float arithmetic (the base part is a dozen scalars)."""
    x, y, z, w = q[3], q[4], q[5], q[6]
    vx, vy, vz, ox, oy, oz = (float(c) * dt for c in v[:6])
    th2 = ox * ox + oy * oy + oz * oz
    th = math.sqrt(th2)
    if th < 1e-6:
        a, b, half_s, half_c = 0.5, 1.0 / 6.0, 0.5, 1.0
    else:
        a, b = (1 - math.cos(th)) / th2, (th - math.sin(th)) / (th2 * th)
        half_s, half_c = math.sin(th / 2) / th, math.cos(th / 2)
    # dp = V(w) v = v + a w x v + b w x (w x v)
    cx, cy, cz = oy * vz - oz * vy, oz * vx - ox * vz, ox * vy - oy * vx
    ccx, ccy, ccz = oy * cz - oz * cy, oz * cx - ox * cz, ox * cy - oy * cx
    dx, dy, dz = vx + a * cx + b * ccx, vy + a * cy + b * ccy, vz + a * cz + b * ccz
    # p += R(q) dp
    out = q.copy()
    out[0] += (1 - 2 * (y * y + z * z)) * dx + 2 * (x * y - z * w) * dy + 2 * (x * z + y * w) * dz
    out[1] += 2 * (x * y + z * w) * dx + (1 - 2 * (x * x + z * z)) * dy + 2 * (y * z - x * w) * dz
    out[2] += 2 * (x * z - y * w) * dx + 2 * (y * z + x * w) * dy + (1 - 2 * (x * x + y * y)) * dz
    # quat <- quat (x) exp(w / 2)
    ex, ey, ez, ew = ox * half_s, oy * half_s, oz * half_s, half_c
    nx = w * ex + x * ew + y * ez - z * ey
    ny = w * ey - x * ez + y * ew + z * ex
    nz = w * ez + x * ey - y * ex + z * ew
    nw = w * ew - x * ex - y * ey - z * ez
    norm = math.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
    out[3], out[4], out[5], out[6] = nx / norm, ny / norm, nz / norm, nw / norm
    out[7:] += v[6:] * dt
    return out


def rot2(th: float) -> np.ndarray:
    """R(th) = cos(th) I + sin(th) S."""
    c, s = math.cos(th), math.sin(th)
    return np.array([[c, -s], [s, c]])


def hat2(nu) -> np.ndarray:
    """se(2) twist [v_x, v_y, w] -> 3x3 matrix [[w S, v], [0, 0]]."""
    return np.array([[0.0, -nu[2], nu[0]], [nu[2], 0.0, nu[1]], [0.0, 0.0, 0.0]])


def vee2(X: np.ndarray) -> np.ndarray:
    return np.array([X[0, 2], X[1, 2], X[1, 0]])


def Ad2(th: float, o) -> np.ndarray:
    """A_xy = [[R_xy, -S o_xy], [0, 1]] for H_xy = (R(th), o) [Feurstein 2021, Sec. 2.2]."""
    out = np.eye(3)
    out[:2, :2] = rot2(th)
    out[:2, 2] = -S2 @ np.asarray(o, float)
    return out


def ad2(nu) -> np.ndarray:
    """a_nu = [[w S, -S v], [0, 0]]: ad2(a) b is the planar motion cross product."""
    out = np.zeros((3, 3))
    out[:2, :2] = nu[2] * S2
    out[:2, 2] = -S2 @ np.asarray(nu[:2], float)
    return out


def _se2_coefficients(th: float):
    """sin(th)/th and (1 - cos th)/th with their series below TAYLOR_ANGLE."""
    if abs(th) < TAYLOR_ANGLE:
        return 1.0 - th * th / 6.0, th / 2.0 - th ** 3 / 24.0
    return math.sin(th) / th, (1.0 - math.cos(th)) / th


def exp_se2(nu) -> tuple:
    """exp(hat2(nu)) as (th, o)."""
    a, b = _se2_coefficients(float(nu[2]))
    V = a * np.eye(2) + b * S2
    return float(nu[2]), V @ np.asarray(nu[:2], float)


def log_se2(th: float, o) -> np.ndarray:
    """The twist nu with exp_se2(nu) = (th, o), th wrapped to (-pi, pi]."""
    th = math.atan2(math.sin(th), math.cos(th))
    a, b = _se2_coefficients(th)
    V = a * np.eye(2) + b * S2
    return np.concatenate([np.linalg.solve(V, np.asarray(o, float)), [th]])


def integrate_se2(q: np.ndarray, v: np.ndarray, dt: float) -> np.ndarray:
    """q (+) v dt on SE(2) x R^n with q = [x, y, th, joints] and v = [body twist (3), rates]:
    H <- H exp(hat2(v_b) dt), joints by Euler."""
    th, do = exp_se2(np.asarray(v[:3], float) * dt)
    out = np.array(q, float)
    out[:2] += rot2(q[2]) @ do
    out[2] += th
    out[3:] += np.asarray(v[3:], float) * dt
    return out

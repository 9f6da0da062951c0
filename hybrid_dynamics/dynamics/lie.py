"""Lie-group helpers on SE(3), twists ordered [linear; angular] (Pinocchio, Murray-Li-Sastry).

- ``hat(xi)`` is the 4x4 matrix of a twist, ``skew(w)`` the 3x3 matrix of w x .
- ``Ad(R, p) = [[R, p^ R], [0, R]]`` maps twists from a frame to its parent;
  ``Ad_inv(R, p)`` is its inverse.
- ``ad(xi) = [[w^, v^], [0, w^]]``: ``ad(a) b`` is the motion cross product a x b;
  ``-ad(V).T @ P`` is the force cross product V x* P.
- ``exp_se3(xi)`` is Rodrigues' formula; ``quat_to_rot`` takes Pinocchio's (x, y, z, w).

Batched variants take arrays whose last axes are the usual ones (``skew_b((n, 3)) -> (n, 3, 3)``).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import InputError

QUAT_TOLERANCE = 1e-6


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


def Ad_b(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Batched Ad: R (..., 3, 3), p (..., 3) -> (..., 6, 6)."""
    out = np.zeros(R.shape[:-2] + (6, 6))
    out[..., :3, :3] = R
    out[..., 3:, 3:] = R
    out[..., :3, 3:] = skew_b(p) @ R
    return out


def Ad_inv_b(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    Rt = np.swapaxes(R, -1, -2)
    out = np.zeros(R.shape[:-2] + (6, 6))
    out[..., :3, :3] = Rt
    out[..., 3:, 3:] = Rt
    out[..., :3, 3:] = -Rt @ skew_b(p)
    return out


def ad(xi) -> np.ndarray:
    out = np.zeros((6, 6))
    W = skew(xi[3:])
    out[:3, :3] = W
    out[3:, 3:] = W
    out[:3, 3:] = skew(xi[:3])
    return out


def motion_cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ad(a) b for twists stacked on the last axis."""
    va, wa, vb, wb = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate([np.cross(wa, vb) + np.cross(va, wb), np.cross(wa, wb)], axis=-1)


def force_cross(V: np.ndarray, P: np.ndarray) -> np.ndarray:
    """-ad(V)^T P (the force cross product V x* P) for vectors stacked on the last axis."""
    v, w, f, n = V[..., :3], V[..., 3:], P[..., :3], P[..., 3:]
    return np.concatenate([np.cross(w, f), np.cross(v, f) + np.cross(w, n)], axis=-1)


def rot_axis(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by ``angle`` about the unit ``axis`` (Rodrigues)."""
    K = skew(axis)
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def exp_so3(w: np.ndarray) -> np.ndarray:
    th = float(np.linalg.norm(w))
    if th < 1e-12:
        return np.eye(3) + skew(w)
    return rot_axis(w / th, th)


def exp_se3(xi: np.ndarray):
    """exp(hat(xi)) as (R, p)."""
    v, w = np.asarray(xi[:3], float), np.asarray(xi[3:], float)
    th = float(np.linalg.norm(w))
    W = skew(w)
    if th < 1e-9:
        return np.eye(3) + W, v + 0.5 * W @ v
    R = exp_so3(w)
    V = np.eye(3) + (1 - math.cos(th)) / th ** 2 * W + (th - math.sin(th)) / th ** 3 * (W @ W)
    return R, V @ v


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

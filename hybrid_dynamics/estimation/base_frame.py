"""The base estimator's conversions between frames, compiled (numba): the IMU's reading into
the base's orientation and motion before the filter step, and the filter's state into
Pinocchio's ``q`` and ``v`` after it (estimation/base_estimator.py). Each was a handful of
Pinocchio and numpy calls, a microsecond or two of dispatch apiece for a few dozen flops.

The quaternion conversions are Eigen's (Pinocchio's ``Quaternion`` is Eigen's), so the
estimate is the one the Pinocchio calls gave, to rounding:

- quaternion -> rotation: ``Quaternion::toRotationMatrix`` of the normalised quaternion;
- rotation -> quaternion: Eigen's ``quaternionbase_assign_impl`` (the largest of w, x, y, z
  from the trace or a diagonal entry, the others from sums and differences of off-diagonal
  pairs), then normalised.

test/estimation/test_foot_kinematics.py holds both to ``pin.Quaternion`` to 1e-15.
"""
from __future__ import annotations

import math

import numpy as np
from numba import float64, njit, void

F1, F2 = float64[:], float64[:, :]


@njit(void(F1, F2), cache=True)
def rotation_of_quaternion(quat, R):
    """``R`` (3 x 3) of the quaternion ``quat`` (x, y, z, w), normalised first."""
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    tx, ty, tz = 2.0 * x, 2.0 * y, 2.0 * z
    twx, twy, twz = tx * w, ty * w, tz * w
    txx, txy, txz = tx * x, ty * x, tz * x
    tyy, tyz, tzz = ty * y, tz * y, tz * z
    R[0, 0] = 1.0 - (tyy + tzz)
    R[0, 1] = txy - twz
    R[0, 2] = txz + twy
    R[1, 0] = txy + twz
    R[1, 1] = 1.0 - (txx + tzz)
    R[1, 2] = tyz - twx
    R[2, 0] = txz - twy
    R[2, 1] = tyz + twx
    R[2, 2] = 1.0 - (txx + tyy)


@njit(void(F2, F1), cache=True)
def quaternion_of_rotation(R, quat):
    """``quat`` (x, y, z, w), normalised, of the rotation ``R``: Eigen's construction."""
    t = R[0, 0] + R[1, 1] + R[2, 2]
    if t > 0.0:
        t = math.sqrt(t + 1.0)
        quat[3] = 0.5 * t
        t = 0.5 / t
        quat[0] = (R[2, 1] - R[1, 2]) * t
        quat[1] = (R[0, 2] - R[2, 0]) * t
        quat[2] = (R[1, 0] - R[0, 1]) * t
    else:
        i = 0
        if R[1, 1] > R[0, 0]:
            i = 1
        if R[2, 2] > R[i, i]:
            i = 2
        j = (i + 1) % 3
        k = (j + 1) % 3
        t = math.sqrt(R[i, i] - R[j, j] - R[k, k] + 1.0)
        quat[i] = 0.5 * t
        t = 0.5 / t
        quat[3] = (R[k, j] - R[j, k]) * t
        quat[j] = (R[j, i] + R[i, j]) * t
        quat[k] = (R[k, i] + R[i, k]) * t
    n = math.sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3])
    for a in range(4):
        quat[a] /= n


@njit(void(F1, F1, F1, F2, F1, F2, F1, F1), cache=True)
def base_motion(quat, angular_velocity, linear_acceleration, R_bi, gravity, R, w_b, a_w):
    """From an IMU reading (its orientation in the world, x y z w; its angular velocity and
    specific force in its own frame) and its mounting ``R_bi`` (its frame in the base's): the
    base's orientation ``R = R_wi R_bi^T``, its angular velocity ``w_b = R_bi w_i`` (base
    frame) and its acceleration ``a_w = R R_bi a_i + gravity`` (world)."""
    R_wi = np.empty((3, 3))
    rotation_of_quaternion(quat, R_wi)
    a_b = np.empty(3)
    for r in range(3):
        for c in range(3):
            R[r, c] = R_wi[r, 0] * R_bi[c, 0] + R_wi[r, 1] * R_bi[c, 1] + R_wi[r, 2] * R_bi[c, 2]
        w_b[r] = R_bi[r, 0] * angular_velocity[0] + R_bi[r, 1] * angular_velocity[1] + \
            R_bi[r, 2] * angular_velocity[2]
        a_b[r] = R_bi[r, 0] * linear_acceleration[0] + R_bi[r, 1] * linear_acceleration[1] + \
            R_bi[r, 2] * linear_acceleration[2]
    for r in range(3):
        a_w[r] = R[r, 0] * a_b[0] + R[r, 1] * a_b[1] + R[r, 2] * a_b[2] + gravity[r]


@njit(void(F1, F2, F1, F1, F1, F1, F1), cache=True)
def state_vectors(x, R, w_b, qj, vj, q, v):
    """Pinocchio's ``q = [p, quaternion of R, qj]`` and ``v = [R^T v_world, w_b, vj]`` from
    the filter's state ``x = [p, v_world, ...]``."""
    for a in range(3):
        q[a] = x[a]
        v[a] = R[0, a] * x[3] + R[1, a] * x[4] + R[2, a] * x[5]
        v[3 + a] = w_b[a]
    quaternion_of_rotation(R, q[3:7])
    for a in range(qj.shape[0]):
        q[7 + a] = qj[a]
    for a in range(vj.shape[0]):
        v[6 + a] = vj[a]

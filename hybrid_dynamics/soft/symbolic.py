"""Symbolic (CasADi) building blocks for soft modules: skew matrices, quaternion rotation
and the SE(3) exponential of a constant strain with its removable singularity at zero
curvature handled exactly.

Why CasADi rather than JAX (see docs/soft.md): every body map is traced once into an SX
expression graph, differentiated symbolically to second order (the ``b_k`` terms of
[Pustina 2024, Sec. 5.1]) and evaluated by CasADi's virtual machine with microsecond call
overhead and float64 by default, which suits a 1 kHz controller calling small functions;
the same graphs give the exact Euler-Lagrange reference and the Newton tangents.
"""
from __future__ import annotations

import casadi as ca

# |theta|^2 below which the Taylor branch of the sinc-like functions is used: the series below
# are truncated after theta^12, an error under 1e-25 at the switch, while the closed forms
# lose at most eps/theta^4 = 1e-12 relative in their second derivatives above it
_SERIES_SWITCH = 1e-2


def skew(w):
    """The cross-product matrix of a 3-vector: ``skew(w) @ x == cross(w, x)``."""
    return ca.vertcat(ca.horzcat(0, -w[2], w[1]),
                      ca.horzcat(w[2], 0, -w[0]),
                      ca.horzcat(-w[1], w[0], 0))


def vee(W):
    """The 3-vector of the skew-symmetric part of a 3x3 matrix."""
    return 0.5 * ca.vertcat(W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1])


def _even_series(t2, coefficients):
    out = 0
    for c in reversed(coefficients):
        out = out * t2 + c
    return out


def _factorial(n: int) -> float:
    out = 1.0
    for k in range(2, n + 1):
        out *= k
    return out


def sinc_sq(t2):
    """sin(t)/t as a function of t^2 (smooth at 0)."""
    t = ca.sqrt(ca.fmax(t2, _SERIES_SWITCH))
    series = _even_series(t2, [(-1) ** k / _factorial(2 * k + 1) for k in range(7)])
    return ca.if_else(t2 < _SERIES_SWITCH, series, ca.sin(t) / t, True)


def cosc_sq(t2):
    """(1 - cos t)/t^2 as a function of t^2 (smooth at 0)."""
    series = _even_series(t2, [(-1) ** k / _factorial(2 * k + 2) for k in range(7)])
    t = ca.sqrt(ca.fmax(t2, _SERIES_SWITCH))
    return ca.if_else(t2 < _SERIES_SWITCH, series, (1 - ca.cos(t)) / (t * t), True)


def sincc_sq(t2):
    """(t - sin t)/t^3 as a function of t^2 (smooth at 0)."""
    series = _even_series(t2, [(-1) ** k / _factorial(2 * k + 3) for k in range(7)])
    t = ca.sqrt(ca.fmax(t2, _SERIES_SWITCH))
    return ca.if_else(t2 < _SERIES_SWITCH, series, (t - ca.sin(t)) / (t * t * t), True)


def se3_exp(xi):
    """(R, p) = exp of the twist ``xi = (omega, v)`` (angular first), exact at omega = 0."""
    w, v = xi[0:3], xi[3:6]
    W = skew(w)
    t2 = ca.dot(w, w)
    a, b, c = sinc_sq(t2), cosc_sq(t2), sincc_sq(t2)
    W2 = W @ W
    R = ca.DM.eye(3) + a * W + b * W2
    V = ca.DM.eye(3) + b * W + c * W2
    return R, V @ v


def quaternion_rotation(quat):
    """Rotation matrix of a unit quaternion stored (x, y, z, w) as Pinocchio does."""
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    return ca.vertcat(
        ca.horzcat(1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
        ca.horzcat(2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
        ca.horzcat(2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)))


def quaternion_rate(quat, omega_local):
    """d/dt of the (x, y, z, w) quaternion for a body-frame angular velocity."""
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    ox, oy, oz = omega_local[0], omega_local[1], omega_local[2]
    return 0.5 * ca.vertcat(w * ox + y * oz - z * oy,
                            w * oy + z * ox - x * oz,
                            w * oz + x * oy - y * ox,
                            -x * ox - y * oy - z * oz)


def segment(x, start: int, stop: int):
    """x[start:stop] as a column, also when empty (a plain empty slice gives a 1 x 0 row)."""
    if stop <= start:
        return type(x)(0, 1)
    return x[list(range(start, stop))]


def axis_rotation(axis, angle):
    """Rotation matrix by ``angle`` about the unit ``axis`` (symbolic angle)."""
    R, _ = se3_exp(ca.vertcat(ca.DM(axis) * angle, ca.DM.zeros(3)))
    return R

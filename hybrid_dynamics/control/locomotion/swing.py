"""Swing-foot trajectories and support-polygon geometry.

Swing ([Farghdani 2025, Eq. (64)]'s cosine bump, with its ambiguities fixed): the foot
goes from its lift-off point ``p0`` to its touchdown point ``p1`` along a minimum-jerk blend
``b(s) = 10 s^3 - 15 s^4 + 6 s^5`` horizontally, and ``z = z_ground + h (1 - cos 2 pi s)/2``
vertically, ``s = (t - t_lo) / T_swing``. Table IV's step height ``L_sh = 12 (1e-2 m)``
equals the body height and is read as a misprint; the default height here is 0.025 m.
Velocities and accelerations are the exact derivatives (zero at both ends).
"""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np


def min_jerk(s: float) -> Tuple[float, float, float]:
    """b(s), b'(s), b''(s) of the minimum-jerk blend, s clipped to [0, 1]."""
    s = min(max(s, 0.0), 1.0)
    return (s ** 3 * (10 - 15 * s + 6 * s * s),
            30 * s * s * (1 - s) ** 2,
            60 * s * (1 - s) * (1 - 2 * s))


def swing_point(p0: np.ndarray, p1: np.ndarray, s: float, duration: float, height: float):
    """Position, velocity, acceleration (world) of a swing foot at progress ``s``."""
    b, db, ddb = min_jerk(s)
    d = p1 - p0
    pos = p0 + b * d
    vel = db * d / duration
    acc = ddb * d / duration ** 2
    s = min(max(s, 0.0), 1.0)
    w = 2.0 * np.pi
    pos = pos.copy()
    pos[2] = p0[2] + b * (p1[2] - p0[2]) + 0.5 * height * (1.0 - np.cos(w * s))
    vel[2] = db * (p1[2] - p0[2]) / duration + 0.5 * height * w * np.sin(w * s) / duration
    acc[2] = ddb * (p1[2] - p0[2]) / duration ** 2 + 0.5 * height * w * w * np.cos(w * s) / duration ** 2
    return pos, vel, acc


# ---------------------------------------------------------------------------- polygons
def convex_hull(points: Sequence[Sequence[float]]) -> np.ndarray:
    """Counter-clockwise hull of 2D points (Andrew's monotone chain)."""
    pts = sorted({(float(p[0]), float(p[1])) for p in points})
    if len(pts) <= 2:
        return np.array(pts)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def halfplanes(hull: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(A, b) with A x <= b inside a counter-clockwise hull (unit outward normals)."""
    n = len(hull)
    A, b = [], []
    for i in range(n):
        p, q = hull[i], hull[(i + 1) % n]
        e = q - p
        normal = np.array([e[1], -e[0]])
        normal /= max(np.linalg.norm(normal), 1e-12)
        A.append(normal)
        b.append(normal @ p)
    return np.array(A), np.array(b)


def margin(point: Sequence[float], hull: np.ndarray) -> float:
    """Signed distance from a 2D point to the hull's boundary (positive inside)."""
    if len(hull) < 3:
        return -np.inf
    A, b = halfplanes(hull)
    return float(np.min(b - A @ np.asarray(point, float)[:2]))


def project(point: np.ndarray, A: np.ndarray, b: np.ndarray, iterations: int = 200) -> np.ndarray:
    """Closest point to ``point`` with A x <= b (Dykstra's alternating projections)."""
    x = np.asarray(point, float).copy()
    increments = np.zeros((len(A), 2))
    for _ in range(iterations):
        moved = 0.0
        for i, (a, bi) in enumerate(zip(A, b)):
            y = x + increments[i]
            excess = a @ y - bi
            new = y - max(excess, 0.0) * a
            increments[i] = y - new
            moved = max(moved, np.abs(new - x).max())
            x = new
        if moved < 1e-9:
            break
    return x

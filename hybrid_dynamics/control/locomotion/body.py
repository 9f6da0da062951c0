"""Body (CoM) path for static gaits: one smooth path over the coming stance phases.

The wave gait lifts one foot at a time; while it is up, the CoM must stay inside the polygon
of the feet that remain down. Moving the body slot by slot (a minimum-jerk shift squeezed
into the short all-feet-down phase before each swing) asked for ~10 m/s^2 on S2 (7.5 cm in
0.2 s): the body lagged its reference by 5-10 cm and tipped. Here the CoM path is planned
over a horizon of several slots at once, so each shift can start as soon as the current
support allows it and spread over the time available.

**Model.** The horizontal CoM is a double integrator with piecewise-constant acceleration
``a_i`` on a grid of step ``h`` (so position is exactly quadratic and velocity linear
between samples, and ``|a|`` is bounded everywhere, not just at the samples), starting from
the current reference position and velocity (the path is C1 across re-plans).

**QP** (ProxQP, dense, ~2 x 60 variables, solved once per slot)::

    min  sum_i h |a_i|^2 + w sum_i h |p_i - p_ref_i|^2
    s.t. A_i p_i <= b_i - margin     (the support polygon at sample i, see below)
         |a_i|_inf <= a_max,  |p_i - p_ref_i|_inf <= max_shift

``p_ref`` is the CoM carried by the commanded motion (the nominal frame), ``w = omega^4``
(``omega`` ~ the path's tracking bandwidth): the path leaves ``p_ref`` only as much as the
polygons require. The polygon at a sample is that of the feet down over the whole interval
``[t_i - h, t_i + h]`` (conservative at stance switches), from the feet's current positions
and their predicted footholds (the caller supplies them). If the problem has no solution, the
caller relaxes margin and acceleration bound in steps and, failing that, falls back to the
slot-by-slot shift.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np
import proxsuite


@dataclass
class ComPath:
    """Piecewise-constant-acceleration path from ``t0``: ``p0``, ``v0`` and ``acc`` (K, 2)."""
    t0: float
    h: float
    p0: np.ndarray
    v0: np.ndarray
    acc: np.ndarray
    margin: float = 0.0
    a_max: float = 0.0

    def __post_init__(self):
        K = len(self.acc)
        self.p = np.zeros((K + 1, 2))
        self.v = np.zeros((K + 1, 2))
        self.p[0], self.v[0] = self.p0, self.v0
        for i in range(K):
            self.v[i + 1] = self.v[i] + self.acc[i] * self.h
            self.p[i + 1] = self.p[i] + self.v[i] * self.h + 0.5 * self.acc[i] * self.h ** 2

    @property
    def t_end(self) -> float:
        return self.t0 + len(self.acc) * self.h

    def sample(self, t: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position, velocity, acceleration) at ``t`` (held at constant velocity past the end)."""
        s = max(float(t) - self.t0, 0.0)
        K = len(self.acc)
        i = min(int(s // self.h), K)
        if i >= K:
            ds = s - K * self.h
            return self.p[K] + self.v[K] * ds, self.v[K].copy(), np.zeros(2)
        ds = s - i * self.h
        a = self.acc[i]
        return self.p[i] + self.v[i] * ds + 0.5 * a * ds * ds, self.v[i] + a * ds, a.copy()


def plan_com_path(t0: float, h: float, p0: np.ndarray, v0: np.ndarray, p_ref: np.ndarray,
                  polygons: Sequence[Optional[Tuple[np.ndarray, np.ndarray]]], *, margin: float,
                  a_max: float, max_shift: float, omega: float = 6.0) -> Optional[ComPath]:
    """The path of the module docstring. ``p_ref`` (K, 2) and ``polygons`` (K entries, ``(A, b)``
    with ``A x <= b`` inside, or None for no constraint) are given at the samples
    ``t0 + (i + 1) h``, i = 0..K-1. Returns None if the QP has no solution."""
    K = len(p_ref)
    n = 2 * K
    # p_{i+1} = p0 + v0 (i+1) h + sum_{j<=i} a_j h^2 (i - j + 1/2): P (K x K), per axis
    idx = np.arange(K)
    diff = idx[:, None] - idx[None, :]
    P = np.where(diff >= 0, h * h * (diff + 0.5), 0.0)
    free = p0[None, :] + v0[None, :] * (h * (idx[:, None] + 1.0))          # (K, 2)
    S = np.zeros((2 * K, n))            # stacked [x_1..x_K, y_1..y_K] = S a + s0, a = [ax, ay]
    S[:K, :K] = P
    S[K:, K:] = P
    s0 = np.concatenate([free[:, 0], free[:, 1]])
    ref = np.concatenate([p_ref[:, 0], p_ref[:, 1]])
    w = omega ** 4
    H = h * np.eye(n) + w * h * S.T @ S + 1e-9 * np.eye(n)
    g = w * h * S.T @ (s0 - ref)
    rows, lo, hi = [], [], []
    for i, poly in enumerate(polygons):
        if poly is None:
            continue
        A, b = poly
        for a_row, b_row in zip(A, b):
            r = a_row[0] * S[i] + a_row[1] * S[K + i]
            rows.append(r)
            lo.append(-1e20)
            hi.append(b_row - margin - a_row[0] * s0[i] - a_row[1] * s0[K + i])
    rows.append(S)
    lo.append(ref - s0 - max_shift)
    hi.append(ref - s0 + max_shift)
    C = np.vstack([np.atleast_2d(r) for r in rows] + [np.eye(n)])
    lo = np.concatenate([np.atleast_1d(x) for x in lo] + [-a_max * np.ones(n)])
    hi = np.concatenate([np.atleast_1d(x) for x in hi] + [a_max * np.ones(n)])
    qp = proxsuite.proxqp.dense.QP(n, 0, len(C))
    qp.settings.eps_abs = 1e-8
    qp.settings.eps_rel = 0.0
    qp.settings.max_iter = 2000
    qp.settings.max_iter_in = 30     # bounded work if the support polygons leave no path
    qp.settings.verbose = False
    qp.init(H, g, None, None, C, lo, hi)
    qp.solve()
    x = np.asarray(qp.results.x)
    if not np.all(np.isfinite(x)):
        return None
    viol = np.maximum(C @ x - hi, lo - C @ x).max(initial=0.0)
    if viol > 1e-5:
        return None
    return ComPath(float(t0), float(h), np.asarray(p0, float).copy(), np.asarray(v0, float).copy(),
                   np.stack([x[:K], x[K:]], axis=1), margin, a_max)

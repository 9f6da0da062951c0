"""Friction cone per contact point as an N-facet pyramid, and normal-force bounds.

With the contact normal ``n`` and tangents ``t1, t2`` (world), facet ``k`` of the pyramid has
direction ``d_k = cos(2 pi k / N) t1 + sin(2 pi k / N) t2`` and reads

    d_k . f - mu' (n . f) <= 0,      mu' = mu cos(pi / N)  (inner: inside the true cone)
                                     mu' = mu               (outer: the cone inside it)

(the pyramid's cross-section is a regular N-gon of inradius ``mu' f_n``). One more row bounds
the normal force, ``f_min <= n . f <= f_max`` per point; a swing contact of the fixed layout
has ``0 <= n . f <= 0``, which with the facets (N >= 3) forces ``f = 0``. The rows depend only
on the contact normals, so they are written once per layout.
"""
from __future__ import annotations

import numpy as np

from .base import INF, Constraint


def tangent_basis(normal: np.ndarray):
    n = np.asarray(normal, float) / np.linalg.norm(normal)
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = helper - n * (helper @ n)
    t1 /= np.linalg.norm(t1)
    return n, t1, np.cross(n, t1)


def pyramid(normal, mu: float, facets: int, approximation: str = "inner") -> np.ndarray:
    """(N + 1) x 3 rows: N facets (``<= 0``) then the normal component."""
    n, t1, t2 = tangent_basis(normal)
    mu_eff = mu * np.cos(np.pi / facets) if approximation == "inner" else mu
    angles = 2 * np.pi * np.arange(facets) / facets
    d = np.cos(angles)[:, None] * t1 + np.sin(angles)[:, None] * t2
    return np.vstack([d - mu_eff * n, n])


class FrictionCone(Constraint):
    name = "friction_cone"

    def __init__(self, facets: int, approximation: str):
        self.facets = int(facets)
        self.approximation = approximation

    def rows(self, layout) -> int:
        return sum(layout.contacts[i].n_points for i in layout.included) * (self.facets + 1)

    def setup(self, C, lo, hi, layout) -> None:
        N1 = self.facets + 1
        r = 0
        C[:] = 0.0
        for i in layout.included:
            c = layout.contacts[i]
            P = pyramid(c.normal, c.friction, self.facets, self.approximation)
            col = layout.n + layout.f_offset[i]
            for _ in range(c.n_points):
                C[r:r + N1, col:col + 3] = P
                lo[r:r + self.facets] = -INF
                hi[r:r + self.facets] = 0.0
                if layout.stance[i]:
                    lo[r + self.facets], hi[r + self.facets] = c.min_normal_force, c.max_normal_force
                else:
                    lo[r + self.facets], hi[r + self.facets] = 0.0, 0.0
                r += N1
                col += 3

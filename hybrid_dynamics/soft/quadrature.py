"""Mass quadratures over the undeformed volume of a body [Pustina 2024, Sec. 3.2]:
``{x_k, w_k = rho dV_k}``. Integrals are Lagrangian (rho dV is conserved), so no det F factor.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np


def gauss_legendre(n: int, a: float, b: float) -> Tuple[np.ndarray, np.ndarray]:
    """n-point Gauss-Legendre nodes and weights on [a, b]."""
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * (b - a) * x + 0.5 * (a + b), 0.5 * (b - a) * w


def cylinder(length: float, radius: float, density: float, n_axial: int = 6,
             n_radial: int = 2, n_angular: int = 4) -> Tuple[np.ndarray, np.ndarray]:
    """Points and weights on the cylinder 0 <= x3 <= length, x1^2 + x2^2 <= radius^2.

    Radial Gauss nodes integrate r^(2 n_radial - 1) dr exactly and ``n_angular`` equally
    spaced angles integrate trigonometric polynomials of degree < n_angular exactly, so the
    defaults are exact for every map affine in (x1, x2) (Cosserat rods, CC, PCC).
    """
    s, ws = gauss_legendre(n_axial, 0.0, length)
    # integrate f(r) r dr on [0, R] with Gauss nodes in r^2 (exact for polynomials in r^2)
    u, wu = gauss_legendre(n_radial, 0.0, radius ** 2)
    r, wr = np.sqrt(u), 0.5 * wu
    th = 2 * np.pi * (np.arange(n_angular) + 0.5) / n_angular
    wth = np.full(n_angular, 2 * np.pi / n_angular)
    S, Rr, Th = np.meshgrid(s, r, th, indexing="ij")
    W = ws[:, None, None] * wr[None, :, None] * wth[None, None, :]
    pts = np.stack([Rr * np.cos(Th), Rr * np.sin(Th), S], axis=-1).reshape(-1, 3)
    return pts, density * W.reshape(-1)


def box(size, density: float, n: int = 3) -> Tuple[np.ndarray, np.ndarray]:
    """Tensor Gauss points on the box [-a/2, a/2] x [-b/2, b/2] x [0, c]."""
    axes = [gauss_legendre(n, -size[0] / 2, size[0] / 2), gauss_legendre(n, -size[1] / 2, size[1] / 2),
            gauss_legendre(n, 0.0, size[2])]
    grids = np.meshgrid(*[a[0] for a in axes], indexing="ij")
    wgrid = np.einsum("i,j,k->ijk", *[a[1] for a in axes])
    return np.stack(grids, axis=-1).reshape(-1, 3), density * wgrid.reshape(-1)


def inertia_points(mass: float, com, inertia_about_com) -> Tuple[np.ndarray, np.ndarray]:
    """Six point masses with exactly the given mass, centre of mass and inertia.

    With the principal inertias I_a and second moments S_a = tr(I)/2 - I_a (>= 0 for a
    physical inertia), points at com +- d_a e_a of mass m/6 have d_a = sqrt(3 S_a / m).
    """
    if mass == 0:
        return np.asarray(com, float)[None, :], np.zeros(1)
    vals, vecs = np.linalg.eigh(np.asarray(inertia_about_com, float))
    second = 0.5 * vals.sum() - vals
    if mass < 0 or np.any(second < -1e-12 * max(1.0, vals.max())):
        raise ValueError("mass must be non-negative and the inertia physical (triangle inequality)")
    d = np.sqrt(np.maximum(second, 0.0) * 3.0 / mass)
    pts = [np.asarray(com, float) + sign * d[a] * vecs[:, a] for a in range(3) for sign in (1, -1)]
    return np.array(pts), np.full(6, mass / 6.0)

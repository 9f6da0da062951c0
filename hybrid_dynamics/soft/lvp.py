"""Locally volume-preserving (LVP) primitives and their composition [Pustina 2024, Sec. 7.1,
Tables 4-5] (the primitives the paper takes from Xu and Chirikjian): maps h_p(x, q) with det(J_x h_p) = 1, each driven by a
modal function of x3, composed as f = h_P(... h_1(x, q) ..., q).

The paper defers the primitives' functional form to Xu and Chirikjian (2023); the forms used
here (stated in docs/soft.md) are exactly volume preserving, except the bending backbone,
integrated by 6-point Gauss quadrature. Modal functions (Table 4 unless noted):
stretch u(x3) = (x3/L)(1 - x3/L) q, bending curvature (q_a + x3 q_b)/L, twist angle (x3/L) q,
shear (x3/L) q; Table 5: stretch and source (x3/L)^2 q; ``stretch_linear`` u = (x3/L) q (a
uniform stretch that changes the body's length, our choice for Simulation 1: Table 4's mode
vanishes at both faces).
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import casadi as ca
import numpy as np

from hybrid_dynamics.soft import quadrature
from hybrid_dynamics.soft.bodies import Body

# name -> number of coordinates
PRIMITIVES: Dict[str, int] = {"source": 1, "stretch": 1, "stretch_tip": 1, "stretch_linear": 1, "bend_x": 2, "bend_y": 2,
                              "twist": 1, "shear_x": 1, "shear_y": 1}
_GAUSS = np.polynomial.legendre.leggauss(6)


def _stretch(x, u, du):
    """Axial displacement u(x3), sections scaled by 1/sqrt(1 + u') (det = 1)."""
    s = 1 / ca.sqrt(1 + du)
    return ca.vertcat(x[0] * s, x[1] * s, x[2] + u)


def _bend(x, L, qa, qb, lateral: int):
    """Bending in the (x_lateral, x3) plane with curvature k(x3) = (qa + x3 qb)/L; the offset
    eta from the backbone solves eta - k eta^2/2 = x_lateral (area preserving)."""
    x3, xl = x[2], x[lateral]
    k = (qa + x3 * qb) / L
    theta = lambda s: (qa * s + qb * s * s / 2) / L      # noqa: E731 (angle of the tangent)
    c_l, c_3 = 0, 0
    for node, weight in zip(*_GAUSS):
        s = 0.5 * x3 * (node + 1)
        c_l, c_3 = c_l + 0.5 * x3 * weight * ca.sin(theta(s)), c_3 + 0.5 * x3 * weight * ca.cos(theta(s))
    eta = 2 * xl / (1 + ca.sqrt(1 - 2 * k * xl))
    th = theta(x3)
    out = [x[0], x[1], c_3 - eta * ca.sin(th)]
    out[lateral] = c_l + eta * ca.cos(th)
    return ca.vertcat(*out)


def _twist(x, phi):
    c, s = ca.cos(phi), ca.sin(phi)
    return ca.vertcat(c * x[0] - s * x[1], s * x[0] + c * x[1], x[2])


def _source(x, c):
    """Radial map r'^2 = r^2 + c(x3) (a cavity on the axis; det = 1). A point on the axis (the
    distal face's centre) stays on it: the map's radial symmetry, without the 0/0 of c / r^2."""
    r2 = x[0] * x[0] + x[1] * x[1]
    off_axis = r2 > 0
    scale = ca.if_else(off_axis, ca.sqrt(1 + c / ca.if_else(off_axis, r2, 1)), 1)
    return ca.vertcat(x[0] * scale, x[1] * scale, x[2])


def lvp_map(x, q, L: float, primitives: Sequence[str]):
    """The composition of ``primitives`` (in order) at the point x with coordinates q."""
    y, k = ca.vertcat(*[x[i] for i in range(3)]), 0
    for name in primitives:
        x3 = y[2]
        if name == "stretch":
            y = _stretch(y, (x3 / L) * (1 - x3 / L) * q[k], (1 / L - 2 * x3 / L ** 2) * q[k])
        elif name == "stretch_linear":
            y = _stretch(y, x3 / L * q[k], q[k] / L)
        elif name == "stretch_tip":
            y = _stretch(y, (x3 / L) ** 2 * q[k], 2 * x3 / L ** 2 * q[k])
        elif name in ("bend_x", "bend_y"):
            y = _bend(y, L, q[k], q[k + 1], 1 if name == "bend_x" else 0)
        elif name == "twist":
            y = _twist(y, x3 / L * q[k])
        elif name == "source":
            y = _source(y, (x3 / L) ** 2 * q[k])
        else:
            shift = [0, 0, 0]
            shift[0 if name == "shear_x" else 1] = x3 / L * q[k]
            y = y + ca.vertcat(*shift)
        k += PRIMITIVES[name]
    return y


class LVPBody(Body):
    """A cylinder deformed by LVP primitives, with the incompressible neo-Hookean energy
    W = C (tr F^T F - 3) (det F = 1 by construction, so no pressure term) and Kelvin-Voigt
    damping s_d = eta K(q) qdot, K = d2E/dq2 [Pustina 2024, Sec. 6.2]."""

    def __init__(self, length: float, radius: float, density: float, primitives: Sequence[str],
                 elastic_coefficient: float = 0.0, damping_time: float = 0.0, n_axial: int = 4,
                 relax_face: bool = False, orthonormal_face: bool = False):
        unknown = [p for p in primitives if p not in PRIMITIVES]
        if unknown:
            raise ValueError(f"unknown LVP primitive(s) {unknown}; known: {sorted(PRIMITIVES)}")
        self.primitives: List[str] = list(primitives)
        self.nq = sum(PRIMITIVES[p] for p in primitives)
        self.length, self.density = float(length), float(density)
        self.C, self.eta = float(elastic_coefficient), float(damping_time)
        pts, w = quadrature.cylinder(length, radius, density, n_axial=n_axial, n_radial=2, n_angular=4)
        face = (np.array([0, 0, length]), np.array([radius, 0, length]), np.array([0, radius, length]))
        super().__init__(pts, w, face, relax_face=relax_face, orthonormal_face=orthonormal_face)

    def f(self, x, q):
        return lvp_map(x, q, self.length, self.primitives)

    def elastic_energy(self, q):
        xs = ca.SX.sym("x", 3)
        qs = ca.SX.sym("q", self.nq)
        F = ca.jacobian(self.f(xs, qs), xs)
        density = ca.Function("W", [xs, qs], [self.C * (ca.sumsqr(F) - 3)])
        return sum(wk / self.density * density(ca.DM(xk), q) for xk, wk in zip(self.points, self.weights))

    def elastic_force(self, q, v):
        """dW/dq + eta K(q) qdot, K the Hessian of W: its product with qdot by one forward
        sweep (jtimes), not the n x n Hessian times qdot (a third of the instructions of the
        helicoid's elastic force)."""
        E = self.elastic_energy(q)
        grad = ca.gradient(E, q)
        return grad + self.eta * ca.jtimes(grad, q, v)

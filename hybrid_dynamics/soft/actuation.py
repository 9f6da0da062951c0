"""Tendon and pressure actuation of soft-module trees: the actuation matrix A(q) of
``M qdd + h = A(q) u`` from virtual work [Pustina 2024, Sec. 7.1, ``delta q^T nu = delta l^T u``].

Each input u_j has an actuation coordinate y_j(q) whose virtual change is the work per unit
input, so that ``A = J_y^T`` (J_y: Jacobian of y with respect to the speeds):

- a tendon (tension u >= 0) is a polyline through material points of the bodies (via points,
  any modules of the tree); its length l(q) is the sum of the distances between consecutive
  points in the world, and y = l(q_0) - l(q) (its contraction from the neutral configuration),
  so that the column is ``-(dl/dq)^T``: a tension does positive work when the tendon shortens.
- a pressure chamber (pressure u above the ambient) is the region bounded by the image of a
  material cylinder of one body (radius ``radius`` about the body axis, ``start <= x3 <= end``)
  and by the two flat caps spanned by the images of its end circles; y = V(q) - V(q_0), its
  volume change, computed by the divergence theorem over those surfaces,
  ``V = 1/3 (oint f . n dA)`` (Gauss-Legendre along x3, equally spaced angles), so that the
  column is ``(dV/dq)^T``: the pressure projected through the chamber's lateral and end
  surfaces. Inside a volume-preserving (LVP) body the material enclosed keeps its volume, so
  only a cavity the map opens (the source primitive) changes V.

  ``reading="surfaces"`` (LVP bodies): another reading of [Pustina 2024, Sec. 7.2]'s "projected
  into the configuration space using the top and lateral surface area of the pressurized
  chamber", per primitive: the pressure's virtual work on the chamber's top (the material disk
  of radius ``radius`` at ``x3 = end``) drives the coordinates of the stretch primitives, its
  work on the lateral wall those of the source primitive, and no other coordinate. The column
  is then not the gradient of a coordinate: the stretch's narrowing of the wall, which takes
  back the top's work in ``dV/dq`` (an LVP stretch keeps the chamber's volume), is not
  counted. :meth:`Actuation.coordinates` still reports the volume's change as y.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import casadi as ca
import numpy as np

from hybrid_dynamics.soft.bodies import Body
from hybrid_dynamics.soft.kinematics import symbolic_points
from hybrid_dynamics.soft.lvp import PRIMITIVES, LVPBody
from hybrid_dynamics.soft.quadrature import gauss_legendre
from hybrid_dynamics.soft.symbolic import segment
from hybrid_dynamics.soft.tree import SoftTree


@dataclass(frozen=True)
class Tendon:
    """A tendon through the via points ``(module name, material point x)``, in order."""
    name: str
    points: Tuple[Tuple[str, Tuple[float, float, float]], ...]


@dataclass(frozen=True)
class Chamber:
    """A pressure chamber in the body of ``module`` (see the module docstring)."""
    name: str
    module: str
    radius: float
    start: float
    end: float
    n_angular: int = 16
    n_axial: int = 8
    reading: str = "volume"          # or "surfaces" (LVP bodies; module docstring)


READINGS = ("volume", "surfaces")
STRETCHES = ("stretch", "stretch_tip", "stretch_linear")


def _chamber_map(body: Body, chamber: Chamber) -> ca.Function:
    """(x, q_B) -> (f, df/dx, df/dq_B) of the chamber's body."""
    xs, qs = ca.SX.sym("x", 3), ca.SX.sym("q", body.nq)
    try:
        fx = body.f(xs, qs)
    except (TypeError, RuntimeError, NotImplementedError):
        raise ValueError(f"chamber '{chamber.name}': the map of module '{chamber.module}' is not "
                         "symbolic in the material point (use an lvp, modal or map body)") from None
    return ca.Function("chamber_map", [xs, qs], [fx, ca.jacobian(fx, xs), ca.jacobian(fx, qs)])


def chamber_volume(body: Body, chamber: Chamber, qB):
    """Volume enclosed by the chamber's deformed lateral surface and flat end caps, in the
    body's joint frame (the volume does not depend on the frame)."""
    fmap = _chamber_map(body, chamber)
    r, n = chamber.radius, chamber.n_angular
    angles = 2 * np.pi * (np.arange(n) + 0.5) / n
    dth = 2 * np.pi / n

    def surface(theta: float, s: float):
        """(Y, dY/dtheta, dY/ds) of the lateral surface at (theta, x3 = s)."""
        Y, F, _ = fmap(ca.DM([r * np.cos(theta), r * np.sin(theta), s]), qB)
        return Y, F @ ca.DM([-r * np.sin(theta), r * np.cos(theta), 0.0]), F[:, 2]

    flux = 0
    for s, ws in zip(*gauss_legendre(chamber.n_axial, chamber.start, chamber.end)):
        for theta in angles:
            Y, Yt, Ys = surface(theta, s)
            flux = flux + ws * dth * ca.dot(Y, ca.cross(Yt, Ys))
    for s, sign in ((chamber.end, 1.0), (chamber.start, -1.0)):
        rim = [surface(theta, s)[:2] for theta in angles]
        c = sum(Y for Y, _ in rim) / n
        # cap Z = c + rho (Y - c), rho in [0, 1]: Z . (Z_rho x Z_theta) integrates to c.((Y - c) x Y_theta)/2
        flux = flux + sign * 0.5 * dth * sum(ca.dot(c, ca.cross(Y - c, Yt)) for Y, Yt in rim)
    return flux / 3


def chamber_surface_work(body: Body, chamber: Chamber, qB):
    """(top, lateral): the virtual work per unit pressure on the chamber's top (the material
    disk of radius ``radius`` at ``x3 = end``) and on its lateral wall, as columns over q_B:
    ``int n . dY/dq_B dA`` with ``n dA`` the deformed outward area element (Gauss-Legendre along
    x3 and the disk's radius, equally spaced angles)."""
    fmap = _chamber_map(body, chamber)
    r, n = chamber.radius, chamber.n_angular
    angles = 2 * np.pi * (np.arange(n) + 0.5) / n
    dth = 2 * np.pi / n
    lateral, top = 0, 0
    for s, ws in zip(*gauss_legendre(chamber.n_axial, chamber.start, chamber.end)):
        for theta in angles:
            c, d = np.cos(theta), np.sin(theta)
            Y, F, Jq = fmap(ca.DM([r * c, r * d, s]), qB)
            normal = ca.cross(F @ ca.DM([-r * d, r * c, 0.0]), F[:, 2])          # Y_theta x Y_s
            lateral = lateral + ws * dth * (Jq.T @ normal)
    for rho, wr in zip(*gauss_legendre(chamber.n_axial, 0.0, r)):
        for theta in angles:
            c, d = np.cos(theta), np.sin(theta)
            Y, F, Jq = fmap(ca.DM([rho * c, rho * d, chamber.end]), qB)
            normal = ca.cross(F @ ca.DM([c, d, 0.0]), F @ ca.DM([-rho * d, rho * c, 0.0]))   # Y_rho x Y_theta
            top = top + wr * dth * (Jq.T @ normal)
    return top, lateral


def chamber_on_surfaces(body: Body, chamber: Chamber, qB):
    """The column of the ``surfaces`` reading (module docstring): the top's work on the
    stretch primitives' coordinates, the lateral wall's on the source's."""
    if not isinstance(body, LVPBody):
        raise ValueError(f"chamber '{chamber.name}': the surfaces reading takes the primitives of an lvp body")
    top, lateral = chamber_surface_work(body, chamber, qB)
    kinds = [name for name in body.primitives for _ in range(PRIMITIVES[name])]
    on_top = ca.DM([1.0 if k in STRETCHES else 0.0 for k in kinds])
    on_wall = ca.DM([1.0 if k == "source" else 0.0 for k in kinds])
    return on_top * top + on_wall * lateral


class Actuation:
    """A(q) of the tendons then the chambers of a tree; u = (tensions, pressures)."""

    def __init__(self, tree: SoftTree, tendons: Sequence[Tendon] = (), chambers: Sequence[Chamber] = ()):
        self.tree = tree
        self.tendons, self.chambers = list(tendons), list(chambers)
        self.names = [t.name for t in self.tendons] + [c.name for c in self.chambers]
        if not self.names:
            raise ValueError("an actuation needs at least one tendon or chamber")
        q, v = ca.MX.sym("q", tree.nq), ca.MX.sym("v", tree.nv)
        coords: List = []
        for tendon in self.tendons:
            if len(tendon.points) < 2:
                raise ValueError(f"tendon '{tendon.name}': at least two via points")
            p = symbolic_points(tree, tendon.points, q)
            coords.append(-sum(ca.norm_2(b - a) for a, b in zip(p[:-1], p[1:])))
        projected = {}                                           # row -> the surfaces reading's A^T row
        for k, chamber in enumerate(self.chambers):
            if chamber.reading not in READINGS:
                raise ValueError(f"chamber '{chamber.name}': reading must be one of {READINGS}")
            i = tree.module_index(chamber.module)
            module = tree.modules[i]
            qB = segment(q, tree.qslice[i].start + module.joint.nq, tree.qslice[i].stop)
            coords.append(chamber_volume(module.body, chamber, qB))
            if chamber.reading == "surfaces":     # body coordinates: their rates are their speeds
                row = ca.MX.zeros(1, tree.nv)
                start = tree.vslice[i].start + module.joint.nv
                row[0, start:start + module.body.nq] = chamber_on_surfaces(module.body, chamber, qB).T
                projected[len(self.tendons) + k] = row
        y = ca.vertcat(*coords)
        qd = tree.symbolic_qdot(q, v)
        Jy = ca.jacobian(ca.jtimes(y, q, qd), v)                 # dy/dt = J_y v, A = J_y^T
        if projected:
            Jy = ca.vertcat(*[projected.get(k, Jy[k, :]) for k in range(Jy.shape[0])])
        self._fn = ca.Function("actuation", [q, v], [y, Jy, ca.jtimes(Jy @ v, q, qd)]).expand()
        self._A = ca.Function("A", [q], [self._fn(q, ca.MX.zeros(tree.nv))[1].T]).expand()
        self.y0 = np.array(self._fn(tree.neutral(), np.zeros(tree.nv))[0]).ravel()
        self.m = len(self.names)

    def matrix(self, q) -> np.ndarray:
        """A(q), nv x m."""
        return np.array(self._A(q))

    def force(self, q, u) -> np.ndarray:
        """The generalized force A(q) u."""
        return self.matrix(q) @ np.asarray(u, float)

    def coordinates(self, q, v) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(y(q) - y(q_0), J_y (m x nv) = A^T, Jdot_y v)."""
        y, J, b = self._fn(q, v)
        return np.array(y).ravel() - self.y0, np.array(J), np.array(b).ravel()

    def symbolic_matrix(self) -> ca.Function:
        """q -> A(q), for exact tangents (statics)."""
        return self._A

"""Bodies of soft-rigid modules: a geometric map ``p = f(x, q_B)`` from material point to
position in the joint frame [Pustina 2024, Eq. (2)], a mass quadrature, the three distal-face
points that define the next frame [Pustina 2024, Eqs. (4)-(7)] and a body-local
visco-elastic generalized force ``s(q_B, qdot_B)``.

Stock bodies: rigid, Cosserat rods given by a strain basis (constant curvature, PCC with
elongation, piecewise-constant strain, variable strain), a modal (Ritz) flexible link, and any
differentiable user map.

A body's integrals in its distal frame (:meth:`Body.integrals`: mass, CoM, inertia and their
derivatives, the deformation momentum and the sums of pi* [Pustina 2024, Eqs. (44)-(47)]) are
sums over its quadrature points; the modal body evaluates them from q-independent invariants
computed once at build (its map is linear in q).
"""
from __future__ import annotations

import abc

from typing import Callable, List, Optional, Sequence, Tuple

import casadi as ca
import numpy as np

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.soft import quadrature
from hybrid_dynamics.soft.symbolic import se3_exp, skew

Face = Tuple[np.ndarray, np.ndarray, np.ndarray]


class Body(abc.ABC):
    """A body: ``nq`` deformation coordinates, a map f(x, q), quadrature and distal face.

    ``face`` holds (x_J, x_a, x_b) with (x_a - x_J).(x_b - x_J) = 0 [Pustina 2024, Eq. (4)];
    ``relax_face`` (last body of a branch only) expresses the body in its rest distal frame
    instead, so that the distal face may deform; ``orthonormal_face`` (any body) lets the face
    deform and attaches the next module to the frame at the pivot ``f(x_J)`` whose axes are the
    face directions made orthonormal (Gram-Schmidt of n1, n2 of Eqs. (5)-(6)).
    """
    nq: int = 0

    def __init__(self, points: np.ndarray, weights: np.ndarray, face: Face,
                 stiffness: Optional[np.ndarray] = None, damping: Optional[np.ndarray] = None,
                 relax_face: bool = False, orthonormal_face: bool = False):
        self.points = np.asarray(points, float)
        self.weights = np.asarray(weights, float)
        self.face = tuple(np.asarray(p, float) for p in face)
        self.stiffness = np.zeros((self.nq, self.nq)) if stiffness is None else np.asarray(stiffness, float)
        self.damping = np.zeros((self.nq, self.nq)) if damping is None else np.asarray(damping, float)
        self.relax_face = relax_face
        self.orthonormal_face = orthonormal_face

    @abc.abstractmethod
    def f(self, x: np.ndarray, q):
        """Position of the material point x in the joint frame (symbolic in q)."""

    def map_points(self, xs: np.ndarray, q) -> List:
        """f at many points (bodies sharing work across points override this)."""
        return [self.f(x, q) for x in xs]

    def distal_transform(self, q):
        """(R_B, t_B) of the distal frame in the joint frame [Pustina 2024, Eqs. (5)-(7)]."""
        xJ, xa, xb = self.face
        if self.relax_face:
            q = ca.DM.zeros(self.nq)
        pJ, pa, pb = self.map_points(np.array([xJ, xa, xb]), q)
        n1 = (pa - pJ) / np.linalg.norm(xa - xJ)
        n2 = (pb - pJ) / np.linalg.norm(xb - xJ)
        if self.orthonormal_face:
            n1 = n1 / ca.norm_2(n1)
            n2 = n2 - ca.dot(n1, n2) * n1
            n2 = n2 / ca.norm_2(n2)
        return ca.horzcat(n1, n2, ca.cross(n1, n2)), pJ

    def local_points(self, q, xs: Optional[np.ndarray] = None):
        """Material points (default: the quadrature points) in the distal frame, ^i p_k
        (stacked 3K vector)."""
        RB, tB = self.distal_transform(q)
        xs = self.points if xs is None else xs
        return ca.vertcat(*[RB.T @ (p - tB) for p in self.map_points(xs, q)])

    def integrals(self, q, v, a) -> list:
        """The body's integrals in its distal frame at (q_B, qdot_B, qddot_B), in the order of
        module.TERM_NAMES from ``m`` to ``Jrr`` [Pustina 2024, Sec. 4], as sums over the
        quadrature points (with r_k = p_k - p_c, J_r = dr/dq, b_k the second-order term):
        m, p_c and its two derivatives, J_c, I, Idot, dI/dq, h_d = sum w r x rdot,
        sum w r x rddot, H = sum w [r]x J_r, G = sum w [rdot]x J_r, sum w J_r^T J_r,
        sum w J_r^T rddot."""
        w = self.weights
        K = len(w)
        P = self.local_points(q)
        JP = ca.jacobian(P, q)
        m = float(w.sum())
        mdiv = m if m > 0 else 1.0          # a massless body has all sums zero
        p = [P[3 * k:3 * k + 3] for k in range(K)]
        Jp = [JP[3 * k:3 * k + 3, :] for k in range(K)]
        pc = sum(w[k] * p[k] for k in range(K)) / mdiv
        Jc = sum(w[k] * Jp[k] for k in range(K)) / mdiv
        b_all = ca.jtimes(JP @ v, q, v)             # b_k = sum_jl d2p_k/dqj dql qdj qdl, one sweep
        b = [b_all[3 * k:3 * k + 3] for k in range(K)]
        bbar = sum(w[k] * b[k] for k in range(K)) / mdiv
        r = [p[k] - pc for k in range(K)]
        Jr = [Jp[k] - Jc for k in range(K)]
        rd = [Jr[k] @ v for k in range(K)]
        rdd = [Jr[k] @ a + b[k] - bbar for k in range(K)]
        I = sum(w[k] * (ca.dot(r[k], r[k]) * ca.DM.eye(3) - r[k] @ r[k].T) for k in range(K))
        return [ca.SX(m), pc, Jc @ v, Jc @ a + bbar, Jc, I, ca.reshape(ca.jtimes(ca.vec(I), q, v), 3, 3),
                ca.jacobian(ca.vec(I), q),
                sum(w[k] * ca.cross(r[k], rd[k]) for k in range(K)),
                sum(w[k] * ca.cross(r[k], rdd[k]) for k in range(K)),
                sum(w[k] * skew(r[k]) @ Jr[k] for k in range(K)),
                sum(w[k] * skew(rd[k]) @ Jr[k] for k in range(K)),
                sum(w[k] * Jr[k].T @ Jr[k] for k in range(K)),
                sum(w[k] * Jr[k].T @ rdd[k] for k in range(K))]

    def elastic_force(self, q, v):
        """Body-local visco-elastic generalized force s(q, qdot) (linear Kelvin-Voigt)."""
        return ca.DM(self.stiffness) @ q + ca.DM(self.damping) @ v

    def elastic_energy(self, q):
        return 0.5 * ca.dot(q, ca.DM(self.stiffness) @ q)


class RigidBody(Body):
    """f(x) = x; six point masses reproduce the given mass, CoM and inertia exactly."""
    nq = 0

    def __init__(self, mass: float, com=(0, 0, 0), inertia=None):
        inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, float)
        pts, w = quadrature.inertia_points(mass, com, inertia)
        super().__init__(pts, w, (np.zeros(3), np.eye(3)[0], np.eye(3)[1]))

    def f(self, x, q):
        return ca.DM(x)


class StrainRod(Body):
    """A Cosserat rod with a rigid circular section and strain xi(s) = Phi(s) q + (0,0,0,0,0,1)
    (angular first) [Pustina 2024, Sec. 7.2]: g(s) is the product of
    exponentials of the strain over the intervals between consecutive axial stations, exact for
    piecewise-constant strain (CC, PCC, PCS) and the midpoint (second-order Magnus) rule
    otherwise. f(x, q) = t(x3) + R(x3) (x1, x2, 0).

    Linear elasticity s = K q + eta K qdot with K = int Phi^T diag(EI, EI, GJ, GA, GA, EA) Phi ds.
    """

    def __init__(self, length: float, radius: float, density: float,
                 basis: Callable[[float], np.ndarray], nq: int, *, youngs_modulus: float = 0.0,
                 poisson: float = 0.5, damping_time: float = 0.0, breakpoints: Sequence[float] = (),
                 steps: int = 1, n_axial: int = 6, relax_face: bool = False):
        self.nq = nq
        self.length, self.radius, self.basis = float(length), float(radius), basis
        pts, w = quadrature.cylinder(length, radius, density, n_axial=n_axial)
        stations = set(np.linspace(0.0, length, steps + 1)) | set(breakpoints) | set(pts[:, 2])
        self.stations = np.array(sorted(s for s in stations if 0.0 <= s <= length))
        E, G = youngs_modulus, youngs_modulus / (2 * (1 + poisson))
        area, second = np.pi * radius ** 2, np.pi * radius ** 4 / 4
        Kxi = np.diag([E * second, E * second, 2 * G * second, G * area, G * area, E * area])
        s, ws = quadrature.gauss_legendre(max(4, n_axial), 0.0, length)
        cuts = np.unique(np.concatenate([[0.0, length], np.asarray(breakpoints, float)]))
        K = np.zeros((nq, nq))
        gram = np.zeros((nq, nq))           # int Phi^T Phi ds on the same quadrature
        for a, b in zip(cuts[:-1], cuts[1:]):
            s, ws = quadrature.gauss_legendre(max(4, n_axial), a, b)
            for sk, wk in zip(s, ws):
                Phi = np.asarray(basis(sk), float).reshape(6, nq)
                K += wk * Phi.T @ Kxi @ Phi
                gram += wk * Phi.T @ Phi
        # a basis the quadrature cannot see (e.g. a Legendre degree n vanishes at all n Gauss
        # points) leaves a coordinate with no stiffness and no mass: Newton "converges" with it
        # anywhere
        rank = np.linalg.matrix_rank(gram, tol=1e-10 * max(np.abs(gram).max(), 1e-300))
        if rank < nq:
            raise InputError(f"the strain basis has {nq} functions but only {rank} are independent on "
                             f"{max(4, n_axial)} axial quadrature points: raise n_axial above the basis "
                             f"degree, or remove dependent functions", field="n_axial")
        face = (np.array([0, 0, length]), np.array([radius, 0, length]), np.array([0, radius, length]))
        super().__init__(pts, w, face, K, damping_time * K, relax_face)

    def strain(self, s: float, q):
        return ca.DM(np.asarray(self.basis(s), float).reshape(6, self.nq)) @ q + \
            ca.DM([0, 0, 0, 0, 0, 1.0])

    def backbone(self, q):
        """{station s: (R(s), t(s))} for every axial station."""
        R, t = ca.SX.eye(3), ca.SX.zeros(3)
        poses = {0.0: (R, t)}
        for a, b in zip(self.stations[:-1], self.stations[1:]):
            Rk, tk = se3_exp((b - a) * self.strain(0.5 * (a + b), q))
            R, t = R @ Rk, t + R @ tk
            poses[float(b)] = (R, t)
        return poses

    def map_points(self, xs, q):
        poses = self.backbone(q)
        out = []
        for x in xs:
            R, t = poses[float(x[2])] if float(x[2]) in poses else self._pose_at(float(x[2]), q)
            out.append(t + R @ ca.DM([x[0], x[1], 0.0]))
        return out

    def _pose_at(self, s: float, q):
        below = self.stations[self.stations <= s].max()
        R, t = self.backbone(q)[float(below)]
        Rk, tk = se3_exp((s - below) * self.strain(0.5 * (s + below), q))
        return R @ Rk, t + R @ tk

    def f(self, x, q):
        return self.map_points(np.array([x]), q)[0]


def constant_curvature(length: float, radius: float, density: float, *, planar: bool,
                       elongation: bool, **material) -> StrainRod:
    """CC/PCC body: q = bending angle(s) over the body (about -y for the planar case, as in
    the toy example of [Pustina 2024, Sec. 3]; about x then y in 3D) and, with
    ``elongation``, the change of length."""
    rows = [1] if planar else [0, 1]
    signs = [-1.0] if planar else [1.0, 1.0]
    n = len(rows) + (1 if elongation else 0)

    def basis(s, rows=rows, signs=signs):
        Phi = np.zeros((6, n))
        for k, (row, sign) in enumerate(zip(rows, signs)):
            Phi[row, k] = sign / length
        if elongation:
            Phi[5, n - 1] = 1.0 / length
        return Phi
    return StrainRod(length, radius, density, basis, n, **material)


def piecewise_constant_strain(length: float, radius: float, density: float, segments: int,
                              strains: Sequence[int] = (0, 1, 2, 5), **material) -> StrainRod:
    """PCS rod: ``segments`` equal pieces, each with its own constant values of the selected
    strain components (indices into (kx, ky, kz, sx, sy, sz))."""
    n = segments * len(strains)
    edges = np.linspace(0.0, length, segments + 1)

    def basis(s):
        seg = min(int(np.searchsorted(edges, s, side="right")) - 1, segments - 1)
        Phi = np.zeros((6, n))
        for k, comp in enumerate(strains):
            Phi[comp, seg * len(strains) + k] = 1.0
        return Phi
    return StrainRod(length, radius, density, basis, n, breakpoints=edges[1:-1], **material)


def variable_strain(length: float, radius: float, density: float, order: int,
                    strains: Sequence[int] = (0, 1), steps: int = 8, **material) -> StrainRod:
    """GVS rod: each selected strain component is a Legendre series of degree < ``order`` in
    s/L, integrated with ``steps`` midpoint-Magnus steps."""
    n = order * len(strains)

    def basis(s):
        Phi = np.zeros((6, n))
        for k, comp in enumerate(strains):
            for j in range(order):
                Phi[comp, k * order + j] = np.polynomial.legendre.Legendre.basis(j)(2 * s / length - 1)
        return Phi
    return StrainRod(length, radius, density, basis, n, steps=steps, **material)


class ModalBody(Body):
    """Ritz flexible link [Pustina 2024, Eq. (13)]: f(x, q) = x + sum_j phi_j(x3) q_j d_j with
    polynomial shapes phi_j = (x3/L)^(j+2) along d_j in {x, y}: cross-sections translate, so
    the distal face moves rigidly (Assumption 2) and the map is linear in q. Bending energy of
    the centreline, K_ij = E I int phi_i'' phi_j'' d_i.d_j dx3.

    In the distal frame (axes of the joint frame, origin f(x_J)) every material point is
    affine in q, ``p_k = u_k + S_k q`` with ``S_k = [d_j (phi_j(x3_k) - phi_j(L))]`` constant,
    so the body's integrals are polynomials in q whose coefficients, the floating-frame-of-
    reference inertia invariants, are computed once at build (``invariants``; centred at the
    rest CoM: a_k = u_k - u_bar, B_k = S_k - S_bar):

        m,  u_bar = sum w u / m,  S_bar = sum w S / m                  (p_c = u_bar + S_bar q)
        E0 = sum w a a^T,  E1_j = sum w B_j a^T,  E2_jl = sum w B_j B_l^T
                               (sum w r r^T = E0 + sum_j q_j (E1_j + E1_j^T) + sum_jl q_j q_l E2_jl)
        H0 = sum w [a]x B,  H1_j = sum w [B_j]x B                      (H(q) = H0 + sum_j q_j H1_j)
        M_bb = sum w B^T B

    and then I = tr(E) I3 - E, h_d = H v, sum w r x rddot = H a, G = sum_j v_j H1_j, the CoM
    rates S_bar v and S_bar a, sum w J_r^T rddot = M_bb a (no second-order term: b_k = 0).
    ``invariants=False`` keeps the generic sums over the quadrature points
    (:meth:`Body.integrals`), the reference the invariants are checked against.
    """

    def __init__(self, length: float, radius: float, density: float, modes_per_direction: int = 2,
                 youngs_modulus: float = 0.0, damping_time: float = 0.0, invariants: bool = True):
        self.length = float(length)
        self.modes = [(d, j + 2) for d in (0, 1) for j in range(modes_per_direction)]
        self.nq = len(self.modes)
        pts, w = quadrature.cylinder(length, radius, density, n_axial=max(6, modes_per_direction + 4))
        s, ws = quadrature.gauss_legendre(8, 0.0, length)
        curv = np.array([p * (p - 1) * s ** (p - 2) / length ** p for _, p in self.modes])
        same = np.array([[1.0 if a == b else 0.0 for b, _ in self.modes] for a, _ in self.modes])
        K = youngs_modulus * np.pi * radius ** 4 / 4 * same * ((curv * ws) @ curv.T)
        face = (np.array([0, 0, length]), np.array([radius, 0, length]), np.array([0, radius, length]))
        super().__init__(pts, w, face, K, damping_time * K)
        self.invariants = self._invariants() if invariants else None

    def f(self, x, q):
        out = ca.DM(x)
        for j, (d, p) in enumerate(self.modes):
            out = out + ca.DM(np.eye(3)[d]) * (x[2] / self.length) ** p * q[j]
        return out

    def _shapes(self, x3: np.ndarray) -> np.ndarray:
        """S_k (K, 3, n): the modes' displacement of points at heights x3, relative to the face's."""
        S = np.zeros((len(x3), 3, self.nq))
        for j, (d, p) in enumerate(self.modes):
            S[:, d, j] = (x3 / self.length) ** p - 1.0
        return S

    def _invariants(self) -> dict:
        w, n = self.weights, self.nq
        m = float(w.sum())
        u = self.points - self.face[0]                                  # u_k (rest, distal frame)
        S = self._shapes(self.points[:, 2])
        u_bar, S_bar = w @ u / m, np.einsum("k,kij->ij", w, S) / m
        a, B = u - u_bar, S - S_bar
        skew_B = np.stack([np.stack([np.cross(B[:, :, j], B[:, :, l]) for l in range(n)], -1)
                           for j in range(n)])                        # [B_j]x B_l, (n, K, 3, n)
        return {"m": m, "u_bar": u_bar, "S_bar": S_bar,
                "E0": np.einsum("k,ki,kj->ij", w, a, a),
                "E1": np.einsum("k,kij,kl->jil", w, B, a),             # (n, 3, 3): sum w B_j a^T
                "E2": np.einsum("k,kij,klm->jmil", w, B, B),           # (n, n, 3, 3): sum w B_j B_m^T
                "H0": np.einsum("k,kij->ij", w, np.cross(a[:, :, None], B, axis=1)),
                "H1": np.einsum("k,jkil->jil", w, skew_B),             # (n, 3, n)
                "Mbb": np.einsum("k,kij,kil->jl", w, B, B)}

    def integrals(self, q, v, a) -> list:
        """:meth:`Body.integrals` from the invariants (class docstring), or as sums over the
        quadrature points when built with ``invariants=False``."""
        if self.invariants is None:
            return super().integrals(q, v, a)
        inv, n = self.invariants, self.nq
        Sb = ca.DM(inv["S_bar"])
        E = ca.DM(inv["E0"])
        H = ca.DM(inv["H0"])
        G = ca.SX.zeros(3, n)
        for j in range(n):
            E1 = ca.DM(inv["E1"][j])
            E = E + q[j] * (E1 + E1.T)
            H = H + q[j] * ca.DM(inv["H1"][j])
            G = G + v[j] * ca.DM(inv["H1"][j])
            for l in range(n):
                E = E + q[j] * q[l] * ca.DM(inv["E2"][j, l])
        I = ca.trace(E) * ca.DM.eye(3) - E
        Mbb = ca.DM(inv["Mbb"])
        return [ca.SX(inv["m"]), ca.DM(inv["u_bar"]) + Sb @ q, Sb @ v, Sb @ a, Sb, I,
                ca.reshape(ca.jtimes(ca.vec(I), q, v), 3, 3), ca.jacobian(ca.vec(I), q),
                H @ v, H @ a, H, G, Mbb, Mbb @ a]

class MapBody(Body):
    """Any differentiable user map ``f(x, q)`` written with CasADi operations."""

    def __init__(self, nq: int, fmap: Callable, points, weights, face: Face, **kwargs):
        self.nq = nq
        self.fmap = fmap
        super().__init__(points, weights, face, **kwargs)

    def f(self, x, q):
        return self.fmap(x, q)

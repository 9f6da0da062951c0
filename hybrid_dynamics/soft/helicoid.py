"""Simulation 1 of [Pustina 2024, Sec. 7.1]: the trimmed-helicoid continuum robot. Three LVP
bodies (8 DoF each, Table 4), nine tendons, statics by Newton for sampled references of the
three tip circles (Eq. (55)), a C^2 reference for the tendon coordinates, partial feedback
linearisation tracking it with the paper's gains K_P = 10 I_9 N, K_D = 1 I_9 N s.

From the paper: L = 0.10 m, radius 0.02 m, rho = 960 kg/m^3, C = 0.178 MPa, eta = 0.05 s,
Table 4's bending, twist and shear modes, nine straight tendons in triplets along the outer
perimeter, A(q) from virtual work, the tip circles t_1d..t_3d (period 5 s), the statics of
Eq. (55), the PFBL law and its gains. Choices where the paper's values cannot be used or are
not given (also in the reproduction's JSON, ``choices``):

- **stretch mode**: ``u(x3) = (x3/L) q1`` (a uniform stretch, primitive ``stretch_linear``)
  instead of Table 4's ``(x3/L)(1 - x3/L) q1``. Table 4's mode is zero at both faces, so no
  body can change its length: the tips stay near the rest heights 0.10, 0.20, 0.30 m and the
  paper's 0.08, 0.15, 0.24 m are unreachable (the regulator's Newton on Eq. (55) plus the tip
  equations then has no solution). With the uniform stretch the tips reach every sampled
  reference exactly, and at the straight pose the nine tendon coordinates have rank 9 (with
  Table 4's mode a straight tendon changes length at first order only through the two
  bendings: rank 6, and the PFBL's ``J_y M^-1 J_y^T`` is singular there);
- the LVP primitives' functional form (ours, docs/soft.md), composed in Table 4's order
  stretch, bend about x1, bend about x2, twist, shear x1, shear x2; the two inner bodies pass
  their orthonormalised distal face on (``orthonormal_face``), the last one relaxes it;
- quadrature: 4 axial x 2 radial x 4 angular Gauss points per body (the paper: 2749
  tetrahedra per body);
- stress model: ``W = C (tr F^T F - 3)`` per unit volume, damping ``eta K(q) qdot``;
- gravity along +x3 of the base: the arm hangs from its base, aligned with gravity when
  straight; the tip heights are measured along it;
- routing: triplet i spans body i, from its proximal to its distal face, on the perimeter
  (radius 0.02 m) at 0, 120, 240 deg (+ 40 deg per body), straight at rest, 6 via points each;
- tips: the centres of the distal faces, material points (0, 0, L);
- the Cartesian regulator giving u_eq: the tensions whose equilibrium puts the three tips on
  t_d, found with the equilibrium in one Newton solve on (q, u) of Eq. (55) together with
  ``tips(q) = t_d`` (9 tensions, 9 tip coordinates; the tip rows weighted by 1e4 N/m so that
  Newton's step halving compares newtons with newtons); tensions are not clipped to be positive;
- sampling: ``SAMPLES`` equilibria over one period, joined by a periodic cubic spline of the
  tendon coordinates (C^2);
- start: the stress-free straight pose at rest (Fig. 4a), so y(0) != y_d(0);
- the PFBL in the equivalent form of ``soft/pfbl.py`` (no inverse map q(theta) needed);
- integration: SUNDIALS CVODES (BDF, through CasADi: ``soft/cvodes.py``) with the approximate
  closed-loop Jacobian of :func:`stiff_jacobian` (the damped LVP modes are stiff), reused up to
  ``JACOBIAN_REUSE`` times while CVODES advances, rtol 1e-6, atol 1e-9;
- **horizon**: the paper's 5.5 s (``HORIZON``, Figs. 5-7). scipy's BDF, given the same
  right-hand side and Jacobian, stalls at 0.776 s (its step collapses: over a thousand
  right-hand sides without advancing), which bounded the reproduction to 0.7 s before; CVODES
  passes 0.776 s in a few hundred right-hand sides and the unactuated coordinates stay bounded
  (body 2's Table 4 q3 peaks at -9.3 at 0.79 s and recedes; largest |q| over the 5.5 s
  11.6): the stall was scipy's, not the closed loop's. The large values of q3, q5 are Table 4's
  scaling (``x3 q3`` with x3 in metres: q3 = 10 adds 0.5 rad to the body's tip angle); the
  zero dynamics at the regulated equilibria, in physical terms (the load tangent and M on the
  directions that keep y), have their lowest frequency at 11-13 Hz and decay at 12-14 1/s.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Dict, List

import casadi as ca
import numpy as np
from scipy.interpolate import CubicSpline
from scipy.linalg import null_space

from hybrid_dynamics.soft.actuation import Actuation, Tendon
from hybrid_dynamics.soft.joints import FixedJoint
from hybrid_dynamics.soft.kinematics import MaterialPoints, symbolic_points
from hybrid_dynamics.soft.lvp import LVPBody
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.motion import Statics, load_tangent, newton, simulate, with_tangent
from hybrid_dynamics.soft.pfbl import CollocatedPFBL
from hybrid_dynamics.soft.tree import SoftTree

LENGTH, RADIUS, DENSITY, ELASTIC, ETA = 0.10, 0.02, 960.0, 0.178e6, 0.05
PRIMITIVES = ["stretch_linear", "bend_x", "bend_y", "twist", "shear_x", "shear_y"]   # 8 DoF
GRAVITY = (0.0, 0.0, 9.81)
PERIOD = 5.0
CIRCLES = ((0.02, 0.08), (0.025, 0.15), (0.030, 0.24))          # (radius, height) of t_1d..t_3d
KP, KD = 10.0, 1.0
SAMPLES = 20
HORIZON = 5.5             # s of tracking, as in the paper (Figs. 5-7)
JACOBIAN_REUSE = 20       # CVODES: the closed-loop Jacobian (0.6 s of CPU) reused up to 20 times (soft/cvodes.py)
TIP_WEIGHT = 1e4          # N/m: the regulator's tip rows in newtons, like the statics rows
VIA_POINTS = 6


def helicoid() -> SoftTree:
    modules = []
    for i in range(3):
        body = LVPBody(LENGTH, RADIUS, DENSITY, PRIMITIVES, ELASTIC, ETA, n_axial=4,
                       relax_face=i == 2, orthonormal_face=i < 2)
        modules.append(Module(f"body{i}", FixedJoint(), body, None if i == 0 else f"body{i - 1}"))
    return SoftTree(modules, gravity=GRAVITY)


def tendons() -> List[Tendon]:
    out = []
    for i in range(3):
        for k in range(3):
            angle = 2 * np.pi * k / 3 + np.deg2rad(40.0) * i
            points = tuple((f"body{i}", (RADIUS * np.cos(angle), RADIUS * np.sin(angle), s))
                           for s in np.linspace(0.0, LENGTH, VIA_POINTS))
            out.append(Tendon(f"tendon{i}{k}", points))
    return out


def tip_reference(t) -> np.ndarray:
    """(t_1d, t_2d, t_3d) stacked, at time t [Pustina 2024, Sec. 7.1]."""
    w = 2 * np.pi / PERIOD
    return np.concatenate([[r * np.cos(w * t), r * np.sin(w * t), z] for r, z in CIRCLES])


TIPS = [(f"body{i}", (0.0, 0.0, LENGTH)) for i in range(3)]


@dataclass
class Helicoid:
    """The robot, its tendons, tips, the statics with tendons and the regulator."""
    tree: SoftTree
    actuation: Actuation
    tips: MaterialPoints
    statics: Statics
    regulator: ca.Function
    loads: Callable
    build_seconds: float

    @classmethod
    def build(cls) -> "Helicoid":
        start = time.perf_counter()
        tree = helicoid()
        act = Actuation(tree, tendons())
        statics = Statics(tree, range(tree.nq), act)
        x, td = ca.MX.sym("x", tree.nq + act.m), ca.MX.sym("td", 3 * len(TIPS))
        q, u = x[:tree.nq], x[tree.nq:]
        tips = ca.vertcat(*symbolic_points(tree, TIPS, q))
        residual = ca.vertcat(statics.residual(q, ca.vertcat(ca.MX.zeros(tree.nv), u)),   # Eq. (55)
                              TIP_WEIGHT * (tips - td))
        regulator = with_tangent(ca.Function("regulator", [x, td], [residual]).expand())
        return cls(tree, act, MaterialPoints(tree, TIPS), statics, regulator, load_tangent(tree, act),
                   time.perf_counter() - start)

    def regulated_equilibrium(self, q0, u0, td):
        """(q_eq, u_eq): the equilibrium g + s = A(q) u [Pustina 2024, Eq. (55)] whose tips are
        at t_d, by Newton on (q, u) from (q0, u0)."""
        x = newton(self.regulator, np.concatenate([q0, u0]), td, range(self.tree.nq + self.actuation.m))
        return x[:self.tree.nq], x[self.tree.nq:]


def reference(model: Helicoid, samples: int = SAMPLES) -> Dict:
    """The regulated equilibria at ``samples`` instants of one period (each Newton started from
    the previous one), and the periodic C^2 spline of their tendon coordinates."""
    tree = model.tree
    times = np.linspace(0.0, PERIOD, samples + 1)[:-1]
    q, u = tree.neutral(), np.zeros(model.actuation.m)
    qs, us = [], []
    for t in times:
        q, u = model.regulated_equilibrium(q, u, tip_reference(t))
        qs.append(q)
        us.append(u)
    zero = np.zeros(tree.nv)
    ys = np.array([model.actuation.coordinates(qk, zero)[0] for qk in qs])
    spline = CubicSpline(np.append(times, PERIOD), np.vstack([ys, ys[:1]]), bc_type="periodic")
    return {"times": times, "q": np.array(qs), "u": np.array(us), "spline": spline}


def closed_loop(model: Helicoid, spline):
    """(t, q, v) -> (u, qdd): the PFBL input for the reference ``spline`` and the acceleration it
    gives, from one MID call [Pustina 2024, Sec. 7.1]."""
    tree, act = model.tree, model.actuation
    control = CollocatedPFBL(np.full(act.m, KP), np.full(act.m, KD))

    def step(t, q, v):
        M, h = tree.mid(q, v)
        y, Jy, bias = act.coordinates(q, v)
        u = control.input(M, h, Jy, bias, y, Jy @ v, spline(t), spline(t, 1), spline(t, 2))
        return u, np.linalg.solve(M, Jy.T @ u - h)                       # A = J_y^T
    return step


def stiff_jacobian(model: Helicoid):
    """(t, q, v) -> an approximate d(qdot, vdot)/d(q, v) of the closed loop for the implicit
    integrator. With the PFBL input, ``vdot = M^-1 J_y^T Lambda (a - Jdot_y v) - P h``,
    ``P = M^-1 - M^-1 J_y^T Lambda J_y M^-1`` (the input cancels h along the outputs); h's
    part is ``-P K dq - P D dv`` with K, D the exact tangents of ``h - A(q) u`` at the tensions
    that hold h, ``u = Lambda J_y M^-1 h`` (:func:`~hybrid_dynamics.soft.motion.load_tangent`:
    the tendons' geometric stiffness in K, the damping of the elastic stiffness only in D, the
    velocity terms in both), and a's is ``-K_P J_y dq - K_D J_y dv``; the change of M, J_y and
    the bias is left out.

    Two earlier forms failed at speed or under load, measured by the Newton contraction
    ``rho((I - h J_a)^-1 h (J - J_a))`` against central differences at a 1 ms step: damping
    taken as ``eta K_T`` (the statics tangent at the tensions, so the tendons' geometric
    stiffness damped too) contracted by 0.78 at the loaded equilibria (300 N) and the step
    collapsed as the tensions grew; tangents at zero velocity (statics tangent, ``d s / d
    qdot``) were exact there but not once the unactuated coordinates moved fast."""
    tree, act, n = model.tree, model.actuation, model.tree.nv

    def jacobian(t, q, v):
        M, h = tree.mid(q, v)
        _, Jy, _ = act.coordinates(q, v)
        MinvJt = np.linalg.solve(M, Jy.T)
        Lam = np.linalg.inv(Jy @ MinvJt)
        u = Lam @ (Jy @ np.linalg.solve(M, h))                     # the input's part that holds h
        P = np.linalg.inv(M) - MinvJt @ Lam @ MinvJt.T
        K, D = model.loads(q, v, u)
        G = MinvJt @ Lam @ Jy
        return np.block([[np.zeros((n, n)), np.eye(n)], [-P @ K - KP * G, -P @ D - KD * G]])
    return jacobian


def track(model: Helicoid, spline, duration: float, samples: int = 101, rtol: float = 1e-6,
          atol: float = 1e-9, method: str = "CVODES") -> Dict[str, np.ndarray]:
    """Closed loop from the straight pose at rest: PFBL with K_P = 10, K_D = 1, integrated by
    ``method`` (CVODES, or scipy's BDF, which stalls at 0.776 s: module docstring)."""
    tree, act = model.tree, model.actuation
    step = closed_loop(model, spline)
    t, qs, vs = simulate(tree, tree.neutral(), np.zeros(tree.nv), duration, samples=samples, method=method,
                         rtol=rtol, atol=atol, acceleration=lambda t, q, v: step(t, q, v)[1],
                         jacobian=stiff_jacobian(model), jacobian_reuse=JACOBIAN_REUSE)
    coords = [act.coordinates(q, v) for q, v in zip(qs, vs)]
    return {"t": t, "q": qs, "v": vs, "y": np.array([c[0] for c in coords]),
            "yd": np.array([c[1] @ v for c, v in zip(coords, vs)]), "y_ref": spline(t), "yd_ref": spline(t, 1),
            "u": np.array([step(tk, q, v)[0] for tk, q, v in zip(t, qs, vs)]),
            "tips": np.array([model.tips(q, v)[0] for q, v in zip(qs, vs)]),
            "tips_ref": np.array([tip_reference(tk) for tk in t])}


def closed_loop_eigenvalues(model: Helicoid, spline, t: float, q, v, eps: float = 1e-5) -> np.ndarray:
    """The eigenvalues of the closed loop's Jacobian d(qdot, vdot)/d(q, v) at (t, q, v), by
    central differences of its right-hand side (independent of the integrator's approximate
    Jacobian, which leaves out the change of M, J_y and the bias). Accurate to about 0.1 1/s at
    the regulated equilibria (M's condition number 1e9: test_soft_helicoid.py) and 0.5 1/s
    along the tracking's transient (up to 7e9)."""
    step, n = closed_loop(model, spline), model.tree.nv
    z = np.concatenate([q, v])

    def rhs(x):
        return np.concatenate([x[n:], step(t, x[:n], x[n:])[1]])
    J = np.column_stack([(rhs(z + eps * e) - rhs(z - eps * e)) / (2 * eps) for e in np.eye(2 * n)])
    return np.linalg.eigvals(J)


def zero_dynamics_eigenvalues(model: Helicoid, q, u) -> np.ndarray:
    """The eigenvalues of the zero dynamics linearised at the regulated equilibrium (q, u): the
    motions that keep the tendon coordinates y [Pustina 2024, Sec. 7.1], dq = N z with N an
    orthonormal basis of the null space of J_y, ``N^T M N z'' + N^T D N z' + N^T K N z = 0``
    with K, D the tangents of the load ``h - A(q) u`` (:func:`load_tangent`: the tendons'
    geometric stiffness at u in K). Independent of how the deformation is parametrised (the
    generalized eigenvalues of the restricted M, D, K), unlike K's eigenvalues."""
    zero = np.zeros(model.tree.nv)
    M, _ = model.tree.mid(q, zero)
    _, Jy, _ = model.actuation.coordinates(q, zero)
    K, D = model.loads(q, zero, u)
    N = null_space(Jy)
    Mr = N.T @ M @ N
    k = N.shape[1]
    companion = np.block([[np.zeros((k, k)), np.eye(k)],
                          [-np.linalg.solve(Mr, N.T @ K @ N), -np.linalg.solve(Mr, N.T @ D @ N)]])
    return np.linalg.eigvals(companion)


def error_prediction(t, e0, ed0) -> np.ndarray:
    """e(t) of ``e'' + K_D e' + K_P e = 0`` from (e0, ed0): what exact linearisation gives."""
    wd = np.sqrt(KP - KD ** 2 / 4)
    decay = np.exp(-KD / 2 * t)[:, None]
    c, s = np.cos(wd * t)[:, None], np.sin(wd * t)[:, None]
    return decay * (e0 * c + (ed0 + KD / 2 * e0) / wd * s)

"""Structure and motion of soft-module trees: M SPD, Mdot - 2C skew, energy conserved in an
unforced undamped simulation, and the statics of a rod cantilever under gravity against the
closed-form small-deflection (Euler-Bernoulli) solution."""
import numpy as np
import pytest

from hybrid_dynamics.soft import bodies as B
from hybrid_dynamics.soft.kinematics import MaterialPoint
from hybrid_dynamics.soft.joints import FixedJoint, Placement, revolute
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.motion import Statics, coriolis_matrix, simulate
from hybrid_dynamics.soft.tree import SoftTree


def soft_chain(damping_time=0.0):
    mat = dict(youngs_modulus=2e4, damping_time=damping_time, n_axial=3)
    return SoftTree([
        Module("a", revolute([1, 0, 0]), B.constant_curvature(0.2, 0.02, 1000, planar=False, elongation=True, **mat)),
        Module("b", revolute([0, 1, 0], Placement(translation=np.array([0, 0.01, 0]))),
               B.piecewise_constant_strain(0.15, 0.015, 1000, 2, strains=(0, 1), **mat), "a"),
        Module("c", FixedJoint(), B.RigidBody(0.05, [0, 0, 0.02], np.diag([1e-5, 1e-5, 2e-5])), "b"),
    ])


def test_mass_matrix_spd_and_mdot_minus_2c_skew():
    tree = soft_chain()
    C = coriolis_matrix(tree)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v = 0.3 * rng.standard_normal(tree.nq), rng.standard_normal(tree.nv)
        M, h = tree.mid(q, v)
        assert np.allclose(M, M.T, atol=1e-12) and np.linalg.eigvalsh(M).min() > 0
        Cq, Mdot = C(q, v)
        S = Mdot - 2 * Cq
        assert np.abs(Mdot).max() > 1e-6 and np.abs(S + S.T).max() < 1e-9 * np.abs(Mdot).max()
        # C v is the velocity part of h (h = C v + g + s)
        g_s = tree.inverse_dynamics(q, 0 * v, 0 * v) + tree.elastic_force(q, v) - tree.elastic_force(q, 0 * v)
        assert np.allclose(Cq @ v, h - g_s, atol=1e-9 * np.abs(h).max())


def test_energy_conserved_unforced_undamped():
    mat = dict(youngs_modulus=2e4, n_axial=3)
    tree = SoftTree([
        Module("a", revolute([1, 0, 0]), B.constant_curvature(0.2, 0.02, 1000, planar=False, elongation=True, **mat)),
        Module("c", FixedJoint(), B.RigidBody(0.05, [0, 0, 0.02], np.diag([1e-5, 1e-5, 2e-5])), "a")])
    q0 = 0.3 * np.sin(np.arange(1, tree.nq + 1))
    v0 = np.zeros(tree.nv)
    t, qs, vs = simulate(tree, q0, v0, 2.0, samples=21, rtol=1e-10, atol=1e-11)
    E = np.array([sum(tree.energy(q, v)) for q, v in zip(qs, vs)])
    kinetic = np.array([tree.energy(q, v)[0] for q, v in zip(qs, vs)])
    assert kinetic.max() > 1e-3 * np.abs(E[0])            # it did move
    assert np.abs(E - E[0]).max() <= 1e-8 * np.abs(E[0])


def test_cantilever_statics_small_deflection():
    # closed form: tip deflection w L^4 / (8 E I) of a uniform beam under its own weight; the
    # Cosserat rod (variable-strain curvature, quadratic basis holds the exact curvature
    # field) agrees to 1 %: its 8 midpoint-Magnus steps err by O(h^2) (0.8 % here, 0.14 % with
    # 24 steps); geometric nonlinearity (d/L)^2 ~ 1e-4
    L, r, rho, E = 0.5, 0.01, 1000.0, 5e8
    rod = B.variable_strain(L, r, rho, 3, strains=(1,), steps=8, youngs_modulus=E, n_axial=6)
    tree = SoftTree([Module("rod", FixedJoint(), rod)], gravity=[-9.81, 0, 0])
    q = Statics(tree, range(tree.nq)).solve(np.zeros(tree.nq))
    tip = MaterialPoint(tree, "rod", [0, 0, L])
    p, J, _ = tip(q, np.zeros(tree.nv))
    w = rho * np.pi * r ** 2 * 9.81
    expected = w * L ** 4 / (8 * E * np.pi * r ** 4 / 4)
    assert 1e-3 < expected / L < 1e-1
    assert -p[0] == pytest.approx(expected, rel=1e-2)
    assert J.shape == (3, tree.nv) and np.abs(J[0]).max() > 0


def test_material_point_jacobian_matches_velocity():
    tree = soft_chain()
    pt = MaterialPoint(tree, "b", [0.01, 0.0, 0.1])
    rng = np.random.default_rng(4)
    q, v = 0.3 * rng.standard_normal(tree.nq), rng.standard_normal(tree.nv)
    dt = 1e-6
    p0, J, bias = pt(q, v)
    p1, J1, _ = pt(q + dt * v, v)
    # central differences of an analytic map as the independent reference
    pm, Jm, _ = pt(q - dt * v, v)
    assert np.allclose((p1 - pm) / (2 * dt), J @ v, atol=1e-7)
    assert np.allclose((J1 @ v - Jm @ v) / (2 * dt), bias, atol=1e-5)

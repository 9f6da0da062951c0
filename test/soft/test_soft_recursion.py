"""The soft-module recursions of [Pustina 2024] against independent references: the
corrected toy-example closed forms, Pinocchio for rigid chains/trees/floating bases, and an
Euler-Lagrange model differentiated from the energies (hypothesis-generated mixed chains)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hybrid_dynamics.soft import bodies as B
from hybrid_dynamics.soft.helicoid import PRIMITIVES as HELICOID_PRIMITIVES
from hybrid_dynamics.soft.joints import FixedJoint, Placement, revolute
from hybrid_dynamics.soft.lagrange import LagrangeReference
from hybrid_dynamics.soft.lvp import PRIMITIVES, LVPBody
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.tree import SoftTree
from hybrid_dynamics.soft.validation import (STOCK_KINDS, lagrange_errors, pinocchio_errors, random_tree,
                                             toy_closed_forms, toy_tree)


def test_toy_example_corrected_closed_forms():
    q, qd, qdd = 0.7, 0.3, -1.2
    ref = toy_closed_forms(q, qd, qdd)      # re-derived: the printed ones are wrong
    Fx, Fz, Ty, pi = ref["Fx"], ref["Fz"], ref["Ty"], ref["pi"]
    tree = toy_tree()
    (F, T, P), = tree.body_loads([q], [qd], [qdd])
    assert F == pytest.approx([Fx, 0, Fz], abs=1e-6)
    assert F == pytest.approx([-0.576582, 0, 0.235245], abs=1e-6)
    assert T[1] == pytest.approx(Ty, abs=1e-6) and T[1] == pytest.approx(-0.626315, abs=1e-6)
    assert P[0] == pytest.approx(pi, abs=1e-6) and P[0] == pytest.approx(-0.126906, abs=1e-6)
    assert tree.iid([q], [qd], [qdd])[0] == pytest.approx(-0.499410, abs=1e-6)


@pytest.mark.parametrize("q0", [0.0, 1e-12])
def test_constant_curvature_exact_at_zero_curvature(q0):
    tree = toy_tree(n_axial=4)      # the integrand of M(0) is polynomial in x3: exact
    M, h = tree.mid([q0], [0.0])
    assert M[0, 0] == pytest.approx(2 * np.pi / 15, rel=1e-12)      # int rho x1^2... analytic
    assert np.all(np.isfinite(h))
    el = LagrangeReference(tree)
    Mel, Qel = el([q0], [0.4], [0.9])
    assert tree.iid([q0], [0.4], [0.9]) == pytest.approx(Qel, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("name", ["ur10", "solo12"])
def test_rigid_trees_equal_pinocchio(name):
    errors = pinocchio_errors(name, samples=3, seed=3)
    assert max(errors.values()) < 1e-9, errors


def assert_equals_lagrange(tree, rng):
    err = lagrange_errors(tree, rng)
    assert max(err["id"], err["mass_matrix"], err["mid"]) <= 1e-9, err
    assert err["min_eig_M"] > 0


@pytest.mark.parametrize("kind", STOCK_KINDS)
def test_every_stock_body_equals_lagrange(kind):
    rng = np.random.default_rng(STOCK_KINDS.index(kind))
    assert_equals_lagrange(random_tree(["rigid", kind], rng), rng)


def test_inner_lvp_body_with_orthonormal_face_equals_lagrange():
    rng = np.random.default_rng(11)
    tree = random_tree(["lvp", "rigid"], rng)
    assert tree.modules[0].body.orthonormal_face
    assert_equals_lagrange(tree, rng)


@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(kinds=st.lists(st.sampled_from(STOCK_KINDS), min_size=1, max_size=8), seed=st.integers(0, 2**31),
       branch=st.booleans())
def test_mixed_chains_and_trees_equal_lagrange(kinds, seed, branch):
    rng = np.random.default_rng(seed)
    assert_equals_lagrange(random_tree(kinds, rng, branch), rng)


@pytest.mark.parametrize("planar,elongation", [(True, True), (False, False), (False, True)],
                         ids=["planar_elongation", "spatial", "spatial_elongation"])
@pytest.mark.parametrize("q0", [0.0, 1e-12])
def test_every_constant_curvature_body_exact_at_zero_curvature(planar, elongation, q0):
    """The toy test above covers the planar CC body; the spatial one and those with elongation
    go through the SE(3) exponential's Taylor branch. At the straight pose a material point
    moves by (s^2 / 2, 0, -s x1) / L per bending angle about y (and alike about x) and by s / L
    along the axis per unit of elongation, so M(0) = diag(rho (A L^3 / 20 + pi r^4 L / 12) per
    bending, rho A L / 3) with A = pi r^2 (the toy's 2 pi / 15 at r = L = rho = 1)."""
    L, r, rho = 0.3, 0.03, 1000.0
    body = B.constant_curvature(L, r, rho, planar=planar, elongation=elongation, youngs_modulus=1e5, n_axial=4)
    tree = SoftTree([Module("cc", FixedJoint(), body)])
    q = np.full(tree.nq, q0)
    M, h = tree.mid(q, np.zeros(tree.nv))
    area = np.pi * r ** 2
    bend = rho * (area * L ** 3 / 20 + np.pi * r ** 4 * L / 12)
    expected = np.diag([bend] * (1 if planar else 2) + ([rho * area * L / 3] if elongation else []))
    assert np.abs(M - expected).max() <= 1e-10 * bend
    assert np.all(np.isfinite(h))
    rng = np.random.default_rng(7)
    v, a = rng.standard_normal(tree.nv), rng.standard_normal(tree.nv)
    nu = tree.inverse_dynamics(q, v, a) - tree.elastic_force(q, v)
    ref = LagrangeReference(tree)(q, v, a)[1]
    assert np.abs(nu - ref).max() <= 1e-9 * np.abs(ref).max()


LVP_BODIES = {**{name: [name] for name in PRIMITIVES},
              "table4_helicoid": HELICOID_PRIMITIVES, "table5_gripper": ["stretch_tip", "source"]}


@pytest.mark.parametrize("name", list(LVP_BODIES))
def test_every_lvp_primitive_and_the_papers_compositions_equal_lagrange(name):
    """validate's stock LVP body composes four of the primitives; here each one alone, Table 4's
    composition (Simulation 1's body, 8 coordinates) and Table 5's (the gripper's), as the leaf
    of a revolute joint behind a rigid link, at a random deformed state inside every
    primitive's range (the source's c > 0: a negative one would close the section's core)."""
    rng = np.random.default_rng(len(name))
    body = LVPBody(0.1, 0.02, 960.0, LVP_BODIES[name], 1e4, 0.05, n_axial=3, relax_face=True)
    tree = SoftTree([Module("link", revolute([0, 1, 0]), B.RigidBody(0.5, [0, 0, 0.05], np.diag([2e-3, 2e-3, 1e-3]))),
                     Module("lvp", revolute([1, 0, 0], Placement(translation=np.array([0, 0, 0.1]))), body, "link")])
    q = np.concatenate([[0.3, -0.4], 0.002 * (1 + rng.random(body.nq))])
    v, a = rng.standard_normal(tree.nv), rng.standard_normal(tree.nv)
    Mel, Qel = LagrangeReference(tree)(q, v, a)
    M, h = tree.mid(q, v)
    s = tree.elastic_force(q, v)
    assert np.linalg.norm(M - Mel) <= 1e-9 * np.linalg.norm(Mel)
    assert np.linalg.norm(M @ a + h - s - Qel) <= 1e-9 * np.linalg.norm(Qel)
    assert np.linalg.norm(h[2:] - s[2:]) > 0 and np.linalg.eigvalsh(M).min() > 0     # the body's rows move

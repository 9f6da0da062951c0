"""The soft-module recursions of [Pustina 2024] against independent references: the
corrected toy-example closed forms, Pinocchio for rigid chains/trees/floating bases, and an
Euler-Lagrange model differentiated from the energies (hypothesis-generated mixed chains)."""
import casadi as ca
import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from hybrid_dynamics.paths import example_robot_data_dir
from hybrid_dynamics.soft import bodies as B, quadrature
from hybrid_dynamics.soft.lvp import LVPBody
from hybrid_dynamics.soft.symbolic import axis_rotation
from hybrid_dynamics.soft.from_pinocchio import tree_from_pinocchio
from hybrid_dynamics.soft.joints import AxesJoint, FixedJoint, Placement, revolute
from hybrid_dynamics.soft.lagrange import LagrangeReference
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.tree import SoftTree


def toy_tree(n_axial: int = 12):
    # [Pustina 2024, Sec. 3]: planar CC body, unit radius and length, rho = 1, fixed joint
    return SoftTree([Module("toy", FixedJoint(), B.constant_curvature(
        1.0, 1.0, 1.0, planar=True, elongation=False, n_axial=n_axial))], gravity=[0, 0, 0])


def test_toy_example_corrected_closed_forms():
    q, qd, qdd = 0.7, 0.3, -1.2
    c, s = np.cos(q), np.sin(q)
    # closed forms re-derived symbolically (the printed ones are wrong, see docs/soft.md)
    Fx = np.pi * (-q**2 * qdd * c - q**2 * qdd + 2 * q * qd**2 * c + 4 * q * qd**2 + 2 * q * qdd * s - 6 * qd**2 * s) / q**4
    Fz = np.pi * (-q**2 * qd**2 + q**2 * qdd * s - 2 * q * qd**2 * s + 2 * q * qdd * c - 2 * q * qdd - 6 * qd**2 * c + 6 * qd**2) / q**4
    Ty = np.pi * (q**5 * qdd + 4 * q**3 * qdd - 8 * q**2 * qd**2 - 8 * q * qd**2 * s + 8 * q * qdd * c - 8 * q * qdd - 32 * qd**2 * c + 32 * qd**2) / (8 * q**5)
    pi = np.pi * (q**6 * qdd + 4 * q**4 * qdd - 16 * q**3 * qd**2 - 72 * q**2 * qdd + 192 * q * qd**2 + 96 * q * qdd * s
                  - 24 * q * (q * qdd - 2 * qd**2) * c - 240 * qd**2 * s) / (24 * q**6)
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


def _pinocchio_model(name):
    root = example_robot_data_dir()
    if name == "solo12":
        return pin.buildModelFromUrdf(str(root / "solo_description/robots/solo12.urdf"), pin.JointModelFreeFlyer())
    return pin.buildModelFromUrdf(str(root / "ur_description/urdf/ur10_robot.urdf"))


@pytest.mark.parametrize("name", ["ur10", "solo12"])
def test_rigid_trees_equal_pinocchio(name):
    model = _pinocchio_model(name)
    data = model.createData()
    tree = tree_from_pinocchio(model)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        v, a = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        tau = pin.rnea(model, data, q, v, a)
        assert np.abs(tree.inverse_dynamics(q, v, a) - tau).max() < 1e-9 * max(1, np.abs(tau).max())
        M, h = tree.mid(q, v)
        Mp = pin.crba(model, data, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert np.abs(M - Mp).max() < 1e-9
        assert np.abs(h - pin.nonLinearEffects(model, data, q, v)).max() < 1e-9
        g = pin.computeGeneralizedGravity(model, data, q)
        assert np.abs(tree.inverse_dynamics(q, 0 * v, 0 * v) - g).max() < 1e-9 and np.abs(g).max() > 1
        gravity_off = tree_from_pinocchio(model, gravity=np.zeros(3))
        model.gravity.linear[:] = 0
        nle0 = pin.nonLinearEffects(model, data, q, v)
        model.gravity.linear[:] = [0, 0, -9.81]
        assert np.abs(gravity_off.iid(q, v, 0 * v) - nle0).max() < 1e-9


def stock_body(kind: str, rng, last: bool = False):
    """Every stock body, small quadratures (the recursion and EL see the same quadrature)."""
    L, r, rho = rng.uniform(0.1, 0.4), rng.uniform(0.01, 0.04), rng.uniform(800, 1200)
    mat = dict(youngs_modulus=1e5, damping_time=0.01, n_axial=3)
    if kind == "rigid":
        S = np.diag(rng.uniform(0.001, 0.01, 3))
        return B.RigidBody(rng.uniform(0.5, 2), rng.uniform(-0.1, 0.1, 3), np.trace(S) * np.eye(3) - S)
    if kind == "cc_planar":
        return B.constant_curvature(L, r, rho, planar=True, elongation=False, **mat)
    if kind == "pcc_planar_elong":
        return B.constant_curvature(L, r, rho, planar=True, elongation=True, **mat)
    if kind == "cc_spatial_elong":
        return B.constant_curvature(L, r, rho, planar=False, elongation=True, **mat)
    if kind == "pcs":
        return B.piecewise_constant_strain(L, r, rho, 2, strains=(0, 1, 5), **mat)
    if kind == "gvs":
        return B.variable_strain(L, r, rho, 2, strains=(0, 2), steps=3, **mat)
    if kind == "modal":
        return B.ModalBody(L, r, rho, 1, youngs_modulus=1e5)
    if kind == "lvp":
        return LVPBody(3 * L, r, rho, ["stretch", "bend_x", "twist", "shear_y"], n_axial=3,
                       elastic_coefficient=1e4, relax_face=last)
    # any user map: a bulging, twisting box written with CasADi operations
    pts, w = quadrature.box((0.1, 0.06, L), rho, n=2)

    def fmap(x, q):
        R = axis_rotation([0, 0, 1], q[0] * x[2] / L)
        return R @ ca.DM(x) + ca.vertcat(0, 0, q[1] * x[2] ** 2 / L)
    return B.MapBody(2, fmap, pts, w, (np.array([0, 0, L]), np.array([0.05, 0, L]), np.array([0, 0.03, L])))


KINDS = ["rigid", "cc_planar", "pcc_planar_elong", "cc_spatial_elong", "pcs", "gvs", "modal", "lvp", "user"]


def random_chain(kinds, rng, branch: bool = False):
    """A chain (or a random tree) of the given bodies; an LVP body, whose distal face deforms
    (Assumption 2 relaxed), only where it is a leaf."""
    parents = [None] + [int(rng.integers(0, i)) if branch else i - 1 for i in range(1, len(kinds))]
    leaves = set(range(len(kinds))) - set(parents)
    modules = []
    for i, kind in enumerate(kinds):
        kind = "pcs" if kind == "lvp" and i not in leaves else kind
        axis = rng.standard_normal(3)
        joint = revolute(axis, Placement(np.eye(3), rng.uniform(-0.05, 0.05, 3))) if rng.random() < 0.8 else FixedJoint()
        parent = None if parents[i] is None else f"m{parents[i]}"
        modules.append(Module(f"m{i}", joint, stock_body(kind, rng, last=i in leaves), parent))
    return SoftTree(modules)


def assert_equals_lagrange(tree, rng):
    el = LagrangeReference(tree)
    q = 0.25 * np.tanh(rng.standard_normal(tree.nq))    # inside every body's valid range
    v, a = rng.standard_normal(tree.nv), rng.standard_normal(tree.nv)
    Mel, Qel = el(q, v, a)
    Q = tree.iid(q, v, a) + 0 * Qel
    nu = tree.inverse_dynamics(q, v, a) - tree.elastic_force(q, v)
    assert np.linalg.norm(nu - Qel) <= 1e-9 * np.linalg.norm(Qel)
    M, h = tree.mid(q, v)
    assert np.linalg.norm(M - Mel) <= 1e-9 * np.linalg.norm(Mel)
    assert np.linalg.norm(M @ a + h - tree.elastic_force(q, v) - Qel) <= 1e-9 * np.linalg.norm(Qel)
    assert np.linalg.norm(Q) > 0 and np.min(np.linalg.eigvalsh(0.5 * (M + M.T))) > 0


@pytest.mark.parametrize("kind", KINDS)
def test_every_stock_body_equals_lagrange(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    assert_equals_lagrange(random_chain(["rigid", kind], rng), rng)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=8), seed=st.integers(0, 2**31),
       branch=st.booleans())
def test_mixed_chains_and_trees_equal_lagrange(kinds, seed, branch):
    rng = np.random.default_rng(seed)
    assert_equals_lagrange(random_chain(kinds, rng, branch), rng)

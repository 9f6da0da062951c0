"""Farghdani et al.'s (2025) Boltzmann-Hamel engine (direct and fast forms) against Pinocchio, healthy and
damaged, with damaged references parsed from edited URDFs (never from the engine)."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.dynamics.hamel import HamelDirect, HamelFast
from hybrid_dynamics.dynamics.validation import named_morphology, validate
from hybrid_dynamics.model.morphology import Morphology
from hybrid_dynamics.model.robot import load_robot

TOL = 1e-9

CASES = [("jethexa", "healthy"), ("jethexa", "s1"), ("jethexa", "s2"), ("jethexa", "locked_femur"),
         ("jethexa", "mixed"), ("solo12", "healthy"), ("solo12", "locked_femur"), ("talos", "healthy"),
         ("talos", "mixed")]


@pytest.fixture(scope="module")
def robots():
    return {name: load_robot(name) for name in ("jethexa", "solo12", "talos")}


@pytest.mark.parametrize("robot,morph", CASES)
def test_every_quantity_matches_pinocchio(robots, robot, morph):
    r = robots[robot]
    errors = validate(r, named_morphology(r, morph), samples=3, seed=1, engines=["hamel", "hamel_fast"])
    assert len(errors) == 12
    bad = {k: v for k, v in errors.items() if not v <= TOL}
    assert not bad, bad


def test_s1_and_s2_have_the_papers_sizes(robots):
    r = robots["jethexa"]
    e = HamelDirect(r, named_morphology(r, "s1"))
    assert e.nv == 18 and len(e.tips) == 4
    e.set_morphology(named_morphology(r, "s2"))
    assert e.nv == 20 and e.tips == ["leg1_foot", "leg2_foot", "leg3_foot", "leg6_foot"]


def test_mass_matrix_is_an_arrowhead(robots):
    r = robots["jethexa"]
    M = HamelFast(r).mass_matrix(r.q_stand)
    for i in range(6):
        for j in range(6):
            block = M[6 + 3 * i:9 + 3 * i, 6 + 3 * j:9 + 3 * j]
            assert (np.abs(block).max() == 0.0) == (i != j)


def test_body_gravity_moment_depends_on_leg_angles(robots):
    """[Farghdani 2025, Eq. (9)]: the paper's claim that N_b does not depend on theta is wrong."""
    r = robots["jethexa"]
    e = HamelDirect(r)
    q = r.q_stand.copy()
    n0 = e.gravity(q)[3:6]
    q[7:10] += (0.5, 0.4, -0.3)
    assert np.abs(e.gravity(q)[3:6] - n0).max() > 1e-3


def test_coriolis_is_the_time_derivative_structure(robots):
    """C v from Lemma 3 against finite differences of the Lagrangian: for the joint rows,
    (C v)_theta = (d/dt M) v - 1/2 d/dtheta (v^T M v)."""
    r = robots["solo12"]
    e = HamelDirect(r)
    rng = np.random.default_rng(3)
    q = pin.randomConfiguration(r.model, -np.ones(r.nq), np.ones(r.nq))
    v = rng.normal(size=r.nv)
    h = 1e-6
    Mdot = (e.mass_matrix(pin.integrate(r.model, q, v * h)) - e.mass_matrix(pin.integrate(r.model, q, -v * h))) / (2 * h)
    dT = np.empty(r.nv - 6)
    for k in range(r.nv - 6):
        dq = np.zeros(r.nv)
        dq[6 + k] = h
        Mp, Mm = e.mass_matrix(pin.integrate(r.model, q, dq)), e.mass_matrix(pin.integrate(r.model, q, -dq))
        dT[k] = v @ (Mp - Mm) @ v / (2 * h)
    expected = (Mdot @ v)[6:] - 0.5 * dT
    assert np.allclose(e.coriolis(q, v)[6:], expected, atol=1e-6)


def test_fast_and_direct_agree_through_morphology_changes(robots):
    r = robots["jethexa"]
    direct, fast = HamelDirect(r), HamelFast(r)
    rng = np.random.default_rng(0)
    m = Morphology.healthy(r)
    for step in (lambda m: m.remove_links("leg4", 2), lambda m: m.lock_joint("leg2_tibia_joint", 1.2),
                 lambda m: m.remove_leg("leg6"), lambda m: m.restore(joint="leg2_tibia_joint"),
                 lambda m: m.restore()):
        m = step(m)
        direct.set_morphology(m)
        fast.set_morphology(m)
        q = direct.expand_q(np.zeros(direct.nq))[direct.q_index]
        q[:7] = (0.1, 0.2, 0.3, 0, 0, 0, 1)
        q[7:] = rng.uniform(-1, 1, direct.nq - 7)
        v = rng.normal(size=direct.nv)
        assert np.allclose(direct.mass_matrix(q), fast.mass_matrix(q), atol=1e-12)
        assert np.allclose(direct.nle(q, v), fast.nle(q, v), atol=1e-11)

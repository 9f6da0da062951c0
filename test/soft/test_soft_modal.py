"""The modal (Ritz) body evaluated from its inertia invariants, computed once at build
(soft/bodies.py, ``ModalBody``), against two references that do not use them: the generic sums
over the body's quadrature points (``Body.integrals``, the per-point path every other body
takes) and the Euler-Lagrange equations by automatic differentiation of the energies of every
quadrature point (soft/lagrange.py)."""
import casadi as ca
import numpy as np

from hybrid_dynamics.soft.bodies import Body, ModalBody
from hybrid_dynamics.soft.joints import FixedJoint, Placement, revolute
from hybrid_dynamics.soft.lagrange import LagrangeReference
from hybrid_dynamics.soft.module import TERM_NAMES, Module, module_terms
from hybrid_dynamics.soft.tree import SoftTree

BODY_TERMS = TERM_NAMES[TERM_NAMES.index("m"):TERM_NAMES.index("s")]


def modal(invariants, modes=3, length=0.4):
    return ModalBody(length, 0.02, 1200.0, modes, youngs_modulus=2e6, damping_time=0.02, invariants=invariants)


def chain(invariants):
    """Revolute + modal link, revolute + modal link, fixed + modal tip: every mode coupled."""
    joints = [revolute([0, 1, 0]), revolute([1, 0, 0], Placement(np.eye(3), np.array([0.0, 0.01, 0.0]))),
              FixedJoint()]
    modules = [Module(f"m{i}", j, modal(invariants, modes=2 + i % 2, length=0.3 + 0.05 * i),
                      None if i == 0 else f"m{i - 1}") for i, j in enumerate(joints)]
    return SoftTree(modules, gravity=np.array([0.0, 0.0, -9.81]))


def test_invariant_integrals_equal_the_per_point_sums():
    body = modal(True)
    q, v, a = (ca.SX.sym(n, body.nq) for n in "qva")
    fast = ca.Function("invariants", [q, v, a], body.integrals(q, v, a))
    points = ca.Function("points", [q, v, a], Body.integrals(body, q, v, a))
    rng = np.random.default_rng(2)
    for _ in range(5):
        x = [0.05 * rng.standard_normal(body.nq), rng.standard_normal(body.nq), rng.standard_normal(body.nq)]
        for name, A, B in zip(BODY_TERMS, fast(*x), points(*x)):
            A, B = np.array(A), np.array(B)
            assert np.abs(A - B).max() <= 1e-12 * max(np.abs(B).max(), 1e-12), name
    # what the invariants save: CasADi instructions of one module's terms (deterministic)
    per_point = module_terms(Module("m", revolute([0, 1, 0]), modal(False)))
    with_invariants = module_terms(Module("m", revolute([0, 1, 0]), body))
    print(f"module terms: {per_point.n_instructions()} instructions per point, "
          f"{with_invariants.n_instructions()} from the invariants")
    assert with_invariants.n_instructions() < per_point.n_instructions() / 5


def test_chain_of_modal_links_equals_the_per_point_path_and_lagrange():
    fast, points = chain(True), chain(False)
    el = LagrangeReference(fast)
    rng = np.random.default_rng(8)
    for _ in range(3):
        q = 0.3 * rng.standard_normal(fast.nq)
        v, a = rng.standard_normal(fast.nv), rng.standard_normal(fast.nv)
        M, h = fast.mid(q, v)
        M_p, h_p = points.mid(q, v)
        assert np.abs(M - M_p).max() <= 1e-12 * np.abs(M_p).max()
        assert np.abs(h - h_p).max() <= 1e-12 * np.abs(h_p).max()
        M_el, Q_el = el(q, v, a)
        nu = fast.inverse_dynamics(q, v, a) - fast.elastic_force(q, v)
        assert np.abs(fast.elastic_force(q, v)).max() > 0
        assert np.abs(M - M_el).max() <= 1e-9 * np.abs(M_el).max()
        assert np.abs(nu - Q_el).max() <= 1e-9 * np.abs(Q_el).max()


"""Shah et al.'s (2012) DeNOC engine: module structure, composite-module GIM, block UDU^T, recursive
ID and FD against Pinocchio, on Shah et al.'s (2012) robots and the reference robots."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.dynamics.denoc import DeNOC
from hybrid_dynamics.dynamics.validation import named_morphology, random_state, validate
from hybrid_dynamics.model.robot import load_robot

CASES = [("paper003_biped", "healthy"), ("paper003_biped", "mixed"), ("paper003_quadruped", "healthy"),
         ("paper003_quadruped", "locked_femur"), ("jethexa", "s2"), ("talos", "locked_femur")]


@pytest.mark.parametrize("robot,morph", CASES)
def test_denoc_matches_pinocchio(robot, morph):
    r = load_robot(robot)
    errors = validate(r, named_morphology(r, morph), samples=3, seed=4, engines=["denoc"])
    assert {"denoc.udu", "denoc.id_floating", "denoc.fd_dense"} <= set(errors)
    bad = {k: v for k, v in errors.items() if not v <= 1e-9}
    assert not bad, bad


def test_modules_of_paper_003_robots():
    biped = DeNOC(load_robot("paper003_biped"))
    assert [len(b) for _, b in biped.modules] == [1, 3, 3]          # M0 trunk, M1, M2 legs
    assert [p for p, _ in biped.modules] == [-1, 0, 0]
    quad = DeNOC(load_robot("paper003_quadruped"))
    assert [len(b) for _, b in quad.modules] == [1, 3, 3, 3, 3]
    talos = DeNOC(load_robot("talos"))
    parents = [p for p, _ in talos.modules]
    assert parents.count(0) == 3 and len(talos.modules) == 7           # legs, torso; arms, head on torso


def test_udu_factors_are_block_unit_upper_and_block_diagonal():
    r = load_robot("talos")
    e = DeNOC(r)
    q = random_state(r, e, np.random.default_rng(0))[0]
    U, D = e.udu(q)
    assert np.allclose(np.tril(U, -1), 0.0) and np.allclose(np.diag(U), 1.0)
    cols = [np.arange(6)] + [5 + np.array(b) for _, b in e.modules[1:]]
    off = D.copy()
    for c in cols:
        off[np.ix_(c, c)] = 0.0
    assert np.abs(off).max() == 0.0
    for c in cols:                                   # articulated-module inertias are positive definite
        assert np.linalg.eigvalsh(D[np.ix_(c, c)]).min() > 0


def test_floating_inverse_dynamics_is_computed_torque():
    """Section 2.5 / eq. (34)-(35): joint torques for desired joint accelerations, with the base
    acceleration that the unactuated base then has; ABA reproduces the desired accelerations."""
    r = load_robot("paper003_quadruped")
    e = DeNOC(r)
    rng = np.random.default_rng(5)
    q, v, a, _, F = random_state(r, e, rng)
    qdd, tau = e.floating_inverse_dynamics(q, v, a[6:], F)
    full = e.inverse_dynamics(q, v, qdd, F)
    assert np.allclose(full[:6], 0.0, atol=1e-10)
    assert np.allclose(full[6:], tau, atol=1e-10)
    qdd0, tau0 = e.floating_inverse_dynamics(q, v, a[6:])
    back = pin.aba(r.model, r.model.createData(), q, v, np.concatenate([np.zeros(6), tau0]))
    assert np.allclose(back, qdd0, atol=1e-9) and np.allclose(back[6:], a[6:], atol=1e-9)

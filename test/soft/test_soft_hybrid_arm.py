"""Simulation 2 of [Pustina 2024, Sec. 7.2], the hybrid arm (UR10 from example-robot-data + a
tendon-driven rod + an LVP gripper with a pressure chamber), its three phases shortened to
0.6 s: the arm's joint-space PFBL keeps the arm on its cubic while the soft parts swing (it
starts on the reference, so the exact linearisation keeps the error at zero), the rod's
regulator drives it towards q_f, the pressure opens the gripper's cavity; a relaxed LVP face on
the axis of a source primitive is finite and equals the Euler-Lagrange reference. The full
6 s reproduction is marked long."""
import json

import numpy as np
import pytest

from hybrid_dynamics.soft import hybrid_arm
from hybrid_dynamics.soft.joints import FixedJoint
from hybrid_dynamics.soft.lagrange import LagrangeReference
from hybrid_dynamics.soft.lvp import LVPBody
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.tree import SoftTree


def test_source_primitive_gripper_equals_lagrange_at_rest_and_deformed():
    body = LVPBody(0.06, 0.02, 960.0, ["stretch_tip", "source"], 22.2e6, 0.05, n_axial=4, relax_face=True)
    tree = SoftTree([Module("gripper", FixedJoint(), body)], gravity=np.array([0.0, -9.81, 0.0]))
    el = LagrangeReference(tree)
    rng = np.random.default_rng(5)
    for q in (np.zeros(2), np.array([0.004, 2e-5])):
        qd, qdd = rng.standard_normal(2) * 0.1, rng.standard_normal(2)
        nu = tree.inverse_dynamics(q, qd, qdd) - tree.elastic_force(q, qd)
        ref = el(q, qd, qdd)[1]
        assert np.all(np.isfinite(nu))
        assert np.abs(nu - ref).max() < 1e-9 * np.abs(ref).max()


@pytest.fixture(scope="module")
def short_run():
    return hybrid_arm.run(phases=(0.3, 0.5, 0.6), samples=13)


def test_three_phases(short_run):
    r = short_run
    t, q = r["t"], np.array(r["q"])
    arm_error = np.abs(q[:, :6] - r["arm_ref"]).max()
    assert np.abs(r["arm_ref"][-1] - hybrid_arm.ARM_FINAL).max() < 1e-12 and arm_error < 1e-3, arm_error
    i2, i3 = np.searchsorted(t, 0.3), np.searchsorted(t, 0.5)
    rod = slice(6, 9)
    assert np.linalg.norm(q[i2, rod] - hybrid_arm.ROD_FINAL) > 1.0                # far from q_f at (ii)'s start
    assert np.linalg.norm(q[i3, rod] - hybrid_arm.ROD_FINAL) < 0.5 * np.linalg.norm(q[i2, rod] - hybrid_arm.ROD_FINAL)
    assert np.all(r["u"][:i2, 6:] == 0) and np.all(r["u"][i3 + 1:, 9] == hybrid_arm.PRESSURE)
    assert r["volume"][-1] - r["volume"][i3] > 1e-8                              # the cavity opens


def test_integrator_jacobian_matches_finite_differences_along_the_run(short_run):
    """The approximate closed-loop Jacobian the integrator uses (``stiff_jacobian``) against
    central differences of the closed loop, at states of the run in each phase: the Newton
    iteration ``(I - h J_a)^-1 h (J - J_a)`` at a 1 ms step must contract (it replaced scipy's
    finite differences, 22 right-hand sides per Jacobian)."""
    tree, act = hybrid_arm.hybrid_arm()
    n, phases = tree.nv, (0.3, 0.5, 0.6)
    control = hybrid_arm.ThreePhaseController(tree, act, phases)
    jacobian = hybrid_arm.stiff_jacobian(tree, act, control)
    r = short_run
    for k in (2, 8, 11):                                         # phases (i), (ii), (iii)
        t, q, v = r["t"][k], r["q"][k], r["v"][k]

        def f(z):
            return np.concatenate([z[n:], control(t, z[:n], z[n:])[2]])
        z, eps = np.concatenate([q, v]), 1e-7
        J = np.column_stack([(f(z + eps * e) - f(z - eps * e)) / (2 * eps) for e in np.eye(2 * n)])
        Ja = jacobian(t, q, v)
        h = 1e-3
        contraction = np.abs(np.linalg.eigvals(np.linalg.solve(np.eye(2 * n) - h * Ja, h * (J - Ja)))).max()
        print(f"t = {t:.2f} s: Newton contraction at h = 1 ms {contraction:.4f}")
        assert np.abs(J[n:]).max() > 1e6 and contraction < 0.1                  # stiff, and contracting


@pytest.mark.long
def test_full_simulation_2_reproduction(cli, tmp_path):
    r = cli("reproduce", "paper002", "--sims", "2", "--json", "--out", tmp_path, timeout=4 * 3600)
    assert r.returncode == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)["sim2"]
    assert out["arm_max_error_rad"] < 1e-3 and out["rod_error_end"] < 0.05
    assert (tmp_path / "paper002_sim2.png").stat().st_size > 1000

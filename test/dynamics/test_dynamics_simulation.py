"""Farghdani et al.'s (2025) hexapod simulation and the reproduce commands (short runs)."""
import json

import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.dynamics.hamel import HamelDirect, HamelFast
from hybrid_dynamics.dynamics.lie import integrate
from hybrid_dynamics.dynamics.paper000_sim import contact_forces, foot_target, leg_geometry, leg_ik, simulate
from hybrid_dynamics.dynamics.validation import named_morphology, random_state
from hybrid_dynamics.model.robot import load_robot


@pytest.fixture(scope="module")
def jethexa():
    return load_robot("jethexa")


def test_integrate_is_pinocchios(jethexa):
    rng = np.random.default_rng(0)
    for dt in (1e-3, 0.4):
        q = pin.randomConfiguration(jethexa.model, -np.ones(25), np.ones(25))
        v = rng.normal(size=24)
        assert np.allclose(integrate(q, v, dt), pin.integrate(jethexa.model, q, v * dt), atol=1e-14)


def test_leg_ik_reaches_the_target(jethexa):
    data = jethexa.model.createData()
    for leg in leg_geometry(jethexa):
        for t in (0.0, 0.3, 0.9):
            target = foot_target(leg, t)
            q = jethexa.q_stand.copy()
            for name, angle in zip(leg.joints, leg_ik(leg, target)):
                q[jethexa.model.joints[jethexa.model.getJointId(name)].idx_q] = angle
            pin.framesForwardKinematics(jethexa.model, data, q)
            foot = data.oMf[jethexa.model.getFrameId(leg.name + "_foot")].translation
            assert np.allclose(foot, target, atol=1e-12)


def test_contact_dynamics_equals_fd_with_tip_wrenches(jethexa):
    """One-pass contact FD (dt = 0) against the direct form fed the same tip wrenches."""
    m = named_morphology(jethexa, "s2")
    fast, direct = HamelFast(jethexa, m), HamelDirect(jethexa, m)
    q, v, _, tau, _ = random_state(jethexa, fast, np.random.default_rng(1))
    q[2] = 0.05                                       # some feet below the ground
    vdot, f = fast.forward_dynamics_contact(q, v, tau, contact_forces)
    R, p, _, _ = direct._fk(q)
    Rb = pin.Quaternion(q[3:7]).toRotationMatrix()
    F = np.zeros((len(direct.tips), 6))
    for i, tip in enumerate(direct.tree.tips):
        F[i, :3] = (Rb @ R[tip.body] @ tip.R).T @ f[i]
    assert np.abs(f).max() > 0
    ref = direct.forward_dynamics(q, v, tau, F)
    assert np.allclose(vdot, ref, rtol=1e-10, atol=1e-9 * np.abs(ref).max())


def test_s2_walks_forward_and_s1_stays(jethexa):
    """[Farghdani 2025, Sec. VI-B]: S2 moves forward, S1 oscillates in place; both stay upright."""
    s2 = simulate(jethexa, named_morphology(jethexa, "s2"), duration=1.3)
    s1 = simulate(jethexa, named_morphology(jethexa, "s1"), duration=1.3)
    assert s2.base_end[0] - s2.base_start[0] > 0.02
    assert abs(s1.base_end[0] - s1.base_start[0]) < 0.01
    for res in (s1, s2):
        assert res.max_tilt_deg < 10 and 0.1 < res.min_height < 0.14


def test_reproduce_commands(cli):
    out = cli("reproduce", "paper000", "--duration", "0.2", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["paper"]["real_time_factor"] == pytest.approx(0.386) and report["upright"]
    out = cli("reproduce", "paper003", "--robots", "paper003_biped", "--samples", "10", "--duration", "0.05", "--json")
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)["table2"][0]
    assert row["n"] == 6 and row["modules"] == 3
    assert set(row["simulation_1s"]) == {"feed-forward", "computed-torque"}
    out = cli("reproduce", "paper000", "--robot", "talos")
    assert out.returncode == 2 and "3-joint legs" in out.stderr

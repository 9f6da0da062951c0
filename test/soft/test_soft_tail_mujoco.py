"""jethexa_tail in MuJoCo through the runtime Pipeline (the library loop of ``demo --library``):
jethexa_soft with a flexible antenna, a modal (Ritz) body [Pustina 2024, Eq. (13)] hung from
the back of the body with no contact. The plant's antenna is its modal chain (sim/soft_feet.py:
10 links on slides held to the span of the body's shapes, the Ritz stiffness on tendon
springs); the controller's model is the modal body (soft/leaves.py).

Checked against MuJoCo and the closed form, not against the controller: the antenna's sag
averaged over the walk (the base's mean vertical acceleration is zero over the gait, and the
antenna is linear in its coordinates) equals the statics of the clamped antenna under its
weight (Newton on its soft tree) and the Euler-Bernoulli cantilever's ``w L^4 / (8 E I)``
(measured: the two Ritz shapes give the closed form's tip to 1e-4; MuJoCo's chain lumps the
weight per link, O(1 / n^2): 0.2 % apart measured); the coordinates the controller used
are the plant's; the robot walks at the commanded speed without a fall or a QP fallback.
"""
import numpy as np
import pytest

from hybrid_dynamics.soft.coordinates import coordinate_names
from hybrid_dynamics.soft.joints import FixedJoint
from hybrid_dynamics.soft.kinematics import MaterialPoint
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.motion import Statics
from hybrid_dynamics.soft.spec import build_module
from hybrid_dynamics.soft.tree import SoftTree
from soft_walk import assert_walked, walk_recorded


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    return walk_recorded("jethexa_tail_walk", tmp_path_factory.mktemp("jethexa_tail"))


def antenna(robot):
    spec = next(s for s in robot.soft_modules if s.name == "antenna")
    return spec, build_module(robot.soft_doc, spec.where, spec.block, None, spec.joint).body


def test_walks_with_a_flexible_antenna_without_fallback(walked):
    _, s, _ = walked
    assert_walked(s)


def test_the_controller_uses_the_antennas_measured_coordinates(walked):
    run, _, sent = walked
    est = run.pipeline.state.last
    names = coordinate_names(run.robot)
    assert len(names) == 18 + 4 and run.plant.soft_names == names and est.q_soft is not None
    joints, pos, vel, _, _ = sent[-1]
    at = [joints.index(n) for n in names]
    assert np.array_equal(est.q_soft, pos[at]) and np.array_equal(est.v_soft, vel[at])
    leaves = run.pipeline.control.controller.formulation.state.leaves
    assert np.abs(est.q_soft[leaves.slices["antenna"]]).max() > 1e-4       # it sags


def test_antenna_sags_as_its_statics_and_the_cantilever(walked):
    """Mean over the walk's samples after the first second of the antenna's coordinates: the tip
    deflection ``w(L) = sum_j phi_j(L) q_j`` (each shape is 1 at the tip) against the statics of
    the antenna clamped with gravity along its -x (up is its +x: the module's axis points
    backwards, rpy (0, -pi/2, 0)) and against the closed form."""
    run, _, sent = walked
    spec, body = antenna(run.robot)
    own = [f"antenna_q{k}" for k in range(body.nq)]
    t0 = len(sent) // 3
    q = np.array([pos[[joints.index(n) for n in own]] for joints, pos, *_ in sent[t0:]])
    tip = q @ np.array([[1.0 if d == 0 else 0.0, 1.0 if d == 1 else 0.0] for d, _ in body.modes])
    mean = tip.mean(axis=0)
    tree = SoftTree([Module("antenna", FixedJoint(), body)], gravity=[-9.81, 0, 0])
    qs = Statics(tree, range(tree.nq)).solve(np.zeros(tree.nq))
    p, _, _ = MaterialPoint(tree, "antenna", [0, 0, body.length])(qs, np.zeros(tree.nv))
    b = spec.block["body"]
    w = b["density"] * np.pi * b["radius"] ** 2 * 9.81
    closed = w * b["length"] ** 4 / (8 * b["youngs_modulus"] * np.pi * b["radius"] ** 4 / 4)
    print(f"antenna tip sag: MuJoCo mean over the walk {-mean[0] * 1e3:.4f} mm (sideways {mean[1] * 1e3:.4f} mm, "
          f"swing std {tip[:, 0].std() * 1e3:.4f} mm), statics {-p[0] * 1e3:.4f} mm, "
          f"Euler-Bernoulli {closed * 1e3:.4f} mm")
    assert -p[0] == pytest.approx(closed, rel=0.01)
    assert -mean[0] == pytest.approx(-p[0], rel=0.01)
    assert abs(mean[1]) < 0.05 * abs(mean[0])

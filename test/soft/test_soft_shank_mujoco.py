"""jethexa_shank in MuJoCo through the runtime Pipeline (the library loop of ``demo --library``):
each leg ends in a chain of two soft modules, a compliant shank carrying a silicone pad, and
the ground touches the pad (the contact on a module hung from another soft module). The plant's
modules are the pseudo-rigid-body equivalents of the controller's constant-curvature rods
(sim/soft_feet.py), the pad's hung from the shank's distal half at its distal face.

Checked against MuJoCo, not against our model: both modules of a chain carry the foot's load in
series, so the measured compression of each, times its own axial stiffness E A / L (with its
Kelvin-Voigt rate), equals the normal force MuJoCo reports on that foot (within the pad's own
weight and the tilt); the coordinates the controller used are the plant's; the robot walks at
the commanded speed without a fall or a QP fallback.
"""
import numpy as np
import pytest

from hybrid_dynamics.soft.coordinates import coordinate_names
from soft_walk import walk_recorded


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    return walk_recorded("jethexa_shank_walk", tmp_path_factory.mktemp("shank_walk"))


def test_walks_on_chains_of_soft_modules_without_fallback(walked):
    run, s, _ = walked
    print({k: s[k] for k in ("speed_before_damage_mps", "max_abs_roll_deg", "max_abs_pitch_deg",
                             "min_base_height_m", "fallbacks", "infeasible")})
    assert s["completed"] and not s["fell"], s.get("stopped")
    assert s["fallbacks"] == 0 and s["infeasible"] == 0
    assert 0.07 < s["speed_before_damage_mps"] < 0.13
    assert max(s["max_abs_roll_deg"], s["max_abs_pitch_deg"]) < 5.0


def test_the_controller_uses_every_modules_measured_coordinates(walked):
    run, _, sent = walked
    est = run.pipeline.state.last
    names = coordinate_names(run.robot)
    assert len(names) == 36 and run.plant.soft_names == names and est.q_soft is not None
    joints, pos, vel, _, _ = sent[-1]                                 # the sample of the last cycle
    at = [joints.index(n) for n in names]
    assert np.array_equal(est.q_soft, pos[at]) and np.array_equal(est.v_soft, vel[at])
    leaves = run.pipeline.control.controller.formulation.state.leaves
    for module, sl in leaves.slices.items():                       # shanks and pads alike are deformed
        assert np.abs(est.q_soft[sl]).max() > 1e-5, module


def test_shank_and_pad_each_carry_the_foot_force(walked):
    """Per chain, over the stance samples (MuJoCo normal force over 2 N): each module's spring
    and damper, E A / L (x + eta xdot) from its measured change of length x and rate, against
    MuJoCo's normal force on the foot: each carries it in series, to within the axis's tilt from
    the vertical and the weight below the module (the pad's 0.23 N)."""
    run, _, sent = walked
    robot = run.robot
    names = coordinate_names(robot)
    ratios = {}
    for spec in robot.soft_modules:
        body = spec.block["body"]
        k_axial = body["youngs_modulus"] * np.pi * body["radius"] ** 2 / body["length"]
        name = f"{spec.name}_q2"
        rows = [(-pos[joints.index(name)], -vel[joints.index(name)], forces[spec.root][2])
                for joints, pos, vel, _, forces in sent if spec.root in forces and forces[spec.root][2] > 2.0]
        assert name in names and len(rows) > 50, (spec.name, len(rows))
        x, xd, f = np.array(rows).T
        ratios[spec.name] = (k_axial * (x + body["damping_time"] * xd)).sum() / f.sum()
    print("spring + damper / MuJoCo normal force:", {k: round(float(v), 3) for k, v in ratios.items()})
    assert len(ratios) == 12
    assert all(abs(r - 1.0) < 0.06 for r in ratios.values()), ratios

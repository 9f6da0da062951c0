"""jethexa_shank and jethexa_cosserat in MuJoCo through the runtime Pipeline (the library loop
of ``demo --library``): each leg ends in a chain of two soft modules, a compliant shank carrying
a silicone pad, and the ground touches the pad (the contact on a module hung from another soft
module). jethexa_shank's shank is a constant-curvature rod, jethexa_cosserat's a
piecewise-constant-strain Cosserat rod of two segments, jethexa_gvs's a variable-strain rod
(each strain linear along it; one piece here: its stretch at the middle). The plant's modules are the
pseudo-rigid-body equivalents of the controller's rods (sim/soft_feet.py: a joint per strain
component at the middle of each piece), the pad's hung from the shank's distal link at its
distal face.

Checked against MuJoCo, not against our model: both modules of a chain carry the foot's load in
series, so the measured stretch of each piece of each module, times the section's axial
stiffness E A (with its Kelvin-Voigt rate), equals the normal force MuJoCo reports on that foot
(within the pad's own weight and the tilt); the coordinates the controller used are the
plant's; the robot walks at the commanded speed without a fall or a QP fallback.
"""
import numpy as np
import pytest

from hybrid_dynamics.soft.coordinates import coordinate_names
from hybrid_dynamics.soft.spec import build_module
from soft_walk import assert_walked, walk_recorded

COORDINATES = {"jethexa_shank": 36, "jethexa_cosserat": 54, "jethexa_gvs": 54}


@pytest.fixture(scope="module", params=sorted(COORDINATES))
def walked(request, tmp_path_factory):
    return walk_recorded(f"{request.param}_walk", tmp_path_factory.mktemp(request.param))


def test_walks_on_chains_of_soft_modules_without_fallback(walked):
    _, s, _ = walked
    assert_walked(s)


def test_the_controller_uses_every_modules_measured_coordinates(walked):
    run, _, sent = walked
    est = run.pipeline.state.last
    names = coordinate_names(run.robot)
    assert len(names) == COORDINATES[run.robot.name] and run.plant.soft_names == names and est.q_soft is not None
    joints, pos, vel, _, _ = sent[-1]                                 # the sample of the last cycle
    at = [joints.index(n) for n in names]
    assert np.array_equal(est.q_soft, pos[at]) and np.array_equal(est.v_soft, vel[at])
    leaves = run.pipeline.control.controller.formulation.state.leaves
    for module, sl in leaves.slices.items():                       # shanks and pads alike are deformed
        assert np.abs(est.q_soft[sl]).max() > 1e-5, module


def test_shank_and_pad_each_carry_the_foot_force(walked):
    """Per chain, over the stance samples (MuJoCo normal force over 2 N): the axial force in the
    middle of each piece of each module, ``E A (eps + eta epsdot)`` with the stretch ``eps`` its
    strain basis gives there from the measured coordinates and rates, against MuJoCo's normal
    force on the foot: each carries it in series, to within the axis's tilt from the vertical
    and the weight below the piece (the pad's 0.23 N)."""
    run, _, sent = walked
    robot = run.robot
    names = coordinate_names(robot)
    ratios = {}
    for spec in robot.soft_modules:
        body = spec.block["body"]
        rod = build_module(robot.soft_doc, spec.where, spec.block, None, spec.joint).body
        pieces = body.get("segments", 1)
        own = [f"{spec.name}_q{k}" for k in range(rod.nq)]
        assert set(own) <= set(names), own
        rows = [(pos[[joints.index(n) for n in own]], vel[[joints.index(n) for n in own]], forces[spec.root][2])
                for joints, pos, vel, _, forces in sent if spec.root in forces and forces[spec.root][2] > 2.0]
        assert len(rows) > 50, (spec.name, len(rows))
        q, qd, f = (np.array([r[i] for r in rows]) for i in range(3))
        axial = body["youngs_modulus"] * np.pi * body["radius"] ** 2
        for j in range(pieces):
            stretch = np.asarray(rod.basis((j + 0.5) * rod.length / pieces), float).reshape(6, rod.nq)[5]
            eps = -(q + body["damping_time"] * qd) @ stretch                     # compression > 0
            ratios[f"{spec.name}[{j}]"] = (axial * eps).sum() / f.sum()
    print("spring + damper / MuJoCo normal force:", {k: round(float(v), 3) for k, v in ratios.items()})
    assert len(ratios) == 6 * sum(s.block["body"].get("segments", 1) for s in robot.soft_modules[:2])
    assert all(abs(r - 1.0) < 0.06 for r in ratios.values()), ratios

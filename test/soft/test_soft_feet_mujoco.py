"""jethexa_soft in MuJoCo through the runtime Pipeline (the library loop of ``demo --library``):
the plant's pads are the pseudo-rigid-body equivalent of the controller's constant-curvature
pads (sim/soft_feet.py), their coordinates reach the controller through /joint_states-style
samples, and the robot walks the tripod gait on them.

Checked against MuJoCo, not against our model: the pads' measured compression under the
contact force MuJoCo reports equals that force over the pad's axial stiffness E A / L (the
equivalent model's spring, within the pad's own weight and tilt), the coordinates the
controller used are the plant's, and the robot walks at the commanded speed without a fall or
a QP fallback.
"""
import json

import numpy as np
import pytest

from bag_messages import topic_messages
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.runtime.inputs import joint_state_sample
from hybrid_dynamics.runtime.state import StateCore
from hybrid_dynamics.sim.runner import ScenarioRun
from hybrid_dynamics.sim.scenario import load_scenario
from hybrid_dynamics.soft.coordinates import coordinate_names
from soft_walk import assert_walked, walk_recorded


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    return walk_recorded("jethexa_soft_walk", tmp_path_factory.mktemp("soft_walk"))


def test_walks_on_soft_feet_without_fallback(walked):
    _, s, _ = walked
    assert_walked(s)


def test_the_controller_uses_the_measured_pad_coordinates(walked):
    run, _, sent = walked
    est = run.pipeline.state.last
    names = coordinate_names(run.robot)
    assert run.plant.soft_names == names and est.q_soft is not None
    joints, pos, vel, _, _ = sent[-1]                                 # the sample of the last cycle
    at = [joints.index(n) for n in names]
    assert np.array_equal(est.q_soft, pos[at]) and np.array_equal(est.v_soft, vel[at])
    assert np.abs(est.q_soft).max() > 5e-4                        # the pads are deformed


def test_pad_compression_equals_force_over_axial_stiffness(walked):
    """Over the run, the spring and damper of each pad, E A / L (x + eta xdot) from its
    measured compression x and rate, against MuJoCo's normal force on its foot; the distal
    half's weight (0.13 N) and inertia and the tilt are the few percent left."""
    run, _, sent = walked
    robot = run.robot
    body = robot.soft_modules[0].block["body"]
    k_axial = body["youngs_modulus"] * np.pi * body["radius"] ** 2 / body["length"]
    names = coordinate_names(robot)
    ratios = []
    for spec in robot.soft_modules:
        at = names.index(f"{spec.name}_q2")
        rows = [(-pos[joints.index(names[at])], -vel[joints.index(names[at])], forces[spec.root][2])
                for joints, pos, vel, _, forces in sent if spec.root in forces and forces[spec.root][2] > 2.0]
        if len(rows) < 50:
            continue
        x, xd, f = np.array(rows).T
        ratios.append((k_axial * (x + body["damping_time"] * xd)).sum() / f.sum())
    print("spring + damper / MuJoCo normal force per pad:", np.round(ratios, 3))
    assert len(ratios) == 6, ratios                                # every pad carried load
    assert np.all(np.abs(np.array(ratios) - 1.0) < 0.05), ratios


def test_ros_graph_publishes_and_draws_the_deformation(cli, tmp_path):
    """The same robot under the whole ROS 2 graph (``demo``): it walks, the controller
    publishes the pads' coordinates on ~/soft_deformation (those of /joint_states at the same
    cycle) and one rviz line strip per pad on ~/markers, ending at the pad's contact point."""
    # the controller configuration of jethexa_soft compiles the pads' functions (once per
    # machine, cached; soft/compiled.py)
    out = cli("demo", "--scenario", "jethexa_soft_walk", "--duration", "2", "--out", tmp_path / "run")
    assert out.returncode == 0, out.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert not summary["fell"] and summary["fallbacks"] == 0
    deformation = topic_messages(tmp_path / "run" / "bag", "/whole_body_controller/soft_deformation")
    markers = topic_messages(tmp_path / "run" / "bag", "/whole_body_controller/markers")
    names = coordinate_names(load_robot("jethexa_soft"))
    assert len(deformation) >= 10 and all(list(m.name) == names for m in deformation)
    assert np.abs(np.array(deformation[-1].position)).max() > 5e-4
    bodies = [m for m in markers[-1].markers if m.ns == "soft_bodies"]
    assert sorted(m.text for m in bodies) == [f"leg{k}_pad" for k in range(1, 7)]
    for m in bodies:
        p = np.array([[pt.x, pt.y, pt.z] for pt in m.points])
        assert len(p) == 7 and 0.028 < np.linalg.norm(p[-1] - p[0]) < 0.032   # the 30 mm pad


def test_dynamic_condensation_walks_with_the_pads_force_predicted_one_period_ahead(tmp_path):
    """``soft.condensation: dynamic`` (the pads' coordinates in the QP with their own rows) with
    their spring-damper force predicted over the 5 ms control period walks; with the force at
    the current state (``soft.horizon: 0``) the QP turns infeasible and the robot falls."""
    sc = load_scenario("jethexa_soft_walk")
    summaries = {}
    for horizon, duration in ((1.0 / sc.control_rate, 2.5), (0.0, 1.0)):
        sc.controller = {"soft": {"condensation": "dynamic", "horizon": horizon, "machine_code": False}}
        run = ScenarioRun(sc, tmp_path / f"h{horizon}", duration=duration, bag=False, plots=False, progress=False)
        summaries[horizon] = run.run()
        state = run.pipeline.control.controller.formulation.state
        assert state.dynamic and state.n == run.robot.nv + 18 and state.horizon == horizon
    walked, pinned = summaries[0.005], summaries[0.0]
    print({h: {k: s[k] for k in ("stopped", "speed_before_damage_mps", "max_abs_roll_deg", "max_abs_pitch_deg",
                                 "fallbacks", "infeasible")} for h, s in summaries.items()})
    assert walked["completed"] and not walked["fell"] and walked["fallbacks"] == 0 and walked["infeasible"] == 0
    assert 0.07 < walked["speed_before_damage_mps"] < 0.13
    assert max(walked["max_abs_roll_deg"], walked["max_abs_pitch_deg"]) < 10.0
    assert pinned["fell"] or pinned["infeasible"] > 10


def test_pad_coordinates_in_joint_states_are_not_reported_unknown():
    """The plant's /joint_states carry the pads' coordinates beside the joints: the state
    takes them (``q_soft``) and reports only names that are neither as unknown (the
    process-per-node graph logged every pad coordinate as an unknown joint)."""
    robot = load_robot("jethexa_soft")
    core = StateCore(robot, {})
    pads = coordinate_names(robot)
    names = list(robot.joint_names) + pads + ["camera_tilt"]
    q = np.concatenate([robot.q_stand[7:], 1e-3 * np.arange(1, len(pads) + 1), [0.2]])
    assert core.add_joint_state(joint_state_sample(1.0, names, q, np.zeros(len(names))), 1.0) is None
    assert core.buffer.unknown == ("camera_tilt",)
    assert np.allclose(core.deformation.q, q[len(robot.joint_names):-1])

"""`hybrid-dynamics demo --scenario hybrid_biped_balance` through the one-process ROS 2 graph
(shortened to 4 s: 2 s still, then the first weight shift towards the left foot): the
closed-chain biped stands on its 12 actuators, the state estimator completes the 32 passive
joints (checked against MuJoCo's, published on /sim/ground_truth/joint_states), the
controller follows control.balance's weight-shift references and publishes actuator forces
within the ball-screw limits, and summary.json + plots are made from the bag."""
import json

import numpy as np

from bag_messages import topic_messages
from hybrid_dynamics.dynamics.closed_chain import LoopClosureKinematics
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.sim.bagfile import bag_info

DURATION = 4.0


def test_biped_balance_runs_through_the_graph(cli, tmp_path):
    out = cli("demo", "--scenario", "hybrid_biped_balance", "--duration", DURATION, "--out", tmp_path, "--quiet",
              timeout=300)
    assert out.returncode == 0, (out.stdout, out.stderr[-3000:])
    s = json.loads((tmp_path / "summary.json").read_text())
    print({k: s[k] for k in ("max_passive_estimate_error_rad", "min_com_margin_m", "com_y_range_m",
                             "max_abs_actuator_force_n", "real_time_factor")})
    assert s["runner"].startswith("ros2 graph") and s["completed"] and not s["fell"]
    assert s["controller_safe_cycles"] == 0 and s["fallbacks"] == 0 and s["infeasible"] == 0
    assert s["max_abs_roll_deg"] < 3 and s["max_abs_pitch_deg"] < 3
    # the passive joints from the 12 actuators alone, every cycle, within 1e-3 rad of MuJoCo's
    assert s["passive_estimate_samples"] >= DURATION * 200 - 5
    assert s["max_passive_estimate_error_rad"] < 1e-3
    # the CoM stays inside the support polygon while it moves over the left foot (6 cm at 4 s)
    assert s["min_com_margin_m"] > 0.02
    y0, y1 = s["com_y_range_m"]
    assert y1 - y0 > 0.05
    assert 0 < s["max_abs_actuator_force_n"] < s["actuator_force_limit_n"]
    assert (tmp_path / "balance.png").stat().st_size > 10_000
    bag = tmp_path / "bag"
    topics = {name: entry["count"] for name, entry in bag_info(bag)["topics"].items()}
    for topic in ("/joint_states", "/effort_controller/commands", "/whole_body_controller/actuator_forces",
                  "/sim/ground_truth/joint_states", "/state_estimator/joint_states_full"):
        assert DURATION * 200 - 5 <= topics[topic] <= DURATION * 200 + 5, (topic, topics)
    robot = load_robot("hybrid_biped")
    # only the actuators are sensed; the ground truth carries every joint
    js = topic_messages(bag, "/joint_states")
    assert sorted(js[0].name) == sorted(robot.actuated_joints)
    assert len(topic_messages(bag, "/sim/ground_truth/joint_states")[0].name) == len(robot.joint_names) == 44
    # actuator forces (actuators order) are the commands the plant applied (its effort echo,
    # /joint_states of the next period), within the ball-screw limits
    kin = LoopClosureKinematics(robot)
    limits = kin.force_limits()[[kin.actuated_joints.index(n) for n in robot.actuated_joints]]
    F = np.array([m.data for m in topic_messages(bag, "/whole_body_controller/actuator_forces")])
    assert np.all(np.abs(F) <= limits)
    assert abs(np.abs(F).max() - s["max_abs_actuator_force_n"]) < 0.01
    order = [list(js[0].name).index(n) for n in robot.actuated_joints]
    effort = np.array([np.asarray(m.effort)[order] for m in js[1:len(F) + 1]])
    n = min(len(effort), len(F))
    assert np.allclose(effort[:n], F[:n], atol=1e-9)


def test_biped_balance_library_loop_reports_the_same_figures(cli, tmp_path):
    """`--library`: control.balance.run_balance on the plant, the same summary figures."""
    out = cli("demo", "--scenario", "hybrid_biped_balance", "--duration", 3, "--library", "--quiet",
              "--out", tmp_path, timeout=300)
    assert out.returncode == 0, (out.stdout, out.stderr[-3000:])
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["runner"] == "library" and s["completed"] and not s["fell"] and s["fallbacks"] == 0
    assert s["passive_estimate_samples"] == 600 and s["max_passive_estimate_error_rad"] < 1e-3
    assert s["min_com_margin_m"] > 0.02 and s["com_y_range_m"][1] > 0.02
    assert 0 < s["max_abs_actuator_force_n"] < s["actuator_force_limit_n"]

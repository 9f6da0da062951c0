"""`hybrid-dynamics demo`: bad input is a clear error with exit 2; a run writes its bag,
plots and summary, also when it stops part-way; paper 000's S1 walks on after the damage."""
import json
import textwrap

import pytest

from hybrid_dynamics.sim.recording import read_topics

SUMMARY_KEYS = ("distance_before_damage_m", "distance_after_damage_m", "max_abs_roll_deg", "max_abs_pitch_deg",
                "min_base_height_m", "fell", "qp_p99_ms", "fallbacks", "infeasible", "detection_latency_s",
                "real_time_factor")
PLOTS = ("base_path.png", "roll_pitch.png", "contact_forces.png", "qp_solve_time.png", "morphology_timeline.png")


def one_line_error(out, *needles):
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr[-2000:])
    assert "Traceback" not in out.stderr
    line = out.stderr.strip().splitlines()
    assert len(line) == 1, out.stderr
    for needle in needles:
        assert needle in line[0], line[0]


def test_unknown_scenario(cli, tmp_path):
    one_line_error(cli("demo", "--scenario", "hexapod_dance", "--out", tmp_path), "unknown scenario 'hexapod_dance'",
                   "hexapod_damage_s1")


def test_scenario_with_a_wrong_field(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("robot: jethexa\nduration: 5\ncmd_vel: {linear_x: 0.1, linear_z: 1.0}\n")
    one_line_error(cli("demo", "--scenario", bad, "--out", tmp_path / "o"), "bad.yaml:3", "linear_z")
    bad.write_text("robot: jethexa\ndamage: {at: 1.0, events: [{remove_leg: leg9}]}\n")
    one_line_error(cli("demo", "--scenario", bad, "--out", tmp_path / "o"), "leg9")
    bad.write_text("robot: robby\n")
    one_line_error(cli("demo", "--scenario", bad, "--out", tmp_path / "o"), "unknown robot 'robby'")
    bad.write_text("robot: jethexa\nduraton: 5\n")
    one_line_error(cli("demo", "--scenario", bad, "--out", tmp_path / "o"), "bad.yaml:2", "duraton")
    one_line_error(cli("demo", "--duration", "-1", "--out", tmp_path / "o"), "duration")


def test_damage_s1_walks_on_and_writes_everything(cli, tmp_path):
    out = cli("demo", "--scenario", "hexapod_damage_s1", "--duration", "7", "--out", tmp_path, timeout=300)
    assert out.returncode == 0, (out.stdout, out.stderr[-3000:])
    s = json.loads((tmp_path / "summary.json").read_text())
    for key in SUMMARY_KEYS:
        assert key in s, key
    assert s["completed"] and not s["fell"]
    assert s["max_abs_roll_deg"] < 15 and s["max_abs_pitch_deg"] < 15
    assert s["speed_before_damage_mps"] > 0.08
    assert s["speed_after_damage_mps"] >= 0.5 * s["speed_before_damage_mps"]
    assert s["final_morphology"] == "leg3 removed; leg4 removed"
    for name in PLOTS:
        assert (tmp_path / name).stat().st_size > 10_000, name
    topics = read_topics(tmp_path / "bag")
    for topic in ("/joint_states", "/imu_sensor_broadcaster/imu", "/clock", "/sim/ground_truth/odometry",
                  "/effort_controller/commands", "/cmd_vel", "/state_estimator/odometry"):
        assert topics[topic] >= 7 * 200 - 5, (topic, topics)
    assert topics["/morphology_manager/morphology"] == 1


def test_a_run_that_fails_part_way_still_reports(cli, tmp_path):
    """Four legs lost at once: the robot falls; what was recorded is written with the reason."""
    sc = tmp_path / "doomed.yaml"
    sc.write_text(textwrap.dedent("""\
        robot: jethexa
        duration: 6.0
        cmd_vel: {linear_x: 0.1}
        damage:
          at: 1.0
          events: [{remove_leg: leg1}, {remove_leg: leg3}, {remove_leg: leg4}, {remove_leg: leg5}]
        """))
    out = cli("demo", "--scenario", sc, "--out", tmp_path / "o", timeout=300)
    assert out.returncode == 1, (out.stdout, out.stderr[-3000:])
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["fell"] and s["stopped"].startswith("fell") and not s["completed"]
    assert 1.0 < s["simulated_s"] < 6.0
    assert (tmp_path / "o" / "roll_pitch.png").is_file()
    assert read_topics(tmp_path / "o" / "bag")["/joint_states"] > 200

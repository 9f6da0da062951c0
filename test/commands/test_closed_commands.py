"""`validate closed-loop` and `bench estimator` ([Mingo Hoffman 2024] figures printed by commands)."""
import json


def test_validate_closed_loop_hybrid_biped(cli):
    out = cli("validate", "closed-loop", "--robot", "hybrid_biped", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["passed"] and all(c["passed"] for c in checks.values())
    assert checks["cold_start_closure_iterations"]["value"] < 10
    assert checks["three_step_vs_projected_tau"]["value"] < 1e-9
    assert report["load"]["rows"] == report["load"]["passive"] == 32


def test_validate_closed_loop_on_a_serial_robot(cli):
    out = cli("validate", "closed-loop", "--robot", "talos", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["rows"] == 0


def test_bench_estimator_prints_percentiles(cli):
    out = cli("bench", "estimator", "--robot", "hybrid_biped", "--cycles", "50", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    c = report["cycle_ms"]
    assert 0 < c["p50"] <= c["p99"] <= c["max"]
    assert report["reference_ms"] == 0.38 and report["cold_start_iterations_max"] < 10


def test_validate_closed_loop_bad_robot_is_one_line(cli, tmp_path):
    (tmp_path / "robot.yaml").write_text("urdf: nothing.urdf\n")
    out = cli("validate", "closed-loop", "--robot", tmp_path / "robot.yaml")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1

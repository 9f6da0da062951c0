"""`validate dynamics` and `bench dynamics` on the command line."""
import json


def test_validate_dynamics_json_for_s2(cli):
    out = cli("validate", "dynamics", "--robot", "jethexa", "--morphology", "s2", "--samples", "2", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert {"robot", "morphology", "samples", "max_rel_error"} <= set(report)
    assert report["robot"] == "jethexa" and report["morphology"] == "s2" and report["samples"] == 2
    errors = report["max_rel_error"]
    for engine in ("hamel", "hamel_fast", "denoc"):
        for quantity in ("M", "h", "N", "fd", "id", "J_tips"):
            assert errors[f"{engine}.{quantity}"] <= 1e-9
    assert report["passed"] is True


def test_validate_dynamics_yaml_morphology(cli, tmp_path):
    spec = tmp_path / "damage.yaml"
    spec.write_text("remove_legs: [leg2]\nremove_links: {leg6: 3}\nlock: {leg1_coxa_joint: 0.2}\n")
    out = cli("validate", "dynamics", "--robot", "jethexa", "--morphology", spec, "--samples", "1",
              "--engines", "hamel_fast", "--json")
    assert out.returncode == 0, out.stderr
    assert max(json.loads(out.stdout)["max_rel_error"].values()) <= 1e-9


def test_validate_dynamics_bad_input(cli, tmp_path):
    out = cli("validate", "dynamics", "--robot", "jethexa", "--morphology", "s9")
    assert out.returncode == 2 and "unknown morphology 's9'" in out.stderr
    spec = tmp_path / "bad.yaml"
    spec.write_text("lock: {elbow: 0.2}\n")
    out = cli("validate", "dynamics", "--robot", "jethexa", "--morphology", spec)
    assert out.returncode == 2 and "elbow" in out.stderr
    spec.write_text("remove_links: {leg1: 9}\n")
    out = cli("validate", "dynamics", "--robot", "jethexa", "--morphology", spec)
    assert out.returncode == 2 and "out of range" in out.stderr

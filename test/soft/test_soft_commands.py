"""The soft-module commands end to end: validate soft passes and says what it compared,
bench soft reports per-N times with an exponent and an EL ratio, reproduce paper002 writes its
plot and accuracy figures; bad arguments are one-line InputErrors."""
import json

import numpy as np
import pytest


def test_validate_soft_json(cli):
    # the stock bodies are each checked in test_soft_recursion.py; here two and one mixed tree
    r = cli("validate", "soft", "--json", "--kinds", "rigid,cc_planar", "--mixed", "1")
    assert r.returncode == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)
    assert out["summary"]["passed"] and set(out["pinocchio"]) == {"ur10", "solo12"}
    assert len(out["lagrange"]) == 3 and out["summary"]["lagrange_max_rel"] <= 1e-9


@pytest.mark.long
def test_validate_soft_everything(cli):
    r = cli("validate", "soft", "--json", "--mixed", "6")
    assert r.returncode == 0, r.stderr + r.stdout
    assert json.loads(r.stdout)["summary"]["passed"]


def test_bench_soft_json(cli):
    r = cli("bench", "soft", "--json", "--bodies", "1,2", "--samples", "3", "--cycles", "5", "--interpreted")
    assert r.returncode == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)
    assert [row["bodies"] for row in out["rows"]] == [1, 2]
    assert all(row["id_us"] > 0 and row["el_over_id"] > 0 for row in out["rows"])
    assert np.isfinite(out["id_exponent"])
    md = out["modal"]                             # the modal chain from its invariants and per point
    assert md["coordinates"] == 21 and md["invariants_mid_us"] > 0 and md["per_point_mid_us"] > 0
    assert md["mid_speedup"] == md["per_point_mid_us"] / md["invariants_mid_us"]
    wb = out["whole_body"]
    assert wb["robot"] == "jethexa_soft" and wb["soft_coordinates"] == 18 and wb["cycles"] == 5
    assert wb["fallbacks"] == {"soft": 0, "rigid": 0}
    assert wb["soft"]["p50_ms"] > 0 and wb["rigid"]["p50_ms"] > 0 and wb["ratio_p99"] > 0


def test_reproduce_paper002_writes_plot(cli, tmp_path):
    r = cli("reproduce", "paper002", "--json", "--sims", "3", "--bodies", "1,2", "--samples", "2",
            "--accuracy-samples", "3", "--out", tmp_path)
    assert r.returncode == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)["sim3"]
    assert (tmp_path / "paper002_sim3.png").stat().st_size > 1000
    assert all(a["mean_rel_error"] < 1e-9 for a in out["accuracy"]) and len(out["accuracy"]) == 2


def test_bad_arguments_are_input_errors(cli):
    r = cli("bench", "soft", "--bodies", "one")
    assert r.returncode == 2 and "--bodies" in (r.stderr + r.stdout) and "Traceback" not in r.stderr

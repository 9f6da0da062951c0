"""``bench pipeline`` runs the one-process graph against a stand-in robot in its own process
and prints the latency percentiles as JSON (numbers are reported, never asserted)."""
import json


def test_bench_pipeline_prints_percentiles(cli, tmp_path):
    out = cli("bench", "pipeline", "--cycles", "300", "--trigger", "joint_states", "--json", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    mode = data["modes"][0]
    assert mode["trigger"] == "joint_states" and mode["joint_states_measured"] == 300
    lat = mode["latency_ms"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"]
    assert data["library_cycle_ms"]["n"] > 0 and mode["ratio_p50_to_library_cycle"] > 0
    assert data["library_cycle_ms"]["python_calls_per_cycle"] > 50      # a whole cycle was counted
    # the README's table from the saved output: the mode's row with its figures, the reference row
    saved = tmp_path / "pipeline.json"
    saved.write_text(out.stdout)
    rows = cli("bench", "pipeline", "--table", str(saved)).stdout.splitlines()
    assert len(rows) == 4 and rows[2].startswith("| `joint_states` | ")
    assert f"{lat['p50']:.3f} / {lat['p99']:.3f}" in rows[2] and rows[3].startswith("| library cycle")
    saved.write_text("{}")
    bad = cli("bench", "pipeline", "--table", str(saved))
    assert bad.returncode == 2 and "not a saved `bench pipeline --json` output" in bad.stderr

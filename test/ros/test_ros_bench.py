"""``bench pipeline`` runs the one-process graph against a stand-in robot in its own process
and prints the latency percentiles as JSON (numbers are reported, never asserted)."""
import json


def test_bench_pipeline_prints_percentiles(cli):
    out = cli("bench", "pipeline", "--cycles", "300", "--trigger", "joint_states", "--json", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    mode = data["modes"][0]
    assert mode["trigger"] == "joint_states" and mode["joint_states_measured"] == 300
    lat = mode["latency_ms"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"]
    assert data["library_cycle_ms"]["n"] > 0 and mode["ratio_p50_to_library_cycle"] > 0
    assert data["library_cycle_ms"]["python_calls_per_cycle"] > 50      # a whole cycle was counted

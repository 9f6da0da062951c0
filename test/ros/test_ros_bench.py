"""``bench pipeline`` runs the one-process graph against a stand-in robot in its own process
and prints the latency percentiles as JSON (numbers are reported, never asserted)."""
import json
import os
import time
from types import SimpleNamespace

import numpy as np

from hybrid_dynamics.commands import bench_pipeline as bp


def test_bench_pipeline_prints_percentiles(cli, tmp_path):
    """Also with ``--thread-priority``: the priority the cycle's thread ran at is in the JSON and
    the table (0 where this machine refuses SCHED_FIFO, the refusal then on stderr); and with
    the graph's process, the cycle's thread and the stand-in robot placed on CPUs
    (``--graph-cpus``, ``--cpu-affinity``, ``--robot-cpus``): the CPUs each ran on, read back in
    the processes, in the JSON and the table."""
    cpus = sorted(os.sched_getaffinity(0))
    first, last = str(cpus[0]), str(cpus[-1])
    out = cli("bench", "pipeline", "--cycles", "300", "--trigger", "joint_states", "--thread-priority", "3",
              "--graph-cpus", last, "--cpu-affinity", last, "--robot-cpus", first, "--json", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    mode = data["modes"][0]
    assert mode["trigger"] == "joint_states" and mode["joint_states_measured"] == 300
    assert mode["thread_priority"] == 3 or (mode["thread_priority"] == 0 and "SCHED_FIFO 3" in out.stderr)
    assert mode["graph_cpus"] == [cpus[-1]] and mode["cpu_affinity"] == [cpus[-1]] and mode["robot_cpus"] == [cpus[0]]
    where = bp.placement(mode)
    assert where == ([f"graph on CPU {last}", f"robot on CPU {first}"] if len(cpus) > 1 else [])
    notes = (["SCHED_FIFO 3"] if mode["thread_priority"] else []) + where
    label = "| `joint_states`" + (f" ({', '.join(notes)})" if notes else "") + " | "
    lat = mode["latency_ms"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"]
    assert data["library_cycle_ms"]["n"] > 0 and mode["ratio_p50_to_library_cycle"] > 0
    assert data["library_cycle_ms"]["python_calls_per_cycle"] > 50      # a whole cycle was counted
    # the README's table from the saved output: the mode's row with its figures, the reference row
    saved = tmp_path / "pipeline.json"
    saved.write_text(out.stdout)
    rows = cli("bench", "pipeline", "--table", str(saved)).stdout.splitlines()
    assert len(rows) == 4 and rows[2].startswith(label)
    assert f"{lat['p50']:.3f} / {lat['p99']:.3f}" in rows[2] and rows[3].startswith("| library cycle")
    saved.write_text("{}")
    bad = cli("bench", "pipeline", "--table", str(saved))
    assert bad.returncode == 2 and "not a saved `bench pipeline --json` output" in bad.stderr


def test_misses_are_explained_by_what_ran_in_the_wait():
    """``bench pipeline``'s account of deadline misses on a made-up timeline of a 1 ms loop: a
    start 2.3 ms after the last (late) while a 1.6 ms timer callback ran in the wait, a 1.2 ms
    cycle (long) during which a collection ran; every other start 1 ms apart."""
    period = 1e-3
    starts = np.arange(12) * period
    starts[6:] += 1.3e-3                                   # cycle 6 starts 2.3 ms after cycle 5
    spans = np.stack([starts, starts + 0.2e-3], axis=1)
    spans[9, 1] = spans[9, 0] + 1.2e-3                     # cycle 9 computes 1.2 ms
    spans[10:] += 0.2e-3                                   # (and delays the next ones)

    class Timer:                                           # a node's timer, as rclpy has them
        timer_period_ns = 500_000_000

        def __init__(self):
            self.callback = lambda: None

    node = SimpleNamespace(subscriptions=[], timers=[Timer()])
    calls = bp.CallbackSpans({"state_estimator": node}, size=8)
    timer = node.timers[0].callback
    calls.spans[0], calls.which[0], calls.n = (spans[5, 1] + 0.1e-3, spans[5, 1] + 1.7e-3), 0, 1
    assert calls.names == ["state_estimator timer 500 ms"] and timer is not None
    gc_runs = [(spans[9, 0] + 0.5e-3, 0.3e-3, 1)]
    out = bp.explain_misses(spans, period, gc_runs, calls)
    assert out["late_starts"] == 1 and out["long_cycles"] == 1 and out["missed"] == 2
    assert out["missed_with_a_collection"] == 1 and out["collections"]["1"]["count"] == 1
    assert out["start_interval_ms_histogram"]["2-3"] == 1 and sum(out["start_interval_ms_histogram"].values()) == 11
    longest = out["late_starts_longest_callback_in_the_wait"]
    assert list(longest) == ["state_estimator timer 500 ms"] and longest["state_estimator timer 500 ms"]["ms_max"] == 1.6


def _burn(cpu_seconds: float) -> None:
    """Spin until this thread has used ``cpu_seconds`` of CPU (whatever the machine's load)."""
    end = time.thread_time() + cpu_seconds
    while time.thread_time() < end:
        pass


def test_executor_cpu_splits_the_callbacks_from_the_work_between_them():
    """``bench pipeline``'s executor CPU account on a made-up executor: five calls of a timer
    callback that uses 2 ms of CPU, with 3 ms of CPU spent between consecutive calls (what the
    executor does between callbacks), then 7 ms after the last (outside the window)."""
    class Timer:
        timer_period_ns = 1_000_000

        def __init__(self):
            self.callback = lambda: _burn(2e-3)

    node = SimpleNamespace(subscriptions=[], timers=[Timer()])
    calls = bp.CallbackSpans({"whole_body_controller": node}, size=16)
    for k in range(5):
        if k:
            _burn(3e-3)
        node.timers[0].callback()
    _burn(7e-3)
    cpu = calls.executor_cpu(seconds=0.5, cycles=4)
    assert abs(cpu["callbacks_cpu_s_per_s"] - 10e-3 / 0.5) < 2e-3           # 5 x 2 ms in 0.5 s
    assert abs(cpu["thread_cpu_s_per_s"] - 22e-3 / 0.5) < 4e-3              # + 4 x 3 ms between
    assert abs(cpu["own_cpu_us_per_cycle"] - 3000.0) < 500.0                # 12 ms over 4 cycles
    calls.clear()
    assert calls.executor_cpu(seconds=0.5, cycles=4) == {}                   # nothing since clear()

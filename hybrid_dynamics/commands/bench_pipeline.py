"""``hybrid-dynamics bench pipeline``: latency from /joint_states received to
/effort_controller/commands published, in the one-process graph (estimator, controller,
morphology manager on the graph's executor, single-threaded), over ``--cycles`` joint states
or ``--seconds`` of running, for each trigger mode of the controller (``timer``: the
executor's timer; ``joint_states``: one cycle per joint state; ``thread``: the node's own
thread at absolute deadlines, runtime/periodic.py).

A stand-in robot publishes joint states and IMU from its own process at the update rate
(as a ros2_control robot's broadcasters would). The controller node stamps each joint state
on arrival (``time.perf_counter``) and the command it produced after ``publish()`` returned.
Printed per trigger mode: p50 / p99 / max latency, the rate the loop held, deadline misses
(a cycle started more than 1.5 periods after the previous one, or computing longer than a
period; counted once per cycle) over the whole window,
and as the reference timed in the same run, the library cycle alone (estimate + QP, no ROS)
on the same robot, so that the ROS overhead reads as a ratio.

Where it runs (docs/control_loop.md): ``--thread-priority`` (SCHED_FIFO for the cycle's thread
and the stand-in robot's publishing thread), ``--graph-cpus`` (the graph's process, every
thread), ``--robot-cpus`` (the stand-in robot's process), ``--cpu-affinity`` (the controller's
``cpu_affinity``: the cycle's thread alone); the JSON and the table say what each run had.
"""
from __future__ import annotations

import cProfile
import gc
import json
import os
import pstats
import subprocess
import sys
import time

import numpy as np
from sensor_msgs.msg import Imu, JointState

from ..errors import InputError
from ..model.robot import load_robot
from ..ros.graph import Graph
from ..ros.whole_body_controller import TRIGGERS
from ..ros.sources import standing_pose
from ..runtime.inputs import sec_to_stamp
from ..runtime.pipeline import Pipeline
from ..runtime.realtime import cpu_list, use_process_cpus

COMMAND = ("bench", "pipeline")
HELP = "latency /joint_states -> /effort_controller/commands in the one-process graph (p50/p99/max)"


def add_arguments(parser) -> None:
    parser.add_argument("--robot", default="jethexa")
    parser.add_argument("--cycles", type=int, default=10000, help="joint states measured per mode")
    parser.add_argument("--rate", type=float, default=None, help="Hz (default: update_rate of config/<robot>.yaml)")
    parser.add_argument("--trigger", choices=TRIGGERS + ("all",), default="all",
                        help="the controller's trigger mode(s) measured (default: all three)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="measure for this long per mode instead of --cycles joint states (misses over the "
                             "whole window; latency percentiles over its last 20 000 cycles)")
    parser.add_argument("--thread-priority", type=int, default=0, metavar="N",
                        help="the controller's thread_priority: SCHED_FIFO N (1-99) for the thread that runs "
                             "its cycle, as ros2_control's (50 there), and the same for the stand-in robot's "
                             "publishing thread (a robot's broadcasters publish from that real-time thread); "
                             "0 (default): the default scheduler")
    parser.add_argument("--cpu-affinity", type=cpu_list, default=[], metavar="CPUS",
                        help="the controller's cpu_affinity: CPUs (comma-separated) of the thread that runs its "
                             "cycle (in this one-process graph the executor's: every node's callbacks), as "
                             "ros2_control's; default: any")
    parser.add_argument("--graph-cpus", type=cpu_list, default=[], metavar="CPUS",
                        help="CPUs (comma-separated) of the graph's process, every thread of it (the executor's and "
                             "the middleware's, which inherit it when the graph starts), as a deployment puts the "
                             "controller's process on cores kept for it; default: any")
    parser.add_argument("--robot-cpus", type=cpu_list, default=[], metavar="CPUS",
                        help="CPUs (comma-separated) of the stand-in robot's process, every thread of it "
                             "(on a robot its hardware interface runs elsewhere); default: any")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--table", metavar="JSON", default=None,
                        help="print the README's pipeline table (Markdown) from a saved --json output and exit")


def _percentiles(x_s):
    x = np.asarray(x_s) * 1e3
    if not len(x):
        return {"p50": None, "p99": None, "max": None, "n": 0}
    return {"p50": round(float(np.percentile(x, 50)), 4), "p99": round(float(np.percentile(x, 99)), 4),
            "max": round(float(x.max()), 4), "n": int(len(x))}


def library_cycle(robot, params, n=2000, profiler=None):
    """The estimate + control cycle alone (no ROS) on standing samples: seconds per cycle.
    A ``cProfile.Profile`` given as ``profiler`` counts the calls of each timed step (joint
    state and IMU in, command out) after the first tenth (layouts and caches built), not of
    the samples' making."""

    pipe = Pipeline(robot, params)
    q = standing_pose(robot)
    idx = {name: i for i, name in enumerate(robot.joint_names)}
    names = list(robot.actuated_joints)
    rng = np.random.default_rng(0)
    times = []
    for k in range(n):
        t = 1.0 + k * 1e-3
        imu = Imu()
        sec_to_stamp(t, imu.header.stamp)
        imu.orientation.w = 1.0
        imu.linear_acceleration.z = 9.81
        js = JointState()
        sec_to_stamp(t, js.header.stamp)
        js.name = names
        js.position = [float(q[7 + idx[n_]] + rng.normal(0, 1e-3)) for n_ in names]
        js.velocity = [0.0] * len(names)
        profiling = profiler is not None and k >= n // 10
        if profiling:
            profiler.enable()
        pipe.add_imu(imu, t)
        t0 = time.perf_counter()
        pipe.step(t, js)
        times.append(time.perf_counter() - t0)
        if profiling:
            profiler.disable()
    return times[n // 10:]


def python_calls_per_cycle(robot, params, n=500) -> float:
    """Python-level calls (functions, methods, builtins; cProfile's count) per library cycle:
    a figure of the cycle's interpreter overhead that the machine's load does not change."""
    profiler = cProfile.Profile()
    library_cycle(robot, params, n, profiler)
    return round(pstats.Stats(profiler).total_calls / (n - n // 10), 1)


def measure(robot_name, trigger, cycles, rate, seconds=None, thread_priority=0, cpu_affinity=(), robot_cpus=()):
    ctrl_params = {"trigger": trigger, "thread_priority": int(thread_priority),
                   **({"update_rate": rate} if rate else {}),
                   **({"cpu_affinity": [int(c) for c in cpu_affinity]} if cpu_affinity else {})}
    graph_cpus = sorted(os.sched_getaffinity(0))
    graph = Graph(robot_name, params={"whole_body_controller": ctrl_params,
                                      "morphology_manager": {"auto_detect": False}})
    ctrl = graph.nodes["whole_body_controller"]
    rate = rate or ctrl.rate
    duration = 3.0 + (seconds if seconds else cycles / rate * 3.0) + 10.0
    env = dict(os.environ)
    source = subprocess.Popen([sys.executable, "-m", "hybrid_dynamics.ros.sources", robot_name, "--rate", str(rate),
                               "--duration", str(duration), "--noise", "0.001",
                               "--thread-priority", str(int(thread_priority)),
                               "--cpus", ",".join(map(str, robot_cpus))],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    collections = []                    # (start, duration, generation) of every collection

    def on_gc(phase, info, started=[0.0]):
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            collections.append((started[0], time.perf_counter() - started[0], info["generation"]))
    callbacks = CallbackSpans(graph.nodes)
    try:
        graph.start()
        graph.spin_until(lambda: ctrl.stats.count > 200, timeout=30.0)
        ctrl.stats.reset()
        callbacks.clear()
        work0 = executor_work(graph.executor)
        gc.callbacks.append(on_gc)
        c0, s0, t0 = ctrl.cycles, ctrl.safe_cycles, time.monotonic()
        k0 = ctrl.loop.skipped if ctrl.loop is not None else 0
        end = time.monotonic() + (seconds if seconds else duration)
        # this thread wakes seldom: each wake-up takes the GIL, and a real-time cycle thread
        # (--thread-priority) waits for it while the load keeps this one off a core
        poll = 1.0 if seconds else 0.05
        while time.monotonic() < end and (seconds or ctrl.stats.count < cycles) and source.poll() is None:
            time.sleep(min(poll, max(0.0, end - time.monotonic())))
        elapsed = time.monotonic() - t0
        cycles_run = ctrl.cycles - c0
        lat = ctrl.stats.latencies()[:None if seconds else cycles]
        comp = ctrl.stats.computes()[:None if seconds else cycles]
        misses = ctrl.stats.deadline_misses
        safe = ctrl.safe_cycles - s0          # in the measured window, not the start-up
        kind = ctrl.control.kind
        periodic = trigger != "joint_states"
        skipped = ctrl.loop.skipped - k0 if ctrl.loop is not None else None
        executor = callbacks.executor_cpu(elapsed, cycles_run)
        executor.update(executor_work(graph.executor, work0, cycles_run))
        params = ctrl.p
        spans = ctrl.stats.timeline()
        priority, cpus = ctrl.cycle_priority, ctrl.cycle_cpus
        source_cpus = sorted(os.sched_getaffinity(source.pid)) if source.poll() is None else None
    finally:
        if on_gc in gc.callbacks:
            gc.callbacks.remove(on_gc)
        source.terminate()
        source.wait(timeout=10)
        graph.shutdown()
    return {
        "trigger": trigger, "controller": kind, "update_rate_hz": rate,
        "thread_priority": priority,       # SCHED_FIFO priority the cycle's thread ran at (0: default scheduler)
        "cpu_affinity": cpus,              # CPUs the cycle's thread ran on
        "graph_cpus": graph_cpus,          # CPUs of the graph's process (its threads when the graph started)
        "robot_cpus": source_cpus,         # CPUs of the stand-in robot's process
        "joint_states_measured": int(len(lat)),
        "cycles_per_s": round(cycles_run / elapsed, 1) if elapsed > 0 else None,
        "latency_ms": _percentiles(lat), "cycle_compute_ms": _percentiles(comp),
        "seconds": round(elapsed, 1), "cycles": int(cycles_run),
        "deadline_misses": int(misses) if periodic else None,
        "deadline_miss_ratio": round(misses / max(cycles_run, 1), 5) if periodic else None,
        "safe_mode_cycles": int(safe),
        "ticks_skipped": skipped,           # trigger: thread, ticks overrun by a cycle (not run)
        "misses_explained": explain_misses(spans, 1.0 / rate, collections, callbacks) if periodic else None,
        # the executor thread's CPU: the callbacks' and its own between them (CallbackSpans)
        "executor_cpu": executor,
    }, params


GAP_BINS_MS = (0.0, 0.9, 1.1, 1.5, 2.0, 3.0, 5.0, 10.0, np.inf)
WORK = ("waits", "slow_waits", "entities", "takes", "runs")     # WaitSetExecutor's counters


def executor_work(executor, since=None, cycles: int = 0) -> dict:
    """The package executor's counters (ros/executor.py: waits, waits with its services and
    waitables, handles added to them, messages taken, callbacks run); with ``since`` (an
    earlier reading) and ``cycles``, what the window between had per control cycle and the
    handles per wait. Empty for another executor."""
    now = {k: getattr(executor, k, None) for k in WORK}
    if any(v is None for v in now.values()):
        return {}
    if since is None:
        return now
    d = {k: now[k] - since[k] for k in WORK}
    if cycles <= 0 or d["waits"] <= 0:
        return {}
    return {"waits_per_cycle": round(d["waits"] / cycles, 2), "slow_waits_per_cycle": round(d["slow_waits"] / cycles, 3),
            "entities_per_wait": round(d["entities"] / d["waits"], 1), "takes_per_cycle": round(d["takes"] / cycles, 2),
            "callbacks_per_cycle": round(d["runs"] / cycles, 2)}


class CallbackSpans:
    """Every executor callback of the graph's nodes (subscriptions and timers) timed: its
    (start, end) on ``time.perf_counter`` and which it was, in a ring, so that a late cycle
    can be lined up with what the executor ran while it waited (the benchmark's own wrapper
    around each callback: a few hundred nanoseconds each).

    Also the executor thread's CPU time (``time.thread_time``, so not inflated by the waits
    for a core that a loaded machine adds to wall times): spent inside the callbacks, and in
    all from the first callback's start to the last one's end; the difference is the
    executor's own work between callbacks (building its wait set, taking and converting each
    message, its task machinery): :meth:`executor_cpu`."""

    def __init__(self, nodes, size: int = 400000):
        self.spans = np.zeros((size, 2))
        self.which = np.zeros(size, np.intp)
        self.names = []
        self.n = 0
        self.cpu = [0.0, None, None]        # CPU in callbacks, thread CPU at the first start, at the last end
        for node_name, node in nodes.items():
            for kind, entities in (("subscription", node.subscriptions), ("timer", node.timers)):
                for e in entities:
                    label = f"{node_name} {e.topic_name}" if kind == "subscription" else \
                        f"{node_name} timer {e.timer_period_ns / 1e6:g} ms"
                    e.callback = self._timed(e.callback, len(self.names))
                    self.names.append(label)

    def _timed(self, callback, index):
        def timed(*args):
            t0 = time.perf_counter()
            c0 = time.thread_time()
            try:
                return callback(*args)
            finally:
                c1 = time.thread_time()
                i = self.n % len(self.which)
                self.spans[i] = t0, time.perf_counter()
                self.which[i] = index
                self.n += 1
                cpu = self.cpu
                cpu[0] += c1 - c0
                if cpu[1] is None:
                    cpu[1] = c0
                cpu[2] = c1
        return timed

    def clear(self) -> None:
        self.n = 0
        self.cpu = [0.0, None, None]

    def executor_cpu(self, seconds: float, cycles: int) -> dict:
        """The executor thread's CPU since :meth:`clear` over ``seconds`` of wall time with
        ``cycles`` control cycles: in all and in the callbacks (CPU seconds per second), and
        the executor's own work between callbacks per control cycle (us). Every callback
        must have run in one thread (a single-threaded executor)."""
        inside, first, last = self.cpu
        if first is None or seconds <= 0 or cycles <= 0:
            return {}
        total = last - first
        return {"thread_cpu_s_per_s": round(total / seconds, 3), "callbacks_cpu_s_per_s": round(inside / seconds, 3),
                "own_cpu_us_per_cycle": round(1e6 * (total - inside) / cycles, 1)}

    def between(self, a: float, b: float):
        """(label, ms) of the callbacks that ran within [a, b], longest first."""
        n = min(self.n, len(self.which))
        s, w = self.spans[:n], self.which[:n]
        hit = (s[:, 1] > a) & (s[:, 0] < b)
        return sorted(((self.names[k], 1e3 * (e - st)) for (st, e), k in zip(s[hit], w[hit])), key=lambda x: -x[1])


def explain_misses(spans, period: float, collections, callbacks=None) -> dict:
    """Where the deadline misses of a periodic run come from, from every cycle's (start, end)
    and the garbage collector's collections in the same window: the histogram of the time
    between consecutive starts (ms), how many misses started late (more than 1.5 periods after
    the previous start) and how many computed longer than a period, how many of either had a
    collection in the cycle or in the wait before it, and the collections' count and length by
    generation."""
    spans = np.asarray(spans)
    gcs = np.asarray(collections, float).reshape(-1, 3)
    out = {"cycles": int(len(spans))}
    if len(spans) < 2:
        return out
    gap = np.diff(spans[:, 0])
    compute = spans[1:, 1] - spans[1:, 0]
    late, long_ = gap > 1.5 * period, compute > period
    counts, _ = np.histogram(gap * 1e3, bins=GAP_BINS_MS)
    out["start_interval_ms_histogram"] = {f"{a:g}-{b:g}": int(c) for a, b, c in zip(GAP_BINS_MS, GAP_BINS_MS[1:], counts)}
    # a collection that overlaps [previous end, this end]: in the wait before the cycle or in it
    lo, hi = spans[:-1, 1], spans[1:, 1]
    if len(gcs):
        g0, g1 = gcs[:, 0], gcs[:, 0] + gcs[:, 1]
        with_gc = np.array([bool(np.any((g1 > a) & (g0 < b))) for a, b in zip(lo, hi)])
    else:
        with_gc = np.zeros(len(gap), bool)
    missed = late | long_
    out.update(missed=int(missed.sum()), late_starts=int(late.sum()), long_cycles=int(long_.sum()),
               missed_with_a_collection=int((missed & with_gc).sum()),
               late_start_excess_ms=_percentiles(gap[late] - period))
    out["collections"] = {str(g): {"count": int((gcs[:, 2] == g).sum()),
                                   "ms": _percentiles(gcs[gcs[:, 2] == g, 1])} for g in range(3)}
    if callbacks is not None:
        # per late start, the executor's longest callback in the wait before it (other than the
        # controller's own cycle): by which callback, how often and how long (ms); and the
        # executor's busy time in those waits
        longest, busy = {}, []
        ctrl_cycle = "whole_body_controller timer %g ms" % (1e3 * period)
        for k in np.flatnonzero(late):
            ran = [(name, ms) for name, ms in callbacks.between(lo[k], spans[k + 1, 0]) if name != ctrl_cycle]
            busy.append(sum(ms for _, ms in ran) / 1e3)
            if ran:
                longest.setdefault(ran[0][0], []).append(ran[0][1])
        out["late_starts_longest_callback_in_the_wait"] = {
            name: {"times": len(v), "ms_p50": round(float(np.median(v)), 3), "ms_max": round(float(max(v)), 3)}
            for name, v in sorted(longest.items(), key=lambda kv: -len(kv[1]))}
        out["late_starts_wait_busy_ms"] = _percentiles(busy)
        every = {}
        n = min(callbacks.n, len(callbacks.which))
        dur = callbacks.spans[:n, 1] - callbacks.spans[:n, 0]
        for k, name in enumerate(callbacks.names):
            d = dur[callbacks.which[:n] == k]
            if len(d):
                every[name] = {"count": int(len(d)), "ms": _percentiles(d)}
        out["callbacks"] = every
    return out


def placement(mode) -> list:
    """The CPUs of the graph's process, of the cycle's thread and of the stand-in robot, when they
    were not the machine's every CPU (notes for the table and the summary line)."""
    every = list(range(os.cpu_count() or 0))
    out = []
    if mode.get("graph_cpus") and mode["graph_cpus"] != every:
        out.append(f"graph on CPU {','.join(map(str, mode['graph_cpus']))}")
    if mode.get("cpu_affinity") and mode["cpu_affinity"] != every and mode["cpu_affinity"] != mode.get("graph_cpus"):
        out.append(f"cycle on CPU {','.join(map(str, mode['cpu_affinity']))}")
    if mode.get("robot_cpus") and mode["robot_cpus"] != every:
        out.append(f"robot on CPU {','.join(map(str, mode['robot_cpus']))}")
    return out


def table(out) -> str:
    """The README's pipeline table from ``--json`` output: one row per trigger mode, and the
    library cycle (the same estimate + QP without ROS) as the reference row."""
    ref = out["library_cycle_ms"]
    lines = [f"| {out['robot']}, trigger | rate (Hz) | cycles/s held | deadlines missed | latency p50 / p99 / max (ms) "
             "| cycle compute p50 / p99 (ms) |",
             "|---|---|---|---|---|---|"]
    for m in out["modes"]:
        lat, comp = m["latency_ms"], m["cycle_compute_ms"]
        missed = "- (one cycle per joint state)" if m["deadline_misses"] is None else \
            f"{m['deadline_misses']} of {m['cycles']} ({100 * m['deadline_miss_ratio']:.2f} %)"
        notes = ([f"SCHED_FIFO {m['thread_priority']}"] if m.get("thread_priority") else []) + placement(m)
        fifo = f" ({', '.join(notes)})" if notes else ""
        lines.append(f"| `{m['trigger']}`{fifo} | {m['update_rate_hz']:g} | {m['cycles_per_s']} | {missed} "
                     f"| {lat['p50']:.3f} / {lat['p99']:.3f} / {lat['max']:.2f} | {comp['p50']:.3f} / {comp['p99']:.3f} |")
    lines.append(f"| library cycle, no ROS ({ref['python_calls_per_cycle']:g} Python calls) | - | - | - "
                 f"| - | {ref['p50']:.3f} / {ref['p99']:.3f} |")
    return "\n".join(lines)


def run(args) -> int:
    if args.table:
        try:
            print(table(json.loads(open(args.table).read())))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{args.table}: not a saved `bench pipeline --json` output ({exc})") from None
        return 0
    modes = TRIGGERS if args.trigger == "all" else (args.trigger,)
    every = sorted(os.sched_getaffinity(0))
    if args.graph_cpus:          # every thread of this process; the graph's, made after, inherit it
        refused = use_process_cpus(args.graph_cpus)
        if refused is not None:
            raise InputError(f"--graph-cpus: {refused}")
    robot_cpus = args.robot_cpus or every      # not the graph's: the stand-in robot starts from this thread
    results = []
    params = None
    for mode in modes:
        res, params = measure(args.robot, mode, args.cycles, args.rate, args.seconds, args.thread_priority,
                              args.cpu_affinity, robot_cpus)
        results.append(res)
    robot = load_robot(args.robot)
    ref = _percentiles(library_cycle(robot, params))
    ref["python_calls_per_cycle"] = python_calls_per_cycle(robot, params)
    for r in results:
        if r["latency_ms"]["p50"] and ref["p50"]:
            r["ratio_p50_to_library_cycle"] = round(r["latency_ms"]["p50"] / ref["p50"], 2)
    out = {"robot": args.robot, "cycles": args.cycles, "machine_cpus": os.cpu_count(),
           "library_cycle_ms": ref, "modes": results}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{args.robot}: library cycle (estimate + QP, no ROS) p50 {ref['p50']} ms p99 {ref['p99']} ms, "
              f"{ref['python_calls_per_cycle']} Python calls per cycle")
        for r in results:
            lat = r["latency_ms"]
            print(f"  {r['trigger']:>12}: {r['joint_states_measured']} joint states, latency p50 {lat['p50']} ms "
                  f"p99 {lat['p99']} ms max {lat['max']} ms; {r['cycles_per_s']} cycles/s at "
                  f"{r['update_rate_hz']:g} Hz; deadline misses {r['deadline_misses']} of {r['cycles']} "
                  f"cycles in {r['seconds']} s ({r['deadline_miss_ratio']})" + "".join("; " + n for n in placement(r)))
    return 0

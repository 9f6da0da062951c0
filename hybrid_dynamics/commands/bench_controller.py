"""``hybrid-dynamics bench controller [--robot R] [--workload W] [--json]``.

The full control cycle of :class:`~hybrid_dynamics.control.WholeBodyController` (one
Pinocchio pass, QP build, solve, torque and actuator mapping: one ``update`` call) over two
workloads per robot (:mod:`hybrid_dynamics.control.tsid_peer.workloads`): ``sway`` (standing,
every contact down, little active) and ``walk`` (the demo's gait: swing feet, stance feet
pushed onto their friction pyramids, torque limits scaled so that they bind at the peaks).
For each: p50, p99 and max, how many cycles ended with an active inequality, how many took
the solver's equality-only shortcut, fallbacks. Closed chains are timed only on states whose
loops are closed: the closure residual is checked (<= 1e-10) before timing; their whole cycle
through the runtime Pipeline (estimators + QP + actuator forces) is timed too, against paper
001's 0.38 ms. ``--table saved.json`` prints the README's table from a ``--json`` output.
``--evict-kib N`` writes N KiB between timed cycles in both loops (ours and TSID's): the cycle
as it runs after an interruption, its code and data fetched again (the footprint's cost).

In the same run TSID 1.7.1 solves the same problems (same robot, stance, tasks, weights,
gains, limits and states; :mod:`hybrid_dynamics.control.tsid_peer`) in its own environment
(``make tsid-venv``) with its default solver (``HQuadProg``) and its fastest
(``HQuadProgFast``): their percentiles, the ratios ours / TSID of the p50s and p99s, and the
largest torque difference. ``hybrid_biped`` (closed chains) has no TSID counterpart.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from ..control import WholeBodyController
from ..estimation.base_estimator import ImuSample
from ..control import tsid_peer as tp
from ..control.solvers import SOLVERS
from ..control.tsid_peer import workloads as wl
from ..errors import InputError
from ..runtime.inputs import imu_sample, joint_state_sample
from ..runtime.pipeline import Pipeline
from ..model.robot import load_robot

COMMAND = ("bench", "controller")
HELP = "time the whole-body QP controller's full cycle, and TSID on the same problem"
ROBOTS = ("jethexa", "solo12", "talos", "hybrid_biped")
DEFAULT_SOLVER = "goldfarb_idnani"   # the fastest backend on every row of the table (docs/qp.md)
CLOSURE_TOL = 1e-10          # closed chains are timed only on states whose loops are closed
PAPER_001_CYCLE_MS = 0.38    # paper 001's C++ estimator + model update + ID at 1 kHz
# the whole cycle's stages: message parsing and checks; passive-joint closure and base
# estimator; references and the command mapping; the controller's model update, QP build and
# decoding; the QP solve
STAGES = ("inputs", "estimate", "references_and_command", "model_build_decode", "solve")
# the whole cycle's thread CPU time per stage (--cpu-stages), finer: message parsing and checks;
# the passive-state estimator; the base estimator; the rest of the estimate (contacts); the
# references; the controller's model update; the QP build (tasks, layout: the model update
# apart); the backend's call (goldfarb_idnani: the compiled fill, solve and torques); the
# decoding; the command's glue (the controller's and the command mapping); the rest of the step
CPU_STAGES = ("inputs", "passive_completion", "base_estimator", "estimate_rest", "references", "model_update",
              "qp_build", "solve", "decode", "command_glue", "step_rest", "total")


def add_arguments(parser) -> None:
    parser.add_argument("--robot", action="append", default=None,
                        help=f"robot(s) to time (repeatable; default: {', '.join(ROBOTS)})")
    parser.add_argument("--cycles", type=int, default=2000, help="control cycles per robot (default 2000)")
    parser.add_argument("--solver", action="append", choices=SOLVERS, default=None,
                        help="our QP backend(s) (repeatable: each is timed on the same samples, "
                             f"the first is compared with TSID; default {DEFAULT_SOLVER})")
    parser.add_argument("--backends", action="store_true",
                        help=f"time every backend ({', '.join(SOLVERS)}): the comparison table")
    parser.add_argument("--workload", action="append", choices=wl.WORKLOADS, default=None,
                        help="workload(s) (repeatable; default: both)")
    parser.add_argument("--no-tsid", action="store_true", help="skip the TSID peer")
    parser.add_argument("--cpu-stages", action="store_true",
                        help="closed chains: the whole cycle's thread CPU time per stage too (another run)")
    parser.add_argument("--evict-kib", type=int, default=0, metavar="N",
                        help="write N KiB between timed cycles in both loops, outside the timed call (0: "
                             "nothing): the cycle after its code and data left the caches (this machine's L2 "
                             "is 2048 KiB per core)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--table", metavar="JSON", default=None,
                        help="print the README's figures table (Markdown) from a saved --json output and exit")


def _workload(robot, name: str, cycles: int):
    """The samples of a workload and the controller overrides it runs with; closed chains
    only on states whose loops are closed (checked here, before anything is timed)."""
    samples = wl.workload(robot, name, cycles)
    residual = wl.closure_residual(robot, samples)
    if residual > CLOSURE_TOL:
        raise InputError(f"{robot.name} {name}: a benchmark state has its loops open by {residual:.1e}")
    overrides = dict(tp.SAME_PROBLEM)
    scale = None
    if name == "walk":             # torque limits that bind at the most loaded joint's peaks
        scale = tp.binding_torque_scale(robot, samples, overrides)
        overrides["limits"] = {"torque_scale": scale}
    return samples, overrides, residual, scale


def _cycle_inputs(robot, samples):
    """Two passes over the samples at 1 kHz as the whole cycle's inputs: (first of a pass,
    stamp, joint-state message of the actuated joints, IMU message of the base with specific
    force +g)."""
    m = robot.model
    names = list(robot.actuated_joints)
    iq = [m.joints[m.getJointId(n)].idx_q for n in names]
    iv = [m.joints[m.getJointId(n)].idx_v for n in names]
    for rep in range(2):
        for k, s in enumerate(samples):
            t = 1.0 + (rep * len(samples) + k) * 1e-3
            yield (k == 0, t, joint_state_sample(t, names, s.q[iq], s.v[iv]),
                   imu_sample(t, ImuSample(s.q[3:7], s.v[3:6], np.array([0.0, 0.0, 9.81]))))


def whole_cycle(robot, samples, overrides) -> dict:
    """Closed chains: the whole cycle of :class:`~hybrid_dynamics.runtime.pipeline.Pipeline`
    (joint-state and IMU parsing, passive-state and base estimators, weight-shift references,
    model update, QP, actuator forces) at 1 kHz on the samples' actuated states, with an IMU
    reading of the sample's base (specific force +g). p50 / p99 / max against paper 001's
    0.38 ms for its C++ estimator and ID alone, and the same per stage (:data:`STAGES`)."""
    pipe = Pipeline(robot, {"references": "weight_shift", "controller": overrides})
    times, safe, split = [], 0, []
    for first, t, js, imu in _cycle_inputs(robot, samples):
        if first:                                # the first pass warms caches and layouts
            times, safe, split = [], 0, []
        t0 = time.perf_counter()
        cycle = pipe.step(t, js, imu)
        total = time.perf_counter() - t0
        times.append(total)
        safe += cycle.safe_mode is not None
        if cycle.output is not None:
            out = cycle.output
            split.append((total - cycle.estimate_time - cycle.control_time, cycle.estimate_time,
                          cycle.control_time - out.cycle_time, out.cycle_time - out.solve_time,
                          out.solve_time))
    figures = _figures(times)
    figures.update(safe_mode_cycles=safe, reference_ms=PAPER_001_CYCLE_MS,
                   ratio_p99_to_reference=round(figures["p99_ms"] / PAPER_001_CYCLE_MS, 2))
    if split:
        figures["stages"] = {name: {k: round(v, 4) for k, v in tp.percentiles(col).items() if k != "over_1ms"}
                             for name, col in zip(STAGES, zip(*split))}
    return figures


def _cpu_timed(obj, name: str, key: str, acc: dict) -> None:
    """``obj.name`` (this instance only) wrapped to add its thread CPU time (ns) to ``acc[key]``."""
    fn = getattr(obj, name)
    clock = time.thread_time_ns

    def timed(*args, **kwargs):
        t0 = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[key] = acc.get(key, 0) + clock() - t0
    setattr(obj, name, timed)


def cpu_stages(robot, samples, overrides) -> dict:
    """The whole cycle of :func:`whole_cycle` run again with the thread CPU time of each stage
    (:data:`CPU_STAGES`; CPU time: another process's time slice does not count) read around the
    calls that make it: p50 / p99 per stage (ms). Each wrapped call costs about 1.3 us (two
    thread-clock reads), eleven a cycle: ``total`` is about 15 us above the untimed cycle's CPU
    time, and a stage carries the cost of the wrappers inside it (the derived rests and glue
    most of it)."""
    pipe = Pipeline(robot, {"references": "weight_shift", "controller": overrides})
    st, ctrl = pipe.state, pipe.control.controller
    acc: dict = {}
    for obj, name, key in ((pipe, "add_imu", "inputs"), (pipe, "add_joint_state", "inputs"),
                           (st.passive.est, "update", "passive_completion"), (st.estimator, "update", "base_estimator"),
                           (pipe, "estimate", "estimate"), (pipe.references, "update", "references"),
                           (pipe.control, "cycle", "control"), (ctrl.formulation.state, "update", "model_update"),
                           (ctrl.formulation, "build", "build"), (ctrl.formulation, "decode", "decode"),
                           (ctrl.solver, "solve", "solve")):
        _cpu_timed(obj, name, key, acc)
    rows = []
    for first, t, js, imu in _cycle_inputs(robot, samples):
        if first:                                # the first pass warms caches and layouts
            rows = []
        acc.clear()
        t0 = time.thread_time_ns()
        pipe.step(t, js, imu)
        rows.append(dict(acc, total=time.thread_time_ns() - t0))
    col = {k: np.array([r.get(k, 0) for r in rows], dtype=float) * 1e-9 for k in set().union(*rows)}
    col["estimate_rest"] = col["estimate"] - col["passive_completion"] - col["base_estimator"]
    col["qp_build"] = col["build"] - col["model_update"]
    col["command_glue"] = col["control"] - col["build"] - col["solve"] - col["decode"]
    col["step_rest"] = col["total"] - col["inputs"] - col["estimate"] - col["references"] - col["control"]
    return {name: {k: round(v, 4) for k, v in tp.percentiles(col[name]).items() if k in ("p50_ms", "p99_ms")}
            for name in CPU_STAGES}


def _figures(times, run=None) -> dict:
    out = {k: round(v, 4) for k, v in tp.percentiles(times).items()}
    if run is not None:
        out.update(fallbacks=run["fallbacks"], active_cycles=run["active_cycles"], shortcuts=run["shortcuts"])
    return out


def _time_ours(robot, samples, overrides, solver, evict_bytes: int = 0):
    ctrl = WholeBodyController(robot, dict(overrides, solver=solver))
    tp.run_ours(ctrl, samples[: min(200, len(samples))])          # warm-up (caches, layouts)
    ours = tp.run_ours(ctrl, samples, evict_bytes=evict_bytes)
    return ctrl, ours, {**_figures(ours["times"], ours), "infeasible": ctrl.stats["infeasible"]}


def bench_workload(robot, workload: str, cycles: int, solvers, tsid: bool, stages: bool = False,
                   evict_kib: int = 0) -> dict:
    samples, overrides, residual, scale = _workload(robot, workload, cycles)
    evict_bytes = 1024 * evict_kib
    ctrl, ours, figures = _time_ours(robot, samples, overrides, solvers[0], evict_bytes)
    result = {"workload": workload, "cycles": cycles, "evict_kib": evict_kib, "closure_residual": residual,
              "torque_scale": scale, "stance_patterns": len({s.stance for s in samples}),
              "ours": figures}
    if len(solvers) > 1:
        result["backends"] = {solvers[0]: figures}
        for name in solvers[1:]:
            result["backends"][name] = _time_ours(robot, samples, overrides, name, evict_bytes)[2]
    if robot.loops is not None:
        result["whole_cycle"] = whole_cycle(robot, samples, dict(overrides, solver=solvers[0]))
        if stages:
            result["whole_cycle"]["cpu_stages"] = cpu_stages(robot, samples, dict(overrides, solver=solvers[0]))
    if not tsid:
        return result
    if robot.loops is not None:
        result["tsid"] = {"skipped": "closed chains: TSID has no loop-closure formulation here"}
        return result
    if tp.tsid_python() is None:
        result["tsid"] = {"skipped": "TSID environment missing: make tsid-venv"}
        return result
    result["tsid"] = {}
    for name in tp.TSID_SOLVERS:
        peer = tp.run_peer(tp.problem(robot, ctrl, samples, solver=name, evict_bytes=evict_bytes))
        fig = _figures(peer["times"])
        diff = np.abs(np.array(ours["tau"]) - np.array(peer["tau"]))
        result["tsid"][name] = {**fig, "failed_solves": int(sum(1 for s in peer["status"] if s != 0)),
                                "variables": peer["nvar"], "equalities": peer["neq"], "inequalities": peer["nin"],
                                "ratio_p50": round(result["ours"]["p50_ms"] / fig["p50_ms"], 2),
                                "ratio_p99": round(result["ours"]["p99_ms"] / fig["p99_ms"], 2),
                                "torque_max_abs_diff": float(diff.max()),
                                "torque_max_abs": float(np.abs(np.array(peer["tau"])).max())}
    return result


def bench_robot(name: str, cycles: int, solvers, tsid: bool, workloads=wl.WORKLOADS, stages: bool = False,
                evict_kib: int = 0) -> dict:
    robot = load_robot(name)
    return {"robot": name, "nv": robot.nv, "contacts": len(robot.contacts), "solver": solvers[0],
            "workloads": {w: bench_workload(robot, w, cycles, solvers, tsid, stages, evict_kib) for w in workloads}}


def _one_thread_one_core() -> None:
    """BLAS threads ruin small-matrix latency and are fixed when numpy loads: if they are not
    already 1, run the command again with them set. Then pin the process (and TSID's, which
    inherits it) to one core."""
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1" and "HYBRID_DYNAMICS_BENCH_REEXEC" not in os.environ:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   HYBRID_DYNAMICS_BENCH_REEXEC="1")
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, "-m", "hybrid_dynamics.cli", *sys.argv[1:]], env)
    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[-1]})


def _pair(f) -> str:
    return f"{f['p50_ms']:.3f} / {f['p99_ms']:.3f}"


def table(results) -> str:
    """The README's whole-body QP table from ``--json`` output (one robot or a list)."""
    results = results if isinstance(results, list) else [results]
    lines = ["| robot | workload | cycles with an active inequality / shortcut | ours p50 / p99 (ms) "
             "| TSID HQuadProg p50 / p99 | TSID HQuadProgFast p50 / p99 | ours / fastest TSID p50, p99 "
             "| max torque difference |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        for w, b in r["workloads"].items():
            o, t = b["ours"], b.get("tsid", {})
            cells = [r["robot"], w, f"{o['active_cycles']} / {o['shortcuts']} of {b['cycles']}",
                     _pair(o) + (f" ({o['fallbacks']} fallbacks)" if o["fallbacks"] else "")]
            if all(name in t for name in tp.TSID_SOLVERS):
                fast = min(tp.TSID_SOLVERS, key=lambda n: t[n]["p50_ms"])
                f = t[fast]
                cells += [_pair(t[n]) for n in tp.TSID_SOLVERS]
                cells += [f"{f['ratio_p50']:.2f}, {f['ratio_p99']:.2f}",
                          f"{f['torque_max_abs_diff']:.1e} of {f['torque_max_abs']:.1f} N m"]
            else:
                wc = b.get("whole_cycle")
                cells += [f"whole cycle {_pair(wc)}" if wc else "-", "-", "-",
                          f"closure {b['closure_residual']:.0e}" if b["closure_residual"] else "-"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(args) -> int:
    if args.table:
        try:
            with open(args.table) as fh:
                print(table(json.load(fh)))
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"{args.table}: not a saved `bench controller --json` output ({exc})")
        return 0
    names = args.robot or list(ROBOTS)
    if sys.argv[1:3] == ["bench", "controller"]:       # a real command line (not main(argv))
        _one_thread_one_core()
    if args.cycles < 10:
        raise InputError("--cycles must be at least 10")
    if args.evict_kib < 0:
        raise InputError("--evict-kib must be 0 or more")
    solvers = args.solver or [DEFAULT_SOLVER]
    if args.backends:
        solvers = [DEFAULT_SOLVER] + [s for s in SOLVERS if s != DEFAULT_SOLVER]
    results = [bench_robot(n, args.cycles, solvers, not args.no_tsid, args.workload or wl.WORKLOADS, args.cpu_stages,
                           args.evict_kib) for n in names]
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0], indent=2))
        return 0
    for r in results:
        for w, b in r["workloads"].items():
            o = b["ours"]
            if b["evict_kib"]:
                print(f"{'':>12} {b['evict_kib']} KiB written between timed cycles (both loops)")
            print(f"{r['robot']:>12} {w:>5} ({r['solver']}): p50 {o['p50_ms']:.3f} ms  p99 {o['p99_ms']:.3f} ms  "
                  f"max {o['max_ms']:.3f} ms | active inequality in {o['active_cycles']}/{b['cycles']} cycles, "
                  f"shortcut in {o['shortcuts']}, fallbacks {o['fallbacks']}"
                  + (f", closure {b['closure_residual']:.0e}" if b["closure_residual"] else ""))
            for name, f in list(b.get("backends", {}).items())[1:]:
                print(f"{'':>19} ours with {name:<9} p50 {f['p50_ms']:.3f} ms  p99 {f['p99_ms']:.3f} ms  "
                      f"max {f['max_ms']:.3f} ms | fallbacks {f['fallbacks']}")
            wc = b.get("whole_cycle")
            if wc:
                print(f"{'':>19} whole cycle (runtime Pipeline: estimators + QP + actuator forces) p50 "
                      f"{wc['p50_ms']:.3f} ms  p99 {wc['p99_ms']:.3f} ms  max {wc['max_ms']:.3f} ms | paper 001's C++: "
                      f"{wc['reference_ms']} ms, p99 ratio {wc['ratio_p99_to_reference']:.2f}, "
                      f"safe-mode cycles {wc['safe_mode_cycles']}")
                for name, f in wc.get("stages", {}).items():
                    print(f"{'':>23} {name:<24} p50 {f['p50_ms']:.3f} ms  p99 {f['p99_ms']:.3f} ms")
                if "cpu_stages" in wc:
                    print(f"{'':>19} whole cycle again, thread CPU time per stage:")
                for name, f in wc.get("cpu_stages", {}).items():
                    print(f"{'':>23} {name:<24} p50 {f['p50_ms']:.4f} ms  p99 {f['p99_ms']:.4f} ms")
            t = b.get("tsid", {})
            if "skipped" in t:
                print(f"{'':>19} TSID: {t['skipped']}")
            for name, f in t.items() if "skipped" not in t else ():
                print(f"{'':>19} TSID {name:<13} p50 {f['p50_ms']:.3f} ms  p99 {f['p99_ms']:.3f} ms | "
                      f"ours/TSID p50 {f['ratio_p50']:.2f}  p99 {f['ratio_p99']:.2f} | "
                      f"max |dtau| {f['torque_max_abs_diff']:.1e} of {f['torque_max_abs']:.1f}")
    return 0

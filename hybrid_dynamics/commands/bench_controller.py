"""``hybrid-dynamics bench controller [--robot R] [--json]``.

The full control cycle of :class:`~hybrid_dynamics.control.WholeBodyController` (one
Pinocchio pass, QP build, solve, torque and actuator mapping: one ``update`` call) over a
standing sway (joints oscillating around the standing pose, CoM reference circling, every
contact in stance): p50, p99 and max. In the same run TSID 1.7.1 solves the same problem
(same robot, contacts, tasks, weights, gains, limits and states; see
:mod:`hybrid_dynamics.control.tsid_peer`) in its own environment (``make tsid-venv``), and the
command prints TSID's percentiles, the ratio of the p50s (ours / TSID) and the largest torque
difference between the two. ``hybrid_biped`` (closed chains) has no TSID counterpart.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

from ..control import WholeBodyController
from ..control import tsid_peer as tp
from ..errors import InputError
from ..model.robot import load_robot

COMMAND = ("bench", "controller")
HELP = "time the whole-body QP controller's full cycle, and TSID on the same problem"
ROBOTS = ("jethexa", "solo12", "talos", "hybrid_biped")


def add_arguments(parser) -> None:
    parser.add_argument("--robot", action="append", default=None,
                        help=f"robot(s) to time (repeatable; default: {', '.join(ROBOTS)})")
    parser.add_argument("--cycles", type=int, default=2000, help="control cycles per robot (default 2000)")
    parser.add_argument("--solver", choices=("proxsuite", "osqp"), default="proxsuite")
    parser.add_argument("--no-tsid", action="store_true", help="skip the TSID peer")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _states(robot, cycles):
    if robot.loops is None:
        return tp.sway_states(robot, cycles)
    # closed chains: the standing pose (loops closed) with the CoM reference circling
    return [(q, np.zeros(robot.nv), c) for q, _, c in tp.sway_states(robot, cycles, amplitude=0.0)]


def bench_robot(name: str, cycles: int, solver: str, tsid: bool) -> dict:
    robot = load_robot(name)
    overrides = dict(tp.SAME_PROBLEM, solver=solver)
    ctrl = WholeBodyController(robot, overrides)
    states = _states(robot, cycles)
    tp.run_ours(ctrl, states[: min(200, cycles)])                  # warm-up (caches, layouts)
    ours = tp.run_ours(ctrl, states)
    result = {"robot": name, "nv": robot.nv, "contacts": len(ctrl.formulation.contacts),
              "solver": solver, "cycles": cycles,
              "ours": {**{k: round(v, 4) for k, v in tp.percentiles(ours["times"]).items()},
                       "fallbacks": ours["fallbacks"], "infeasible": ctrl.stats["infeasible"],
                       "kkt_shortcuts": getattr(ctrl.solver, "shortcuts", None)}}
    if not tsid:
        return result
    if robot.loops is not None:
        result["tsid"] = {"skipped": "closed chains: TSID has no loop-closure formulation here"}
        return result
    if tp.tsid_python() is None:
        result["tsid"] = {"skipped": "TSID environment missing: make tsid-venv"}
        return result
    peer = tp.run_peer(tp.problem(robot, ctrl, states))
    result["tsid"] = {**{k: round(v, 4) for k, v in tp.percentiles(peer["times"]).items()},
                      "failed_solves": int(sum(1 for s in peer["status"] if s != 0)),
                      "variables": peer["nvar"], "equalities": peer["neq"], "inequalities": peer["nin"]}
    result["ratio_p50"] = round(result["ours"]["p50_ms"] / result["tsid"]["p50_ms"], 2)
    diff = np.abs(np.array(ours["tau"]) - np.array(peer["tau"]))
    result["torque_max_abs_diff"] = float(diff.max())
    result["torque_max_abs"] = float(np.abs(np.array(peer["tau"])).max())
    return result


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


def run(args) -> int:
    names = args.robot or list(ROBOTS)
    if sys.argv[1:3] == ["bench", "controller"]:       # a real command line (not main(argv))
        _one_thread_one_core()
    if args.cycles < 10:
        raise InputError("--cycles must be at least 10")
    results = [bench_robot(n, args.cycles, args.solver, not args.no_tsid) for n in names]
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0], indent=2))
        return 0
    for r in results:
        o = r["ours"]
        line = (f"{r['robot']:>12} ({r['solver']}): p50 {o['p50_ms']:.3f} ms  p99 {o['p99_ms']:.3f} ms  "
                f"max {o['max_ms']:.3f} ms  >1ms {100 * o['over_1ms']:.1f}%  fallbacks {o['fallbacks']}")
        t = r.get("tsid")
        if t and "p50_ms" in t:
            line += (f" | TSID p50 {t['p50_ms']:.3f} ms p99 {t['p99_ms']:.3f} ms | ratio {r['ratio_p50']:.2f}"
                     f" | max |dtau| {r['torque_max_abs_diff']:.2e} N m")
        elif t:
            line += f" | TSID: {t['skipped']}"
        print(line)
    return 0

"""``hybrid-dynamics bench estimator --robot R [--json]``: estimator + model update + ID per cycle."""
from __future__ import annotations

import json

from ..analysis.closed_loop_checks import bench_cycle
from ..model.robot import load_robot

COMMAND = ("bench", "estimator")
HELP = ("time one control cycle of a closed-chain robot (passive-state estimator, model update, "
        "constrained ID; both legs, no contacts): p50, p99, max against the paper's 0.38 ms")


def add_arguments(parser) -> None:
    parser.add_argument("--robot", default="hybrid_biped", help="built-in name or path (default hybrid_biped)")
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    report = bench_cycle(load_robot(args.robot), cycles=max(10, args.cycles))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        c = report["cycle_ms"]
        print(f"{report['robot']}: cycle p50 {c['p50']:.3f} ms, p99 {c['p99']:.3f} ms, max {c['max']:.3f} ms "
              f"(paper's C++: {report['reference_ms']} ms; ratio {report['ratio_p50_to_reference']:.2f})")
        print(f"  estimator p50 {report['estimator_ms']['p50']:.3f} ms, model update + ID p50 "
              f"{report['model_update_and_id_ms']['p50']:.3f} ms; cold-start closure <= "
              f"{report['cold_start_iterations_max']} iterations")
    return 0

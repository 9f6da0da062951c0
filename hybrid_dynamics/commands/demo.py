"""``hybrid-dynamics demo [--scenario NAME] [--duration S] [--out DIR] [--undeclared]``.

Runs a scenario (config/scenarios/NAME.yaml) headless through the ROS 2 graph in one process
(ros/scenario.py): the MuJoCo sim node in lock-step with the whole-body controller (which owns
the gait and follows /cmd_vel), the state estimator, the morphology manager with its damage
detector, a scenario driver and a bag recorder, all on simulated time. Writes DIR/bag
(rosbag2, MCAP, every topic), PNG plots and DIR/summary.json made from the bag; a run that
stops early still writes them, and the summary says why. ``--library`` runs the same
scenario as plain library calls in a Python loop (sim/runner.py: no DDS, the fast harness). Exit status: 0 when the run
completed without a fall, 1 otherwise, 2 for bad input.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError
from ..ros.scenario import GraphRun
from ..sim.runner import ScenarioRun
from ..sim.scenario import load_scenario

COMMAND = ("demo",)
HELP = "simulate a scenario (hexapod walking, losing legs, reassembling its model) and report"


def add_arguments(parser) -> None:
    parser.add_argument("--scenario", default="hexapod_damage_s1",
                        help="a name in config/scenarios/ or a path to a scenario .yaml (default: hexapod_damage_s1)")
    parser.add_argument("--duration", type=float, default=None, help="simulated seconds (default: the scenario's)")
    parser.add_argument("--out", default="demo_output", help="output directory (default: demo_output)")
    parser.add_argument("--undeclared", action="store_true",
                        help="do not tell the morphology manager about the damage: it must detect it")
    parser.add_argument("--library", action="store_true",
                        help="plain library loop instead of the ROS 2 graph (faster; no DDS)")
    parser.add_argument("--no-bag", action="store_true", help="--library only: skip the rosbag2 recording")
    parser.add_argument("--quiet", action="store_true", help="no progress line")


def run(args) -> int:

    if args.duration is not None and not args.duration > 0:
        raise InputError(f"--duration must be positive, got {args.duration}", field="duration")
    if args.no_bag and not args.library:
        raise InputError("--no-bag needs --library (the graph always records)", field="no-bag")
    scenario = load_scenario(args.scenario)
    out = Path(args.out)
    if args.library:
        summary = ScenarioRun(scenario, out, duration=args.duration, undeclared=args.undeclared,
                              progress=not args.quiet, bag=not args.no_bag).run()
    else:
        summary = GraphRun(scenario, out, duration=args.duration, undeclared=args.undeclared,
                           progress=not args.quiet).run()
    keys = ("stopped", "distance_before_damage_m", "distance_after_damage_m", "speed_before_damage_mps",
            "speed_after_damage_mps", "max_abs_roll_deg", "max_abs_pitch_deg", "min_base_height_m", "fell",
            "qp_p99_ms", "fallbacks", "infeasible", "detection_latency_s", "false_detections", "real_time_factor")
    print(json.dumps({k: summary.get(k) for k in keys}, indent=2))
    print(f"wrote {out}/summary.json, {', '.join(summary.get('plots', []))}" + ("" if args.no_bag else f", {out}/bag"))
    return 0 if summary.get("completed") and not summary.get("fell") else 1

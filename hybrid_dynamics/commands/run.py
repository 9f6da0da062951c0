"""``hybrid-dynamics run --robot R``: the whole graph (state estimator, whole-body controller,
morphology manager) in one process, on a MultiThreadedExecutor, until Ctrl-C or --duration.

It talks to whatever publishes /joint_states and the IMU (a robot under ros2_control, the
MuJoCo plant); ``--standing-source`` adds a stand-in robot standing still, to try the graph
alone. Parameters come from config/<robot>.yaml, or --params-file.
"""
from __future__ import annotations

import json

import numpy as np

from ..ros.graph import run_graph
from ..ros.sources import StandingSource
from ..ros.whole_body_controller import TRIGGERS

COMMAND = ("run",)
HELP = "run the estimator, controller and morphology manager in one process (no launch system)"


def add_arguments(parser) -> None:
    parser.add_argument("--robot", default="jethexa", help="built-in robot name or path")
    parser.add_argument("--params-file", default=None, help="ROS 2 parameter YAML (default config/<robot>.yaml)")
    parser.add_argument("--duration", type=float, default=None, help="seconds (default: until Ctrl-C)")
    parser.add_argument("--update-rate", type=float, default=None, help="override the controller's update_rate")
    parser.add_argument("--trigger", choices=TRIGGERS, default=None)
    parser.add_argument("--standing-source", action="store_true",
                        help="also publish the joint states and IMU of a robot standing still")
    parser.add_argument("--json", action="store_true", help="print the loop statistics as JSON at the end")


def run(args) -> int:

    ctrl = {}
    if args.update_rate:
        ctrl["update_rate"] = float(args.update_rate)
    if args.trigger:
        ctrl["trigger"] = args.trigger
    extra = []
    if args.standing_source:
        rate = args.update_rate or 500.0
        extra.append(lambda ctx, robot: StandingSource(robot, rate=rate, context=ctx))
    graph = run_graph(args.robot, duration=args.duration, params={"whole_body_controller": ctrl},
                      config=args.params_file, extra_nodes=extra)
    c = graph.nodes["whole_body_controller"]
    lat = c.latencies() * 1e3
    stats = {"robot": graph.robot.name, "controller": c.control.kind, "cycles": c.cycles,
             "update_rate_hz": c.rate, "deadline_misses": c.stats.deadline_misses,
             "deadline_miss_ratio": c.stats.deadline_misses / max(c.cycles, 1), "safe_cycles": c.safe_cycles,
             "latency_ms": {k: float(np.percentile(lat, p)) for k, p in (("p50", 50), ("p99", 99), ("max", 100))}
             if len(lat) else None}
    print(json.dumps(stats, indent=2) if args.json else
          f"{stats['robot']}: {stats['cycles']} cycles at {c.rate:g} Hz, {c.stats.deadline_misses} deadline misses, "
          f"{c.safe_cycles} safe-mode cycles")
    return 0

"""``hybrid-dynamics analyze limits``: joint-limit polygons of the hip and ankle parallel
mechanisms by the limit-exploration QP ([Mingo Hoffman 2024] eq. 30), with a PNG plot."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..analysis.limits import limit_polygon, plot_polygons
from ..errors import InputError
from ..model.robot import load_robot

COMMAND = ("analyze", "limits")
HELP = "trace the (roll, pitch) limit polygons of 2-DoF parallel sub-mechanisms (limit-exploration QP)"


def add_arguments(parser) -> None:
    parser.add_argument("--robot", default="hybrid_biped")
    parser.add_argument("--pairs", nargs="+", default=["l_hip_roll,l_hip_pitch", "l_ankle_roll,l_ankle_pitch"],
                        help="joint pairs 'a,b' (default: left hip and ankle roll/pitch)")
    parser.add_argument("--directions", type=int, default=36)
    parser.add_argument("--out", default="analysis_output", help="folder for limits.png")
    parser.add_argument("--json", action="store_true")


def run(args) -> int:
    robot = load_robot(args.robot)
    results = []
    for pair in args.pairs:
        joints = tuple(pair.split(","))
        if len(joints) != 2 or not all(robot.model.existJointName(j) for j in joints):
            raise InputError(f"'{pair}' is not a pair of joints of {robot.name}", field="pairs")
        results.append(limit_polygon(robot, joints, directions=max(4, args.directions)))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot_polygons(results, out / "limits.png")
    if args.json:
        print(json.dumps({"robot": robot.name, "polygons": results, "plot": str(out / "limits.png")}, indent=2))
        return 0
    for r in results:
        p = np.degrees(np.array(r["points"]))
        print(f"{r['joints'][0]} / {r['joints'][1]}: {len(p)} points, {r['joints'][0]} "
              f"{p[:, 0].min():.1f}..{p[:, 0].max():.1f} deg, {r['joints'][1]} {p[:, 1].min():.1f}..{p[:, 1].max():.1f} deg")
    print(f"plot {out / 'limits.png'}")
    return 0

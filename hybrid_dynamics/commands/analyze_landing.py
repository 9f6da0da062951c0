"""``hybrid-dynamics analyze landing``: the slowest body touch-down any controller could reach
for every four-leg loss of a hexapod (two feet left), from a planar trajectory optimisation
(``analysis/two_feet_landing.py``)."""
from __future__ import annotations

import json
from dataclasses import asdict

from ..analysis.two_feet_landing import two_feet_faults
from ..model.robot import load_robot

COMMAND = ("analyze", "landing")
HELP = ("the slowest touch-down of the body with two feet left (every four-leg loss): a planar "
        "trajectory optimisation with the feet's forces bounded by friction and the legs' torque limits")


def add_arguments(parser) -> None:
    parser.add_argument("--robot", default="jethexa", help="a legged robot with a base collision box (default jethexa)")
    parser.add_argument("--max-tilt", type=float, default=30.0, help="deg the body may tilt (default 30, the campaign's bound)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    result = two_feet_faults(load_robot(args.robot), max_tilt_deg=args.max_tilt)
    if args.json:
        print(json.dumps({k: {"e_m": e, **asdict(v)} for k, (e, v) in result.items()}, indent=2))
        return 0
    print(f"{'legs lost':<24} {'e (m)':>6} {'CoM (m/s)':>9} {'edge (m/s)':>10} {'tilt (deg)':>10} {'after (s)':>9} {'free fall':>9}")
    for lost, (e, r) in result.items():
        print(f"{lost:<24} {e:6.3f} {r.speed:9.3f} {r.edge_speed:10.3f} {r.tilt_deg:10.1f} {r.duration:9.3f} {r.free_fall_speed:9.2f}")
    print("CoM and edge: downward speeds at the body's first floor contact (the campaign measures the CoM's, 0.2 m/s)")
    return 0

"""``hybrid-dynamics analyze landing``: the slowest body touch-down found for every fault of a
hexapod that leaves its CoM outside the feet (every four-leg loss: two feet left; every
three-leg loss whose CoM is outside the three feet's triangle at the standing pose), from a
planar trajectory optimisation (``control/locomotion/planar_landing.py``, tables in ``analysis/two_feet_landing.py``). A local optimum: an upper
bound on the best achievable touch-down, not a proof that nothing slower exists."""
from __future__ import annotations

import json
from dataclasses import asdict

from ..analysis.two_feet_landing import three_feet_faults, two_feet_faults
from ..model.robot import load_robot

COMMAND = ("analyze", "landing")
HELP = ("the slowest touch-down of the body found with two feet left (every four-leg loss) or three "
        "feet around which the CoM is not (three-leg losses): a planar trajectory optimisation with "
        "the feet's forces bounded by friction and the legs' torque limits (an upper bound, not a proof)")


def add_arguments(parser) -> None:
    parser.add_argument("--robot", default="jethexa", help="a legged robot with a base collision box (default jethexa)")
    parser.add_argument("--max-tilt", type=float, default=30.0, help="deg the body may tilt (default 30, the campaign's bound)")
    parser.add_argument("--feet", type=int, choices=(2, 3), action="append",
                        help="only the faults leaving this many feet (repeatable; default both)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    robot, feet = load_robot(args.robot), sorted(args.feet or (3, 2), reverse=True)
    result = {}
    for count in feet:
        faults = (three_feet_faults if count == 3 else two_feet_faults)(robot, max_tilt_deg=args.max_tilt)
        result.update({lost: (count, e, landing) for lost, (e, landing) in faults.items()})
    if args.json:
        print(json.dumps({k: {"feet": n, "e_m": e, **asdict(v)} for k, (n, e, v) in result.items()}, indent=2))
        return 0
    print(f"{'legs lost':<24} {'feet':>4} {'e (m)':>6} {'CoM (m/s)':>9} {'base (m/s)':>10} {'edge (m/s)':>10} "
          f"{'tilt (deg)':>10} {'after (s)':>9} {'third (N)':>9} {'free fall':>9}")
    for lost, (n, e, r) in result.items():
        third = max((row[3] for row in r.forces), default=0.0) if n == 3 else float("nan")
        print(f"{lost:<24} {n:4d} {e:6.3f} {r.speed:9.3f} {r.base_speed:10.3f} {r.edge_speed:10.3f} "
              f"{r.tilt_deg:10.1f} {r.duration:9.3f} {third:9.1f} {r.free_fall_speed:9.2f}")
    print("e: the CoM's distance outside the feet's line (two feet) or their triangle's nearest edge (three), "
          "standing. CoM, base and edge (the body's lowest corner): downward speeds at the body's first floor "
          "contact (the campaign's bound: 0.2 m/s); third: the third foot's largest force. A local optimum from "
          "a few starts: an upper bound on the best touch-down, not a proof that nothing slower exists.")
    return 0

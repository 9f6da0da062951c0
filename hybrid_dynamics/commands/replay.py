"""``hybrid-dynamics replay BAG``: feed a bag's joint states and IMU into the estimator and
controller (the library the nodes run, one cycle per joint state) and compare the commands
with the recorded ones. ``--strict`` exits 1 unless they are identical."""
from __future__ import annotations

import json

from ..ros.bag import replay_bag

COMMAND = ("replay",)
HELP = "re-run estimator and controller on a bag and compare with the recorded commands"


def add_arguments(parser) -> None:
    parser.add_argument("bag", help="rosbag2 directory (MCAP) written by `record` or the demo")
    parser.add_argument("--robot", default=None, help="default: the robot named in the bag")
    parser.add_argument("--strict", action="store_true", help="exit 1 unless the commands are identical")
    parser.add_argument("--json", action="store_true")


def run(args) -> int:
    result = replay_bag(args.bag, robot=args.robot)
    s = result.summary()
    if args.json:
        print(json.dumps(s, indent=2))
    else:
        print(f"{s['robot']}: {s['replayed_cycles']} cycles re-run, {s['recorded_commands']} commands recorded; "
              f"identical: {s['identical']}; max |difference| {s['max_abs_difference']:.3g}")
    return 1 if args.strict and not result.identical else 0

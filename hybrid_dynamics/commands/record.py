"""``hybrid-dynamics record --robot R --out BAG``: run the one-process graph and record every
topic of interest into a rosbag2 bag (MCAP, metadata.yaml; ``ros2 bag info BAG`` reads it)."""
from __future__ import annotations

import json
import time
from pathlib import Path

from ..errors import InputError
from ..ros.bag import BagRecorder
from ..sim.bagfile import bag_info
from ..ros.graph import Graph
from ..ros.sources import StandingSource

COMMAND = ("record",)
HELP = "run the graph and record its topics to an MCAP rosbag2 bag"


def add_arguments(parser) -> None:
    parser.add_argument("--robot", default="jethexa")
    parser.add_argument("--out", required=True, help="bag directory to create (must not exist)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds to record")
    parser.add_argument("--params-file", default=None)
    parser.add_argument("--trigger", choices=("timer", "joint_states"), default=None,
                        help="joint_states records a run that replays to identical commands")
    parser.add_argument("--standing-source", action="store_true",
                        help="publish the joint states and IMU of a robot standing still (no robot/simulator)")
    parser.add_argument("--rate", type=float, default=200.0, help="rate of --standing-source, Hz")
    parser.add_argument("--noise", type=float, default=0.002, help="sensor noise of --standing-source")


def run(args) -> int:

    if Path(args.out).exists():
        raise InputError("bag already exists (rosbag2 never overwrites)", file=args.out)
    ctrl = {"trigger": args.trigger} if args.trigger else {}
    graph = Graph(args.robot, params={"whole_body_controller": ctrl}, config=args.params_file)
    try:
        rec = graph.add_node(lambda ctx, robot: BagRecorder(
            args.out, robot, context=ctx, controller_params=graph.nodes["whole_body_controller"].flat))
        graph.start()
        source = None
        if args.standing_source:
            source = graph.add_node(lambda ctx, robot: StandingSource(robot, context=ctx, noise=args.noise))
            # the controller and the recorder both matched on both topics before the first sample
            ctrl = graph.nodes["whole_body_controller"]
            inputs = ("/joint_states", "/imu_sensor_broadcaster/imu")
            graph.spin_until(lambda: all(rec.matched.get(t, 0) >= 1 and ctrl.matched.get(t, 0) >= 1
                                         for t in inputs), timeout=10.0)
            time.sleep(0.1)
            end = time.monotonic() + args.duration
            while time.monotonic() < end:
                source.publish_sample(imu=True, js=False)
                time.sleep(0.002)
                source.publish_sample(t=source.t, imu=False, js=True)
                time.sleep(max(0.0, 1.0 / args.rate - 0.002))
            time.sleep(0.2)
        else:
            time.sleep(args.duration)
        counts = rec.close()
    finally:
        graph.shutdown()
    info = bag_info(args.out)
    print(json.dumps({"bag": args.out, "storage": info["storage"], "messages": counts}, indent=2))
    return 0

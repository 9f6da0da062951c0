"""Recording the graph into a rosbag2, and the deterministic replay of the controller.

Recording: :class:`BagRecorder` is an rclpy node that subscribes *raw* (the serialized CDR
bytes, written unchanged) to every topic of interest and writes them through the package's
one bag writer (``sim.bagfile.BagWriter``, MCAP storage); the robot name and the
controller's parameters go into the metadata's ``custom_data`` so a replay needs nothing else::

    rec = graph.add_node(lambda ctx, robot: BagRecorder("out/run1", robot, context=ctx,
                                                        controller_params=ctrl.flat))
    ...
    rec.close()

Replay: :func:`replay_bag` feeds the recorded joint states and IMU samples, in the order
they were recorded, into the same :class:`~hybrid_dynamics.runtime.pipeline.Pipeline` the
controller node runs (/cmd_vel and the morphology applied where recorded), one cycle per
joint state (the controller's ``trigger: joint_states``), staleness judged on stamps, and
morphology messages applied where they were recorded. A run recorded in that mode replays
to identical commands; a timer-driven recording (cycles sampled by a clock the bag does not
hold) is compared and the differences reported.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Union

import numpy as np
from geometry_msgs.msg import Twist
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.serialization import deserialize_message
from rosbags.rosbag2 import Reader
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String

from ..errors import InputError
from ..model.damage_events import morphology_from_yaml
from ..model.robot import load_robot
from ..runtime.pipeline import Pipeline
from ..sim.bagfile import TOPICS, BagWriter, bag_info
from . import params as P
from .graph import config_file, load_node_params
from .lean import LeanNode
from .qos import LATCHED_QOS, QUEUED_SENSOR_QOS, STATE_QOS

# what a recording of the graph holds by default (``hybrid-dynamics record``)
GRAPH_TOPICS = ("/joint_states", "/imu_sensor_broadcaster/imu", "/effort_controller/commands",
                "/whole_body_controller/actuator_forces", "/state_estimator/joint_states_full",
                "/state_estimator/odometry", "/morphology_manager/morphology", "/morphology_manager/damage",
                "/diagnostics", "/cmd_vel")

MATCHED_TOPICS = ("/joint_states", "/imu_sensor_broadcaster/imu")


def _msg_class(msgtype: str):
    pkg, _, name = msgtype.split("/")
    module = importlib.import_module(f"{pkg}.msg")
    return getattr(module, name)


class BagRecorder(LeanNode):
    """Records ``topics`` (names of ``sim.bagfile.TOPICS``, default :data:`GRAPH_TOPICS`) into
    an MCAP rosbag2: every message as the raw bytes received, stamped with the node's clock."""

    def __init__(self, path: Union[str, Path], robot=None, *, topics: Optional[Iterable[str]] = None,
                 controller_params: Optional[Mapping] = None, name: str = "bag_recorder", **kwargs):
        custom = {}
        if robot is not None:
            custom["hybrid_dynamics.robot"] = robot.name
        if controller_params is not None:
            custom["hybrid_dynamics.whole_body_controller"] = json.dumps(dict(controller_params))
        self.bag = BagWriter(path, GRAPH_TOPICS if topics is None else topics, custom)
        super().__init__(name, **kwargs)
        self.path = self.bag.path
        self.matched: Dict[str, int] = {}          # publishers matched per input topic
        for topic in self.bag.conn:
            qos = LATCHED_QOS if topic.endswith("/morphology") else (
                QUEUED_SENSOR_QOS if topic in MATCHED_TOPICS else STATE_QOS)
            # matched-publisher events on the inputs only: every event handler is one more
            # entity the executor scans at each wake-up
            events = self._matched_events(topic) if topic in MATCHED_TOPICS else None
            self.create_subscription(_msg_class(TOPICS[topic]), topic, self._writer_for(topic), qos, raw=True,
                                     event_callbacks=events)

    @property
    def counts(self) -> Dict[str, int]:
        return dict(self.bag.counts)

    def _matched_events(self, topic: str):
        self.matched[topic] = 0

        def on_matched(info) -> None:
            self.matched[topic] = info.current_count
        return SubscriptionEventCallbacks(matched=on_matched)

    def _writer_for(self, topic: str):
        def write(data: bytes) -> None:
            self.bag.write_raw(topic, self.get_clock().now().nanoseconds, data)
        return write

    def close(self) -> Dict[str, int]:
        """Finish the bag (writes metadata.yaml); returns messages per topic."""
        return self.bag.close()

    def destroy_node(self) -> None:
        self.close()
        super().destroy_node()


@dataclass
class ReplayResult:
    robot: str
    replayed: np.ndarray                  # (n, joints) commands of the re-run
    recorded: np.ndarray                  # (m, joints) commands in the bag
    joints: List[str]
    safe_cycles: int = 0
    rejected: Dict[str, int] = field(default_factory=dict)

    @property
    def identical(self) -> bool:
        return self.replayed.shape == self.recorded.shape and bool(np.array_equal(self.replayed, self.recorded))

    def summary(self) -> dict:
        n = min(len(self.replayed), len(self.recorded))
        diff = np.abs(self.replayed[:n] - self.recorded[:n]) if n else np.zeros((0,))
        return {"robot": self.robot, "replayed_cycles": int(len(self.replayed)),
                "recorded_commands": int(len(self.recorded)), "identical": self.identical,
                "max_abs_difference": float(diff.max()) if diff.size else 0.0,
                "rms_difference": float(np.sqrt(np.mean(diff ** 2))) if diff.size else 0.0,
                "safe_cycles": self.safe_cycles, "rejected": self.rejected}


def replay_bag(path: Union[str, Path], robot=None, params: Optional[Mapping] = None) -> ReplayResult:
    """Re-run estimator + controller on a bag's inputs (module docstring)."""

    info = bag_info(path)
    custom = info["custom_data"]
    if robot is None:
        name = custom.get("hybrid_dynamics.robot")
        if not name:
            raise InputError("the bag does not name its robot: pass --robot", file=str(path))
        robot = load_robot(name)
    elif isinstance(robot, (str, Path)):
        robot = load_robot(robot)
    flat = P.defaults("whole_body_controller")
    if "hybrid_dynamics.whole_body_controller" in custom:
        flat.update(json.loads(custom["hybrid_dynamics.whole_body_controller"]))
    else:
        flat.update(load_node_params(config_file(robot.name), "whole_body_controller"))
    flat.update(params or {})
    p = P.nested(flat)
    pipe = Pipeline(robot, p)
    state, control = pipe.state, pipe.control
    morph = pipe.morphology
    replayed, recorded = [], []
    safe = 0
    with Reader(path) as reader:
        for conn, t, raw in reader.messages():
            topic = conn.topic
            if topic in ("/imu_sensor_broadcaster/imu", "/joint_states"):
                if topic == "/joint_states":
                    rejected = pipe.add_joint_state(deserialize_message(raw, JointState), t * 1e-9) is not None
                    if not state.lockstep_after_joint_state(rejected):
                        continue
                else:
                    rejected = pipe.add_imu(deserialize_message(raw, Imu), t * 1e-9) is not None
                    if not state.lockstep_after_imu(rejected):
                        continue
                cycle = pipe.step(t * 1e-9, use_stamps=True)
                safe += cycle.safe_mode is not None
                replayed.append(cycle.command.copy())
            elif topic == "/cmd_vel":
                msg = deserialize_message(raw, Twist)
                pipe.set_command(msg.linear.x, msg.linear.y, msg.angular.z)
            elif topic == "/morphology_manager/morphology":
                try:
                    new, _ = morphology_from_yaml(robot, deserialize_message(raw, String).data)
                except InputError:
                    continue
                if new != morph:
                    pipe.set_morphology(new, t * 1e-9)
                    morph = new
            elif topic == "/effort_controller/commands":
                recorded.append(np.asarray(deserialize_message(raw, Float64MultiArray).data, dtype=float))
    n = len(control.joints)
    return ReplayResult(robot.name, np.array(replayed).reshape(-1, n), np.array(recorded).reshape(-1, n),
                        control.joints, safe, dict(state.rejected))

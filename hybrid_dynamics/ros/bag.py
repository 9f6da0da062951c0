"""rosbag2 bags (MCAP storage, metadata.yaml, readable by ``ros2 bag info``) through
``rosbags``, and the deterministic replay of the estimator and controller.

Recording: :class:`BagRecorder` is an rclpy node that subscribes *raw* (the serialized CDR
bytes, written unchanged) to every topic of interest and writes them with
``rosbags.rosbag2.Writer(version=9, storage_plugin=MCAP)``; the robot name and the
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

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Union

import numpy as np
import yaml
from geometry_msgs.msg import Twist
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.serialization import deserialize_message
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String

from ..errors import InputError
from ..model.damage_events import morphology_from_yaml
from ..model.robot import load_robot
from ..runtime.pipeline import Pipeline
from . import params as P
from .graph import config_file, load_node_params
from .lean import LeanNode
from .nodes import LATCHED_QOS, QUEUED_SENSOR_QOS, STATE_QOS

TOPICS: Dict[str, str] = {
    "/joint_states": "sensor_msgs/msg/JointState",
    "/imu_sensor_broadcaster/imu": "sensor_msgs/msg/Imu",
    "/effort_controller/commands": "std_msgs/msg/Float64MultiArray",
    "/whole_body_controller/actuator_forces": "std_msgs/msg/Float64MultiArray",
    "/state_estimator/joint_states_full": "sensor_msgs/msg/JointState",
    "/state_estimator/odometry": "nav_msgs/msg/Odometry",
    "/morphology_manager/morphology": "std_msgs/msg/String",
    "/morphology_manager/damage": "std_msgs/msg/String",
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
    "/cmd_vel": "geometry_msgs/msg/Twist",
}

MATCHED_TOPICS = ("/joint_states", "/imu_sensor_broadcaster/imu")


def _msg_class(msgtype: str):
    pkg, _, name = msgtype.split("/")
    module = __import__(f"{pkg}.msg", fromlist=[name])
    return getattr(module, name)


class BagRecorder(LeanNode):
    """Records ``topics`` (name -> type, default :data:`TOPICS`) into an MCAP rosbag2."""

    def __init__(self, path: Union[str, Path], robot=None, *, topics: Optional[Mapping[str, str]] = None,
                 controller_params: Optional[Mapping] = None, name: str = "bag_recorder", **kwargs):
        if Path(path).exists():
            raise InputError("bag already exists (rosbag2 never overwrites)", file=str(path))
        super().__init__(name, **kwargs)
        self.path = Path(path)
        self.typestore = get_typestore(Stores.ROS2_JAZZY)
        self.writer = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        if robot is not None:
            self.writer.set_custom_data("hybrid_dynamics.robot", robot.name)
        if controller_params is not None:
            self.writer.set_custom_data("hybrid_dynamics.whole_body_controller",
                                        json.dumps({k: v for k, v in controller_params.items()}))
        self.writer.open()
        self.lock = threading.Lock()
        self.counts: Dict[str, int] = {}
        self.connections = {}
        self.matched: Dict[str, int] = {}          # publishers matched per input topic
        self._closed = False
        for topic, msgtype in (topics or TOPICS).items():
            self.connections[topic] = self.writer.add_connection(topic, msgtype, typestore=self.typestore)
            self.counts[topic] = 0
            qos = LATCHED_QOS if topic.endswith("/morphology") else (
                QUEUED_SENSOR_QOS if topic in ("/joint_states", "/imu_sensor_broadcaster/imu") else STATE_QOS)
            # matched-publisher events on the inputs only: every event handler is one more
            # entity the executor scans at each wake-up
            events = self._matched_events(topic) if topic in MATCHED_TOPICS else None
            self.create_subscription(_msg_class(msgtype), topic, self._writer_for(topic), qos, raw=True,
                                     event_callbacks=events)

    def _matched_events(self, topic: str):
        self.matched[topic] = 0

        def on_matched(info) -> None:
            self.matched[topic] = info.current_count
        return SubscriptionEventCallbacks(matched=on_matched)

    def _writer_for(self, topic: str):
        conn = self.connections[topic]

        def write(data: bytes) -> None:
            t = self.get_clock().now().nanoseconds
            with self.lock:
                if not self._closed:
                    self.writer.write(conn, t, data)
                    self.counts[topic] += 1
        return write

    def close(self) -> Dict[str, int]:
        """Finish the bag (writes metadata.yaml); returns messages per topic."""
        with self.lock:
            if not self._closed:
                self._closed = True
                self.writer.close()
        return dict(self.counts)

    def destroy_node(self) -> None:
        self.close()
        super().destroy_node()


# ============================================================================ reading
def bag_info(path: Union[str, Path]) -> dict:
    """What ``ros2 bag info`` shows: duration, storage, counts per topic, custom data."""
    path = Path(path)
    if not (path / "metadata.yaml").is_file():
        raise InputError("not a rosbag2 directory (no metadata.yaml)", file=str(path))
    meta = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    with Reader(path) as reader:
        topics = {c.topic: {"type": c.msgtype, "count": c.msgcount} for c in reader.connections}
        return {"path": str(path), "storage": meta["storage_identifier"], "version": meta["version"],
                "duration_s": reader.duration * 1e-9, "messages": reader.message_count,
                "topics": topics, "custom_data": meta.get("custom_data") or {}}


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
                    if pipe.add_joint_state(deserialize_message(raw, JointState), t * 1e-9) is not None:
                        continue
                    if not state.lockstep_after_joint_state():
                        continue
                else:
                    if pipe.add_imu(deserialize_message(raw, Imu), t * 1e-9) is not None:
                        continue
                    if not state.lockstep_after_imu():
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

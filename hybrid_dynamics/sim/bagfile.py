"""rosbag2 bags (MCAP storage, metadata.yaml, readable by ``ros2 bag info``, Foxglove or
``rosbags``) written and read with the ``rosbags`` library (no ROS needed): one table of the
package's topics and their types, one writer (the library scenario loop writes typed values,
the graph's recorder node writes the raw bytes it receives), one reader of what a bag holds.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Dict, Iterable, Mapping, Optional, Sequence, Union

import numpy as np
import yaml
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from ..errors import InputError

# every topic the package publishes or reads, with its type (docs/ros.md)
TOPICS: Dict[str, str] = {
    "/clock": "rosgraph_msgs/msg/Clock",
    "/joint_states": "sensor_msgs/msg/JointState",
    "/imu_sensor_broadcaster/imu": "sensor_msgs/msg/Imu",
    "/effort_controller/commands": "std_msgs/msg/Float64MultiArray",
    "/cmd_vel": "geometry_msgs/msg/Twist",
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
    "/tf": "tf2_msgs/msg/TFMessage",
    "/state_estimator/joint_states_full": "sensor_msgs/msg/JointState",
    "/state_estimator/odometry": "nav_msgs/msg/Odometry",
    "/whole_body_controller/actuator_forces": "std_msgs/msg/Float64MultiArray",
    "/whole_body_controller/contact_forces": "std_msgs/msg/Float64MultiArray",
    "/whole_body_controller/cycle": "std_msgs/msg/Float64MultiArray",
    "/whole_body_controller/markers": "visualization_msgs/msg/MarkerArray",
    "/whole_body_controller/soft_deformation": "sensor_msgs/msg/JointState",
    "/whole_body_controller/detector": "std_msgs/msg/Float64MultiArray",
    "/whole_body_controller/detections": "std_msgs/msg/String",
    "/morphology_manager/morphology": "std_msgs/msg/String",
    "/morphology_manager/damage": "std_msgs/msg/String",
    "/sim/ground_truth/odometry": "nav_msgs/msg/Odometry",
    "/sim/ground_truth/joint_states": "sensor_msgs/msg/JointState",
    "/sim/ground_truth/contact_forces": "std_msgs/msg/Float64MultiArray",
    "/sim/ground_truth/morphology": "std_msgs/msg/String",
}

# what the library scenario loop writes (sim/runner.py)
LIBRARY_TOPICS = ("/clock", "/joint_states", "/imu_sensor_broadcaster/imu", "/sim/ground_truth/odometry",
                  "/state_estimator/odometry", "/effort_controller/commands", "/cmd_vel",
                  "/morphology_manager/morphology", "/morphology_manager/damage",
                  "/whole_body_controller/contact_forces")


class BagWriter:
    """An MCAP rosbag2 at ``path`` (never overwritten) with a connection per topic of
    ``topics`` (names of :data:`TOPICS`; default all) and ``custom_data`` in its metadata.
    :meth:`write_raw` takes serialized CDR (a ROS subscription's raw bytes); the typed
    helpers serialize the library's values. Thread-safe; :meth:`close` finishes the bag
    (call it in ``finally``) and returns the messages written per topic."""

    def __init__(self, path: Union[str, Path], topics: Optional[Iterable[str]] = None,
                 custom_data: Optional[Mapping[str, str]] = None):
        self.path = Path(path)
        if self.path.exists():
            raise InputError("bag already exists (rosbag2 never overwrites)", file=str(self.path))
        names = list(TOPICS) if topics is None else list(topics)
        unknown = [t for t in names if t not in TOPICS]
        if unknown:
            raise InputError(f"no message type known for {', '.join(unknown)}", field="topics")
        self.ts = get_typestore(Stores.ROS2_JAZZY)
        self.writer = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        for key, value in (custom_data or {}).items():
            self.writer.set_custom_data(key, value)
        self.writer.open()
        self.conn = {topic: self.writer.add_connection(topic, TOPICS[topic], typestore=self.ts) for topic in names}
        self.counts: Dict[str, int] = {topic: 0 for topic in names}
        self.lock = threading.Lock()
        T = self.ts.types
        self.Time = T["builtin_interfaces/msg/Time"]
        self.Header = T["std_msgs/msg/Header"]
        self.closed = False

    # ------------------------------------------------------------------ helpers
    def _stamp(self, t: float):
        ns = int(round(t * 1e9))
        return self.Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)

    def _header(self, t: float, frame: str):
        return self.Header(stamp=self._stamp(t), frame_id=frame)

    def write_raw(self, topic: str, t_ns: int, data: bytes) -> None:
        with self.lock:
            if not self.closed:
                self.writer.write(self.conn[topic], t_ns, data)
                self.counts[topic] += 1

    def _write(self, topic: str, t: float, msg) -> None:
        self.write_raw(topic, int(round(t * 1e9)), self.ts.serialize_cdr(msg, TOPICS[topic]))

    # ------------------------------------------------------------------ messages
    def clock(self, t: float) -> None:
        self._write("/clock", t, self.ts.types["rosgraph_msgs/msg/Clock"](clock=self._stamp(t)))

    def joint_states(self, t: float, names: Sequence[str], pos, vel, effort) -> None:
        msg = self.ts.types["sensor_msgs/msg/JointState"](
            header=self._header(t, ""), name=list(names), position=np.asarray(pos, float),
            velocity=np.asarray(vel, float), effort=np.asarray(effort, float))
        self._write("/joint_states", t, msg)

    def imu(self, t: float, frame: str, quat_xyzw, gyro, acc) -> None:
        T = self.ts.types
        V = T["geometry_msgs/msg/Vector3"]
        Q = T["geometry_msgs/msg/Quaternion"]
        x, y, z, w = (float(a) for a in quat_xyzw)
        cov = np.zeros(9)
        msg = T["sensor_msgs/msg/Imu"](
            header=self._header(t, frame), orientation=Q(x=x, y=y, z=z, w=w), orientation_covariance=cov,
            angular_velocity=V(x=float(gyro[0]), y=float(gyro[1]), z=float(gyro[2])),
            angular_velocity_covariance=cov,
            linear_acceleration=V(x=float(acc[0]), y=float(acc[1]), z=float(acc[2])),
            linear_acceleration_covariance=cov)
        self._write("/imu_sensor_broadcaster/imu", t, msg)

    def odometry(self, topic: str, t: float, position, quat_xyzw, lin_world, ang_body) -> None:
        T = self.ts.types
        V = T["geometry_msgs/msg/Vector3"]
        x, y, z, w = (float(a) for a in quat_xyzw)
        pose = T["geometry_msgs/msg/PoseWithCovariance"](
            pose=T["geometry_msgs/msg/Pose"](position=T["geometry_msgs/msg/Point"](
                x=float(position[0]), y=float(position[1]), z=float(position[2])),
                orientation=T["geometry_msgs/msg/Quaternion"](x=x, y=y, z=z, w=w)),
            covariance=np.zeros(36))
        twist = T["geometry_msgs/msg/TwistWithCovariance"](
            twist=T["geometry_msgs/msg/Twist"](linear=V(x=float(lin_world[0]), y=float(lin_world[1]), z=float(lin_world[2])),
                                                angular=V(x=float(ang_body[0]), y=float(ang_body[1]), z=float(ang_body[2]))),
            covariance=np.zeros(36))
        msg = T["nav_msgs/msg/Odometry"](header=self._header(t, "odom"), child_frame_id="base_link",
                                         pose=pose, twist=twist)
        self._write(topic, t, msg)

    def array(self, topic: str, t: float, values) -> None:
        T = self.ts.types
        layout = T["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0)
        self._write(topic, t, T["std_msgs/msg/Float64MultiArray"](layout=layout, data=np.asarray(values, float)))

    def twist(self, t: float, vx: float, vy: float, wz: float) -> None:
        T = self.ts.types
        V = T["geometry_msgs/msg/Vector3"]
        self._write("/cmd_vel", t, T["geometry_msgs/msg/Twist"](linear=V(x=float(vx), y=float(vy), z=0.0),
                                                                 angular=V(x=0.0, y=0.0, z=float(wz))))

    def string(self, topic: str, t: float, text: str) -> None:
        self._write(topic, t, self.ts.types["std_msgs/msg/String"](data=str(text)))

    def close(self) -> Dict[str, int]:
        """Finish the bag (writes metadata.yaml); returns messages per topic."""
        with self.lock:
            if not self.closed:
                self.closed = True
                self.writer.close()
        return dict(self.counts)


def bag_info(path: Union[str, Path]) -> dict:
    """What ``ros2 bag info`` shows: duration, storage, messages per topic, custom data."""
    path = Path(path)
    if not (path / "metadata.yaml").is_file():
        raise InputError("not a rosbag2 directory (no metadata.yaml)", file=str(path))
    meta = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    with Reader(path) as reader:
        topics: Dict[str, dict] = {}
        for c in reader.connections:
            entry = topics.setdefault(c.topic, {"type": c.msgtype, "count": 0})
            entry["count"] += c.msgcount
        return {"path": str(path), "storage": meta["storage_identifier"], "version": meta["version"],
                "duration_s": reader.duration * 1e-9, "messages": reader.message_count,
                "topics": topics, "custom_data": meta.get("custom_data") or {}}

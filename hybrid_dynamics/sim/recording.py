"""A rosbag2 (MCAP) of a simulated run, written with the ``rosbags`` library (no ROS needed).

Topics and types are the graph's (docs/ARCHITECTURE.md); the bag opens in ``ros2 bag info``,
Foxglove or ``rosbags``. Stamps are simulated time.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Sequence

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

TOPICS = {
    "/clock": "rosgraph_msgs/msg/Clock",
    "/joint_states": "sensor_msgs/msg/JointState",
    "/imu_sensor_broadcaster/imu": "sensor_msgs/msg/Imu",
    "/sim/ground_truth/odometry": "nav_msgs/msg/Odometry",
    "/state_estimator/odometry": "nav_msgs/msg/Odometry",
    "/effort_controller/commands": "std_msgs/msg/Float64MultiArray",
    "/cmd_vel": "geometry_msgs/msg/Twist",
    "/morphology_manager/morphology": "std_msgs/msg/String",
    "/morphology_manager/damage": "std_msgs/msg/String",
    "/whole_body_controller/contact_forces": "std_msgs/msg/Float64MultiArray",
}


class BagRecorder:
    """Writes one message per call; :meth:`close` finishes the bag (call it in ``finally``)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.ts = get_typestore(Stores.ROS2_JAZZY)
        self.writer = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        self.conn = {topic: self.writer.add_connection(topic, msgtype, typestore=self.ts)
                     for topic, msgtype in TOPICS.items()}
        T = self.ts.types
        self.Time = T["builtin_interfaces/msg/Time"]
        self.Header = T["std_msgs/msg/Header"]
        self.count = 0
        self.closed = False

    # ------------------------------------------------------------------ helpers
    def _stamp(self, t: float):
        sec = int(np.floor(t))
        return self.Time(sec=sec, nanosec=int(round((t - sec) * 1e9)) % 1_000_000_000)

    def _header(self, t: float, frame: str):
        return self.Header(stamp=self._stamp(t), frame_id=frame)

    def _write(self, topic: str, t: float, msg) -> None:
        data = self.ts.serialize_cdr(msg, TOPICS[topic])
        self.writer.write(self.conn[topic], int(round(t * 1e9)), data)
        self.count += 1

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

    def close(self) -> None:
        if not self.closed:
            self.writer.close()
            self.closed = True


def read_topics(path: Path) -> Dict[str, int]:
    """Message count per topic of a bag (for tests and the summary)."""
    from rosbags.rosbag2 import Reader
    counts: Dict[str, int] = {}
    with Reader(Path(path)) as reader:
        for conn in reader.connections:
            counts[conn.topic] = counts.get(conn.topic, 0) + conn.msgcount
    return counts

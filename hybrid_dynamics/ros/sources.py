"""Stand-in sensor sources for benchmarks, tests and demos without a simulator: a node
publishing what a robot's joint_state_broadcaster and imu_sensor_broadcaster would, for a
robot standing still (with optional small noise), and a probe recording commands."""
from __future__ import annotations

import argparse
import array
import sys
import time
from typing import List, Optional

import numpy as np
import pinocchio as pin
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray

from ..model.robot import load_robot
from ..runtime.inputs import sec_to_stamp
from ..runtime.realtime import cpu_list, use_fifo_priority, use_process_cpus
from .executor import WaitSetExecutor
from .lockstep import answered_stamp
from .qos import COMMAND_QOS, SENSOR_QOS


def standing_pose(robot) -> np.ndarray:
    """The standing pose with the lowest foot on z = 0."""
    q = robot.q_stand.copy()
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    q[2] -= min(data.oMf[robot.model.getFrameId(c.frame)].translation[2] for c in robot.contacts)
    return q


class StandingSource(Node):
    """Publishes /joint_states and the IMU of a standing robot: at ``rate`` Hz from a timer
    (``rate > 0``), or one pair per :meth:`publish_sample` call (lock-step)."""

    def __init__(self, robot, *, rate: float = 0.0, noise: float = 0.0, seed: int = 0,
                 joints: Optional[List[str]] = None, name: str = "standing_source", **kwargs):
        super().__init__(name, **kwargs)
        self.robot = robot
        self.q = standing_pose(robot)
        self.rng = np.random.default_rng(seed)
        self.noise = noise
        self.js_pub = self.create_publisher(JointState, "/joint_states", SENSOR_QOS)
        self.imu_pub = self.create_publisher(Imu, "/imu_sensor_broadcaster/imu", SENSOR_QOS)
        self.joints = list(joints or robot.actuated_joints)     # what a robot measures
        idx = {n: i for i, n in enumerate(robot.joint_names)}
        self.qj = self.q[7:][[idx[n] for n in self.joints]]
        self.t = 1.0
        self.dt = 1.0 / rate if rate > 0 else 0.001
        self.sent = 0
        self.send_times: List[float] = []
        if rate > 0:
            self.create_timer(1.0 / rate, self.publish_sample)

    def publish_sample(self, t: Optional[float] = None, imu: bool = True, js: bool = True) -> float:
        self.t = self.t + self.dt if t is None else t
        if imu:
            m = Imu()
            sec_to_stamp(self.t, m.header.stamp)
            m.header.frame_id = self.robot.imu_frame or "base_link"
            m.orientation.w = 1.0
            m.linear_acceleration.z = 9.81 + (self.rng.normal(0, self.noise) if self.noise else 0.0)
            self.imu_pub.publish(m)
        if js:
            j = JointState()
            sec_to_stamp(self.t, j.header.stamp)
            j.name = self.joints
            pos = self.qj + (self.rng.normal(0, self.noise, len(self.qj)) if self.noise else 0.0)
            j.position = array.array("d", np.asarray(pos, dtype=float).tobytes())
            j.velocity = array.array("d", np.zeros(len(self.qj)).tobytes())
            self.send_times.append(time.perf_counter())
            self.js_pub.publish(j)
        self.sent += 1
        return self.t


class CommandProbe(Node):
    """Records every /effort_controller/commands message (arrival time, values, the stamp
    of the joint state it answers if it says: ros/lockstep.py)."""

    def __init__(self, name: str = "command_probe", topic: str = "/effort_controller/commands", **kwargs):
        super().__init__(name, **kwargs)
        self.commands: List[np.ndarray] = []
        self.times: List[float] = []
        self.answers: List[Optional[int]] = []
        self.create_subscription(Float64MultiArray, topic, self._on_cmd, COMMAND_QOS)

    def _on_cmd(self, msg: Float64MultiArray) -> None:
        self.times.append(time.perf_counter())
        self.commands.append(np.asarray(msg.data, dtype=float))
        self.answers.append(answered_stamp(msg.layout))


def main(argv=None) -> int:
    """``python -m hybrid_dynamics.ros.sources ROBOT --rate HZ --duration S``: a stand-in robot
    in its own process (what the benchmark measures the graph against), on the package's
    executor (ros/executor.py), as the graph's nodes: its 1 kHz timer takes less of the
    machine the graph shares with it."""
    parser = argparse.ArgumentParser(prog="hybrid_dynamics.ros.sources")
    parser.add_argument("robot")
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--noise", type=float, default=0.0)
    parser.add_argument("--thread-priority", type=int, default=0,
                        help="SCHED_FIFO priority of the publishing thread (0: the default scheduler), as a "
                             "ros2_control robot's broadcasters publish from its real-time update thread")
    parser.add_argument("--cpus", type=cpu_list, default=[],
                        help="CPUs of this process (comma-separated; every thread, the middleware's included, "
                             "as they inherit it); default: any")
    args = parser.parse_args(argv)
    for refused in (use_process_cpus(args.cpus), use_fifo_priority(args.thread_priority)):   # before rclpy's threads
        if refused is not None:
            print(f"hybrid_dynamics.ros.sources: {refused}", file=sys.stderr)
    rclpy.init()
    node = StandingSource(load_robot(args.robot), rate=args.rate, noise=args.noise)
    executor = WaitSetExecutor()
    executor.add_node(node)
    end = time.monotonic() + args.duration
    try:
        while time.monotonic() < end and rclpy.ok():
            executor.spin_once(timeout_sec=0.05)
    except KeyboardInterrupt:
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    print(f"sent {node.sent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

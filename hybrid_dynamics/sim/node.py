"""The MuJoCo plant as a ROS 2 node: ``ros2 run hybrid_dynamics mujoco_sim``.

This file is the one place where sim/ meets rclpy (the plant itself, sim/plant.py, knows no
ROS). It publishes what the robot's drivers would and nothing more:

  /joint_states                   sensor_msgs/JointState   actuated joints only (passive joints
                                                           of closed linkages are not sensed)
  /imu_sensor_broadcaster/imu     sensor_msgs/Imu          noise and bias from ``sensors.*``
  /clock                          rosgraph_msgs/Clock      simulated time
  /sim/ground_truth/odometry      nav_msgs/Odometry        true base pose (never for estimators)

and applies ``/effort_controller/commands`` (std_msgs/Float64MultiArray, in the order of the
``joints`` parameter, the effort controller's; default: the robot's actuated joints), clipped
to the actuator limits. ``/sim/damage`` (std_msgs/String, the morphology_manager/damage YAML
schema) damages the *plant*: whether the morphology manager is told is another matter.

Parameters: ``robot`` (jethexa), ``publish_rate`` (Hz of sensor messages, default 1000 = every
physics step of 1 ms), ``real_time`` (true: pace the physics with the wall clock; false: as
fast as the timer allows), ``joints``, ``sensors.gyro_std`` ... (the ImuNoise fields), ``seed``.
"""
from __future__ import annotations

import sys
from typing import List, Optional

import numpy as np
import rclpy
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String

from ..errors import InputError
from ..model.morphology import Morphology
from ..model.robot import load_robot
from .plant import ImuNoise, Plant

SENSOR_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
NOISE_FIELDS = ("gyro_std", "accel_std", "orientation_std", "joint_position_std", "joint_velocity_std")


def _stamp(t: float, stamp) -> None:
    stamp.sec = int(np.floor(t))
    stamp.nanosec = int(round((t - stamp.sec) * 1e9)) % 1_000_000_000


class MujocoSimNode(Node):
    def __init__(self, robot=None, name: str = "mujoco_sim", **kwargs):
        super().__init__(name, **kwargs)
        self.declare_parameter("robot", "jethexa")
        self.declare_parameter("publish_rate", 1000.0)
        self.declare_parameter("real_time", True)
        self.declare_parameter("joints", [""])
        self.declare_parameter("seed", 0)
        for key in NOISE_FIELDS:
            self.declare_parameter(f"sensors.{key}", 0.0)
        self.declare_parameter("sensors.gyro_bias", [0.0, 0.0, 0.0])
        self.declare_parameter("sensors.accel_bias", [0.0, 0.0, 0.0])
        param = lambda k: self.get_parameter(k).value   # noqa: E731
        self.robot = robot if robot is not None else load_robot(param("robot"))
        noise = ImuNoise.from_dict({**{k: param(f"sensors.{k}") for k in NOISE_FIELDS},
                                    "gyro_bias": list(param("sensors.gyro_bias")),
                                    "accel_bias": list(param("sensors.accel_bias"))})
        self.plant = Plant(self.robot, noise=noise, seed=int(param("seed")))
        joints = [j for j in param("joints") if j] or list(self.plant.actuated_joints)
        unknown = [j for j in joints if j not in self.plant.actuated_joints]
        if unknown:
            raise InputError(f"joints not actuated on {self.robot.name}: {', '.join(unknown)}", field="joints")
        self.command_joints: List[str] = joints
        self.morphology = Morphology.healthy(self.robot)
        self.steps_per_tick = max(1, int(round(1.0 / (float(param("publish_rate")) * self.plant.timestep))))
        self.js_pub = self.create_publisher(JointState, "/joint_states", SENSOR_QOS)
        self.imu_pub = self.create_publisher(Imu, "/imu_sensor_broadcaster/imu", SENSOR_QOS)
        self.clock_pub = self.create_publisher(Clock, "/clock", 10)
        self.gt_pub = self.create_publisher(Odometry, "/sim/ground_truth/odometry", 10)
        self.create_subscription(Float64MultiArray, "/effort_controller/commands", self._on_command, 10)
        self.create_subscription(String, "/sim/damage", self._on_damage, 10)
        self.rejected = 0
        period = self.steps_per_tick * self.plant.timestep if param("real_time") else 1e-4
        self.timer = self.create_timer(period, self.tick)

    # ------------------------------------------------------------------ inputs
    def _on_command(self, msg: Float64MultiArray) -> None:
        values = np.asarray(msg.data, dtype=float)
        if values.shape != (len(self.command_joints),):
            self.rejected += 1
            self.get_logger().warning(f"command of length {values.size}, expected {len(self.command_joints)}",
                                      throttle_duration_sec=5.0)
            return
        self.plant.set_torques(dict(zip(self.command_joints, values)))

    def _on_damage(self, msg: String) -> None:
        from ..ros.damage import apply_damage_yaml
        plant = self.plant
        try:
            morph = apply_damage_yaml(self.morphology, msg.data,
                                      current_angle=lambda j: float(plant.q()[7 + plant.joint_names.index(j)]))
        except InputError as exc:
            self.get_logger().error(f"damage rejected: {exc}")
            return
        plant.apply_morphology(morph)
        self.morphology = morph
        self.get_logger().info(f"plant damaged: {morph.describe()}")

    # ------------------------------------------------------------------ the loop
    def tick(self) -> None:
        self.plant.step(self.steps_per_tick)
        self.publish()

    def publish(self) -> None:
        plant, t = self.plant, self.plant.time
        clock = Clock()
        _stamp(t, clock.clock)
        self.clock_pub.publish(clock)
        names, pos, vel, effort = plant.joint_states()
        js = JointState()
        _stamp(t, js.header.stamp)
        js.name = names
        js.position, js.velocity, js.effort = pos.tolist(), vel.tolist(), effort.tolist()
        self.js_pub.publish(js)
        imu = plant.imu()
        m = Imu()
        _stamp(t, m.header.stamp)
        m.header.frame_id = self.robot.imu_frame or "base_link"
        m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w = (float(a) for a in imu.orientation)
        m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = (float(a) for a in imu.angular_velocity)
        m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = \
            (float(a) for a in imu.linear_acceleration)
        self.imu_pub.publish(m)
        gt = plant.ground_truth()
        odom = Odometry()
        _stamp(t, odom.header.stamp)
        odom.header.frame_id, odom.child_frame_id = "odom", "base_link"
        p, q = odom.pose.pose.position, odom.pose.pose.orientation
        p.x, p.y, p.z = (float(a) for a in gt.position)
        q.x, q.y, q.z, q.w = (float(a) for a in gt.orientation)
        lin, ang = odom.twist.twist.linear, odom.twist.twist.angular
        lin.x, lin.y, lin.z = (float(a) for a in gt.linear_velocity)
        ang.x, ang.y, ang.z = (float(a) for a in gt.angular_velocity)
        self.gt_pub.publish(odom)


def main(argv: Optional[List[str]] = None) -> int:
    rclpy.init(args=argv if argv is not None else sys.argv)
    node = None
    try:
        node = MujocoSimNode()
        rclpy.spin(node)
    except InputError as exc:
        print(f"mujoco_sim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

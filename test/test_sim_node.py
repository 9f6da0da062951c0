"""The MuJoCo plant as a ROS node: only actuated joints on /joint_states, IMU, /clock and
ground truth published; commands in the `joints` order applied; /sim/damage damages it."""
import time

import numpy as np
import pytest
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from hybrid_dynamics.sim.node import MujocoSimNode


def test_sim_node_publishes_sensors_and_applies_commands():
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        sim = MujocoSimNode(context=ctx)
        probe = Node("probe", context=ctx)
        got = []
        probe.create_subscription(JointState, "/joint_states", got.append,
                                  QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
        cmd = probe.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
        dmg = probe.create_publisher(String, "/sim/damage", 10)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(sim)
        ex.add_node(probe)
        deadline = time.time() + 20
        while len(got) < 20 and time.time() < deadline:
            ex.spin_once(timeout_sec=0.05)
        assert got, "no /joint_states"
        assert list(got[-1].name) == sim.robot.actuated_joints
        # a command in the joints order reaches the plant, clipped to the limit
        values = np.full(len(sim.command_joints), 10.0)
        deadline = time.time() + 20
        while not np.allclose(sim.plant.joint_states()[3], 3.4) and time.time() < deadline:
            cmd.publish(Float64MultiArray(data=values.tolist()))
            ex.spin_once(timeout_sec=0.05)
        assert np.allclose(sim.plant.joint_states()[3], 3.4)
        mass = sim.plant.total_mass()
        deadline = time.time() + 20
        while sim.plant.total_mass() == mass and time.time() < deadline:
            dmg.publish(String(data="remove_leg: leg3"))
            ex.spin_once(timeout_sec=0.05)
        assert sim.plant.total_mass() == pytest.approx(mass - 0.2)
        ex.shutdown()
        sim.destroy_node()
        probe.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)

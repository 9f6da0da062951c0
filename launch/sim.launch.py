"""Simulation: everything of bringup.launch.py (walking at /cmd_vel: ``gait:=true`` by
default), plus the MuJoCo plant (which publishes what ros2_control's broadcasters would and
takes /effort_controller/commands; wall-clock paced) and rviz2.

    ros2 launch hybrid_dynamics sim.launch.py robot:=jethexa rviz:=true
    ros2 topic pub -r 10 /cmd_vel geometry_msgs/Twist "{linear: {x: 0.1}}"
    ros2 launch hybrid_dynamics sim.launch.py damage:="[{remove_leg: leg3}]" damage_at:=3.0

``hybrid-dynamics demo`` runs the same nodes in one process, the plant in lock-step with the
controller (docs/ros.md).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from hybrid_dynamics.ros import launch_graph


def nodes(context):
    """The plant of ``launch_graph.simulator`` and, with ``rviz:=true``, rviz2."""
    arg = lambda name: LaunchConfiguration(name).perform(context)   # noqa: E731
    share = get_package_share_directory(launch_graph.PACKAGE)
    rate = launch_graph.control_rate(launch_graph.params_file(share, arg("robot"), arg("params_file")))
    graph = [launch_graph.simulator(arg("robot"), lockstep=arg("lockstep").lower() == "true",
                                    damage=arg("damage"), damage_at=float(arg("damage_at")), rate=rate)]
    if arg("rviz").lower() == "true":
        graph.append(launch_graph.rviz(share, use_sim_time=arg("use_sim_time").lower() == "true"))
    return [launch_graph.to_launch_ros(node, Node) for node in graph]


def generate_launch_description():
    share = get_package_share_directory(launch_graph.PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="jethexa"),
        DeclareLaunchArgument("params_file", default_value=""),
        DeclareLaunchArgument("use_sim_time", default_value="true"),
        DeclareLaunchArgument("rviz", default_value="true"),
        DeclareLaunchArgument("gait", default_value="true"),
        DeclareLaunchArgument("lockstep", default_value="false",
                              description="the plant advances one control period per command (a slow or shared machine)"),
        DeclareLaunchArgument("damage", default_value="",
                              description="damage the plant suffers at damage_at (YAML of /sim/damage)"),
        DeclareLaunchArgument("damage_at", default_value="0.0", description="s of simulated time"),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(share, "launch", "bringup.launch.py")),
            launch_arguments={name: LaunchConfiguration(name)
                              for name in ("robot", "params_file", "use_sim_time", "gait", "lockstep")}.items()),
        OpaqueFunction(function=nodes),
    ])

"""Simulation: everything of bringup.launch.py (walking at /cmd_vel: ``gait:=true`` by
default), plus the MuJoCo plant (which publishes what ros2_control's broadcasters would and
takes /effort_controller/commands; wall-clock paced) and rviz2.

    ros2 launch hybrid_dynamics sim.launch.py robot:=jethexa rviz:=true
    ros2 topic pub -r 10 /cmd_vel geometry_msgs/Twist "{linear: {x: 0.1}}"

``hybrid-dynamics demo`` runs the same nodes in one process, the plant in lock-step with the
controller (docs/ros.md).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node

PACKAGE = "hybrid_dynamics"


def generate_launch_description():
    share = get_package_share_directory(PACKAGE)
    robot = LaunchConfiguration("robot")
    use_sim_time = LaunchConfiguration("use_sim_time")
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="jethexa"),
        DeclareLaunchArgument("params_file", default_value=""),
        DeclareLaunchArgument("use_sim_time", default_value="true"),
        DeclareLaunchArgument("rviz", default_value="true"),
        DeclareLaunchArgument("gait", default_value="true"),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(share, "launch", "bringup.launch.py")),
            launch_arguments={"robot": robot, "params_file": LaunchConfiguration("params_file"),
                              "use_sim_time": use_sim_time, "gait": LaunchConfiguration("gait")}.items()),
        Node(package=PACKAGE, executable="mujoco_sim", name="mujoco_sim", output="screen",
             parameters=[{"robot": robot, "settle": 0.3}]),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
             arguments=["-d", PathJoinSubstitution([share, "config", "hybrid_dynamics.rviz"])],
             parameters=[{"use_sim_time": use_sim_time}],
             condition=IfCondition(LaunchConfiguration("rviz"))),
    ])

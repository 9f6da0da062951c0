"""Hardware bring-up: state estimator, whole-body controller, morphology manager and
robot_state_publisher, next to a robot already running ros2_control (joint_state_broadcaster,
imu_sensor_broadcaster, an effort controller named effort_controller).

    ros2 launch hybrid_dynamics bringup.launch.py robot:=jethexa
    ros2 launch hybrid_dynamics bringup.launch.py robot:=solo12 params_file:=/path/to/params.yaml

Parameters: config/<robot>.yaml (see docs/ros.md). The same nodes run in one process with
``hybrid-dynamics run --robot <robot>``. ``gait:=true``: the controller owns the locomotion
planner and walks at /cmd_vel (geometry_msgs/Twist); the estimator then takes its contacts
from the stance the controller plans (whole_body_controller/cycle), and the morphology
manager runs the damage detector (which needs that planned stance).
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

PACKAGE = "hybrid_dynamics"


def robot_description(robot):
    """The URDF text of a built-in robot (its manifest resolves example-robot-data paths)."""
    from hybrid_dynamics.model.robot import load_robot
    with open(load_robot(robot).urdf) as f:
        return f.read()


def nodes(context):
    robot = LaunchConfiguration("robot").perform(context)
    params_file = LaunchConfiguration("params_file").perform(context) or os.path.join(
        get_package_share_directory(PACKAGE), "config", f"{robot}.yaml")
    use_sim_time = LaunchConfiguration("use_sim_time").perform(context).lower() == "true"
    gait = LaunchConfiguration("gait").perform(context).lower() == "true"
    common = [params_file, {"robot": robot, "use_sim_time": use_sim_time}]
    return [
        Node(package=PACKAGE, executable="state_estimator", name="state_estimator", output="screen",
             parameters=common + [{"stance_topic": "/whole_body_controller/cycle" if gait else ""}]),
        Node(package=PACKAGE, executable="whole_body_controller", name="whole_body_controller", output="screen",
             parameters=common + [{"gait": gait}]),
        Node(package=PACKAGE, executable="morphology_manager", name="morphology_manager", output="screen",
             parameters=common + [{"detector": gait}]),
        Node(package="robot_state_publisher", executable="robot_state_publisher", name="robot_state_publisher",
             output="screen",
             parameters=[{"robot_description": robot_description(robot), "use_sim_time": use_sim_time}],
             remappings=[("joint_states", "/state_estimator/joint_states_full")]),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="jethexa", description="jethexa, solo12, talos, hybrid_biped"),
        DeclareLaunchArgument("params_file", default_value="", description="default: config/<robot>.yaml"),
        DeclareLaunchArgument("use_sim_time", default_value="false"),
        DeclareLaunchArgument("gait", default_value="false",
                              description="the controller walks at /cmd_vel (control/locomotion)"),
        OpaqueFunction(function=nodes),
    ])

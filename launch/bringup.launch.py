"""Hardware bring-up: state estimator, whole-body controller, morphology manager and
robot_state_publisher, next to a robot already running ros2_control (joint_state_broadcaster,
imu_sensor_broadcaster, an effort controller named effort_controller).

    ros2 launch hybrid_dynamics bringup.launch.py robot:=jethexa
    ros2 launch hybrid_dynamics bringup.launch.py robot:=solo12 params_file:=/path/to/params.yaml

Parameters: config/<robot>.yaml (see docs/ros.md). The same nodes run in one process with
``hybrid-dynamics run --robot <robot>``. ``gait:=true``: the controller owns the locomotion
planner and walks at /cmd_vel (geometry_msgs/Twist); the estimator then takes its contacts
from the stance the controller plans (whole_body_controller/cycle), and on a serial robot the
damage detector runs in the controller's cycle (its detections go to the morphology manager),
the node graph ``hybrid-dynamics demo`` runs in one process.
"""
from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from hybrid_dynamics.ros import launch_graph


def nodes(context):
    """The nodes of ``launch_graph.bringup`` (the one list the test harness starts too)."""
    arg = lambda name: LaunchConfiguration(name).perform(context)   # noqa: E731
    robot = arg("robot")
    share = get_package_share_directory(launch_graph.PACKAGE)
    graph = launch_graph.bringup(robot, launch_graph.params_file(share, robot, arg("params_file")),
                                 use_sim_time=arg("use_sim_time").lower() == "true",
                                 gait=arg("gait").lower() == "true", lockstep=arg("lockstep").lower() == "true")
    return [launch_graph.to_launch_ros(node, Node) for node in graph]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="jethexa", description="jethexa, solo12, talos, hybrid_biped"),
        DeclareLaunchArgument("params_file", default_value="", description="default: config/<robot>.yaml"),
        DeclareLaunchArgument("use_sim_time", default_value="false"),
        DeclareLaunchArgument("gait", default_value="false",
                              description="the controller walks at /cmd_vel (control/locomotion)"),
        DeclareLaunchArgument("lockstep", default_value="false",
                              description="one control cycle per joint state (a simulator in lock-step)"),
        OpaqueFunction(function=nodes),
    ])

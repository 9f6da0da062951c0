"""The nodes each launch file starts: one source for ``launch/*.launch.py`` and the
process-per-node test harness (``test/process_graph.py``).

``launch`` and ``launch_ros`` are not on PyPI, so the tests cannot run the launch files
themselves; instead both read this module: the launch files turn each :class:`NodeLaunch`
into a ``launch_ros.actions.Node`` (:func:`to_launch_ros`), the harness into the command line
``ros2 launch`` runs for it (:func:`command_line`, as ``launch_ros`` builds it: the installed
executable, ``--ros-args -r __node:=NAME``, one ``--params-file`` per parameter file or
mapping, ``-r FROM:=TO`` per remapping). No rclpy here: the launch files import it before
any node runs.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import yaml

from ..model.robot import load_robot
from .params import WHOLE_BODY_CONTROLLER

PACKAGE = "hybrid_dynamics"
Parameters = Union[str, Dict[str, object]]        # a parameter file, or a mapping name -> value


@dataclass(frozen=True)
class NodeLaunch:
    """One node of a launch file, as ``launch_ros.actions.Node`` takes it."""
    package: str
    executable: str
    name: str
    parameters: Tuple[Parameters, ...] = ()
    remappings: Tuple[Tuple[str, str], ...] = ()
    arguments: Tuple[str, ...] = ()
    output: str = field(default="screen", compare=False)


def params_file(share: str, robot: str, override: str = "") -> str:
    """The parameter file the nodes get: ``override``, else ``share/config/<robot>.yaml``."""
    return override or os.path.join(share, "config", f"{robot}.yaml")


def robot_description(robot: str) -> str:
    """The URDF text of a built-in robot (its manifest resolves example-robot-data paths)."""
    with open(load_robot(robot).urdf) as f:
        return f.read()


def bringup(robot: str, parameter_file: str, use_sim_time: bool, gait: bool, lockstep: bool = False,
            with_description: bool = True) -> List[NodeLaunch]:
    """bringup.launch.py: estimator, controller, morphology manager, robot_state_publisher;
    the node graph ``hybrid-dynamics demo`` runs in one process (ros/scenario.py). ``gait``:
    the controller walks at /cmd_vel, the estimator takes the stance it plans, and on a serial
    robot the damage detector runs in the controller's cycle (``detector: true``,
    runtime/detection.py; the morphology manager applies its ``~/detections``); a closed chain
    walks without it (the controller refuses it there). ``lockstep``: one control cycle per
    joint state (``trigger: joint_states``), for a plant that waits for each command.
    ``with_description`` False leaves robot_state_publisher out (it is not a Python package:
    the harness cannot start it)."""
    common = (parameter_file, {"robot": robot, "use_sim_time": use_sim_time})
    detector = gait and load_robot(robot).loops is None
    control = {"gait": gait, "detector": detector, **({"trigger": "joint_states"} if lockstep else {})}
    nodes = [
        NodeLaunch(PACKAGE, "state_estimator", "state_estimator",
                   common + ({"stance_topic": "/whole_body_controller/cycle" if gait else ""},)),
        NodeLaunch(PACKAGE, "whole_body_controller", "whole_body_controller", common + (control,)),
        NodeLaunch(PACKAGE, "morphology_manager", "morphology_manager", common),
    ]
    if with_description:
        nodes.append(NodeLaunch("robot_state_publisher", "robot_state_publisher", "robot_state_publisher",
                                ({"robot_description": robot_description(robot), "use_sim_time": use_sim_time},),
                                remappings=(("joint_states", "/state_estimator/joint_states_full"),)))
    return nodes


def control_rate(parameter_file: str) -> float:
    """The whole-body controller's ``update_rate`` in ``parameter_file`` (Hz; the node's
    default when the file leaves it out): the period a lock-step plant advances per command."""
    with open(parameter_file) as f:
        doc = yaml.safe_load(f) or {}
    section = (doc.get("whole_body_controller") or {}).get("ros__parameters") or {}
    return float(section.get("update_rate", WHOLE_BODY_CONTROLLER["update_rate"].default))


def simulator(robot: str, lockstep: bool = False, damage: str = "", damage_at: float = 0.0,
              rate: float = 500.0) -> NodeLaunch:
    """sim.launch.py's MuJoCo plant (publishes /clock): wall-clock paced at 1 kHz, or with
    ``lockstep`` one control period (1 / ``rate``: give the controller's ``update_rate``,
    :func:`control_rate`; a plant faster than the controller waits ``lockstep_timeout`` for
    every state the controller skips) per command it receives, as fast as the controller
    computes (a loaded machine slows the run down, not the control). ``damage`` (the YAML of
    /sim/damage) happens to the plant at ``damage_at`` s of its clock, exactly."""
    params = {"robot": robot, "settle": 0.3, **({"lockstep": True, "publish_rate": float(rate)} if lockstep else {}),
              **({"damage": damage, "damage_at": float(damage_at)} if damage else {})}
    return NodeLaunch(PACKAGE, "mujoco_sim", "mujoco_sim", (params,))


def rviz(share: str, use_sim_time: bool) -> NodeLaunch:
    return NodeLaunch("rviz2", "rviz2", "rviz2", ({"use_sim_time": use_sim_time},),
                      arguments=("-d", os.path.join(share, "config", "hybrid_dynamics.rviz")))


def settings_file(node: NodeLaunch, settings: Dict[str, object], directory: Optional[str] = None) -> str:
    """A parameter file giving ``settings`` to ``node`` under its own name. rcl takes a node's
    own section over a ``/**`` one whatever the order of the files, so written as ``/**``
    (what launch_ros does with a mapping) a launch file's setting lost to the same key in the
    node's section of the robot's parameter file: ``lockstep:=true`` gave the controller
    ``trigger: joint_states`` and config/<robot>.yaml's ``trigger: timer`` won, so the
    lock-step graph ran the controller on its timer. A later file's node section does beat
    an earlier one's."""
    with tempfile.NamedTemporaryFile("w", prefix="launch_params_", suffix=".yaml", dir=directory,
                                     delete=False) as f:
        yaml.safe_dump({node.name: {"ros__parameters": dict(settings)}}, f)
    return f.name


def parameter_files(node: NodeLaunch, directory: Optional[str] = None) -> List[str]:
    """``node``'s parameters in order, each mapping written by :func:`settings_file`."""
    return [p if isinstance(p, str) else settings_file(node, p, directory) for p in node.parameters]


def to_launch_ros(node: NodeLaunch, node_class):
    """``node`` as a ``launch_ros.actions.Node`` (``node_class``), its mappings as files of its
    own section (:func:`settings_file`)."""
    return node_class(package=node.package, executable=node.executable, name=node.name, output=node.output,
                      parameters=parameter_files(node), remappings=list(node.remappings),
                      arguments=list(node.arguments))


def command_line(node: NodeLaunch, executable: str, scratch: str) -> List[str]:
    """The command ``ros2 launch`` runs for ``node`` (launch_ros's ``Node`` made by
    :func:`to_launch_ros`): ``executable`` (``<prefix>/lib/<package>/<executable>``), the
    arguments, then ``--ros-args -r __node:=NAME``, each parameter file (each mapping written to
    a file of the node's own section in ``scratch``), and the remappings."""
    cmd = [executable, *node.arguments, "--ros-args", "-r", f"__node:={node.name}"]
    for path in parameter_files(node, scratch):
        cmd += ["--params-file", path]
    for src, dst in node.remappings:
        cmd += ["-r", f"{src}:={dst}"]
    return cmd


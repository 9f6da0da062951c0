"""The launch files, evaluated against a minimal stand-in of ``launch``/``launch_ros`` (not
installable from PyPI): every node they start exists (an entry point of setup.py or a
standard ROS package), every file they pass exists, robot_state_publisher gets the URDF and
the estimator's full joint states; the rviz config shows the model, markers and odometry."""
import ast
import runpy
import sys
import types
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
EXTERNAL = {"robot_state_publisher": "robot_state_publisher", "rviz2": "rviz2"}


class _Rec:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class LaunchConfiguration:
    defaults = {}

    def __init__(self, name, **kwargs):
        self.name = name

    def perform(self, context):
        return context.get(self.name, self.defaults.get(self.name, ""))


class DeclareLaunchArgument(_Rec):
    def __init__(self, name, default_value="", **kwargs):
        super().__init__(name, default_value=default_value, **kwargs)
        LaunchConfiguration.defaults[name] = default_value


@pytest.fixture
def fake_launch(monkeypatch):
    recorded = []

    class Node(_Rec):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            recorded.append(kwargs)

    mods = {
        "launch": types.SimpleNamespace(LaunchDescription=lambda entities: list(entities)),
        "launch.actions": types.SimpleNamespace(DeclareLaunchArgument=DeclareLaunchArgument,
                                                OpaqueFunction=lambda function: ("opaque", function),
                                                IncludeLaunchDescription=lambda src, launch_arguments=(): (
                                                    "include", src, dict(launch_arguments))),
        "launch.conditions": types.SimpleNamespace(IfCondition=_Rec),
        "launch.launch_description_sources": types.SimpleNamespace(PythonLaunchDescriptionSource=lambda p: p),
        "launch.substitutions": types.SimpleNamespace(LaunchConfiguration=LaunchConfiguration,
                                                      PathJoinSubstitution=lambda parts: parts),
        "launch_ros": types.SimpleNamespace(),
        "launch_ros.actions": types.SimpleNamespace(Node=Node),
        "ament_index_python.packages": types.SimpleNamespace(get_package_share_directory=lambda p: str(REPO)),
    }
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    return recorded


def given(node):
    """A launched node's parameters as the launch file gave them: each file's path, and each
    mapping (written to a file of the node's own section: ros/launch_graph.py) read back."""
    out = []
    for p in node["parameters"]:
        data = yaml.safe_load(Path(p).read_text())
        out.append(data[node["name"]]["ros__parameters"] if list(data) == [node["name"]] else p)
    return out


def _setup_nodes():
    """The node executables setup.py installs (its ``NODES`` literal, whatever its container)."""
    tree = ast.parse((REPO / "setup.py").read_text())
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(getattr(t, "id", None) == "NODES" for t in stmt.targets):
            return set(ast.literal_eval(stmt.value))
    raise AssertionError("setup.py has no NODES = ... literal")


def test_bringup_starts_the_nodes_with_the_robot_config(fake_launch):
    desc = runpy.run_path(str(REPO / "launch" / "bringup.launch.py"))["generate_launch_description"]()
    opaque = [e for e in desc if isinstance(e, tuple) and e[0] == "opaque"]
    assert opaque
    opaque[0][1]({"robot": "jethexa"})
    names = {n["name"]: n for n in fake_launch}
    assert set(names) == {"state_estimator", "whole_body_controller", "morphology_manager", "robot_state_publisher"}
    entry_points = _setup_nodes()
    for n in fake_launch:
        assert n["executable"] in entry_points or n["executable"] in EXTERNAL, n
        for p in given(n):
            if isinstance(p, str):
                assert Path(p).is_file(), p
                assert "whole_body_controller" in yaml.safe_load(Path(p).read_text())
    # standing by default; gait:=true walks at /cmd_vel with the planned stance and the detector
    # in the controller's cycle, the node graph of the one-process demo (ros/scenario.py)
    assert {"gait": False, "detector": False} in given(names["whole_body_controller"])
    fake_launch.clear()
    opaque[0][1]({"robot": "jethexa", "gait": "true"})
    names = {n["name"]: n for n in fake_launch}
    assert {"gait": True, "detector": True} in given(names["whole_body_controller"])
    assert {"stance_topic": "/whole_body_controller/cycle"} in given(names["state_estimator"])
    assert not any("detector" in p for p in given(names["morphology_manager"]) if isinstance(p, dict))
    from hybrid_dynamics.ros import params as P
    for node in ("whole_body_controller", "state_estimator", "morphology_manager"):
        for p in given(names[node]):
            if isinstance(p, dict):
                assert set(p) - {"use_sim_time"} <= set(P.NODES[node]), (node, p)
    rsp = names["robot_state_publisher"]
    assert "<robot" in given(rsp)[0]["robot_description"]
    assert ("joint_states", "/state_estimator/joint_states_full") in rsp["remappings"]


def test_a_closed_chain_walks_without_the_detector(fake_launch):
    """gait:=true on hybrid_biped (closed linkages): the controller walks without the
    detector, which it would refuse there (its model has no loop closures)."""
    desc = runpy.run_path(str(REPO / "launch" / "bringup.launch.py"))["generate_launch_description"]()
    opaque = next(e for e in desc if isinstance(e, tuple) and e[0] == "opaque")
    opaque[1]({"robot": "hybrid_biped", "gait": "true"})
    names = {n["name"]: n for n in fake_launch}
    assert {"gait": True, "detector": False} in given(names["whole_body_controller"])


def test_sim_includes_bringup_plus_simulator_and_rviz(fake_launch):
    desc = runpy.run_path(str(REPO / "launch" / "sim.launch.py"))["generate_launch_description"]()
    includes = [e for e in desc if isinstance(e, tuple) and e[0] == "include"]
    assert includes and Path(includes[0][1]).name == "bringup.launch.py" and Path(includes[0][1]).is_file()
    assert includes[0][2]["gait"].name == "gait" and LaunchConfiguration.defaults["gait"] == "true"
    assert set(includes[0][2]) == {"robot", "params_file", "use_sim_time", "gait", "lockstep"}
    opaque = [e for e in desc if isinstance(e, tuple) and e[0] == "opaque"]
    opaque[0][1]({"robot": "jethexa"})
    execs = {n["executable"] for n in fake_launch}
    assert {"mujoco_sim", "rviz2"} <= execs
    rviz = next(n for n in fake_launch if n["executable"] == "rviz2")
    assert rviz["arguments"][0] == "-d" and Path(rviz["arguments"][1]).is_file()
    fake_launch.clear()
    opaque[0][1]({"robot": "jethexa", "rviz": "false"})
    assert {n["executable"] for n in fake_launch} == {"mujoco_sim"}


def test_launch_files_start_what_the_harness_starts(fake_launch):
    """The launch files and the process-per-node harness read one list (ros/launch_graph.py):
    the launch_ros Nodes are those records, field for field."""
    from hybrid_dynamics.ros import launch_graph
    desc = runpy.run_path(str(REPO / "launch" / "bringup.launch.py"))["generate_launch_description"]()
    opaque = next(e for e in desc if isinstance(e, tuple) and e[0] == "opaque")
    opaque[1]({"robot": "solo12", "gait": "true", "use_sim_time": "true"})
    expected = launch_graph.bringup("solo12", str(REPO / "config" / "solo12.yaml"), use_sim_time=True, gait=True)
    got = [launch_graph.NodeLaunch(n["package"], n["executable"], n["name"], tuple(given(n)),
                                   tuple(n["remappings"]), tuple(n["arguments"])) for n in fake_launch]
    assert got == expected and len(got) == 4


def test_command_line_is_what_launch_ros_runs(tmp_path):
    """``--ros-args -r __node:=NAME``, a --params-file per file and per mapping (a file of the
    node's own section, as the launch files give launch_ros), remappings last."""
    from hybrid_dynamics.ros import launch_graph
    node = launch_graph.NodeLaunch("pkg", "exe", "name", ("/a.yaml", {"x": 1.5, "flag": True}),
                                   remappings=(("joint_states", "/other"),), arguments=("-d", "f"))
    cmd = launch_graph.command_line(node, "/prefix/lib/pkg/exe", str(tmp_path))
    assert cmd[:7] == ["/prefix/lib/pkg/exe", "-d", "f", "--ros-args", "-r", "__node:=name", "--params-file"]
    assert cmd[7] == "/a.yaml" and cmd[8] == "--params-file" and cmd[-2:] == ["-r", "joint_states:=/other"]
    assert yaml.safe_load(Path(cmd[9]).read_text()) == {"name": {"ros__parameters": {"x": 1.5, "flag": True}}}


def test_rviz_config_shows_model_markers_odometry():
    cfg = yaml.safe_load((REPO / "config" / "hybrid_dynamics.rviz").read_text())
    displays = {d["Class"]: d for d in cfg["Visualization Manager"]["Displays"]}
    assert "rviz_default_plugins/RobotModel" in displays
    assert displays["rviz_default_plugins/MarkerArray"]["Topic"]["Value"] == "/whole_body_controller/markers"
    assert displays["rviz_default_plugins/Odometry"]["Topic"]["Value"] == "/state_estimator/odometry"
    assert cfg["Visualization Manager"]["Global Options"]["Fixed Frame"] == "odom"


@pytest.mark.parametrize("robot", ["jethexa", "jethexa_soft", "jethexa_shank", "jethexa_cosserat", "jethexa_gvs", "jethexa_tail", "solo12", "talos", "hybrid_biped"])
def test_robot_params_declare_known_names_only(robot):
    """Every key of config/<robot>.yaml is a declared parameter of its node."""
    from hybrid_dynamics.ros import params as P
    data = yaml.safe_load((REPO / "config" / f"{robot}.yaml").read_text())
    for node, section in data.items():
        flat = P.flatten(section["ros__parameters"])
        targets = P.NODES.values() if node == "/**" else [P.NODES[node]]
        for spec in targets:
            unknown = set(flat) - set(spec)
            assert not unknown, (node, unknown)
    from hybrid_dynamics.model.robot import load_robot
    r = load_robot(robot)
    joints = data["whole_body_controller"]["ros__parameters"]["joints"]
    assert set(joints) == set(r.actuated_joints)


@pytest.mark.parametrize("robot", ["jethexa", "jethexa_soft", "jethexa_shank", "jethexa_cosserat", "jethexa_gvs",
                                   "jethexa_tail"])
def test_the_launch_files_settings_beat_the_robot_parameter_file(robot, tmp_path):
    """What rcl itself resolves from the command line of the lock-step graph's controller:
    the launch's ``trigger: joint_states`` over config/<robot>.yaml's ``whole_body_controller:
    trigger: timer`` (a ``/**`` mapping, as launch_ros writes one, lost to the node's own
    section whatever the order: the lock-step graph ran the controller on its timer), and
    the file's other settings kept."""
    import rclpy
    from rclpy.node import Node
    from hybrid_dynamics.ros import launch_graph
    params = str(REPO / "config" / f"{robot}.yaml")
    node = next(n for n in launch_graph.bringup(robot, params, use_sim_time=True, gait=True, lockstep=True,
                                                with_description=False) if n.name == "whole_body_controller")
    cmd = launch_graph.command_line(node, "exe", str(tmp_path))
    context = rclpy.Context()
    rclpy.init(args=cmd, context=context)
    try:
        probe = Node("probe", context=context, automatically_declare_parameters_from_overrides=True)
        values = {k: probe.get_parameter(k).value for k in ("trigger", "gait", "detector", "use_sim_time",
                                                             "update_rate", "robot")}
        probe.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
    section = yaml.safe_load(Path(params).read_text())["whole_body_controller"]["ros__parameters"]
    assert section["trigger"] == "timer"                   # the file's own, which the launch must beat
    assert values == {"trigger": "joint_states", "gait": True, "detector": True, "use_sim_time": True,
                      "update_rate": section["update_rate"], "robot": robot}

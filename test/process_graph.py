"""Process-per-node harness: the nodes of a launch file (``hybrid_dynamics.ros.launch_graph``,
which the launch files read too) started from a colcon install, each as its own process with
the command line ``ros2 launch`` runs, watched over DDS from this process, stopped with SIGINT.

Everything is judged in simulated time (``/clock`` of the plant): the machine the tests run on
is shared, so the wall clock only bounds how long we wait (generously), never what we check.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
import rclpy
import yaml
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from diagnostic_msgs.msg import DiagnosticArray
from rosgraph_msgs.msg import Clock
from geometry_msgs.msg import Twist
from std_msgs.msg import Float64MultiArray, String

from hybrid_dynamics.model.damage_events import with_lock_angles
from hybrid_dynamics.ros import launch_graph

REPO = Path(__file__).resolve().parent.parent
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
EVIDENCE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)


# the modules of the nodes' entry points (setup.py): importing them compiles the numba kernels
NODE_MODULES = ("hybrid_dynamics.ros.state_estimator", "hybrid_dynamics.ros.whole_body_controller",
                "hybrid_dynamics.ros.morphology_manager", "hybrid_dynamics.ros.sim_node")


def colcon_install(workspace: Path) -> Path:
    """``colcon build`` of this checkout in ``workspace``, then the numba kernels compiled once
    into the install's cache (:func:`compile_kernels`); returns the package's install prefix."""
    src = workspace / "src"
    src.mkdir(parents=True, exist_ok=True)
    link = src / launch_graph.PACKAGE
    if not link.exists():
        link.symlink_to(REPO)
    subprocess.run([str(Path(sys.executable).parent / "colcon"), "build", "--packages-select", launch_graph.PACKAGE,
                    "--build-base", str(workspace / "build"), "--install-base", str(workspace / "install"),
                    "--base-paths", str(src)], cwd=workspace, check=True, capture_output=True, text=True, timeout=600)
    prefix = workspace / "install" / launch_graph.PACKAGE
    compile_kernels(prefix)
    return prefix


def compile_kernels(prefix: Path) -> None:
    """Import every node's module from the install once, so that its numba kernels are
    compiled into the install's ``__pycache__`` before the nodes start. A fresh install has no
    cache: each node's process compiled them itself at import (37 s of CPU against 1.7 s from
    the cache, measured), four at once, and on the loaded 2-core machine no node of the first
    test of a module had started after 300 s."""
    # run in the prefix: ``python -c`` puts its working directory first on the path, and in the
    # checkout that is the source tree, whose own cache is warm (nothing compiled for the install)
    subprocess.run([sys.executable, "-c", "; ".join(f"import {m}" for m in NODE_MODULES)], cwd=prefix,
                   env=install_environment(prefix), check=True, capture_output=True, text=True, timeout=1800)
    if not any((prefix / "lib").glob("python3*/site-packages/hybrid_dynamics/*/__pycache__/*.nbi")):
        raise RuntimeError(f"no numba cache in the install {prefix} after importing its nodes")


def install_environment(prefix: Path) -> Dict[str, str]:
    """What sourcing the install's setup script sets for our package (its Python path first,
    its prefix on the ament index), on top of this process's environment (ROS domain, DDS
    on loopback, one BLAS thread: test/conftest.py)."""
    env = dict(os.environ)
    site = next((prefix / "lib").glob("python3*/site-packages"))
    env["PYTHONPATH"] = os.pathsep.join([str(site)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["AMENT_PREFIX_PATH"] = os.pathsep.join([str(prefix)] + [p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p])
    env["PYTHONUNBUFFERED"] = "1"
    return env


def sim_graph(prefix: Path, robot: str = "jethexa", gait: bool = True, lockstep: bool = False, damage: str = "",
              damage_at: float = 0.0) -> List[launch_graph.NodeLaunch]:
    """``sim.launch.py robot:=ROBOT rviz:=false gait:=GAIT lockstep:=LOCKSTEP damage:=DAMAGE
    damage_at:=DAMAGE_AT`` minus robot_state_publisher (a C++ package, not installable here;
    nothing of ours consumes /tf from it)."""
    share = str(prefix / "share" / launch_graph.PACKAGE)
    params = launch_graph.params_file(share, robot)
    return launch_graph.bringup(robot, params, use_sim_time=True, gait=gait, lockstep=lockstep,
                                with_description=False) + \
        [launch_graph.simulator(robot, lockstep, damage=damage, damage_at=damage_at,
                                rate=launch_graph.control_rate(params))]


def default_sigint() -> None:
    """In the child before it runs the node: SIGINT back to its default. A test runner started
    in the background of a non-interactive shell ignores SIGINT, and its children inherit
    that: rclpy's handler then never shuts the node down and :meth:`ProcessGraph.stop` had
    to kill it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class ProcessGraph:
    """Each node its own process, as ``ros2 launch`` starts it; :meth:`stop` sends SIGINT.
    Each node's stdout and stderr go to their own files (``<name>.log``, ``<name>.err``):
    :meth:`report` puts a failed node's stderr, where rclpy and Python write their
    tracebacks, whole into the failure message."""

    def __init__(self, nodes: Sequence[launch_graph.NodeLaunch], prefix: Path, scratch: Path):
        self.nodes = list(nodes)
        self.scratch = scratch
        scratch.mkdir(parents=True, exist_ok=True)
        env = install_environment(prefix)
        self.procs: Dict[str, subprocess.Popen] = {}
        self.logs: Dict[str, Path] = {}
        self.errs: Dict[str, Path] = {}
        for node in self.nodes:
            exe = prefix / "lib" / node.package / node.executable
            if not exe.is_file():
                raise FileNotFoundError(f"{exe}: not in the colcon install")
            cmd = launch_graph.command_line(node, str(exe), str(scratch))
            self.logs[node.name] = scratch / f"{node.name}.log"
            self.errs[node.name] = scratch / f"{node.name}.err"
            with open(self.logs[node.name], "w") as log, open(self.errs[node.name], "w") as err:
                self.procs[node.name] = subprocess.Popen(cmd, env=env, stdout=log, stderr=err,
                                                         preexec_fn=default_sigint)

    def running(self) -> Dict[str, Optional[int]]:
        return {name: p.poll() for name, p in self.procs.items()}

    def stop(self, timeout: float = 30.0) -> Dict[str, int]:
        """SIGINT to every node (as ``ros2 launch`` on Ctrl-C); returns the exit codes
        (a node still alive after ``timeout`` is asked for its stacks, then killed and
        reported as -9)."""
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        deadline = time.monotonic() + timeout
        codes = {}
        for name, p in self.procs.items():
            try:
                codes[name] = p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGUSR1)           # its threads' stacks to its stderr (ros/stop_signal.py)
                time.sleep(1.0)
                p.kill()
                p.wait()
                codes[name] = -9
        return codes

    def log(self, name: str) -> str:
        return self.logs[name].read_text()

    def report(self, codes: Dict[str, Optional[int]]) -> str:
        """Every node whose exit code is not 0: its code, its whole stderr (the last 20 000
        characters) and the end of its stdout."""
        parts = []
        for name, code in codes.items():
            if code != 0:
                err = self.errs[name].read_text()
                parts.append(f"--- {name} exited {code}; stderr:\n{err[-20000:]}\n--- {name} stdout (end):\n"
                             f"{self.log(name)[-3000:]}")
        return "\n".join(parts)


@dataclass
class Watch:
    """What the observer saw, in simulated time."""
    clock: float = -1.0
    positions: List[tuple] = field(default_factory=list)        # (t, x, y, z) of the true base
    morphologies: List[dict] = field(default_factory=list)       # (published YAML + 't': clock at receipt)
    evidence: List[dict] = field(default_factory=list)           # whole_body_controller/detections' evidence
    damaged_at: Optional[float] = None                           # plant time of its damage (its report's t)
    statistic: List[float] = field(default_factory=list)         # whole_body_controller/detector |e| (NaN: not testing)
    threshold: float = float("nan")
    controller: List[tuple] = field(default_factory=list)        # (t, {key: value}) of its /diagnostics
    wall: List[tuple] = field(default_factory=list)              # (wall s, clock) at each /clock received

    def detections(self) -> List[dict]:
        return [m for m in self.morphologies if m.get("source") == "detected"]

    def controller_counts(self, t_from: float) -> Dict[str, int]:
        """How many controller cycles, safe-mode cycles and deadline misses its /diagnostics
        counted from ``t_from`` (simulated) to its last report."""
        reports = [values for t, values in self.controller if t >= t_from]
        if len(reports) < 2:
            raise AssertionError(f"{len(reports)} controller diagnostics after {t_from} s")
        keys = ("cycles", "safe_cycles", "deadline_misses")
        return {k: int(reports[-1][k]) - int(reports[0][k]) for k in keys}

    def real_time_factor(self) -> float:
        """Simulated over wall time, from the first /clock received to the last."""
        (w0, c0), (w1, c1) = self.wall[0], self.wall[-1]
        return (c1 - c0) / max(w1 - w0, 1e-9)

    def speed(self, t_from: float, t_to: float) -> float:
        """Mean forward (x) speed of the true base over [t_from, t_to] (as sim/runner.py's)."""
        p = np.array([x for x in self.positions if t_from <= x[0] <= t_to])
        return float((p[-1, 1] - p[0, 1]) / (p[-1, 0] - p[0, 0]))

    def distance(self, t_from: float, t_to: float) -> float:
        """Straight-line distance of the true base in the horizontal plane over [t_from, t_to]."""
        p = np.array([x for x in self.positions if t_from <= x[0] <= t_to])
        if len(p) < 2:
            raise AssertionError(f"no ground truth between {t_from} and {t_to} s (got {len(self.positions)} samples)")
        return float(np.linalg.norm(p[-1, 1:3] - p[0, 1:3]))


class Observer:
    """An rclpy node in this process: commands /cmd_vel, declares damage, records what the
    graph does (ground truth, morphology, the evidence of the detector in the controller's cycle)."""

    def __init__(self):
        self.context = rclpy.Context()                 # our own: other tests may hold the default
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("process_graph_observer", context=self.context)
        self.watch = Watch()
        self.lock = threading.Lock()
        n = self.node
        n.create_subscription(Clock, "/clock", self._on_clock, 10)
        n.create_subscription(Odometry, "/sim/ground_truth/odometry", self._on_truth, 10)
        n.create_subscription(String, "/morphology_manager/morphology", self._on_morphology, LATCHED)
        n.create_subscription(String, "/whole_body_controller/detections", self._on_detections, EVIDENCE)
        n.create_subscription(String, "/sim/ground_truth/morphology", self._on_plant_damage, LATCHED)
        n.create_subscription(Float64MultiArray, "/whole_body_controller/detector", self._on_statistic, EVIDENCE)
        n.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, EVIDENCE)
        self.cmd_pub = n.create_publisher(Twist, "/cmd_vel", 10)
        self.declare_damage = n.create_publisher(String, "/morphology_manager/damage", 10)
        self.cmd = Twist()
        self.declared: Optional[str] = None         # damage events told the manager once the plant suffers them
        n.create_timer(0.1, lambda: self.cmd_pub.publish(self.cmd))
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(n)
        self.extra = []
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def _on_clock(self, msg: Clock) -> None:
        self.watch.clock = msg.clock.sec + 1e-9 * msg.clock.nanosec
        self.watch.wall.append((time.monotonic(), self.watch.clock))

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.endswith(": whole_body_controller"):
                self.watch.controller.append((self.watch.clock, {kv.key: kv.value for kv in status.values}))

    def _on_truth(self, msg: Odometry) -> None:
        s = msg.header.stamp
        p = msg.pose.pose.position
        if len(self.watch.positions) == 0 or s.sec + 1e-9 * s.nanosec - self.watch.positions[-1][0] >= 0.01:
            self.watch.positions.append((s.sec + 1e-9 * s.nanosec, p.x, p.y, p.z))

    def _on_morphology(self, msg: String) -> None:
        data = yaml.safe_load(msg.data)
        data["t"] = self.watch.clock
        self.watch.morphologies.append(data)

    def _on_plant_damage(self, msg: String) -> None:
        if self.watch.damaged_at is None:
            plant = yaml.safe_load(msg.data)
            self.watch.damaged_at = float(plant["t"])
            if self.declared is not None:       # a locked joint at the angle the plant locked it at
                events = with_lock_angles(yaml.safe_load(self.declared), plant.get("locked") or {})
                self.declare_damage.publish(String(data=yaml.safe_dump(events)))

    def _on_statistic(self, msg: Float64MultiArray) -> None:
        self.watch.statistic.append(float(msg.data[0]))
        self.watch.threshold = float(msg.data[1])

    def _on_detections(self, msg: String) -> None:
        """The controller's detections (its ``detector: true``): the evidence of each."""
        self.watch.evidence.extend(yaml.safe_load(msg.data)["detections"])

    def wait_until(self, t_sim: float, wall_timeout: float, graph: Optional[ProcessGraph] = None) -> None:
        """Block until the simulated clock reaches ``t_sim`` (a node that exits fails at once)."""
        deadline = time.monotonic() + wall_timeout
        while self.watch.clock < t_sim:
            if graph is not None:
                dead = {k: v for k, v in graph.running().items() if v is not None}
                if dead:
                    raise AssertionError(f"nodes exited: {dead}\n" + graph.report(dead))
            if time.monotonic() > deadline:
                raise AssertionError(f"simulated clock at {self.watch.clock:.2f} s after {wall_timeout} s wall, "
                                     f"waiting for {t_sim} s")
            time.sleep(0.05)

    def walk(self, vx: float) -> None:
        self.cmd = Twist()
        self.cmd.linear.x = float(vx)

    def declare(self, events: str) -> None:
        """Tell the morphology manager ``events`` (its ~/damage) as soon as the plant reports
        suffering damage (the plant's scheduled ``damage``), as the one-process demo's
        scenario driver does."""
        self.declared = events

    def add(self, node_class, *args, **kwargs):
        """Host another node (a sensor source, a probe) in the observer's executor."""
        node = node_class(*args, context=self.context, **kwargs)
        self.extra.append(node)
        self.executor.add_node(node)
        return node

    def close(self) -> None:
        self.executor.shutdown()
        self.thread.join(timeout=5.0)
        for node in self.extra + [self.node]:
            node.destroy_node()
        rclpy.try_shutdown(context=self.context)

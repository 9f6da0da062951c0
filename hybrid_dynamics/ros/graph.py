"""The whole graph in one process, without ROS's launch system.

One rclpy context, one executor (single-threaded by default, ros/executor.py; see
:class:`Graph`) hosting the state estimator, the whole-body controller and the morphology
manager, plus any extra node the caller adds (the MuJoCo plant, a gait/reference node, a
bag recorder)::

    from hybrid_dynamics.ros.graph import Graph, run_graph

    with Graph("jethexa", params={"whole_body_controller": {"update_rate": 500.0}}) as g:
        g.add_node(lambda ctx, robot: MySimNode(robot, context=ctx))   # or a Node made with g.context
        g.spin_for(5.0)                 # or g.start() to spin in a background thread
        print(g.nodes["whole_body_controller"].latencies())

    run_graph("jethexa", duration=10.0, extra_nodes=[...])   # blocking; Ctrl-C stops it

Each node does its own job here as under ``ros2 launch``: the state estimator runs its
filter and publishes it, the morphology manager subscribes to what it needs, the controller
estimates in its cycle (one hop from the joint states, docs/ros.md "Latency").

Parameters: ``config/<robot>.yaml`` (``<node>: ros__parameters: ...``, ``/**`` for every
node) when it exists, then ``params[node]`` on top. Shutdown is clean: executor stopped,
nodes destroyed, context shut down, whatever raised.
"""
from __future__ import annotations

import concurrent.futures
import gc
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, Mapping, Optional, Sequence, Union

import rclpy
import yaml
from rclpy.context import Context
from rclpy.executors import (ConditionReachedException, ExternalShutdownException, MultiThreadedExecutor,
                             ShutdownException, TimeoutException)
from rclpy.node import Node
from rclpy.parameter import Parameter

from ..errors import InputError
from ..model.robot import load_robot
from ..paths import config_dir
from . import params as P
from .executor import WaitSetExecutor
from .morphology_manager import MorphologyManagerNode
from .node_base import freeze_startup_objects
from .state_estimator import StateEstimatorNode
from .whole_body_controller import WholeBodyControllerNode

NODE_CLASSES = {"state_estimator": StateEstimatorNode, "whole_body_controller": WholeBodyControllerNode,
                "morphology_manager": MorphologyManagerNode}

DEFAULT_NODES = ("state_estimator", "whole_body_controller", "morphology_manager")
NodeFactory = Callable[[Context, object], Node]


def config_file(robot_name: str) -> Optional[Path]:
    path = config_dir() / f"{robot_name}.yaml"
    return path if path.is_file() else None


def load_node_params(path: Optional[Path], node: str) -> Dict[str, object]:
    """Flat parameters for ``node`` from a ROS 2 parameter file (``/**`` then the node)."""
    if path is None:
        return {}
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read parameters: {exc}", file=str(path)) from None
    out: Dict[str, object] = {}
    for key in ("/**", node, "/" + node):
        section = data.get(key)
        if isinstance(section, dict):
            out.update(P.flatten(section.get("ros__parameters") or {}))
    return out


def _overrides(node: str, values: Mapping[str, object]):
    spec = P.NODES[node]
    out = []
    for key, value in values.items():
        if key == "use_sim_time":            # declared by rclpy for every node
            out.append(Parameter(key, value=bool(value)))
            continue
        if key not in spec:
            raise InputError(f"unknown parameter '{key}' for {node}", field=key)
        default = spec[key].default
        if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(default, list):
            value = list(value) or [""]
        out.append(Parameter(key, value=value))
    return out


class GraphExecutor(MultiThreadedExecutor):
    """rclpy's MultiThreadedExecutor with a bound on callbacks in flight.

    The stock one (rclpy 7) submits a task for every ready entity at every wake-up, also
    while the callback group of that entity is busy; at a 1 kHz loop its list of pending
    futures grows to hundreds and each wake-up scans it, so the loop collapses to a few Hz.
    Here at most ``num_threads`` callbacks are in flight: when all workers are busy the
    executor waits for one to finish before it waits on the ROS entities again.
    """

    def __init__(self, num_threads: Optional[int] = None, *, context: Optional[Context] = None):
        super().__init__(num_threads, context=context)
        self._inflight: Dict[concurrent.futures.Future, object] = {}
        self._limit = self._executor._max_workers

    def _spin_once_impl(self, timeout_sec=None, wait_condition=lambda: False) -> None:
        if len(self._inflight) >= self._limit:
            concurrent.futures.wait(list(self._inflight), timeout=timeout_sec,
                                    return_when=concurrent.futures.FIRST_COMPLETED)
        for future in [f for f in self._inflight if f.done()]:
            self._inflight.pop(future).result()        # re-raise a callback's exception here
        if len(self._inflight) >= self._limit:
            return
        try:
            handler, _, _ = self.wait_for_ready_callbacks(timeout_sec, None, wait_condition)
        except (ExternalShutdownException, ShutdownException, TimeoutException, ConditionReachedException):
            return
        self._inflight[self._executor.submit(handler)] = handler


class Graph:
    """Nodes of one robot in one process (module docstring)."""

    def __init__(self, robot: Union[str, object] = "jethexa", *, params: Optional[Mapping[str, Mapping]] = None,
                 config: Optional[Union[str, Path]] = None, nodes: Sequence[str] = DEFAULT_NODES,
                 num_threads: Optional[int] = None, domain_id: Optional[int] = None,
                 single_threaded: bool = True, parameter_services: bool = True,
                 default_events: bool = False):
        """``single_threaded`` (default): the package's :class:`~hybrid_dynamics.ros.executor.
        WaitSetExecutor` (rclpy's single-threaded executor with its wait set kept between
        wake-ups), every callback in the spinning thread; ``False``: :class:`GraphExecutor`, a thread pool. The callbacks
        share one GIL either way; a pool only adds hand-offs (a worker waits for the GIL behind
        a busy thread, up to the 5 ms switch interval) and interleaves the control cycle with
        the other nodes' callbacks: at 1 kHz the cycle's own compute went from p50 0.55 ms
        single-threaded to 1.2 ms (p99 0.8 -> 2.9 ms) in the pool, and the lock-step demo ran
        at RTF 0.5 instead of 0.85.
        ``parameter_services=False``: the nodes answer no parameter services (``ros2 param``)
        and have no default QoS event handlers (ros/lean.py): fewer entities for the executor
        to scan at every wake-up. ``default_events``: rclpy's default "incompatible QoS" event
        handler on every publisher and subscription (ros/lean.py); off by default: they are
        about half of the entities the executor visits at each wake-up (~0.35 ms of Python per
        joint state at 1 kHz), and a QoS mismatch here is between our own nodes."""
        self.node_kwargs = {"default_events": bool(default_events)}
        if not parameter_services:
            self.node_kwargs["start_parameter_services"] = False
        self.robot = load_robot(robot) if isinstance(robot, (str, Path)) else robot
        self.context = Context()
        init_kwargs = {"context": self.context}
        if domain_id is not None:
            init_kwargs["domain_id"] = int(domain_id)
        rclpy.init(**init_kwargs)
        self.executor = (WaitSetExecutor(context=self.context) if single_threaded
                         else GraphExecutor(num_threads=num_threads, context=self.context))
        self.nodes: Dict[str, Node] = {}
        self._thread: Optional[threading.Thread] = None
        self._closed = False
        self.error: Optional[BaseException] = None      # what stopped a background spin
        cfg = Path(config) if config else config_file(self.robot.name)
        params = params or {}
        try:
            for name in nodes:
                if name not in NODE_CLASSES:
                    raise InputError(f"unknown node '{name}' ({', '.join(NODE_CLASSES)})", field="nodes")
                values = load_node_params(cfg, name)
                values.update(params.get(name, {}))
                values["robot"] = self.robot.name if values.get("robot") in (None, "") else values["robot"]
                node = NODE_CLASSES[name](self.robot, context=self.context,
                                          parameter_overrides=_overrides(name, values), **self.node_kwargs)
                self.add_node(node)
        except BaseException:
            self.shutdown()
            raise
        freeze_startup_objects()

    def add_node(self, node: Union[Node, NodeFactory]) -> Node:
        """Add a node (made with ``context=graph.context``) or a factory ``(context, robot) -> Node``."""
        if not isinstance(node, Node):
            node = node(self.context, self.robot)
        self.nodes[node.get_name()] = node
        self.executor.add_node(node)
        return node

    # ---------------------------------------------------------------- spinning
    def spin_once(self, timeout: float = 0.01) -> None:
        self.executor.spin_once(timeout_sec=timeout)

    def spin_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and self.context.ok():
            self.executor.spin_once(timeout_sec=min(0.05, max(0.0, end - time.monotonic())))

    def spin_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Spin (or wait, when started in the background) until ``predicate()``; never hangs."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return True
            if self._thread is None:
                self.executor.spin_once(timeout_sec=0.01)
            else:
                time.sleep(0.002)
        return bool(predicate())

    def start(self) -> "Graph":
        """Spin in a background thread until :meth:`shutdown`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._spin, name="hybrid_dynamics-graph", daemon=True)
            self._thread.start()
        return self

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except (ExternalShutdownException, KeyboardInterrupt):
            pass
        except Exception as exc:  # a node destroyed under an in-flight callback while closing
            if not self._closed:
                self.error = exc
                raise

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.executor.shutdown(timeout_sec=2.0)
            if self._thread is not None:
                self._thread.join(timeout=2.0)
            if getattr(self.executor, "_inflight", None):   # let started callbacks finish before destroying
                concurrent.futures.wait(list(self.executor._inflight), timeout=2.0)
        finally:
            for node in list(self.nodes.values()):
                try:
                    node.destroy_node()
                except Exception:      # a node that failed half-way through its constructor
                    pass
            rclpy.try_shutdown(context=self.context)
            gc.unfreeze()             # what freeze_startup_objects kept out of reach

    def __enter__(self) -> "Graph":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()


def run_graph(robot: Union[str, object] = "jethexa", *, duration: Optional[float] = None,
              params: Optional[Mapping[str, Mapping]] = None, config=None,
              extra_nodes: Iterable[Union[Node, NodeFactory]] = (), nodes: Sequence[str] = DEFAULT_NODES,
              on_ready: Optional[Callable[[Graph], None]] = None) -> Graph:
    """Build the graph, add ``extra_nodes``, spin for ``duration`` seconds (None: until
    Ctrl-C), shut down cleanly; returns the (shut down) graph for its statistics."""
    graph = Graph(robot, params=params, config=config, nodes=nodes)
    try:
        for extra in extra_nodes:
            graph.add_node(extra)
        if on_ready is not None:
            on_ready(graph)
        if duration is None:
            graph.executor.spin()
        else:
            graph.spin_for(duration)
    except KeyboardInterrupt:
        pass
    finally:
        graph.shutdown()
    return graph

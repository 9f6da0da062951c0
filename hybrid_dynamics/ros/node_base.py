"""What every node of the package shares: parameters declared from the node's spec
(ros/params.py), faults logged once and counted on /diagnostics, the morphology followed from
the manager's latched topic, and the ``ros2 run`` entry point."""
from __future__ import annotations

import gc
import os
import sys
import traceback
from collections import Counter
from typing import Dict, NoReturn, Optional

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import String

from ..errors import InputError
from ..model.damage_events import morphology_from_yaml
from ..model.morphology import Morphology
from ..model.robot import load_robot
from . import params as P
from .cdr import READERS, MalformedMessage
from .executor import WaitSetExecutor
from .lean import LeanNode
from .qos import LATCHED_QOS, STATE_QOS
from .stop_signal import PROCESS_STOP


class BaseNode(LeanNode):
    """Parameter declaration from one spec, log-once, diagnostics, morphology following."""

    SPEC: P.Spec = {}

    def __init__(self, name: str, robot=None, **kwargs):
        super().__init__(name, **kwargs)
        self.flat = P.declare(self, self.SPEC)
        self.p = P.nested(self.flat)
        self.robot = robot if robot is not None else load_robot(self.p["robot"])
        self.group = MutuallyExclusiveCallbackGroup()
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", STATE_QOS)
        self.faults: Counter = Counter()
        self.fault_fields: Counter = Counter()     # rejected messages by field
        self._restarts_seen = 0
        self._logged: set = set()
        self.last_fault = ""
        self.morphology = Morphology.healthy(self.robot)
        self.revision = 0
        self.matched: Dict[str, int] = {}
        self._clock_handle = self.get_clock().handle       # (now: the node's one clock, read directly)

    def matched_events(self, topic: str) -> SubscriptionEventCallbacks:
        """Counts the publishers matched to a subscription (``self.matched[topic]``)."""
        self.matched[topic] = 0

        def on_matched(info) -> None:
            self.matched[topic] = info.current_count
        return SubscriptionEventCallbacks(matched=on_matched)

    def create_sensor_subscription(self, msg_type, topic: str, callback, qos, **kwargs):
        """A ``JointState`` or ``Imu`` subscription taken as bytes and read by
        :mod:`.cdr` (the executor's thread spends less on each message than rclpy's conversion
        into its message object); ``callback`` gets an object with the message's fields. Bytes
        that hold no whole message are a fault ``malformed`` (counted on /diagnostics, field:
        the topic), and the callback is not called."""
        read = READERS[msg_type]()

        def on_bytes(data) -> None:
            try:
                msg = read(data)
            except MalformedMessage as exc:
                self.fault("malformed", str(exc), topic)
                return
            callback(msg)
        return self.create_subscription(msg_type, topic, on_bytes, qos, raw=True, **kwargs)

    def now(self) -> float:
        """The node's clock (ROS time: simulated under ``use_sim_time``), seconds. The value
        ``get_clock().now()`` gives, read from rclpy's clock handle without making a ``Time``
        (its checks and properties were about 3 us of a call's 4.5, several calls a cycle)."""
        h = self._clock_handle
        with h:
            return h.get_now().nanoseconds * 1e-9

    def fault(self, kind: str, text: str, field: str = "") -> None:
        """Count a fault (and the message field at fault, if any); log it the first time
        this kind happens."""
        self.faults[kind] += 1
        if field:
            self.fault_fields[field] += 1
        self.last_fault = f"{kind}: {text}"
        if kind not in self._logged:
            self._logged.add(kind)
            self.get_logger().warning(f"{kind}: {text} (logged once; counted on /diagnostics)")

    def note_restarts(self, core) -> None:
        """An estimator that restarted (health, estimation/) in ``core`` (a runtime
        ``StateCore``) is a fault on /diagnostics (``rejected.estimator_restart``,
        ``last_fault``), logged once."""
        if core.restarts != self._restarts_seen:
            self._restarts_seen = core.restarts
            self.fault("estimator_restart", core.restart_reason + "; restarted from the next valid samples")

    def publish_diagnostics(self, level: int, message: str, values: Dict[str, object]) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        status = DiagnosticStatus(level=level, name=f"hybrid_dynamics: {self.get_name()}",
                                  message=message, hardware_id=self.robot.name)
        vals = dict(values)
        vals.update({f"rejected.{k}": v for k, v in sorted(self.faults.items())})
        vals.update({f"rejected_field.{k}": v for k, v in sorted(self.fault_fields.items())})
        vals["morphology_revision"] = self.revision
        vals["last_fault"] = self.last_fault
        status.values = [KeyValue(key=str(k), value=str(v)) for k, v in vals.items()]
        msg.status = [status]
        self.diag_pub.publish(msg)

    def follow_morphology(self) -> None:
        self.create_subscription(String, self.p["morphology_topic"], self._on_morphology, LATCHED_QOS,
                                 callback_group=self.group)

    def _on_morphology(self, msg: String) -> None:
        try:
            morph, revision = morphology_from_yaml(self.robot, msg.data)
            if morph != self.morphology:
                self.apply_morphology(morph)
            self.morphology, self.revision = morph, revision
        except InputError as err:
            self.fault("bad_morphology", str(err))

    def apply_morphology(self, morph: Morphology) -> None:
        raise RuntimeError("nodes following the morphology override apply_morphology")


def freeze_startup_objects() -> None:
    """Collect once, then move every object alive (models, nodes, messages: ~10^5 in a graph)
    out of the garbage collector's reach (``gc.freeze``; ``gc.unfreeze`` when the graph shuts
    down): a collection of the older generations then scans only what the running loop
    created. Over 5000 library cycles in the one-process graph, one generation-1 collection
    took 1.0 ms, a whole 1 kHz budget; with the start-up objects frozen, none took more than
    0.08 ms (loaded machine)."""
    gc.collect()
    gc.freeze()


STOP_POLL = 0.1       # s: the longest the executor waits before it looks at the stop flag


def spin_node(cls, args=None) -> NoReturn:
    """``ros2 run`` entry point: one node of ``cls`` on the package's single-threaded executor
    (ros/executor.py: its wait set kept between wake-ups), then the
    process ends (:func:`leave_process`; exit 0 after a stop, 2 on an ``InputError``, 1 with
    the traceback on an error in a callback).

    SIGINT and SIGTERM (``ros2 launch`` sends the first on Ctrl-C, the second on its timeout)
    only set a flag (ros/stop_signal.py), looked at between the executor's passes (each wait's
    ready callbacks, ``WaitSetExecutor.spin_ready``; every ``STOP_POLL`` s at least); the node is then destroyed and the context shut down outside any callback.
    With rclpy's own handlers the context went down in the middle of a callback (whose next
    publish then raised) and a KeyboardInterrupt surfaced at whatever bytecode ran next, a
    ``Future``'s ``__del__`` or the teardown itself: the morphology manager, busiest at that
    moment, exited 1 now and then. A signal before the node spins ends the start-up at once
    (:class:`~hybrid_dynamics.ros.stop_signal.StopDuringStart`, or the flag if that was
    dropped): exit 0, as a stop while spinning."""
    stop = PROCESS_STOP
    node = None
    try:
        stop.install()
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        node = cls()
        executor = WaitSetExecutor()
        executor.add_node(node)
        freeze_startup_objects()
        stop.started()
    except InputError as err:
        print(f"{cls.__name__}: error: {err}", file=sys.stderr)
        leave_process(node, 2)
    except BaseException:
        if not stop.requested:
            raise
        leave_process(node, 0)             # stopped while starting (whatever the interrupt became)
    code = 0
    try:
        while not stop.requested and rclpy.ok():
            executor.spin_ready(timeout_sec=STOP_POLL)
    except BaseException:
        traceback.print_exc()
        code = 1
    executor.shutdown()
    leave_process(node, code)


def leave_process(node: Optional[LeanNode], code: int) -> NoReturn:
    """Destroy ``node`` (its publishers, subscriptions, timers, services: its peers are told
    they are gone) but for its own rcl handle, shut the context down, and end the process with
    ``code`` there, without running ``rcl_node_fini``. That call deletes the process's DDS
    participant (rmw_fastrtps deletes it with a context's last node), and it hung: about once
    in 50 stops of the whole process-per-node graph, the plant's main thread stayed inside it
    for good, holding the GIL, while its peers were leaving at the same moment (py-spy;
    docs/launch.md "Stopping"). The participant now goes with the process: the peers drop it
    when its lease ends, and until then list the node's name (not its topics)."""
    if node is None:
        rclpy.try_shutdown()
        _exit(code)
    with node.handle:                      # held: destroy_node leaves the rcl node alive
        node.destroy_node()
        rclpy.try_shutdown()
        _exit(code)


def _exit(code: int) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

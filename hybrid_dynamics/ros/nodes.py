"""The three rclpy nodes. Thin: validation in runtime/inputs.py, computation in runtime/pipeline.py and
the library; parameters in params.py; damage schema in damage.py.

Topics and QoS (interfaces of docs/ARCHITECTURE.md):

========================================  ==============================  ==========================
topic                                     type                            QoS
========================================  ==============================  ==========================
/joint_states (in)                        sensor_msgs/JointState          best effort, depth 1
/imu_sensor_broadcaster/imu (in)          sensor_msgs/Imu                 best effort, depth 1
/effort_controller/commands (out)         std_msgs/Float64MultiArray      reliable, depth 1
whole_body_controller/actuator_forces     std_msgs/Float64MultiArray      reliable, depth 1
whole_body_controller/markers             visualization_msgs/MarkerArray  reliable, depth 1
state_estimator/joint_states_full         sensor_msgs/JointState          reliable, depth 10
state_estimator/odometry                  nav_msgs/Odometry               reliable, depth 10
/diagnostics                              diagnostic_msgs/DiagnosticArray reliable, depth 10
morphology_manager/morphology             std_msgs/String (YAML)          reliable, transient local
morphology_manager/damage (in)            std_msgs/String (YAML)          reliable, depth 10
========================================  ==============================  ==========================

Bad input: a rejected message is logged once per kind of fault, counted on /diagnostics,
and the node keeps its last good state; a stale input (``stale_timeout``) switches the
controller to its safe mode (damping torques) until fresh data returns. Nothing publishes NaN.
"""
from __future__ import annotations

import array
import threading
import time
from collections import Counter, deque
from typing import Dict, List, Optional

import numpy as np
import pinocchio as pin
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, TransformStamped, Twist
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String
from visualization_msgs.msg import Marker, MarkerArray

from ..control.locomotion.swing import convex_hull
from ..errors import InputError
from ..estimation.damage_detector import DamageDetector
from ..model.damage_events import apply_damage_yaml, morphology_from_yaml, morphology_to_yaml
from ..model.morphology import Morphology, MorphologyMap
from ..model.robot import load_robot
from ..runtime.inputs import JointStateMatcher, stamp_to_sec
from ..runtime.pipeline import Pipeline
from ..runtime.state import StateCore
from . import params as P
from .lean import LeanNode

SENSOR_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)
COMMAND_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
STATE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
# lock-step (one cycle per joint state) and recording must not drop samples: a queue
QUEUED_SENSOR_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)
LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)


class _Base(LeanNode):
    """Parameter declaration from one spec, log-once, diagnostics, morphology following."""

    SPEC: P.Spec = {}

    def __init__(self, name: str, robot=None, **kwargs):
        super().__init__(name, **kwargs)
        for key, (default, description) in self.SPEC.items():
            self.declare_parameter(key, default)
        self.flat = {k: self.get_parameter(k).value for k in self.SPEC}
        self.p = P.nested(self.flat)
        self.robot = robot if robot is not None else load_robot(self.p["robot"])
        self.group = MutuallyExclusiveCallbackGroup()
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", STATE_QOS)
        self.faults: Counter = Counter()
        self._logged: set = set()
        self.last_fault = ""
        self.morphology = Morphology.healthy(self.robot)
        self.revision = 0
        self.matched: Dict[str, int] = {}

    def matched_events(self, topic: str) -> SubscriptionEventCallbacks:
        """Counts the publishers matched to a subscription (``self.matched[topic]``)."""
        self.matched[topic] = 0

        def on_matched(info) -> None:
            self.matched[topic] = info.current_count
        return SubscriptionEventCallbacks(matched=on_matched)

    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def fault(self, kind: str, text: str) -> None:
        """Count a fault; log it the first time this kind happens."""
        self.faults[kind] += 1
        self.last_fault = f"{kind}: {text}"
        if kind not in self._logged:
            self._logged.add(kind)
            self.get_logger().warning(f"{kind}: {text} (logged once; counted on /diagnostics)")

    def publish_diagnostics(self, level: int, message: str, values: Dict[str, object]) -> None:
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        status = DiagnosticStatus(level=level, name=f"hybrid_dynamics: {self.get_name()}",
                                  message=message, hardware_id=self.robot.name)
        vals = dict(values)
        vals.update({f"rejected.{k}": v for k, v in sorted(self.faults.items())})
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


# ============================================================================ estimator
class StateEstimatorNode(_Base):
    """Joint states + IMU -> every joint and the floating base, published."""

    SPEC = P.STATE_ESTIMATOR

    def __init__(self, robot=None, name: str = "state_estimator", **kwargs):
        super().__init__(name, robot, **kwargs)
        self.core = StateCore(self.robot, self.p)
        model = self.robot.model
        self.base_frame = self.p["base_frame"] or next(
            f.name for f in model.frames if f.type == pin.FrameType.BODY and f.parentJoint == 1)
        rate = float(self.p["publish_rate"])
        self.min_interval = 1.0 / rate if rate > 0 else 0.0
        self._last_pub = -np.inf
        self.create_subscription(Imu, self.p["imu_topic"], self._on_imu, SENSOR_QOS, callback_group=self.group)
        self.create_subscription(JointState, self.p["joint_states_topic"], self._on_js, SENSOR_QOS,
                                 callback_group=self.group)
        self.follow_morphology()
        self.stance_frames = [c.frame for c in self.robot.contacts]
        if self.p["stance_topic"]:
            self.create_subscription(Float64MultiArray, self.p["stance_topic"], self._on_planned, STATE_QOS,
                                     callback_group=self.group)
        self.js_pub = self.create_publisher(JointState, "~/joint_states_full", STATE_QOS)
        self.odom_pub = self.create_publisher(Odometry, "~/odometry", STATE_QOS)
        self.tf_pub = None
        if self.p["publish_tf"]:
            try:
                from tf2_msgs.msg import TFMessage  # optional: tf2_msgs is not in every ROS install
                self._tf_cls = TFMessage
                self.tf_pub = self.create_publisher(TFMessage, "/tf", STATE_QOS)
            except ImportError:
                self.tf_pub = None
        self.js_msg = JointState()
        self.js_msg.name = list(self.robot.joint_names)
        self.published = 0
        self.stale_reason: Optional[str] = "no input yet"
        self.create_timer(float(self.p["diagnostics_period"]), self._on_diag, callback_group=self.group)

    def apply_morphology(self, morph: Morphology) -> None:
        self.core.set_morphology(morph)

    def _on_imu(self, msg: Imu) -> None:
        out = self.core.add_imu(msg, self.now())
        if out is not None:
            self.fault(out.kind, "IMU " + out.detail)

    def _on_planned(self, msg: Float64MultiArray) -> None:
        """The stance the controller planned (``~/cycle`` layout, flags after 4 numbers)."""
        flags = msg.data[4:]
        if len(flags) == len(self.stance_frames):
            self.core.schedule = {f: bool(x > 0.5) for f, x in zip(self.stance_frames, flags)}

    def _on_js(self, msg: JointState) -> None:
        now = self.now()
        out = self.core.add_joint_state(msg, now)
        if out is not None:
            self.fault(out.kind, "joint state " + out.detail)
            return
        if self.core.buffer.unknown:
            self.fault("unknown_joints", "ignoring " + ", ".join(self.core.buffer.unknown[:4]))
        self.stale_reason = self.core.stale(now)
        if self.stale_reason is not None:
            self.fault("stale", self.stale_reason)
            return
        if now - self._last_pub < self.min_interval:
            return              # estimate at the publish rate: the filter is time-stamped
        state = self.core.estimate()
        if not (np.all(np.isfinite(state.q)) and np.all(np.isfinite(state.v))):
            self.fault("estimate_nonfinite", "estimator diverged; resetting")
            self.core.estimator.reset()
            return
        self._last_pub = now
        self.publish_state(state, msg.header.stamp)

    def publish_state(self, state, stamp) -> None:
        """~/joint_states_full, ~/odometry and /tf, each built only for a subscriber."""
        if self.js_pub.get_subscription_count():
            self._publish_joints(state, stamp)
        if self.odom_pub.get_subscription_count() or (self.tf_pub is not None and self.tf_pub.get_subscription_count()):
            self._publish_odometry(state, stamp)
        self.published += 1

    def _publish_joints(self, state, stamp) -> None:
        m = self.js_msg
        m.header.stamp = stamp
        m.position = array.array("d", state.q[7:].tobytes())
        m.velocity = array.array("d", state.v[6:].tobytes())
        self.js_pub.publish(m)

    def _publish_odometry(self, state, stamp) -> None:
        o = Odometry()
        o.header.stamp = stamp
        o.header.frame_id = self.p["odom_frame"]
        o.child_frame_id = self.base_frame
        q = state.q
        o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z = map(float, q[0:3])
        ori = o.pose.pose.orientation
        ori.x, ori.y, ori.z, ori.w = map(float, q[3:7])
        lin, ang = o.twist.twist.linear, o.twist.twist.angular
        lin.x, lin.y, lin.z = map(float, state.v[0:3])
        ang.x, ang.y, ang.z = map(float, state.v[3:6])
        cov = np.zeros((6, 6))
        cov[0:3, 0:3] = state.covariance[0:3, 0:3]
        o.pose.covariance = array.array("d", cov.ravel().tobytes())
        self.odom_pub.publish(o)
        if self.tf_pub is not None:
            t = TransformStamped()
            t.header = o.header
            t.child_frame_id = self.base_frame
            t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = map(float, q[0:3])
            t.transform.rotation = ori
            self.tf_pub.publish(self._tf_cls(transforms=[t]))

    def _on_diag(self) -> None:
        now = self.now()
        reason = self.core.stale(now)
        if reason is not None and self.core.imu is not None:
            self.fault("stale", reason)
        level = DiagnosticStatus.OK if reason is None else DiagnosticStatus.WARN
        self.publish_diagnostics(level, reason or "estimating", {
            "published": self.published,
            "stance": ",".join(f for f, s in self.core.stance.items() if s),
            "contact_source": self.core.contacts.source,
        })


# ============================================================================ controller
class WholeBodyControllerNode(_Base):
    """Estimate (same library as the estimator node, on the same samples, in the control
    cycle as legged_control does) -> whole-body QP -> effort commands."""

    SPEC = P.WHOLE_BODY_CONTROLLER
    LATENCY_BUFFER = 20000
    DIAG_WINDOW = 1000          # cycles behind the latency percentiles on /diagnostics

    def __init__(self, robot=None, name: str = "whole_body_controller", **kwargs):
        super().__init__(name, robot, **kwargs)
        if self.p["trigger"] not in ("timer", "joint_states"):
            raise InputError(f"trigger '{self.p['trigger']}' is not timer or joint_states", field="trigger")
        self.pipeline = Pipeline(self.robot, self.p)
        self.state, self.control = self.pipeline.state, self.pipeline.control
        self.lockstep = self.p["trigger"] == "joint_states"
        # inputs in their own group, so a busy cycle does not starve them in the executor's
        # queue; the lock orders them with the cycle (which holds it for its whole length)
        self.lock = threading.Lock()
        inputs = MutuallyExclusiveCallbackGroup() if not self.lockstep else self.group
        qos = QUEUED_SENSOR_QOS if self.lockstep else SENSOR_QOS
        self.create_subscription(Imu, self.p["imu_topic"], self._on_imu, qos, callback_group=inputs,
                                 event_callbacks=self.matched_events(self.p["imu_topic"]))
        self.create_subscription(JointState, self.p["joint_states_topic"], self._on_js, qos,
                                 callback_group=inputs,
                                 event_callbacks=self.matched_events(self.p["joint_states_topic"]))
        self.follow_morphology()
        if self.pipeline.gait is not None:
            self.create_subscription(Twist, self.p["cmd_vel_topic"], self._on_cmd_vel, STATE_QOS,
                                     callback_group=inputs)
        self.cmd_pub = self.create_publisher(Float64MultiArray, self.p["commands_topic"], COMMAND_QOS)
        self.cycle_pub = self.create_publisher(Float64MultiArray, "~/cycle", STATE_QOS)
        self.cycle_frames = [c.frame for c in self.robot.contacts]
        self.cmd_msg = Float64MultiArray()
        self.cmd_msg.layout.dim = [MultiArrayDimension(label="joints", size=len(self.control.joints),
                                                       stride=len(self.control.joints))]
        self.cycle_msg = Float64MultiArray()
        self.force_msg = Float64MultiArray()
        self.force_pub = None
        if self.robot.loops is not None:
            self.force_pub = self.create_publisher(Float64MultiArray, self.p["actuator_forces_topic"], COMMAND_QOS)
        self.marker_pub = self.create_publisher(MarkerArray, "~/markers", COMMAND_QOS)
        self.marker_data = self.robot.model.createData()
        # loop statistics
        self.rate = float(self.p["update_rate"])
        self.period = 1.0 / self.rate
        self.cycles = 0
        self.deadline_misses = 0
        self.safe_cycles = 0
        self.safe_mode: Optional[str] = "no input yet"
        self.latency = np.zeros(self.LATENCY_BUFFER)
        self.latency_count = 0
        self.compute = np.zeros(self.LATENCY_BUFFER)
        self._js_perf = 0.0
        self._js_new = False
        self._last_start: Optional[float] = None
        self.history: deque = deque(maxlen=64)      # (cycle, revision, command copy)
        self.applied_at_cycle = -1
        if not self.lockstep:
            self.create_timer(self.period, self._cycle, callback_group=self.group)
        self.create_timer(float(self.p["diagnostics_period"]), self._on_diag, callback_group=self.group)
        if float(self.p["markers_period"]) > 0:
            self.create_timer(float(self.p["markers_period"]), self._on_markers, callback_group=self.group)

    # ---------------------------------------------------------------- inputs
    def apply_morphology(self, morph: Morphology) -> None:
        with self.lock:
            t = self.state.buffer.stamp
            self.pipeline.set_morphology(morph, t if np.isfinite(t) else self.now())
            self.applied_at_cycle = self.cycles

    def _on_cmd_vel(self, msg: Twist) -> None:
        with self.lock:
            self.pipeline.set_command(msg.linear.x, msg.linear.y, msg.angular.z)

    def _on_imu(self, msg: Imu) -> None:
        with self.lock:
            out = self.state.add_imu(msg, self.now())
        if out is not None:
            self.fault(out.kind, "IMU " + out.detail)
        elif self.lockstep and self.state.lockstep_after_imu():
            self._cycle()

    def _on_js(self, msg: JointState) -> None:
        perf = time.perf_counter()
        with self.lock:
            out = self.state.add_joint_state(msg, self.now())
            if out is None:
                self._js_perf = perf
                self._js_new = True
        if out is not None:
            self.fault(out.kind, "joint state " + out.detail)
            return
        if self.state.buffer.unknown:
            self.fault("unknown_joints", "ignoring " + ", ".join(self.state.buffer.unknown[:4]))
        if self.lockstep and self.state.lockstep_after_joint_state():
            self._cycle()

    # ---------------------------------------------------------------- the cycle
    def _cycle(self) -> None:
        with self.lock:
            self._cycle_locked()

    def _cycle_locked(self) -> None:
        start = time.perf_counter()
        if self._last_start is not None and not self.lockstep and start - self._last_start > 1.5 * self.period:
            self.deadline_misses += 1
        self._last_start = start
        cycle = self.pipeline.step(self.now(), use_stamps=self.lockstep)
        reason, cmd, stance = cycle.safe_mode, cycle.command, cycle.stance
        if cycle.error is not None:
            self.fault("cycle_error", cycle.error)
        if reason is not None:
            if self.safe_mode is None or self.safe_cycles == 0:
                self.fault("safe_mode", reason)
            self.safe_cycles += 1
        elif self.safe_mode is not None and self.cycles > 0:
            self.get_logger().info(f"fresh data: leaving safe mode ({self.safe_mode})", throttle_duration_sec=5.0)
        self.safe_mode = reason
        # the command first: everything else of the cycle happens after it is on the wire
        self.cmd_msg.data = array.array("d", cmd.tobytes())
        self.cmd_pub.publish(self.cmd_msg)
        end = time.perf_counter()
        if self._js_new:
            i = self.latency_count % self.LATENCY_BUFFER
            self.latency[i] = end - self._js_perf
            self.compute[i] = end - start
            self.latency_count += 1
            self._js_new = False
        if end - start > self.period and not self.lockstep:
            self.deadline_misses += 1
        self.history.append((self.cycles, self.revision, cmd.copy()))
        self.cycles += 1
        # the cycle record and actuator forces: built only for a subscriber (the damage
        # detector, the estimator's planned stance, a bag, a plot)
        if reason is None and self.cycle_pub.get_subscription_count():
            self._publish_cycle(stance, end - start)
        if self.force_pub is not None and reason is None and self.control.last_output is not None \
                and self.force_pub.get_subscription_count():
            forces = getattr(self.control.last_output, "actuator_forces", None) or {}
            fm = self.force_msg
            fm.data = array.array("d", [float(forces.get(n, 0.0)) for n in self.robot.actuated_joints])
            self.force_pub.publish(fm)

    def _publish_cycle(self, stance, cycle_time: float) -> None:
        """``~/cycle``: QP solve ms, cycle ms, fallback, infeasible, then the stance flag
        the QP used for each contact frame of the robot (1/0), for plots and the detector."""
        out = self.control.last_output
        msg = self.cycle_msg
        msg.data = array.array("d", [1e3 * float(getattr(out, "solve_time", 0.0)), 1e3 * cycle_time,
                                     float(bool(getattr(out, "fallback", False))),
                                     float(bool(getattr(out, "infeasible", False)))] +
                               [1.0 if stance.get(f, False) else 0.0 for f in self.cycle_frames])
        self.cycle_pub.publish(msg)

    def latencies(self) -> np.ndarray:
        """Joint state received -> command published, seconds (the last LATENCY_BUFFER)."""
        n = min(self.latency_count, self.LATENCY_BUFFER)
        return self.latency[:n].copy()

    def reset_statistics(self) -> None:
        self.latency_count = 0
        self.cycles_at_reset = self.cycles
        self.deadline_misses = 0

    # ---------------------------------------------------------------- outputs
    def _on_diag(self) -> None:
        out = self.control.last_output
        # the percentiles of the last DIAG_WINDOW cycles (the whole buffer is ~1 ms of sorting
        # inside the cycle's callback group)
        n = min(self.latency_count, self.LATENCY_BUFFER)
        i = self.latency_count % self.LATENCY_BUFFER
        lat = self.latency[max(0, i - self.DIAG_WINDOW):i] if i else self.latency[n - self.DIAG_WINDOW:n]
        n = len(lat)
        level = DiagnosticStatus.OK
        if self.safe_mode is not None:
            level = DiagnosticStatus.WARN if self.state.imu is not None else DiagnosticStatus.STALE
        elif out is not None and getattr(out, "fallback", False):
            level = DiagnosticStatus.WARN
        passive = self.state.passive
        residual = passive.residual if passive is not None else 0.0
        self.publish_diagnostics(level, f"safe mode: {self.safe_mode}" if self.safe_mode else "running", {
            "controller": self.control.kind,
            "status": getattr(out, "status", "none") if out is not None else "none",
            "solve_time_ms": f"{1e3 * getattr(out, 'solve_time', 0.0):.3f}" if out is not None else "nan",
            "fallbacks": self.control.fallbacks,
            "infeasible": bool(getattr(out, "infeasible", False)) if out is not None else False,
            "loop_residual": residual,
            "cycles": self.cycles,
            "deadline_misses": self.deadline_misses,
            "update_rate_hz": self.rate,
            "safe_mode": self.safe_mode is not None,
            "safe_cycles": self.safe_cycles,
            "latency_p50_ms": f"{1e3 * np.percentile(lat, 50):.3f}" if n else "nan",
            "latency_p99_ms": f"{1e3 * np.percentile(lat, 99):.3f}" if n else "nan",
        })

    def _on_markers(self) -> None:
        est = self.state.last
        if est is None or self.safe_mode is not None or not self.marker_pub.get_subscription_count():
            return                  # ~40 Python messages: built only for rviz or a bag
        self.marker_pub.publish(build_markers(self, est))


def build_markers(node: WholeBodyControllerNode, est) -> MarkerArray:
    """Contact forces (arrows), friction cones (line lists), CoM (sphere), support polygon."""
    frame = node.p["odom_frame"]
    stamp = node.get_clock().now().to_msg()
    out = node.control.last_output
    forces = getattr(out, "contact_forces", {}) if out is not None else {}
    mu = node.robot.friction
    markers: List[Marker] = []

    def marker(ns, mid, mtype, rgba, scale):
        m = Marker()
        m.header.frame_id = frame
        m.header.stamp = stamp
        m.ns, m.id, m.type, m.action = ns, mid, mtype, Marker.ADD
        m.pose.orientation.w = 1.0
        m.color.r, m.color.g, m.color.b, m.color.a = rgba
        m.scale.x, m.scale.y, m.scale.z = scale
        return m

    stance_points = []
    for i, c in enumerate(node.control.map.contacts):
        p = est.feet.get(c.frame)
        if p is None:
            continue
        on = node.state.stance.get(c.frame, False)
        if on:
            stance_points.append(p)
        f = np.asarray(forces.get(c.frame, np.zeros(3)), dtype=float)
        if f.shape == (3,) and np.all(np.isfinite(f)):
            a = marker("contact_forces", i, Marker.ARROW, (0.9, 0.2, 0.1, 1.0), (0.01, 0.02, 0.02))
            a.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                        Point(x=float(p[0] + 0.005 * f[0]), y=float(p[1] + 0.005 * f[1]),
                              z=float(p[2] + 0.005 * f[2]))]
            markers.append(a)
        cone = marker("friction_cones", i, Marker.LINE_LIST, (0.2, 0.6, 1.0, 0.6 if on else 0.15), (0.003, 0, 0))
        h = 0.05
        for k in range(8):
            ang = 2 * np.pi * k / 8
            cone.points += [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                            Point(x=float(p[0] + mu * h * np.cos(ang)), y=float(p[1] + mu * h * np.sin(ang)),
                                  z=float(p[2] + h))]
        markers.append(cone)
    model = node.control.map.model
    com = pin.centerOfMass(model, node.marker_data, node.control.map.expand_q(node.control.map.reduce_q(est.q)))
    markers.append(marker("com", 0, Marker.SPHERE, (1.0, 0.8, 0.0, 1.0), (0.03, 0.03, 0.03)))
    markers[-1].pose.position.x, markers[-1].pose.position.y, markers[-1].pose.position.z = map(float, com)
    poly = marker("support_polygon", 0, Marker.LINE_STRIP, (0.1, 0.9, 0.3, 1.0), (0.004, 0, 0))
    if len(stance_points):
        ground = float(np.min(np.asarray(stance_points)[:, 2]))
        for x, y in convex_hull(np.asarray(stance_points)[:, :2]):
            poly.points.append(Point(x=float(x), y=float(y), z=ground))
    if poly.points:
        poly.points.append(poly.points[0])
    markers.append(poly)
    return MarkerArray(markers=markers)



# ============================================================================ morphology
class MorphologyManagerNode(_Base):
    """Damage events (topic, parameter, automatic detection) -> the current morphology,
    published transient-local. Damage YAML schema: :mod:`hybrid_dynamics.model.damage_events`.

    Automatic detection: a leg joint silent for ``detect_timeout`` loses its links from that
    joint on; with ``detector: true`` the momentum observer of estimation/damage_detector.py
    runs on each estimate the state estimator publishes (odometry + full joint states of one
    stamp), the efforts of the /joint_states of that stamp, and the stance the controller
    planned (``whole_body_controller/cycle``); its detections are morphology changes."""

    SPEC = P.MORPHOLOGY_MANAGER

    def __init__(self, robot=None, name: str = "morphology_manager", **kwargs):
        super().__init__(name, robot, **kwargs)
        self.pub = self.create_publisher(String, "~/morphology", LATCHED_QOS)
        self.create_subscription(String, "~/damage", self._on_damage, STATE_QOS, callback_group=self.group)
        self.matcher = JointStateMatcher(self.robot.joint_names)
        n = len(self.robot.joint_names)
        self.angles = self.robot.q_stand[7:].copy()
        self.last_seen = np.full(n, -np.inf)
        self.last_msg = -np.inf
        self.events = 0
        self.rejected_events = 0
        self.source = "initial"
        self.detections: List[dict] = []
        self._surviving = (None, set())
        # the detector pairs efforts with estimates by stamp: no joint state may be dropped
        self.create_subscription(JointState, self.p["joint_states_topic"], self._on_js,
                                 QUEUED_SENSOR_QOS if self.p["detector"] else SENSOR_QOS, callback_group=self.group)
        self.detector = None
        if self.p["detector"]:
            try:
                config = yaml.safe_load(self.p["detector_config"] or "{}") or {}
            except yaml.YAMLError as exc:
                raise InputError(f"detector_config is not YAML: {exc}", field="detector_config") from None
            self.detector = DamageDetector(self.robot, config)
            self.efforts: deque = deque(maxlen=64)           # (stamp, healthy-size efforts)
            self.odom: deque = deque(maxlen=64)              # (stamp, q[:7], v[:6])
            self.planned: Optional[Dict[str, bool]] = None
            self.frames = [c.frame for c in self.robot.contacts]
            self.create_subscription(Odometry, self.p["odometry_topic"], self._on_odom, STATE_QOS,
                                     callback_group=self.group)
            self.create_subscription(JointState, self.p["joint_states_full_topic"], self._on_estimate, STATE_QOS,
                                     callback_group=self.group)
            self.create_subscription(Float64MultiArray, self.p["cycle_topic"], self._on_cycle, STATE_QOS,
                                     callback_group=self.group)
            # |e| of the observer (NaN while not testing) and the threshold, per estimate
            self.detector_pub = self.create_publisher(Float64MultiArray, "~/detector", STATE_QOS)
        self.add_on_set_parameters_callback(self._on_params)
        self.create_timer(0.1, self._detect, callback_group=self.group)
        self.create_timer(float(self.p["diagnostics_period"]) * 5, self._on_diag, callback_group=self.group)
        if self.p["damage"]:
            self._apply(self.p["damage"], "parameter")
        self.publish()

    def publish(self) -> None:
        self.pub.publish(String(data=morphology_to_yaml(self.robot.name, self.morphology, self.revision,
                                                        source=self.source)))

    def _current_angle(self, joint: str) -> float:
        if joint not in self.matcher.index:
            raise InputError(f"unknown joint '{joint}'", field="joint")
        return float(self.angles[self.matcher.index[joint]])

    def _apply(self, text: str, source: str) -> Optional[str]:
        """Apply a damage event; returns the error text, or None."""
        try:
            new = apply_damage_yaml(self.morphology, text, self._current_angle)
        except InputError as err:
            self.rejected_events += 1
            self.fault("bad_damage_event", f"{source}: {err}")
            return str(err)
        return self._change(new, source)

    def _change(self, new: Morphology, source: str) -> Optional[str]:
        try:
            MorphologyMap(self.robot, new)          # e.g. locking a joint whose link is gone
        except InputError as err:
            self.rejected_events += 1
            self.fault("bad_damage_event", f"{source}: {err}")
            return str(err)
        self.events += 1
        if new != self.morphology:
            self.morphology = new
            self.revision += 1
            self.source = source
            if self.detector is not None:
                self.detector.set_morphology(new, self.now())
            self.get_logger().info(f"morphology {self.revision} ({source}): {new.describe()}")
            self.publish()
        return None

    # ---------------------------------------------------------------- the detector
    def _on_odom(self, msg: Odometry) -> None:
        p, o, lin, ang = msg.pose.pose.position, msg.pose.pose.orientation, msg.twist.twist.linear, msg.twist.twist.angular
        self.odom.append((stamp_to_sec(msg.header.stamp), np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w]),
                          np.array([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z])))

    def _on_cycle(self, msg: Float64MultiArray) -> None:
        flags = msg.data[4:]
        if len(flags) == len(self.frames):
            self.planned = {f: bool(x > 0.5) for f, x in zip(self.frames, flags)}

    def _on_estimate(self, msg: JointState) -> None:
        t = stamp_to_sec(msg.header.stamp)
        odom = next((o for o in reversed(self.odom) if o[0] == t), None)
        tau = next((e for s, e in reversed(self.efforts) if s == t), None)
        if odom is None or tau is None or len(msg.position) != len(self.robot.joint_names):
            return
        q = np.concatenate([odom[1], np.asarray(msg.position, float)])
        v = np.concatenate([odom[2], np.asarray(msg.velocity, float)])
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            return
        found = self.detector.update(t, q, v, tau, self.planned)
        det = self.detector
        self.detector_pub.publish(Float64MultiArray(data=[det.statistic if det.testing else float("nan"),
                                                          float(det.config.threshold)]))
        if not found:
            return
        new = self.morphology
        for detection in found:
            self.detections.append({"t": t, "what": detection.describe(), "onset": detection.onset})
            try:
                new = detection.apply(new)
            except InputError as err:
                self.fault("bad_detection", str(err))
        self._change(new, "detected")

    def _on_damage(self, msg: String) -> None:
        self._apply(msg.data, "topic")

    def _on_params(self, params: List[Parameter]) -> SetParametersResult:
        for prm in params:
            if prm.name == "damage" and prm.value:
                error = self._apply(str(prm.value), "parameter")
                if error is not None:
                    return SetParametersResult(successful=False, reason=error)
        return SetParametersResult(successful=True)

    def _on_js(self, msg: JointState) -> None:
        now = self.now()
        if len(msg.position) != len(msg.name):
            return
        src, dst, _ = self.matcher.match(msg.name)
        pos = np.asarray(msg.position, dtype=float)[src]
        ok = np.isfinite(pos)
        self.angles[dst[ok]] = pos[ok]
        self.last_seen[dst[ok]] = now
        self.last_msg = now
        if self.detector is not None and len(msg.effort) == len(msg.name):
            tau = np.zeros(len(self.robot.joint_names))
            eff = np.asarray(msg.effort, dtype=float)[src]
            tau[dst] = np.where(np.isfinite(eff), eff, 0.0)
            self.efforts.append((stamp_to_sec(msg.header.stamp), tau))

    def _detect(self) -> None:
        """A leg joint silent (or NaN) for detect_timeout while others report: its links go."""
        if not self.p["auto_detect"] or not np.all(np.isfinite(self.last_seen)):
            return
        now = self.now()
        timeout = float(self.p["detect_timeout"])
        if now - self.last_msg > timeout:
            return                                   # everything silent: stale, not damage
        if self._surviving[0] is not self.morphology:     # a MorphologyMap is a model build: once per change
            self._surviving = (self.morphology, set(MorphologyMap(self.robot, self.morphology).joint_names))
        surviving = self._surviving[1]
        events = []
        for leg in self.robot.legs:
            names = leg.joint_names(self.robot.model)
            for k, name in enumerate(names):
                if name in surviving and now - self.last_seen[self.matcher.index[name]] > timeout:
                    events.append(f"- remove_links: {{leg: {leg.name}, first: {k + 1}}}")
                    break
        if events:
            self._apply("\n".join(events), "detected")

    def _on_diag(self) -> None:
        self.publish_diagnostics(DiagnosticStatus.OK, self.morphology.describe(),
                                 {"events": self.events, "rejected_events": self.rejected_events})


# ============================================================================ entry points
def _spin_one(cls, args=None) -> int:
    rclpy.init(args=args)
    try:
        node = cls()
    except InputError as err:
        print(f"{cls.__name__}: error: {err}")
        rclpy.try_shutdown()
        return 2
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


def state_estimator_main(args=None) -> int:
    return _spin_one(StateEstimatorNode, args)


def whole_body_controller_main(args=None) -> int:
    return _spin_one(WholeBodyControllerNode, args)


def morphology_manager_main(args=None) -> int:
    return _spin_one(MorphologyManagerNode, args)


NODE_CLASSES = {"state_estimator": StateEstimatorNode, "whole_body_controller": WholeBodyControllerNode,
                "morphology_manager": MorphologyManagerNode}

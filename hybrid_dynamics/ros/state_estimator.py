"""``state_estimator``: joint states + IMU -> every joint and the floating base (the runtime
StateCore), published as ~/joint_states_full, ~/odometry and /tf."""
from __future__ import annotations

import array
from typing import Optional

import numpy as np
import pinocchio as pin
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray

from ..model.morphology import Morphology
from ..runtime.inputs import cycle_stance
from ..runtime.state import StateCore
from . import params as P
from .node_base import BaseNode, spin_node
from .qos import SENSOR_QOS, STATE_QOS


class StateEstimatorNode(BaseNode):
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
        self.create_sensor_subscription(Imu, self.p["imu_topic"], self._on_imu, SENSOR_QOS, callback_group=self.group)
        self.create_sensor_subscription(JointState, self.p["joint_states_topic"], self._on_js, SENSOR_QOS,
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
            self.fault(out.kind, "IMU " + out.detail, out.field)

    def _on_planned(self, msg: Float64MultiArray) -> None:
        """The stance the controller planned (``~/cycle`` layout: runtime/inputs.cycle_stance)."""
        record = cycle_stance(msg.data, len(self.stance_frames))
        if record is not None:
            self.core.schedule = {f: bool(x > 0.5) for f, x in zip(self.stance_frames, record[1])}

    def _on_js(self, msg: JointState) -> None:
        now = self.now()
        out = self.core.add_joint_state(msg, now)
        if out is not None:
            self.fault(out.kind, "joint state " + out.detail, out.field)
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
        self.note_restarts(self.core)
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
            "estimator_restarts": self.core.restarts,
        })


def main(args=None) -> int:
    return spin_node(StateEstimatorNode, args)

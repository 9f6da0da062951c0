"""``morphology_manager``: damage events (topic, parameter, automatic detection) -> the
current morphology, published transient-local."""
from __future__ import annotations

from typing import List, Optional

import numpy as np
import yaml
from diagnostic_msgs.msg import DiagnosticStatus
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import SetParametersResult
from rclpy.parameter import Parameter
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String

from ..errors import InputError
from ..estimation.damage_detector import DamageDetector
from ..estimation.fall_monitor import FallMonitor
from ..model.damage_events import apply_damage_yaml, morphology_from_yaml, morphology_to_yaml
from ..model.morphology import Morphology, MorphologyMap
from ..runtime.detector_inputs import DetectorInputs
from ..runtime.inputs import JointStateBuffer, JointStateMatcher, Rejected, cycle_stance, parse_imu, stamp_to_sec
from ..soft.coordinates import coordinate_names
from . import params as P
from .node_base import BaseNode, spin_node
from .qos import LATCHED_QOS, QUEUED_SENSOR_QOS, SENSOR_QOS, STATE_QOS


class MorphologyManagerNode(BaseNode):
    """Damage events (topic, parameter, automatic detection) -> the current morphology,
    published transient-local. Damage YAML schema: :mod:`hybrid_dynamics.model.damage_events`.

    Automatic detection: a leg joint silent for ``detect_timeout`` loses its links from that
    joint on; with ``detector: true`` the momentum observer of estimation/damage_detector.py
    runs on each estimate the state estimator publishes (odometry + full joint states of one
    stamp), the efforts of the /joint_states of that stamp, and the stance the controller
    planned (``whole_body_controller/cycle``); its detections are morphology changes. The IMU
    feeds the fall monitor of estimation/fall_monitor.py, which tells the detector when the
    body falls (it then decides on shorter evidence), as in the library loop (sim/runner.py)."""

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
            self.detector = DamageDetector(self.robot, self.p["damage_detector"])
            self.inputs = DetectorInputs([c.frame for c in self.robot.contacts])
            # a soft-footed robot's detector runs on the soft model: the pads' coordinates
            # come in /joint_states beside the joints (estimation/damage_detector.py)
            self.deformation = JointStateBuffer(coordinate_names(self.robot)) if self.robot.soft_modules else None
            self.create_subscription(Odometry, self.p["odometry_topic"], self._on_odom, STATE_QOS,
                                     callback_group=self.group)
            self.create_subscription(JointState, self.p["joint_states_full_topic"], self._on_estimate, STATE_QOS,
                                     callback_group=self.group)
            self.create_subscription(Float64MultiArray, self.p["cycle_topic"], self._on_cycle, STATE_QOS,
                                     callback_group=self.group)
            self.fall_monitor = FallMonitor(self.p["fall_monitor"])
            self.create_subscription(Imu, self.p["imu_topic"], self._on_imu, QUEUED_SENSOR_QOS,
                                     callback_group=self.group)
            # |e| of the observer (NaN while not testing) and the threshold, per estimate
            self.detector_pub = self.create_publisher(Float64MultiArray, "~/detector", STATE_QOS)
            # one YAML mapping per detection: which test, residual, threshold, since when
            self.evidence_pub = self.create_publisher(String, "~/detector/evidence", STATE_QOS)
        # detections made in the controller's cycle (its ``detector: true``, runtime/detection.py)
        self.create_subscription(String, self.p["detections_topic"], self._on_detections, STATE_QOS,
                                 callback_group=self.group)
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
        self.inputs.add_base(stamp_to_sec(msg.header.stamp), np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w]),
                             np.array([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z]))
        self._run_detector()

    def _on_cycle(self, msg: Float64MultiArray) -> None:
        record = cycle_stance(msg.data, len(self.inputs.frames))
        if record is not None:
            self.inputs.add_stance(*record)
            self._run_detector()

    def _on_imu(self, msg: Imu) -> None:
        out = parse_imu(msg)
        if not isinstance(out, Rejected):        # a malformed sample says nothing about a fall
            self.inputs.add_imu(*out)

    def _on_estimate(self, msg: JointState) -> None:
        if len(msg.position) != len(self.robot.joint_names) or len(msg.velocity) != len(msg.position):
            return
        self.inputs.add_joints(stamp_to_sec(msg.header.stamp), np.asarray(msg.position, float),
                               np.asarray(msg.velocity, float))
        self._run_detector()

    def _run_detector(self) -> None:
        """Every estimate now complete (runtime/detector_inputs.py), in stamp order, through
        the detector."""
        for sample in self.inputs.ready():
            if not (np.all(np.isfinite(sample.q)) and np.all(np.isfinite(sample.v))):
                continue
            falling_since = None if sample.imu is None else self.fall_monitor.update(sample.t, sample.imu)
            found = self.detector.update(sample.t, sample.q, sample.v, sample.tau, sample.stance,
                                         sample.q_soft, sample.v_soft, falling_since=falling_since)
            det = self.detector
            self.detector_pub.publish(Float64MultiArray(data=[det.statistic if det.testing else float("nan"),
                                                              float(det.config.threshold)]))
            if found:
                self._detected(sample.t, found)

    def _detected(self, t: float, found) -> None:
        new = self.morphology
        for detection in found:
            self.detections.append({"t": t, "what": detection.describe(), "onset": detection.onset})
            evidence = detection.evidence()
            self.evidence_pub.publish(String(data=yaml.safe_dump(evidence, sort_keys=False)))
            self.get_logger().info(f"detected {evidence['what']}: {evidence['test']} {evidence['residual']} > "
                                   f"{evidence['threshold']} for {evidence['above_for_s']} s "
                                   f"({evidence['samples']} estimates)")
            try:
                new = detection.apply(new)
            except InputError as err:
                self.fault("bad_detection", str(err))
        self._change(new, "detected")

    def _on_detections(self, msg: String) -> None:
        """The controller's detector convicted legs (whole_body_controller/detections: the
        morphology it applied, then the evidence): that morphology, source "detected"."""
        try:
            new, _ = morphology_from_yaml(self.robot, msg.data)
            data = yaml.safe_load(msg.data)
            found = [{"t": float(data["t"]), "what": str(e["what"]), "onset": float(e["onset"])}
                     for e in data["detections"]]
        except InputError as err:
            self.fault("bad_detection", str(err))
            return
        except (KeyError, TypeError, ValueError) as err:
            self.fault("bad_detection", f"detections message without t or detections[].what/onset: {err!r}")
            return
        self.detections.extend(found)
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
            deformation = None
            if self.deformation is not None:
                self.deformation.add(msg, now)     # absent from a message: the last value stays
                deformation = (self.deformation.q.copy(), self.deformation.v.copy())
            self.inputs.add_effort(stamp_to_sec(msg.header.stamp), tau, deformation)
            self._run_detector()

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


def main(args=None) -> int:
    return spin_node(MorphologyManagerNode, args)

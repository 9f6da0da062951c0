"""``morphology_manager``: damage events (topic, parameter, automatic detection) -> the
current morphology, published transient-local."""
from __future__ import annotations

from typing import List, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from rcl_interfaces.msg import SetParametersResult
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from ..errors import InputError
from ..model.damage_events import (apply_damage_yaml, load_morphology_message, morphology_from_mapping,
                                    morphology_to_yaml)
from ..model.morphology import Morphology, MorphologyMap
from ..runtime.inputs import JointStateMatcher
from . import params as P
from .node_base import BaseNode, spin_node
from .qos import LATCHED_QOS, SENSOR_QOS, STATE_QOS


class MorphologyManagerNode(BaseNode):
    """Damage events (topic, parameter, automatic detection) -> the current morphology,
    published transient-local. Damage YAML schema: :mod:`hybrid_dynamics.model.damage_events`.

    Automatic detection: a leg joint silent for ``detect_timeout`` loses its links from that
    joint on; the momentum-observer detections come from the controller's cycle
    (``whole_body_controller/detections``, its ``detector: true``: runtime/detection.py), as
    in the library loop, and are applied as they come."""

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
        self.create_sensor_subscription(JointState, self.p["joint_states_topic"], self._on_js, SENSOR_QOS,
                                        callback_group=self.group)
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
            self.get_logger().info(f"morphology {self.revision} ({source}): {new.describe()}")
            self.publish()
        return None

    def _on_detections(self, msg: String) -> None:
        """The controller's detector convicted legs (whole_body_controller/detections: the
        morphology it applied, then the evidence): that morphology, source "detected"."""
        try:
            data = load_morphology_message(msg.data)
            new, _ = morphology_from_mapping(self.robot, data)
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

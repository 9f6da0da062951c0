"""``whole_body_controller``: the runtime Pipeline (estimate, references, whole-body QP) in a
node, in the control cycle as legged_control does; effort commands out.

Topics and QoS (interfaces of docs/ARCHITECTURE.md):

========================================  ==============================  ==========================
topic                                     type                            QoS
========================================  ==============================  ==========================
/joint_states (in)                        sensor_msgs/JointState          best effort, depth 1
/imu_sensor_broadcaster/imu (in)          sensor_msgs/Imu                 best effort, depth 1
/effort_controller/commands (out)         std_msgs/Float64MultiArray      reliable, depth 1
whole_body_controller/actuator_forces     std_msgs/Float64MultiArray      reliable, depth 1
whole_body_controller/markers             visualization_msgs/MarkerArray  reliable, depth 1
whole_body_controller/soft_deformation    sensor_msgs/JointState          reliable (soft feet only)
state_estimator/joint_states_full         sensor_msgs/JointState          reliable, depth 10
state_estimator/odometry                  nav_msgs/Odometry               reliable, depth 10
/diagnostics                              diagnostic_msgs/DiagnosticArray reliable, depth 10
morphology_manager/morphology             std_msgs/String (YAML)          reliable, transient local
morphology_manager/damage (in)            std_msgs/String (YAML)          reliable, depth 10
whole_body_controller/detector            std_msgs/Float64MultiArray      reliable, depth 10 (detector)
whole_body_controller/detections          std_msgs/String (YAML)          reliable, depth 10 (detector)
========================================  ==============================  ==========================

``detector: true``: the damage detector runs in the cycle, between the estimate and the
command (runtime/detection.py), as in the library scenario loop: a detection reassembles the
pipeline before this cycle's command, and goes to the morphology manager on ``~/detections``
(the resulting morphology in the morphology_manager/morphology YAML, then ``detections:``, the
evidence of each); ``~/detector`` carries the observer's statistic and threshold per cycle.

Bad input: a rejected message is logged once per kind of fault, counted on /diagnostics,
and the node keeps its last good state; a stale input (``stale_timeout``) switches the
controller to its safe mode (damping torques) until fresh data returns. Nothing publishes NaN.
"""
from __future__ import annotations

import array
import threading
import time
from collections import deque
from typing import List, Optional

import numpy as np
import yaml
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import Twist
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String
from visualization_msgs.msg import MarkerArray

from ..errors import InputError
from ..estimation.damage_detector import Detection
from ..model.damage_events import morphology_to_yaml
from ..model.morphology import Morphology
from ..runtime.detection import CycleDetector
from ..runtime.periodic import PeriodicLoop
from ..runtime.pipeline import Pipeline
from ..runtime.realtime import fifo_priority, thread_cpus, use_cpus, use_fifo_priority
from ..soft.coordinates import coordinate_names
from . import params as P
from .latency import LoopStatistics
from .lockstep import answer_label, stamp_ns
from .markers import build_markers
from .node_base import BaseNode, spin_node
from .qos import COMMAND_QOS, QUEUED_SENSOR_QOS, SENSOR_QOS, STATE_QOS


TRIGGERS = ("timer", "joint_states", "thread")


class WholeBodyControllerNode(BaseNode):
    """Estimate (same library as the estimator node, on the same samples, in the control
    cycle as legged_control does) -> whole-body QP -> effort commands."""

    SPEC = P.WHOLE_BODY_CONTROLLER

    def __init__(self, robot=None, name: str = "whole_body_controller", **kwargs):
        super().__init__(name, robot, **kwargs)
        trigger = self.p["trigger"]
        if trigger not in TRIGGERS:
            raise InputError(f"trigger '{trigger}' is not {', '.join(TRIGGERS)}", field="trigger")
        if trigger == "thread" and self.get_parameter("use_sim_time").value:
            raise InputError("trigger 'thread' keeps its deadlines on the steady clock: under use_sim_time "
                             "use 'joint_states' (lock-step) or 'timer'", field="trigger")
        if self.p["detector"] and self.robot.loops is not None:
            raise InputError(f"detector: true on {self.robot.name}, a closed-chain robot: the momentum observer's "
                             "model has no loop closures, so the passive joints' constraint forces would read "
                             "as damage", field="detector")
        self.pipeline = Pipeline(self.robot, self.p)
        self.state, self.control = self.pipeline.state, self.pipeline.control
        self.lockstep = trigger == "joint_states"
        self.threaded = trigger == "thread"
        # inputs in their own group, so a busy cycle does not starve them in the executor's
        # queue; the lock orders them with the cycle (which holds it for its whole length)
        self.lock = threading.Lock()
        inputs = MutuallyExclusiveCallbackGroup() if not self.lockstep else self.group
        qos = QUEUED_SENSOR_QOS if self.lockstep else SENSOR_QOS
        # trigger: thread: the executor only drops each message into its latest-value slot
        self._slot_lock = threading.Lock()
        self._imu_slot: Optional[tuple] = None
        self._js_slot: Optional[tuple] = None
        on_imu, on_js = (self._slot_imu, self._slot_js) if self.threaded else (self._on_imu, self._on_js)
        self.create_sensor_subscription(Imu, self.p["imu_topic"], on_imu, qos, callback_group=inputs,
                                        event_callbacks=self.matched_events(self.p["imu_topic"]))
        self.create_sensor_subscription(JointState, self.p["joint_states_topic"], on_js, qos,
                                        callback_group=inputs,
                                        event_callbacks=self.matched_events(self.p["joint_states_topic"]))
        self._pending_morphology: Optional[Morphology] = None     # apply_morphology
        self.detection: Optional[CycleDetector] = None
        self.detections: List[dict] = []
        if self.p["detector"]:
            self.detection = CycleDetector(self.robot, self.pipeline, self.p["damage_detector"], self.p["fall_monitor"])
            self.detection.handlers.append(self._detected)
            self.detector_pub = self.create_publisher(Float64MultiArray, "~/detector", STATE_QOS)
            self.detections_pub = self.create_publisher(String, "~/detections", STATE_QOS)
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
        # lock-step: each command names the joint state it answers (ros/lockstep.py)
        self._answering = self._answered = None       # stamps (ns): the state the next cycle answers, the last answered
        self.answered_again = 0                       # copies of an answered state: its command sent again
        if self.lockstep:
            self.cmd_msg.layout.dim.append(MultiArrayDimension(label=answer_label(0), size=1, stride=1))
        self.cycle_msg = Float64MultiArray()
        self.force_msg = Float64MultiArray()
        self.force_pub = None
        if self.robot.loops is not None:
            self.force_pub = self.create_publisher(Float64MultiArray, self.p["actuator_forces_topic"], COMMAND_QOS)
        self.marker_pub = self.create_publisher(MarkerArray, "~/markers", COMMAND_QOS)
        self.leaves = self.control.controller.leaves          # soft feet, or None
        if self.leaves is not None:
            self.deformation_pub = self.create_publisher(JointState, "~/soft_deformation", STATE_QOS)
            self.deformation_msg = JointState(name=coordinate_names(self.robot))
            self.soft_data = self.robot.model.createData()
        self.marker_data = self.robot.model.createData()
        self.rate = float(self.p["update_rate"])
        self.period = 1.0 / self.rate
        self.stats = LoopStatistics()
        self.cycles = 0
        self.safe_cycles = 0
        self.safe_mode: Optional[str] = "no input yet"
        self._js_perf = 0.0
        self._js_new = False
        self._last_start: Optional[float] = None
        self.history: deque = deque(maxlen=64)      # (cycle, revision, command copy)
        self.applied_at_cycle = -1
        self.loop: Optional[PeriodicLoop] = None
        # thread_priority, cpu_affinity: the thread that runs the cycle (the executor's, or the
        # node's own with trigger: thread) goes under SCHED_FIFO and onto its CPUs at its first
        # cycle; the priority and the CPUs it then runs with are on /diagnostics
        self._placement_due = True
        self.cycle_priority = 0
        self.cycle_cpus: List[int] = []
        if self.threaded:
            self.loop = PeriodicLoop(self.period, self._thread_cycle, name=f"{name}-cycle")
        elif not self.lockstep:
            self.create_timer(self.period, self._cycle, callback_group=self.group)
        # periodic triggers: the diagnostics are published by the first cycle after each period,
        # once its command is on the wire (in the slack before the next tick), never by a
        # timer callback that the executor might run just as the cycle's tick comes (issue 15:
        # 0.15-0.8 ms a message, the longest callback of the executor's before many late starts)
        self._diag_due = False
        self._diag_cycles = -1
        self.create_timer(float(self.p["diagnostics_period"]), self._on_diag_timer, callback_group=self.group)
        if float(self.p["markers_period"]) > 0:
            self.create_timer(float(self.p["markers_period"]), self._on_markers, callback_group=self.group)
        if self.loop is not None:
            self.loop.start()

    def destroy_node(self):
        if self.loop is not None:
            self.loop.stop()
        return super().destroy_node()

    # ---------------------------------------------------------------- inputs
    def apply_morphology(self, morph: Morphology) -> None:
        """A morphology from the manager: the pipeline reassembles at the start of the next
        cycle, with that cycle's stamp as the gait's replanning time (as the library loop,
        where the first cycle to use a declared damage is the one at its time); this node's
        own detection coming back from the manager changes nothing."""
        with self.lock:
            self._pending_morphology = None if morph == self.pipeline.morphology else morph
            self.applied_at_cycle = self.cycles         # the next cycle

    def _reassemble(self, morph: Morphology, t: float) -> None:
        self.pipeline.set_morphology(morph, t)
        if self.detection is not None:
            self.detection.set_morphology(morph, t)
        self.applied_at_cycle = self.cycles

    def _detected(self, t: float, found: List[Detection], morph: Morphology, rejected: List[str]) -> None:
        """In the cycle (the lock held): the detector convicted legs at ``t``; the pipeline
        reassembles before this cycle's command and the morphology manager is told."""
        for text in rejected:
            self.fault("bad_detection", text)
        for detection in found:
            self.detections.append({"t": t, "what": detection.describe(), "onset": detection.onset})
            self.get_logger().info(f"detected {detection.describe()} at t = {t:.3f} s ({detection.test})")
        if morph != self.pipeline.morphology:
            self._reassemble(morph, t)
        # one YAML mapping: the morphology message's keys, then the evidence of each detection
        text = morphology_to_yaml(self.robot.name, morph, self.revision, source="detected", t=t)
        text += yaml.safe_dump({"detections": [d.evidence() for d in found]}, sort_keys=False)
        self.detections_pub.publish(String(data=text))

    def _on_cmd_vel(self, msg: Twist) -> None:
        with self.lock:
            self.pipeline.set_command(msg.linear.x, msg.linear.y, msg.angular.z)

    def _on_imu(self, msg: Imu) -> None:
        with self.lock:
            rejected = self._take_imu(msg, self.now())
        if self.lockstep and self.state.lockstep_after_imu(rejected=rejected):
            self._cycle()

    def _on_js(self, msg: JointState) -> None:
        perf = time.perf_counter()
        with self.lock:
            rejected = self._take_js(msg, self.now(), perf)
        if not self.lockstep:
            return
        stamp = stamp_ns(msg.header.stamp)
        if not rejected and stamp == self._answered:
            # a lock-step plant sent the state again (it did not get the answer in time):
            # the same answer, no second cycle on the same instant
            self.answered_again += 1
            self.cmd_pub.publish(self.cmd_msg)
            return
        self._answering = stamp
        if self.state.lockstep_after_joint_state(rejected=rejected):
            self._cycle()

    def _take_imu(self, msg: Imu, now: float) -> bool:
        """Validate and keep an IMU sample received at ``now``; True if rejected (counted)."""
        out = self.state.add_imu(msg, now)
        if out is not None:
            self.fault(out.kind, "IMU " + out.detail, out.field)
        return out is not None

    def _take_js(self, msg: JointState, now: float, perf: float) -> bool:
        """Validate and keep a joint state received at ``now`` (``perf``: its arrival on the
        latency clock); True if rejected (counted)."""
        out = self.state.add_joint_state(msg, now)
        if out is not None:
            self.fault(out.kind, "joint state " + out.detail, out.field)
            return True
        self._js_perf = perf
        self._js_new = True
        if self.state.buffer.unknown:
            self.fault("unknown_joints", "ignoring " + ", ".join(self.state.buffer.unknown[:4]))
        return False

    def _slot_imu(self, msg: Imu) -> None:
        now = self.now()
        with self._slot_lock:
            self._imu_slot = (msg, now)

    def _slot_js(self, msg: JointState) -> None:
        perf = time.perf_counter()
        now = self.now()
        with self._slot_lock:
            self._js_slot = (msg, now, perf)

    # ---------------------------------------------------------------- the cycle
    def _thread_cycle(self) -> None:
        """``trigger: thread``: one cycle in the node's own thread (runtime/periodic.py) on
        the latest IMU and joint state the executor left in their slots; the command is
        published from this thread."""
        if not self.context.ok():
            return
        with self._slot_lock:
            imu, js = self._imu_slot, self._js_slot
            self._imu_slot = self._js_slot = None
        with self.lock:
            if imu is not None:
                self._take_imu(*imu)
            if js is not None:
                self._take_js(*js)
            self._cycle_locked()

    def _cycle(self) -> None:
        with self.lock:
            self._cycle_locked()

    def _cycle_locked(self) -> None:
        if self._placement_due:
            self._place_thread()
        start = time.perf_counter()
        # a missed deadline: the timer (or the thread) started this cycle more than 1.5 periods
        # after the last, on the clock that drives it (simulated time under use_sim_time:
        # wall-clock intervals there counted every cycle of a run slower than real time as
        # missed), or the cycle computed for longer than a period; counted once per cycle
        clock = self.now()
        late = self._last_start is not None and clock - self._last_start > 1.5 * self.period
        self._last_start = clock
        if self._pending_morphology is not None:
            t = self.state.buffer.stamp
            self._reassemble(self._pending_morphology, t if np.isfinite(t) else clock)
            self._pending_morphology = None
        cycle = self.pipeline.step(self.now(), use_stamps=self.lockstep)
        self.note_restarts(self.state)
        # the command first: everything else of the cycle happens after it is on the wire
        self.cmd_msg.data = array.array("d", cycle.command.tobytes())
        if self.lockstep:
            self.cmd_msg.layout.dim[1].label = answer_label(self._answering or 0)
            self._answered = self._answering
        self.cmd_pub.publish(self.cmd_msg)
        end = time.perf_counter()
        self.stats.ran(start, end)
        if self._js_new:
            self.stats.add(end - self._js_perf, end - start)
            self._js_new = False
        if not self.lockstep and (late or end - start > self.period):
            self.stats.deadline_misses += 1
        self._follow_safe_mode(cycle)
        self.history.append((self.cycles, self.revision, cycle.command.copy()))
        self.cycles += 1
        if cycle.safe_mode is None:
            self._publish_cycle(cycle, end - start)
            self._publish_actuator_forces(cycle)
            self._publish_detector()
        if self._diag_due:
            self._diag_due = False
            self._on_diag()

    def _place_thread(self) -> None:
        """``thread_priority`` and ``cpu_affinity``: once, in the thread that runs the cycle
        (runtime/realtime.py); a refusal is a fault and the cycle runs on where it was."""
        self._placement_due = False
        for name, use in (("thread_priority", use_fifo_priority), ("cpu_affinity", use_cpus)):
            refused = use(self.p[name])
            if refused is not None:
                self.fault(name, refused)
        self.cycle_priority = fifo_priority()
        self.cycle_cpus = thread_cpus()

    def _follow_safe_mode(self, cycle) -> None:
        """Log entering safe mode once per episode (counted on /diagnostics), and leaving it."""
        if cycle.error is not None:
            self.fault("cycle_error", cycle.error)
        if cycle.safe_mode is not None:
            if self.safe_mode is None or self.safe_cycles == 0:
                self.fault("safe_mode", cycle.safe_mode)
            self.safe_cycles += 1
        elif self.safe_mode is not None and self.cycles > 0:
            self.get_logger().info(f"fresh data: leaving safe mode ({self.safe_mode})", throttle_duration_sec=5.0)
        self.safe_mode = cycle.safe_mode

    def _publish_cycle(self, cycle, cycle_time: float) -> None:
        """``~/cycle``: QP solve ms, cycle ms, fallback, infeasible, the stamp of the joint
        state the cycle used, then the stance flag the QP used for each contact frame of the
        robot (1/0), for plots and the detector (which pairs it with estimates by stamp);
        built only for a subscriber (the damage detector, the estimator's planned stance, a bag)."""
        if not self.cycle_pub.get_subscription_count():
            return
        out = cycle.output
        msg = self.cycle_msg
        msg.data = array.array("d", [1e3 * float(out.solve_time), 1e3 * cycle_time, float(bool(out.fallback)),
                                     float(bool(out.infeasible)), float(self.state.buffer.stamp)] +
                               [1.0 if cycle.stance.get(f, False) else 0.0 for f in self.cycle_frames])
        self.cycle_pub.publish(msg)

    def _publish_actuator_forces(self, cycle) -> None:
        """Closed chains: the actuator forces, in the robot's actuator order (for a subscriber)."""
        if self.force_pub is None or not self.force_pub.get_subscription_count():
            return
        forces = cycle.output.actuator_forces or {}
        self.force_msg.data = array.array("d", [float(forces.get(n, 0.0)) for n in self.robot.actuated_joints])
        self.force_pub.publish(self.force_msg)

    def _publish_detector(self) -> None:
        """``~/detector``: the observer's statistic (NaN while it does not test) and its
        threshold, every cycle (for a subscriber)."""
        if self.detection is None or not self.detector_pub.get_subscription_count():
            return
        det = self.detection.detector
        self.detector_pub.publish(Float64MultiArray(data=[det.statistic if det.testing else float("nan"),
                                                          float(det.config.threshold)]))

    def latencies(self) -> np.ndarray:
        """Joint state received -> command published, seconds (the last cycles, oldest first)."""
        return self.stats.latencies()

    # ---------------------------------------------------------------- outputs
    def _on_diag_timer(self) -> None:
        """Periodic triggers whose cycles run: leave the diagnostics to the next cycle (published
        after its command); otherwise (joint-state trigger, or no cycle since the last period:
        a stopped control thread, a stalled timer) publish them now."""
        if not self.lockstep and self.cycles != self._diag_cycles and (self.loop is None or self.loop.running()):
            self._diag_cycles = self.cycles
            self._diag_due = True
        else:
            self._on_diag()

    def _on_diag(self) -> None:
        out = self.control.last_output
        level = DiagnosticStatus.OK
        if self.safe_mode is not None:
            level = DiagnosticStatus.WARN if self.state.imu is not None else DiagnosticStatus.STALE
        elif out is not None and out.fallback:
            level = DiagnosticStatus.WARN
        message = f"safe mode: {self.safe_mode}" if self.safe_mode else "running"
        if self.loop is not None and self.loop.error is not None:      # trigger: thread, its loop ended
            level, message = DiagnosticStatus.ERROR, f"control thread stopped: {self.loop.error!r}"
        passive = self.state.passive
        self.publish_diagnostics(level, message, {
            "controller": self.control.kind,
            "status": out.status if out is not None else "none",
            "solve_time_ms": f"{1e3 * out.solve_time:.3f}" if out is not None else "nan",
            "fallbacks": self.control.fallbacks,
            "saturated": self.control.saturated,
            "infeasible": bool(out.infeasible) if out is not None else False,
            "loop_residual": passive.residual if passive is not None else 0.0,
            "cycles": self.cycles,
            "deadline_misses": self.stats.deadline_misses,
            "trigger": self.p["trigger"],
            "thread_priority": self.cycle_priority,
            "cpu_affinity": ",".join(map(str, self.cycle_cpus)),
            "update_rate_hz": self.rate,
            "safe_mode": self.safe_mode is not None,
            "safe_cycles": self.safe_cycles,
            "estimator_restarts": self.state.restarts,
            "accepted_joint_states": self.state.accepted["joint_states"],
            "answered_again": self.answered_again,
            "accepted_imu": self.state.accepted["imu"],
            **self.stats.recent_ms(),
        })

    def _on_markers(self) -> None:
        est = self.state.last
        if est is None or self.safe_mode is not None:
            return
        shapes = None
        if self.leaves is not None and est.q_soft is not None:
            msg = self.deformation_msg
            msg.header.stamp = self.get_clock().now().to_msg()
            msg.position, msg.velocity = est.q_soft.tolist(), est.v_soft.tolist()
            self.deformation_pub.publish(msg)
            if self.marker_pub.get_subscription_count():       # the modules still there
                leaves = self.control.controller.active_leaves
                shapes = leaves.shapes(np.concatenate([est.q, est.q_soft[leaves.kept]]), self.soft_data)
        if not self.marker_pub.get_subscription_count():
            return                  # ~40 Python messages: built only for rviz or a bag
        self.marker_pub.publish(build_markers(
            self.p["odom_frame"], self.get_clock().now().to_msg(), self.robot, self.control.map, est,
            self.state.stance, self.control.last_output, self.marker_data, shapes))


def main(args=None) -> int:
    return spin_node(WholeBodyControllerNode, args)

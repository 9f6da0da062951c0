"""The MuJoCo plant as a ROS 2 node: ``ros2 run hybrid_dynamics mujoco_sim``.

The ROS face of the MuJoCo plant (sim/plant.py, which knows no ROS). It publishes what the robot's drivers would and nothing more:

  /joint_states                   sensor_msgs/JointState   actuated joints only (passive joints
                                                           of closed linkages are not sensed)
  /imu_sensor_broadcaster/imu     sensor_msgs/Imu          noise and bias from ``sensors.*``
  /clock                          rosgraph_msgs/Clock      simulated time
  /sim/ground_truth/odometry      nav_msgs/Odometry        true base pose (never for estimators)
  /sim/ground_truth/joint_states  sensor_msgs/JointState   every joint, passive ones of closed
                                                           linkages included (true values, no
                                                           noise; never for estimators)
  /sim/ground_truth/morphology    std_msgs/String          the plant's true morphology (YAML of
                                                           morphology_manager/morphology, latched)
  /sim/ground_truth/contact_forces std_msgs/Float64MultiArray  world floor force on each contact
                                                           frame of the robot (3 per frame, in
                                                           the robot's contacts order; plots)

and applies ``/effort_controller/commands`` (std_msgs/Float64MultiArray, in the order of the
``joints`` parameter, the effort controller's; default: the robot's actuated joints), clipped
to the actuator limits. ``/sim/damage`` (std_msgs/String, the morphology_manager/damage YAML
schema) damages the *plant*: whether the morphology manager is told is another matter.

Parameters: ``robot`` (jethexa), ``publish_rate`` (Hz of sensor messages, default 1000 = every
physics step of 1 ms), ``real_time`` (true: pace the physics with the wall clock; false: as
fast as the timer allows), ``lockstep`` (true: the physics advances one publish period each
time a command arrives, so a controller with ``trigger: joint_states`` and the plant run in
lock-step as fast as the controller computes, deterministically: it steps only on the answer
to the state it published last, which the command names (ros/lockstep.py); a watchdog starts
the loop (it publishes the state at the clock's zero) and re-sends the state awaiting its
answer after ``lockstep_timeout`` wall seconds without it: the plant never steps without a
command),
``max_command_age`` (real time, not lock-step: the physics waits while the last command is
older than this many simulated seconds, and before the first one, stepping anyway after
``lockstep_timeout`` wall seconds without a command: on a machine too loaded for the
controller to keep up, the simulation runs slower than real time instead of running on
without control; :attr:`MujocoSimNode.waits` counts the ticks it waited),
``diagnostics_period`` (wall s between its /diagnostics: commands taken, rejected, answers
to older states ignored, states re-sent by the watchdog, real-time waits),
``settle`` (s of joint PD on the standing pose before the first message), ``damage`` and
``damage_at`` (damage events, in the ``/sim/damage`` schema, that the plant suffers exactly
``damage_at`` s after the settle, at the end of the step that reaches that time, before the
state of that instant is published: a scenario's damage at the same simulated instant, and
read by the same sample, whichever graph or the library loop runs it), ``clock_rate``
(Hz of /clock; 0: with every sensor message: each /clock message wakes every node on
simulated time), ``joints``,
``sensors.gyro_std`` ... (the ImuNoise fields), ``seed``.

In one process, :attr:`MujocoSimNode.step_hooks` are called with the simulated time after
each physics advance, before the state reached is published (one that sets :attr:`hold` ends
the run there, unpublished), and :attr:`MujocoSimNode.damage_hooks` with the damage's time right after
the plant is damaged, before the state of that instant is published (the scenario runner
declares a damage there).
"""
from __future__ import annotations

import array
import sys
import time
from typing import Callable, List, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String

from ..errors import InputError
from ..model.damage_events import apply_damage_yaml, morphology_to_yaml
from ..model.morphology import Morphology
from ..model.robot import load_robot
from ..runtime.inputs import sec_to_stamp
from ..sim.plant import ImuNoise, Plant
from . import params as P
from .lean import LeanNode
from .lockstep import LockstepGate, answered_stamp, stamp_ns
from .qos import STATE_QOS
from .node_base import spin_node

SENSOR_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)


class MujocoSimNode(LeanNode):
    def __init__(self, robot=None, name: str = "mujoco_sim", **kwargs):
        super().__init__(name, **kwargs)
        p = P.nested(P.declare(self, P.MUJOCO_SIM))
        self.robot = robot if robot is not None else load_robot(p["robot"])
        sensors = p["sensors"]
        noise = ImuNoise.from_dict({**sensors, "gyro_bias": list(sensors["gyro_bias"]),
                                    "accel_bias": list(sensors["accel_bias"])})
        self.plant = Plant(self.robot, noise=noise, seed=int(p["seed"]))
        joints = [j for j in p["joints"] if j] or list(self.plant.actuated_joints)
        unknown = [j for j in joints if j not in self.plant.actuated_joints]
        if unknown:
            raise InputError(f"joints not actuated on {self.robot.name}: {', '.join(unknown)}", field="joints")
        self.command_joints: List[str] = joints
        self.morphology = Morphology.healthy(self.robot)
        self.steps_per_tick = max(1, int(round(1.0 / (float(p["publish_rate"]) * self.plant.timestep))))
        clock_rate = float(p["clock_rate"])
        self.clock_every = max(1, int(round(1.0 / (clock_rate * self.steps_per_tick * self.plant.timestep)))) \
            if clock_rate > 0 else 1
        self.ticks = 0
        self.js_pub = self.create_publisher(JointState, "/joint_states", SENSOR_QOS)
        self.imu_pub = self.create_publisher(Imu, "/imu_sensor_broadcaster/imu", SENSOR_QOS)
        self.clock_pub = self.create_publisher(Clock, "/clock", 10)
        self.gt_pub = self.create_publisher(Odometry, "/sim/ground_truth/odometry", 10)
        self.gt_js_pub = self.create_publisher(JointState, "/sim/ground_truth/joint_states", 10)
        self.gt_js = JointState()
        self.gt_js.name = list(self.plant.joint_names)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.morph_pub = self.create_publisher(String, "/sim/ground_truth/morphology", latched)
        self.hold = False          # True: the physics stops advancing (end of a scenario)
        self.forces_pub = self.create_publisher(Float64MultiArray, "/sim/ground_truth/contact_forces", 10)
        self.contact_frames = [c.frame for c in self.robot.contacts]
        self.create_subscription(Float64MultiArray, "/effort_controller/commands", self._on_command, 10)
        self.create_subscription(String, "/sim/damage", self._on_damage, 10)
        self.rejected = 0
        self.commands = 0
        self.resent = 0                    # lock-step: states re-sent by the watchdog after the first command
        self.resent_at_start = 0           # ... before it (the controller starting)
        self.step_hooks: List[Callable[[float], None]] = []
        self.damage_hooks: List[Callable[[float], None]] = []
        if float(p["settle"]) > 0:
            self.plant.settle(self.robot.q_stand, float(p["settle"]))
        self.damaged_at: Optional[float] = None       # plant time of the last damage
        self.scheduled: Optional[tuple] = None        # (plant time, damage YAML)
        if p["damage"]:
            self.scheduled = (self.plant.time + float(p["damage_at"]), str(p["damage"]))
            self._damaged(self.scheduled[1])          # checked now: a bad event fails at start, not mid-run
        self.lockstep = bool(p["lockstep"])
        self.gate = LockstepGate()
        self._sensors: Optional[tuple] = None     # the last (JointState, Imu) published: a re-send's copy
        self.paused: Optional[Callable[[], bool]] = None      # pause_until
        self.lockstep_timeout = float(p["lockstep_timeout"])
        self.max_command_age = float(p["max_command_age"])
        self.command_time = -np.inf        # plant time of the last command
        self.waits = 0                     # real-time ticks spent waiting for a command
        self._last_tick = time.monotonic()
        if self.lockstep:
            self.timer = self.create_timer(min(0.05, self.lockstep_timeout), self._watchdog)
        else:
            period = self.steps_per_tick * self.plant.timestep if p["real_time"] else 1e-4
            self.timer = self.create_timer(period, self._paced)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", STATE_QOS)
        self.create_timer(float(p["diagnostics_period"]), self._on_diag)

    # ------------------------------------------------------------------ inputs
    def _on_command(self, msg: Float64MultiArray) -> None:
        values = np.asarray(msg.data, dtype=float)
        if values.shape != (len(self.command_joints),):
            self.rejected += 1
            self.get_logger().warning(f"command of length {values.size}, expected {len(self.command_joints)}",
                                      throttle_duration_sec=5.0)
            return
        if self.lockstep and not self.gate.answers(answered_stamp(msg.layout)):
            return          # the answer to an older state (a copy re-sent): counted, not applied
        self.plant.set_torques(dict(zip(self.command_joints, values)))
        self.commands += 1
        self.command_time = self.plant.time
        if self.lockstep:
            self.tick()

    def _paced(self) -> None:
        """Real time: a tick per period, unless the controller's last command is older than
        ``max_command_age`` (then wait for it, at most ``lockstep_timeout`` wall seconds)."""
        if self.max_command_age > 0 and self.plant.time - self.command_time > self.max_command_age + 1e-9 \
                and time.monotonic() - self._last_tick < self.lockstep_timeout:
            self.waits += 1
            return
        self.tick()

    def _watchdog(self) -> None:
        if self.hold:
            return
        if self.paused is not None:
            if self.paused():
                self.paused = None
                self._publish_sample()
            return
        if self.ticks == 0:
            # the loop starts from the state at the clock's zero, not from a step: the
            # controller's first command drives the first step, as in the library loop
            # (stepping first, the plant ran its first period on no command)
            self._last_tick = time.monotonic()
            self._sample()
            return
        if self.gate.awaiting is not None and self._sensors is not None and \
                time.monotonic() - self._last_tick >= self.lockstep_timeout:
            self._resend()

    def _resend(self) -> None:
        """Lock-step: the state awaiting its answer sent again (same stamp: /clock, joint state,
        IMU), not a step: its joint state may have been lost, or the controller is slow (its answer to the first copy
        then steps the plant, and the second is ignored as an older state's)."""
        if self.commands == 0:
            self.resent_at_start += 1
        else:
            self.resent += 1
            self.get_logger().warning(f"no answer to the state of t = {self.plant.time:.3f} s within "
                                      f"{self.lockstep_timeout} s: sent again (counted on /diagnostics)",
                                      throttle_duration_sec=5.0)
        self._last_tick = time.monotonic()
        clock = Clock()                 # the clock too: a node that missed the state's may be waiting for it
        sec_to_stamp(self.plant.time, clock.clock)
        self.clock_pub.publish(clock)
        js, imu = self._sensors
        self.js_pub.publish(js)
        self.imu_pub.publish(imu)

    def pause_until(self, ready: Callable[[], bool]) -> None:
        """Lock-step: the state the plant has just reached is not published (so no command
        comes and the physics stays) until ``ready()`` (asked by the watchdog's timer, every
        50 ms at most). Called from a damage hook, the sample of the damage time waits: the
        one-process demo holds it while a declared damage travels to the controller, as the
        library loop applies the damage before its cycle of that instant."""
        self.paused = ready

    def _damaged(self, events: str) -> Morphology:
        """The current morphology after the damage ``events`` (YAML; a locked joint locks
        where it stands now); InputError if they do not apply."""
        plant = self.plant
        return apply_damage_yaml(self.morphology, events,
                                 current_angle=lambda j: float(plant.q()[7 + plant.joint_names.index(j)]))

    def _on_damage(self, msg: String) -> None:
        try:
            morph = self._damaged(msg.data)
        except InputError as exc:
            self.get_logger().error(f"damage rejected: {exc}")
            return
        self.damage(morph)

    def damage(self, morph: Morphology) -> None:
        """The plant becomes ``morph`` now (published on /sim/ground_truth/morphology, with the
        plant's time ``t``)."""
        self.plant.apply_morphology(morph)
        self.morphology = morph
        self.damaged_at = self.plant.time
        self.revision = getattr(self, "revision", 0) + 1
        self.morph_pub.publish(String(data=morphology_to_yaml(self.robot.name, morph, self.revision,
                                                              source="plant", t=self.damaged_at)))
        self.get_logger().info(f"plant damaged at t = {self.damaged_at:.3f} s: {morph.describe()}")
        for hook in self.damage_hooks:
            hook(self.damaged_at)

    # ------------------------------------------------------------------ the loop
    def tick(self) -> None:
        if self.hold or self.paused is not None:
            return
        self._last_tick = time.monotonic()
        self.gate.stepped()
        self.plant.step(self.steps_per_tick)
        for hook in self.step_hooks:
            hook(self.plant.time)
        if not self.hold:            # a hook ended the run: the state reached is not published
            self._sample()

    def _sample(self) -> None:
        """The state the plant has reached, published. A damage scheduled for this instant
        happens first: the sample of the damage time is the damaged plant's (MuJoCo's
        sensors recomputed on the damaged model), as the library loop's cycle of that
        instant reads it; a damage hook may hold the sample back (:meth:`pause_until`)."""
        if self.scheduled is not None and self.plant.time >= self.scheduled[0] - 1e-9:
            events, self.scheduled = self.scheduled[1], None
            self.damage(self._damaged(events))
        if self.paused is None:
            self._publish_sample()

    def _publish_sample(self) -> None:
        self.publish()
        self.gate.published(stamp_ns(self._sensors[0].header.stamp))

    def publish(self) -> None:
        plant, t = self.plant, self.plant.time
        if self.ticks % self.clock_every == 0:
            clock = Clock()
            sec_to_stamp(t, clock.clock)
            self.clock_pub.publish(clock)
        self.ticks += 1
        names, pos, vel, effort = plant.joint_states()
        js = JointState()
        sec_to_stamp(t, js.header.stamp)
        js.name = names
        js.position, js.velocity, js.effort = pos.tolist(), vel.tolist(), effort.tolist()
        self.js_pub.publish(js)
        imu = plant.imu()
        m = Imu()
        sec_to_stamp(t, m.header.stamp)
        m.header.frame_id = self.robot.imu_frame or "base_link"
        m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w = (float(a) for a in imu.orientation)
        m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = (float(a) for a in imu.angular_velocity)
        m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = \
            (float(a) for a in imu.linear_acceleration)
        self.imu_pub.publish(m)
        self._sensors = (js, m)
        gt = plant.ground_truth()
        odom = Odometry()
        sec_to_stamp(t, odom.header.stamp)
        odom.header.frame_id, odom.child_frame_id = "odom", "base_link"
        p, q = odom.pose.pose.position, odom.pose.pose.orientation
        p.x, p.y, p.z = (float(a) for a in gt.position)
        q.x, q.y, q.z, q.w = (float(a) for a in gt.orientation)
        lin, ang = odom.twist.twist.linear, odom.twist.twist.angular
        lin.x, lin.y, lin.z = (float(a) for a in gt.linear_velocity)
        ang.x, ang.y, ang.z = (float(a) for a in gt.angular_velocity)
        self.gt_pub.publish(odom)
        gj = self.gt_js
        _, gpos, gvel = plant.joint_ground_truth()
        sec_to_stamp(t, gj.header.stamp)
        gj.position, gj.velocity = array.array("d", gpos.tobytes()), array.array("d", gvel.tobytes())
        self.gt_js_pub.publish(gj)
        self.forces_pub.publish(Float64MultiArray(data=plant.contact_force_array(self.contact_frames).tolist()))

    def _on_diag(self) -> None:
        """/diagnostics: what the plant took and did not take from its controller."""
        warn = self.resent > 0 or self.rejected > 0
        message = (f"re-sent {self.resent} states after the first command (no answer within "
                   f"lockstep_timeout)" if self.resent else "running") + \
            (f"; rejected {self.rejected} commands" if self.rejected else "")
        status = DiagnosticStatus(level=DiagnosticStatus.WARN if warn else DiagnosticStatus.OK,
                                  name=f"hybrid_dynamics: {self.get_name()}", message=message,
                                  hardware_id=self.robot.name)
        values = {"time": f"{self.plant.time:.6f}", "lockstep": self.lockstep, "commands": self.commands,
                  "rejected_commands": self.rejected, "stale_answers": self.gate.stale, "resent": self.resent,
                  "resent_at_start": self.resent_at_start, "waits": self.waits}
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.diag_pub.publish(msg)


def main(argv: Optional[List[str]] = None) -> int:
    return spin_node(MujocoSimNode, argv if argv is not None else sys.argv)


if __name__ == "__main__":
    sys.exit(main())

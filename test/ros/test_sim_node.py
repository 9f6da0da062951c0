"""The MuJoCo plant as a ROS node: only actuated joints on /joint_states, IMU, /clock and
ground truth published; commands in the `joints` order applied; /sim/damage damages it."""
import time

import numpy as np
import pytest
import yaml
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from hybrid_dynamics.ros.sim_node import MujocoSimNode


def test_sim_node_publishes_sensors_and_applies_commands():
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        sim = MujocoSimNode(context=ctx)
        probe = Node("probe", context=ctx)
        got = []
        probe.create_subscription(JointState, "/joint_states", got.append,
                                  QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
        cmd = probe.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
        dmg = probe.create_publisher(String, "/sim/damage", 10)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(sim)
        ex.add_node(probe)
        deadline = time.time() + 20
        while len(got) < 20 and time.time() < deadline:
            ex.spin_once(timeout_sec=0.05)
        assert got, "no /joint_states"
        assert list(got[-1].name) == sim.robot.actuated_joints
        # a command in the joints order reaches the plant, clipped to the limit
        values = np.full(len(sim.command_joints), 10.0)
        deadline = time.time() + 20
        while not np.allclose(sim.plant.joint_states()[3], 3.4) and time.time() < deadline:
            cmd.publish(Float64MultiArray(data=values.tolist()))
            ex.spin_once(timeout_sec=0.05)
        assert np.allclose(sim.plant.joint_states()[3], 3.4)
        mass = sim.plant.total_mass()
        deadline = time.time() + 20
        while sim.plant.total_mass() == mass and time.time() < deadline:
            dmg.publish(String(data="remove_leg: leg3"))
            ex.spin_once(timeout_sec=0.05)
        assert sim.plant.total_mass() == pytest.approx(mass - 0.2)
        ex.shutdown()
        sim.destroy_node()
        probe.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def stamp_of(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def test_lockstep_advances_one_period_per_command_and_damages_at_its_time():
    """``lockstep``: no command, no physics; each command advances exactly one publish
    period and brings the state of that instant; the scheduled damage (``damage`` at
    ``damage_at`` on the plant's clock, which restarts at 0 after the settle) happens at its
    time exactly and /sim/ground_truth/morphology says so."""
    from rclpy.parameter import Parameter
    from rclpy.qos import DurabilityPolicy
    from std_msgs.msg import Float64MultiArray as F64
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        params = [Parameter("lockstep", value=True), Parameter("publish_rate", value=200.0),
                  Parameter("lockstep_timeout", value=30.0), Parameter("settle", value=0.3),
                  Parameter("damage", value="[{remove_leg: leg3}]"), Parameter("damage_at", value=0.02)]
        sim = MujocoSimNode(context=ctx, parameter_overrides=params)
        assert sim.plant.time == pytest.approx(0.0)            # the clock restarts when the settle ends
        probe = Node("probe", context=ctx)
        got, morph, forces = [], [], []
        probe.create_subscription(JointState, "/joint_states", got.append,
                                  QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT))
        probe.create_subscription(String, "/sim/ground_truth/morphology", morph.append,
                                  QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        probe.create_subscription(F64, "/sim/ground_truth/contact_forces", forces.append, 100)
        cmd = probe.create_publisher(F64, "/effort_controller/commands", 10)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(sim)
        ex.add_node(probe)
        deadline = time.time() + 20
        while cmd.get_subscription_count() < 1 and time.time() < deadline:
            ex.spin_once(timeout_sec=0.05)
        # the state at the clock's zero, which the watchdog publishes to start the loop: counted
        # as the answer to the first command, it made the test wait for the wrong sample (on a
        # loaded machine it could arrive after the first command was sent)
        deadline = time.time() + 20
        while not got and time.time() < deadline:
            ex.spin_once(timeout_sec=0.05)
        assert [stamp_of(m) for m in got] == [0.0] and sim.plant.time == 0.0
        hold = sim.plant.q()[7:].copy()
        mass = sim.plant.total_mass()
        for k in range(10):
            cmd.publish(F64(data=(2.0 * (sim.robot.q_stand[7:] - hold)).tolist()))
            deadline = time.time() + 20
            while stamp_of(got[-1]) < 0.005 * (k + 1) - 1e-9 and time.time() < deadline:
                ex.spin_once(timeout_sec=0.05)
            assert sim.plant.time == pytest.approx(0.005 * (k + 1))       # one period per command
        assert np.allclose([stamp_of(m) for m in got], 0.005 * np.arange(11))   # and its state, once
        assert sim.resent == sim.resent_at_start == 0 and sim.commands == 10
        assert sim.morphology.describe() == "leg3 removed" and sim.plant.total_mass() == pytest.approx(mass - 0.2)
        deadline = time.time() + 5
        while (not morph or len(forces) < 10) and time.time() < deadline:
            ex.spin_once(timeout_sec=0.05)
        assert morph and "leg3 removed" in morph[-1].data
        assert yaml.safe_load(morph[-1].data)["t"] == pytest.approx(0.02)   # scheduled: at its time exactly
        assert len(forces) == 10 and len(forces[0].data) == 3 * len(sim.robot.contacts)
        ex.shutdown()
        sim.destroy_node()
        probe.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def test_lockstep_steps_only_on_the_answer_to_its_state_through_a_stalled_controller():
    """A controller stand-in stalls on two states in a row, past the plant's
    ``lockstep_timeout`` (until the plant sends the state again, or 0.5 s): the plant sends
    each such state again instead of stepping, steps on the first answer and ignores the
    second (counted), and every step applies the answer to the state it steps from. Before,
    the watchdog stepped on the last command and the two late answers left two states in
    flight: every later command was applied a period late (the per-process failure of
    jethexa_shank, docs/launch.md)."""
    from collections import deque
    from rclpy.parameter import Parameter
    from hybrid_dynamics.ros.lockstep import answer_label, answered_stamp, stamp_ns
    from std_msgs.msg import MultiArrayDimension
    period, stalled = 0.005, (5, 6)
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        params = [Parameter("lockstep", value=True), Parameter("publish_rate", value=1 / period),
                  Parameter("lockstep_timeout", value=0.2), Parameter("settle", value=0.3)]
        sim = MujocoSimNode(context=ctx, parameter_overrides=params)
        applied = []            # (state stepped from, the state whose answer it applied)
        sim.step_hooks.append(lambda t: applied.append(
            (round(t / period) - 1, int(round(1e3 * sim.plant.joint_states()[3][0])))))
        probe = Node("probe", context=ctx)
        cmd = probe.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
        queue, copies = deque(), {}          # first in, first out: a held answer holds the next ones

        def on_state(msg):
            k = round(stamp_of(msg) / period)
            copies[k] = copies.get(k, 0) + 1
            hold = 0.5 if k in stalled and copies[k] == 1 else 0.0
            answer = Float64MultiArray(data=[1e-3 * k] * len(sim.command_joints))
            answer.layout.dim = [MultiArrayDimension(label="joints", size=18, stride=18),
                                 MultiArrayDimension(label=answer_label(stamp_ns(msg.header.stamp)), size=1, stride=1)]
            assert answered_stamp(answer.layout) == stamp_ns(msg.header.stamp)
            queue.append((time.time() + hold, k, answer))

        def answer_due():
            while queue:
                due, k, answer = queue[0]
                if time.time() < due and copies[k] == 1:      # stalled until the plant sends it again
                    return
                queue.popleft()
                cmd.publish(answer)
        probe.create_subscription(JointState, "/joint_states", on_state,
                                  QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT))
        probe.create_timer(0.01, answer_due)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(sim)
        ex.add_node(probe)
        deadline = time.time() + 60
        while sim.plant.time < 20 * period - 1e-9 and time.time() < deadline:
            ex.spin_once(timeout_sec=0.01)
        assert len(applied) >= 20, applied
        assert all(s == a for s, a in applied), applied
        assert [s for s, _ in applied] == list(range(len(applied)))       # one step per state
        assert sim.resent >= len(stalled) and sim.gate.stale >= len(stalled), (sim.resent, sim.gate.stale)
        ex.shutdown()
        sim.destroy_node()
        probe.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def test_a_scheduled_damage_that_does_not_apply_fails_at_start():
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        from rclpy.parameter import Parameter
        from hybrid_dynamics.errors import InputError
        with pytest.raises(InputError, match="leg9"):
            MujocoSimNode(context=ctx, parameter_overrides=[Parameter("damage", value="remove_leg: leg9")])
    finally:
        rclpy.shutdown(context=ctx)


def test_real_time_plant_waits_for_a_starved_controller():
    """Real time (not lock-step): the physics advances with the wall clock only while the
    last command is at most ``max_command_age`` old (simulated time), and not before the
    first one: a controller that falls behind slows the simulation down instead of losing it."""
    from rclpy.parameter import Parameter
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        params = [Parameter("publish_rate", value=500.0), Parameter("lockstep_timeout", value=30.0),
                  Parameter("max_command_age", value=0.01)]
        sim = MujocoSimNode(context=ctx, parameter_overrides=params)
        probe = Node("probe", context=ctx)
        cmd = probe.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(sim)
        ex.add_node(probe)

        def spin(seconds):
            end = time.time() + seconds
            while time.time() < end:
                ex.spin_once(timeout_sec=0.01)
        spin(0.3)
        assert sim.plant.time == 0.0 and sim.waits > 0               # no command yet: it waits
        deadline = time.time() + 20
        while sim.commands == 0 and time.time() < deadline:
            cmd.publish(Float64MultiArray(data=[0.0] * 18))
            ex.spin_once(timeout_sec=0.05)
        t_cmd = sim.command_time
        spin(0.5)                                                    # 250 periods of wall time
        # then it ran on to 0.01 s past the last command, one 2 ms period at a time, and waits.
        # The last command, not the first: on a loaded machine a second one published by the
        # loop above can arrive while the plant runs (CI: 0.014 s past the first)
        assert sim.command_time >= t_cmd
        assert sim.plant.time == pytest.approx(sim.command_time + 0.012)
        assert sim.plant.time < 0.05                                 # not 250 periods: it waited
        ex.shutdown()
        sim.destroy_node()
        probe.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def test_a_declared_lock_carries_the_angle_the_plant_locked_at():
    """The scenario driver and the harness declare a lock at the plant's angle (the
    manager's own latest reading lags by the message latency): the morphology the manager
    builds from the declaration equals the plant's."""
    from hybrid_dynamics.model.damage_events import apply_event, with_lock_angles
    from hybrid_dynamics.model.morphology import Morphology
    from hybrid_dynamics.model.robot import load_robot
    robot = load_robot("jethexa")
    events = [{"remove_leg": "leg3"}, {"lock_joint": {"joint": "leg1_femur_joint"}},
              {"lock_joint": {"joint": "leg2_femur_joint", "angle": 0.1}}]
    plant = Morphology.healthy(robot)
    for event in events:
        plant = apply_event(plant, event, current_angle=lambda j: -0.5203)
    declared = Morphology.healthy(robot)
    for event in with_lock_angles(events, dict(plant.locked)):
        declared = apply_event(declared, event)                # no current angle needed: all given
    assert declared == plant and dict(declared.locked)["leg1_femur_joint"] == -0.5203
    assert events[1] == {"lock_joint": {"joint": "leg1_femur_joint"}}   # the scenario's events untouched

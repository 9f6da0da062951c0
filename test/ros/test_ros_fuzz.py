"""The one-process ROS graph under adversarial input over DDS: the issue's three absurd
messages, hypothesis streams of joint states, IMU samples, /cmd_vel twists and damage events
(test/fuzz_inputs.py), and a flood in which a third of the messages are valid with the
controller on its 500 Hz timer. Properties: the graph never raises, every command is finite
and within the URDF effort limits, every rejection is counted on /diagnostics under its field,
and commands from the QP resume within 20 ms (10 cycles at 500 Hz) of valid input."""
import time
from collections import Counter

import numpy as np
import pytest
from geometry_msgs.msg import Twist
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from std_msgs.msg import String

from fuzz_inputs import ABSURD, DT, FLOOD_FAULTS, RECOVERY_CYCLES, Builder, Spec, input_specs
from hybrid_dynamics.ros.graph import Graph
from hybrid_dynamics.ros.qos import STATE_QOS
from hybrid_dynamics.ros.sources import StandingSource
from test_ros_nodes import Probe

ROBOT = "jethexa"
CTRL = "whole_body_controller"


@pytest.fixture(scope="module")
def graph():
    g = Graph(ROBOT, params={CTRL: {"trigger": "joint_states", "diagnostics_period": 0.05, "gait": True},
                             "morphology_manager": {"auto_detect": False},
                             "state_estimator": {"diagnostics_period": 0.05}})
    g.source = g.add_node(lambda ctx, r: StandingSource(r, context=ctx))
    g.probe = g.add_node(lambda ctx, r: Probe(context=ctx))
    g.twist = g.probe.create_publisher(Twist, "/cmd_vel", STATE_QOS)
    g.build = Builder(g.robot)
    g.start()
    assert g.spin_until(lambda: _pair(g, wait=0.2) is not None, timeout=20.0)
    yield g
    g.shutdown()


def _processed(ctrl) -> int:
    """Joint states and IMU samples the controller has taken (accepted or rejected)."""
    return sum(ctrl.state.accepted.values()) + sum(ctrl.state.rejected.values())


def _pair(g, wait=2.0):
    """One valid IMU + joint state pair; the command it produced (or None)."""
    n = len(g.probe.commands)
    g.source.publish_sample(imu=True, js=False)
    time.sleep(0.002)
    g.source.publish_sample(g.source.t, imu=False, js=True)
    if not g.spin_until(lambda: len(g.probe.commands) > n, timeout=wait):
        return None
    return g.probe.commands[-1]


def _recovers(g) -> int:
    """Valid pairs until a QP command (the controller out of safe mode, no fallback)."""
    ctrl = g.nodes[CTRL]
    for k in range(1, RECOVERY_CYCLES + 1):
        if _pair(g) is not None and ctrl.safe_mode is None and not ctrl.control.last_output.fallback:
            return k
    return RECOVERY_CYCLES + 1


def _limits(g) -> np.ndarray:
    m = g.robot.model
    return np.array([m.effortLimit[m.joints[m.getJointId(n)].idx_v] for n in g.nodes[CTRL].control.joints])


def _check_commands(g, start=0):
    cmds = np.array(g.probe.commands[start:])
    assert len(cmds) and np.all(np.isfinite(cmds)) and np.all(np.abs(cmds) <= _limits(g) + 1e-9)


def _send(g, spec: Spec) -> int:
    """Publish one input; returns the number of controller inputs (joint states, IMU) sent."""
    src = g.source
    src.t += DT
    if spec.topic == "pair":
        src.publish_sample(src.t)
        return 2
    if spec.topic == "joint_states":
        src.js_pub.publish(g.build.joint_state(src.t, spec))
        return 1
    if spec.topic == "imu":
        src.imu_pub.publish(g.build.imu(src.t, spec))
        return 1
    if spec.topic == "cmd_vel":
        g.twist.publish(g.build.twist(spec))
    else:
        g.probe.damage.publish(String(data=spec.args[0]))
    return 0


def _diagnostics_agree(g) -> bool:
    """/diagnostics carries the controller's per-field rejection counts."""
    diag = g.probe.diag.get(CTRL, {})
    fields = g.nodes[CTRL].fault_fields
    return all(int(diag.get(f"rejected_field.{k}", -1)) == v for k, v in fields.items())


@pytest.mark.parametrize("name", list(ABSURD))
def test_three_absurd_messages_then_commands_resume(graph, name):
    ctrl = graph.nodes[CTRL]
    good = _pair(graph)
    spec = ABSURD[name]
    field = next(iter(spec.fields))
    before = ctrl.fault_fields[field]
    for _ in range(3):
        _send(graph, spec)
    assert graph.spin_until(lambda: ctrl.fault_fields[field] == before + 3, timeout=5.0)
    assert _recovers(graph) == 1
    assert np.all(np.isfinite(good)) and np.all(np.isfinite(graph.probe.commands[-1]))
    assert graph.spin_until(lambda: int(graph.probe.diag.get(CTRL, {}).get(f"rejected_field.{field}", 0))
                            >= before + 3, timeout=3.0)
    assert "implausible" in graph.probe.diag[CTRL]["last_fault"] or ctrl.faults["implausible"] >= 3


def _settled_count(g, ctrl, quiet=0.3) -> int:
    """The controller's input count once nothing more has arrived for ``quiet`` seconds (so that
    a late message published by an earlier example is not counted against this one)."""
    last = -1
    while _processed(ctrl) != last:
        last = _processed(ctrl)
        g.spin_until(lambda: _processed(ctrl) != last, timeout=quiet)
    return last


def run_graph_fuzz(g, specs):
    ctrl, mgr = g.nodes[CTRL], g.nodes["morphology_manager"]
    start = len(g.probe.commands)
    base = _settled_count(g, ctrl)
    fields_before = Counter(ctrl.fault_fields)
    expected = Counter()                    # rejections whose field is certain
    sent = 0
    for spec in specs:
        sent += _send(g, spec)
        if spec.topic in ("joint_states", "imu") and None not in spec.fields:
            expected.update(spec.fields)
        if sent - (_processed(ctrl) - base) > 40:         # stay well inside the queue of 100
            assert g.spin_until(lambda: sent - (_processed(ctrl) - base) <= 10, timeout=10.0)
    # best effort: a message may be lost on a loaded machine; wait until nothing more comes
    last = -1
    while _processed(ctrl) != last and _processed(ctrl) - base < sent:
        last = _processed(ctrl)
        g.spin_until(lambda: _processed(ctrl) - base == sent, timeout=1.0)
    lost = sent - (_processed(ctrl) - base)
    assert 0 <= lost <= 0.02 * sent
    g.probe.damage.publish(String(data="restore: {}"))
    assert g.spin_until(lambda: mgr.morphology.is_healthy() and ctrl.revision == mgr.revision, timeout=10.0)
    assert _recovers(g) <= RECOVERY_CYCLES
    _check_commands(g, start)
    got = ctrl.fault_fields - fields_before
    assert all(got[f] >= n - lost for f, n in expected.items()), (got, expected, lost)


N_INPUTS = 100                      # per example; 100 examples: 10^4 inputs


@settings(max_examples=100, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(specs=st.lists(input_specs(18, twist=True), min_size=N_INPUTS, max_size=N_INPUTS))
def test_fuzz_graph(graph, specs):
    run_graph_fuzz(graph, specs)


def test_diagnostics_count_every_rejection_by_field(graph):
    """After the fuzz (module order), /diagnostics reports exactly the controller's counts;
    three absurd messages of its own first, so that it compares counts run alone too."""
    ctrl = graph.nodes[CTRL]
    spec = next(iter(ABSURD.values()))
    field = next(iter(spec.fields))
    before = ctrl.fault_fields[field]
    for _ in range(3):
        _send(graph, spec)
    assert graph.spin_until(lambda: ctrl.fault_fields[field] == before + 3, timeout=5.0)
    assert sum(ctrl.fault_fields.values()) == sum(ctrl.state.rejected_fields.values()) > 0
    assert graph.spin_until(lambda: _diagnostics_agree(graph), timeout=5.0)
    _check_commands(graph)


# ---------------------------------------------------------------------------- timer-driven flood
def flood(n_messages: int, seed: int = 0) -> dict:
    """The issue's flood: the controller on its 500 Hz timer, the test thread sending
    ``n_messages`` inputs, a third of them valid IMU + joint state pairs, the rest drawn from
    FLOOD_FAULTS. Returns the figures over the flood (cycles, safe-mode cycles, commands)
    and after it."""
    g = Graph(ROBOT, nodes=(CTRL,), params={CTRL: {"update_rate": 500.0}})
    src = g.add_node(lambda ctx, r: StandingSource(r, context=ctx))
    probe = g.add_node(lambda ctx, r: Probe(context=ctx))
    build = Builder(g.robot)
    rng = np.random.default_rng(seed)
    try:
        g.start()
        ctrl = g.nodes[CTRL]
        for _ in range(500):
            src.publish_sample()
            time.sleep(0.002)
            if ctrl.safe_mode is None and ctrl.cycles > 50:
                break
        assert ctrl.safe_mode is None
        c0, s0, n0, t0 = ctrl.cycles, ctrl.safe_cycles, len(probe.commands), time.monotonic()
        sent = 0
        while sent < n_messages:
            src.t += DT
            if rng.random() < 1 / 3:
                src.publish_sample(src.t)
                sent += 2
            else:
                spec = FLOOD_FAULTS[rng.integers(len(FLOOD_FAULTS))]
                if spec.topic == "joint_states":
                    src.js_pub.publish(build.joint_state(src.t, spec))
                else:
                    src.imu_pub.publish(build.imu(src.t, spec))
                sent += 1
            time.sleep(0.0005)              # any message may be the one the executor takes
        elapsed = time.monotonic() - t0
        figures = {"messages": sent, "seconds": elapsed, "cycles": ctrl.cycles - c0,
                   "safe_cycles": ctrl.safe_cycles - s0, "commands": len(probe.commands) - n0,
                   "accepted": dict(ctrl.state.accepted), "rejected_by_field": dict(ctrl.state.rejected_fields),
                   "faults": dict(ctrl.faults)}
        for _ in range(RECOVERY_CYCLES):
            src.publish_sample()
            time.sleep(0.002)
        figures["safe_mode_after"] = ctrl.safe_mode
        figures["estimator_restarts"] = ctrl.state.restarts
        figures["restart_reason"] = ctrl.state.restart_reason
        figures["feet_in_contact"] = sum(ctrl.state.stance.values())
        cmds = np.array(probe.commands)
        figures["nonfinite_commands"] = int(np.sum(~np.all(np.isfinite(cmds), axis=1)))
        figures["commands_beyond_limits"] = int(np.sum(np.any(np.abs(cmds) > _limits(g) + 1e-9, axis=1)))
        return figures
    finally:
        g.shutdown()


def check_flood(figures):
    print(figures)
    assert figures["nonfinite_commands"] == 0 and figures["commands_beyond_limits"] == 0
    assert figures["cycles"] > 0
    # the valid third keeps the loop out of safe mode (the issue saw it safe the whole flood).
    # Over DDS on a shared machine a stalled process also goes stale: the exact count is the
    # library flood's (test_fuzz_pipeline.py), here only "mostly running"
    assert figures["safe_cycles"] < 0.5 * figures["cycles"]
    assert figures["safe_mode_after"] is None and figures["estimator_restarts"] == 0
    # the robot stands on all six feet throughout: the estimator must still see them down
    # (stale efforts of an accepted faulty message once made every foot "in the air")
    assert figures["feet_in_contact"] == 6, figures
    assert figures["rejected_by_field"]["imu.linear_acceleration"] > 0


def test_flood_keeps_the_loop_running():
    check_flood(flood(3000))


@pytest.mark.long
def test_flood_of_twenty_thousand():
    check_flood(flood(20000, seed=1))


def test_bytes_that_hold_no_message_are_counted_and_commands_resume(graph):
    """The sensor subscriptions take bytes (ros/cdr.py): a joint state and an IMU sample cut
    short on the wire are a fault ``malformed`` under their topic in the controller and the
    estimator, reported on /diagnostics; the graph goes on and valid input commands again."""
    from rclpy.serialization import serialize_message
    ctrl, est = graph.nodes[CTRL], graph.nodes["state_estimator"]
    assert _pair(graph) is not None
    src = graph.source
    js = serialize_message(graph.build.joint_state(src.t))
    imu = serialize_message(graph.build.imu(src.t))
    before = ctrl.faults["malformed"], est.faults["malformed"]
    src.js_pub.publish(js[:40])
    time.sleep(0.005)
    src.imu_pub.publish(imu[:100])
    assert graph.spin_until(lambda: ctrl.faults["malformed"] >= before[0] + 2
                            and est.faults["malformed"] >= before[1] + 2, timeout=10.0)
    assert ctrl.fault_fields[ctrl.p["joint_states_topic"]] >= 1
    assert graph.spin_until(lambda: int(graph.probe.diag.get(CTRL, {}).get("rejected.malformed", 0)) >= 1, timeout=10.0)
    assert _recovers(graph) <= RECOVERY_CYCLES
    assert graph.error is None

"""Real rclpy nodes exchanging messages over DDS (loopback, a domain per test process, see
conftest.py): topics, types and QoS; name matching; every bad input; safe mode; damage
reassembly within one cycle. The controller runs lock-step (one cycle per joint state) so
that each published sample gives exactly one command; one test runs the timer."""
import gc
import math
import time
import traceback

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray, String

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.damage_events import morphology_to_yaml
from hybrid_dynamics.model.morphology import Morphology
from hybrid_dynamics.runtime.inputs import CYCLE_HEADER, sec_to_stamp
from hybrid_dynamics.ros.graph import Graph
from hybrid_dynamics.ros.qos import LATCHED_QOS, STATE_QOS
from hybrid_dynamics.ros.sources import CommandProbe, StandingSource

ROBOT = "jethexa"


class Probe(CommandProbe):
    """Commands, diagnostics, morphology; publishes damage events."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.diag = {}
        self.morph = []
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, STATE_QOS)
        self.create_subscription(String, "/morphology_manager/morphology", lambda m: self.morph.append(m.data),
                                 LATCHED_QOS)
        self.damage = self.create_publisher(String, "/morphology_manager/damage", STATE_QOS)

    def _on_diag(self, msg):
        for s in msg.status:
            self.diag[s.name.split(": ")[-1]] = {kv.key: kv.value for kv in s.values} | {"_message": s.message}


@pytest.fixture(scope="module")
def graph():
    g = Graph(ROBOT, params={"whole_body_controller": {"trigger": "joint_states", "diagnostics_period": 0.05},
                             "morphology_manager": {"auto_detect": False},
                             "state_estimator": {"diagnostics_period": 0.05}})
    g.source = g.add_node(lambda ctx, r: StandingSource(r, context=ctx))
    g.probe = g.add_node(lambda ctx, r: Probe(context=ctx))
    g.start()
    # discovery: wait until the source's samples produce commands
    assert g.spin_until(lambda: _step(g, wait=0.2) is not None, timeout=20.0)
    yield g
    g.shutdown()


def _step(g, t=None, imu=True, js=True, wait=2.0):
    """Publish one IMU + joint state pair; the command it produced (or None)."""
    n = len(g.probe.commands)
    if imu:
        g.source.publish_sample(t, imu=True, js=False)
        time.sleep(0.003)
    if js:
        g.source.publish_sample(g.source.t if imu else t, imu=False, js=True)
    if not js or not g.spin_until(lambda: len(g.probe.commands) > n, timeout=wait):
        return None
    return g.probe.commands[-1]


def _publish_js(g, names, pos, vel=None, t=None):
    m = JointState()
    g.source.t = g.source.t if t is None else t          # the stamp of the last IMU sample
    sec_to_stamp(g.source.t, m.header.stamp)
    m.name = list(names)
    m.position = [float(x) for x in pos]
    m.velocity = [float(x) for x in (vel if vel is not None else [])]
    n = len(g.probe.commands)
    g.source.js_pub.publish(m)
    g.spin_until(lambda: len(g.probe.commands) > n, timeout=1.0)


def _wait_fault(g, node, kind, timeout=3.0):
    """The fault counted by the node AND reported on /diagnostics."""
    key = f"rejected.{kind}"
    return g.spin_until(lambda: int(g.probe.diag.get(node, {}).get(key, 0)) > 0, timeout=timeout)


def _all_finite(g):
    return all(np.all(np.isfinite(c)) for c in g.probe.commands)


# ---------------------------------------------------------------------------- interfaces
def test_lockstep_command_names_its_joint_state_and_a_copy_gets_the_same_answer(graph):
    """Lock-step (``trigger: joint_states``): each command says which joint state it answers
    (ros/lockstep.py: the plant steps only on the answer to its own state); the same state
    again (a plant that did not get the answer in time sends it again) gets the same command,
    with no second cycle on that instant."""
    ctrl, probe = graph.nodes["whole_body_controller"], graph.probe
    command = _step(graph)
    assert command is not None
    stamp = round(graph.source.t * 1e9)
    assert probe.answers[-1] == stamp
    cycles, again, n = ctrl.cycles, ctrl.answered_again, len(probe.commands)
    graph.source.publish_sample(graph.source.t, imu=False, js=True)
    assert graph.spin_until(lambda: len(probe.commands) > n, timeout=5.0)
    assert np.array_equal(probe.commands[-1], command) and probe.answers[-1] == stamp
    assert ctrl.cycles == cycles and ctrl.answered_again == again + 1
    assert _step(graph) is not None and probe.answers[-1] > stamp and ctrl.cycles == cycles + 1


def test_topics_types_and_qos(graph):
    p = graph.probe
    expect = {
        "/effort_controller/commands": ("std_msgs/msg/Float64MultiArray", ReliabilityPolicy.RELIABLE, None),
        "/state_estimator/joint_states_full": ("sensor_msgs/msg/JointState", ReliabilityPolicy.RELIABLE, None),
        "/state_estimator/odometry": ("nav_msgs/msg/Odometry", ReliabilityPolicy.RELIABLE, None),
        "/whole_body_controller/markers": ("visualization_msgs/msg/MarkerArray", ReliabilityPolicy.RELIABLE, None),
        "/diagnostics": ("diagnostic_msgs/msg/DiagnosticArray", ReliabilityPolicy.RELIABLE, None),
        "/morphology_manager/morphology": ("std_msgs/msg/String", ReliabilityPolicy.RELIABLE,
                                           DurabilityPolicy.TRANSIENT_LOCAL),
    }
    for topic, (typ, rel, dur) in expect.items():
        infos = [i for i in p.get_publishers_info_by_topic(topic) if i.node_name != p.get_name()]
        assert infos, topic
        assert all(i.topic_type == typ for i in infos), topic
        assert any(i.qos_profile.reliability == rel for i in infos), topic
        if dur is not None:
            assert all(i.qos_profile.durability == dur for i in infos), topic
    for topic, typ in (("/joint_states", "sensor_msgs/msg/JointState"),
                       ("/imu_sensor_broadcaster/imu", "sensor_msgs/msg/Imu"),
                       ("/morphology_manager/damage", "std_msgs/msg/String")):
        subs = [i for i in p.get_subscriptions_info_by_topic(topic)]
        assert subs and all(i.topic_type == typ for i in subs), topic
    sensor = [i for i in p.get_subscriptions_info_by_topic("/joint_states") if i.node_name == "whole_body_controller"]
    assert sensor[0].qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
    ctrl = graph.nodes["whole_body_controller"]
    cmd = _step(graph)
    assert cmd is not None and len(cmd) == len(ctrl.control.joints) == 18
    assert np.all(np.isfinite(cmd)) and np.any(cmd != 0)


def test_estimator_publishes_full_state_and_odometry(graph):
    from nav_msgs.msg import Odometry
    got = {}
    node = graph.probe
    s1 = node.create_subscription(JointState, "/state_estimator/joint_states_full",
                                  lambda m: got.setdefault("js", m), STATE_QOS)
    s2 = node.create_subscription(Odometry, "/state_estimator/odometry", lambda m: got.setdefault("odom", m), STATE_QOS)
    for _ in range(40):
        _step(graph)
        if len(got) == 2:
            break
        time.sleep(0.005)
    assert graph.spin_until(lambda: len(got) == 2, timeout=3.0)
    assert list(got["js"].name) == graph.robot.joint_names
    assert got["odom"].header.frame_id == "odom" and got["odom"].child_frame_id
    assert math.isfinite(got["odom"].pose.pose.position.z)
    node.destroy_subscription(s1)
    node.destroy_subscription(s2)


# ---------------------------------------------------------------------------- name matching
def test_subsets_and_reordering_are_matched_by_name(graph):
    names = list(graph.robot.joint_names)
    q = graph.source.q[7:]
    ref = _step(graph)
    graph.source.publish_sample(imu=True, js=False)
    time.sleep(0.003)
    # the same state in two reversed halves: the command equals the reference
    half = len(names) // 2
    first = names[:half][::-1]
    _publish_js(graph, first, [q[names.index(n)] for n in first], [0.0] * len(first))
    second = names[half:][::-1] + ["some_unknown_joint"]
    _publish_js(graph, second, [q[names.index(n)] if n in names else 7.0 for n in second], [0.0] * len(second))
    assert np.allclose(graph.probe.commands[-1], ref, atol=1e-3)
    assert graph.nodes["whole_body_controller"].faults["unknown_joints"] >= 1


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("case,kind", [
    ("length", "length_mismatch"), ("nan", "non_finite"), ("inf", "non_finite"), ("unknown", "unknown_joints")])
def test_bad_joint_states_keep_last_good_state(graph, case, kind):
    names = list(graph.robot.joint_names)
    q = list(graph.source.q[7:])
    good = _step(graph)
    n = len(graph.probe.commands)
    if case == "length":
        _publish_js(graph, names, q[:-1])
    elif case == "nan":
        _publish_js(graph, names, q[:-1] + [float("nan")])
    elif case == "inf":
        _publish_js(graph, names, q, [float("inf")] + [0.0] * (len(q) - 1))
    else:
        _publish_js(graph, ["nobody_1", "nobody_2"], [0.0, 0.0])
    assert _wait_fault(graph, "whole_body_controller", kind)
    assert graph.nodes["whole_body_controller"].faults[kind] >= 1
    # lock-step: the rejected message gets its command, the last good state's
    assert graph.spin_until(lambda: len(graph.probe.commands) == n + 1, timeout=2.0)
    assert np.allclose(graph.probe.commands[-1], good, atol=1e-3)
    after = _step(graph)
    assert after is not None and np.allclose(after, good, atol=1e-3)
    assert _all_finite(graph)


@pytest.mark.parametrize("quat,kind", [((0, 0, 0, 0), "bad_quaternion"), ((0, 0, 0.5, 0.5), "bad_quaternion"),
                                       ((0, 0, float("nan"), 1), "non_finite")])
def test_bad_imu_is_rejected(graph, quat, kind):
    m = Imu()
    sec_to_stamp(graph.source.t + 0.0005, m.header.stamp)
    m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w = map(float, quat)
    graph.source.imu_pub.publish(m)
    assert _wait_fault(graph, "whole_body_controller", kind)
    cmd = _step(graph)
    assert cmd is not None and np.all(np.isfinite(cmd))


def test_out_of_order_joint_state_is_dropped(graph):
    _step(graph)
    ctrl = graph.nodes["whole_body_controller"]
    before = ctrl.faults["out_of_order"]
    names = list(graph.robot.joint_names)
    m = JointState()
    sec_to_stamp(graph.source.t - 0.5, m.header.stamp)
    m.name = names
    m.position = [0.123] * len(names)          # plausible: refused for its stamp alone
    graph.source.js_pub.publish(m)
    assert graph.spin_until(lambda: ctrl.faults["out_of_order"] > before, timeout=3.0)
    assert not np.any(ctrl.state.buffer.q == 0.123)


def test_stale_imu_enters_safe_mode_until_fresh_data(graph):
    ctrl = graph.nodes["whole_body_controller"]
    _step(graph)
    graph.source.dt = 0.03                       # joint states 30 ms apart, no IMU
    _step(graph, imu=False)
    assert ctrl.safe_mode is None                # 30 ms: still fresh
    safe = _step(graph, imu=False)               # 60 ms without IMU
    assert ctrl.safe_mode is not None and "IMU stale" in ctrl.safe_mode
    v = ctrl.state.buffer.v
    assert np.allclose(safe, -ctrl.control.kd_safe * v[:len(safe)])      # damping torques
    assert graph.spin_until(lambda: "safe mode" in graph.probe.diag.get("whole_body_controller", {})
                            .get("_message", ""), timeout=3.0)
    graph.source.dt = 0.001
    fresh = _step(graph)
    assert ctrl.safe_mode is None and np.any(fresh != 0)


def test_malformed_damage_event_changes_nothing(graph):
    mgr = graph.nodes["morphology_manager"]
    rev = mgr.revision
    for text in ("remove_leg: [", "explode: leg1", "remove_leg: leg42", "remove_links: {leg: leg1, first: 9}",
                 "lock_joint: {joint: nope, angle: 0}"):
        graph.probe.damage.publish(String(data=text))
    assert graph.spin_until(lambda: mgr.rejected_events >= 5, timeout=5.0)
    assert mgr.revision == rev and mgr.morphology.is_healthy()
    assert _wait_fault(graph, "morphology_manager", "bad_damage_event")


# ---------------------------------------------------------------------------- outputs at their own rates
def test_cycle_record_for_subscribers_and_latency_on_diagnostics(graph):
    """~/cycle is built only while someone subscribes, and then every cycle with its layout;
    the controller's /diagnostics carry the latency percentiles and loop counters."""
    ctrl = graph.nodes["whole_body_controller"]
    got = []
    sub = graph.probe.create_subscription(Float64MultiArray, "/whole_body_controller/cycle", got.append, STATE_QOS)
    try:
        assert graph.spin_until(lambda: ctrl.cycle_pub.get_subscription_count() >= 1, timeout=5.0)
        for _ in range(5):
            assert _step(graph) is not None
        assert graph.spin_until(lambda: len(got) >= 5, timeout=3.0)
        assert all(len(m.data) == CYCLE_HEADER + len(graph.robot.contacts) for m in got)
        assert all(np.all(np.isfinite(m.data)) for m in got)
    finally:
        graph.probe.destroy_subscription(sub)
    key = "whole_body_controller"
    assert graph.spin_until(lambda: int(graph.probe.diag.get(key, {}).get("cycles", 0)) >= 5, timeout=3.0)
    diag = graph.probe.diag[key]
    assert float(diag["latency_p50_ms"]) > 0 and float(diag["latency_p99_ms"]) >= float(diag["latency_p50_ms"])
    assert diag["controller"] in ("qp", "posture") and "deadline_misses" in diag and "safe_cycles" in diag


# ---------------------------------------------------------------------------- damage
def test_damage_reassembles_the_controller_within_one_cycle(graph):
    ctrl = graph.nodes["whole_body_controller"]
    mgr = graph.nodes["morphology_manager"]
    leg3 = [n for n in ctrl.control.joints if n.startswith("leg3_")]
    idx = [ctrl.control.joints.index(n) for n in leg3]
    before = _step(graph)
    assert np.any(before[idx] != 0)
    graph.probe.damage.publish(String(data="remove_leg: leg3"))
    assert graph.spin_until(lambda: ctrl.revision == mgr.revision == 1, timeout=5.0)
    applied = ctrl.applied_at_cycle
    cmd = _step(graph)
    assert np.all(cmd[idx] == 0.0) and np.any(cmd != 0) and np.all(np.isfinite(cmd))
    first_after = next(h for h in ctrl.history if h[0] >= applied)
    assert first_after[1] == 1 and np.all(first_after[2][idx] == 0.0)
    assert graph.probe.morph and "leg3: 0" in graph.probe.morph[-1]
    # the estimator node follows too; restore through the parameter interface
    from rclpy.parameter import Parameter
    result = mgr.set_parameters([Parameter("damage", value="restore: {}")])[0]
    assert result.successful
    bad = mgr.set_parameters([Parameter("damage", value="remove_leg: nope")])[0]
    assert not bad.successful and "nope" in bad.reason
    assert graph.spin_until(lambda: ctrl.revision == 2, timeout=5.0)
    assert np.any(_step(graph)[idx] != 0)


def test_detections_of_the_controllers_cycle_reach_the_manager_and_bad_ones_change_nothing(graph):
    """``whole_body_controller/detections`` (the detector in the controller's cycle,
    runtime/detection.py): the morphology it carries becomes the manager's, source
    "detected", with each detection recorded; a malformed message changes nothing and is
    counted on /diagnostics."""
    ctrl, mgr = graph.nodes["whole_body_controller"], graph.nodes["morphology_manager"]
    pub = graph.probe.create_publisher(String, "/whole_body_controller/detections", STATE_QOS)
    assert graph.spin_until(lambda: pub.get_subscription_count() >= 1, timeout=5.0)
    revision, faults = mgr.revision, mgr.faults["bad_detection"]
    lost = Morphology.healthy(mgr.robot).remove_leg("leg5")
    good = morphology_to_yaml(ROBOT, lost, 0, source="detected", t=1.25) + \
        "detections:\n- {what: leg5 lost, onset: 1.2, leg: leg5}\n"
    bad = ["not: [yaml", "links_kept: {leg5: 0}\n", good.replace("t: 1.25", "t: soon"),
           good.replace("leg5: 0", "leg9: 0"), good.split("detections:")[0]]
    for text in bad:
        pub.publish(String(data=text))
    assert graph.spin_until(lambda: mgr.faults["bad_detection"] == faults + len(bad), timeout=5.0)
    assert mgr.revision == revision and mgr.morphology.is_healthy()
    pub.publish(String(data=good))
    assert graph.spin_until(lambda: ctrl.revision == mgr.revision == revision + 1, timeout=5.0)
    assert mgr.morphology == lost and mgr.source == "detected"
    assert mgr.detections[-1] == {"t": 1.25, "what": "leg5 lost", "onset": 1.2}
    leg5 = [ctrl.control.joints.index(n) for n in ctrl.control.joints if n.startswith("leg5_")]
    cmd = _step(graph)
    assert np.all(cmd[leg5] == 0.0) and np.any(cmd != 0)
    assert mgr.set_parameters([Parameter("damage", value="restore: {}")])[0].successful
    assert graph.spin_until(lambda: ctrl.revision == revision + 2, timeout=5.0)
    graph.probe.destroy_publisher(pub)


# ---------------------------------------------------------------------------- timer mode
@pytest.mark.parametrize("trigger", ["timer", "thread"])
def test_timer_mode_missing_joints_and_stale_inputs(trigger):
    """The periodic triggers: the executor's timer, and the node's own thread (inputs through
    latest-value slots, every cycle and command from that thread). Their diagnostics are
    published by a cycle after its command while cycles run (the timer only marks them due; it
    publishes them itself after a period without a cycle)."""
    g = Graph(ROBOT, nodes=("whole_body_controller",),
              params={"whole_body_controller": {"update_rate": 200.0, "trigger": trigger,
                                                "diagnostics_period": 0.05}})
    published_by = []
    try:
        src = g.add_node(lambda ctx, r: StandingSource(r, context=ctx,
                                                        joints=[n for n in r.joint_names if n != "leg2_tibia_joint"]))
        probe = g.add_node(lambda ctx, r: CommandProbe(context=ctx))
        ctrl = g.nodes["whole_body_controller"]
        on_diag = ctrl._on_diag

        def spied():
            published_by.append(traceback.extract_stack()[-2].name)
            on_diag()
        ctrl._on_diag = spied
        g.start()
        end = time.monotonic() + 10.0    # the probe may discover the controller after its first commands
        while time.monotonic() < end and ("leg2_tibia_joint" not in (ctrl.safe_mode or "") or not probe.commands):
            src.publish_sample()
            time.sleep(0.005)
        assert "joints never received: leg2_tibia_joint" in (ctrl.safe_mode or "")
        assert probe.commands and np.all(np.isfinite(probe.commands[-1]))
        src.joints = list(g.robot.joint_names)
        src.qj = src.q[7:]
        for _ in range(40):
            src.publish_sample()
            time.sleep(0.005)
        assert ctrl.safe_mode is None
        # the IMU stops: within a few cycles the timer sees it stale and damps
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            src.publish_sample(imu=False)
            time.sleep(0.005)
        assert ctrl.safe_mode is not None and "IMU stale" in ctrl.safe_mode
        assert all(np.all(np.isfinite(c)) for c in probe.commands)
        if trigger == "thread":           # every cycle ran in the loop's thread, none elsewhere
            assert ctrl.loop.running() and ctrl.loop.error is None
        assert gc.get_freeze_count() > 0      # the start-up objects out of the collector's reach
        # every cycle's span on the timeline `bench pipeline` explains its misses from
        assert ctrl.stats.runs > 10 and abs(ctrl.stats.runs - ctrl.cycles) <= 1
        # at least 0.5 s of cycles at a 0.05 s period: about 10 publications, half of them a safe bound
        assert published_by.count("_cycle_locked") >= 5 and set(published_by) <= {"_cycle_locked", "_on_diag_timer"}
    finally:
        g.shutdown()
    assert gc.get_freeze_count() == 0         # and back when the graph is gone
    if trigger == "thread":               # destroying the node ended its thread, after its cycle
        assert not ctrl.loop.running()
        assert ctrl.cycles > 0 and ctrl.cycles == ctrl.loop.cycles


def test_controller_refuses_the_detector_on_a_closed_chain():
    """The momentum observer's model has no loop closures: on hybrid_biped the passive joints'
    constraint forces would read as damage. The node refuses ``detector: true`` there (the
    demo and the launch files never ask for it; a user's parameter file might)."""
    with pytest.raises(InputError, match="closed-chain") as err:
        Graph("hybrid_biped", nodes=("whole_body_controller",), params={"whole_body_controller": {"detector": True}})
    assert err.value.field == "detector" and "hybrid_biped" in str(err.value)


def test_thread_trigger_refuses_simulated_time():
    with pytest.raises(InputError, match="use_sim_time"):
        Graph(ROBOT, nodes=("whole_body_controller",),
              params={"whole_body_controller": {"trigger": "thread", "use_sim_time": True}})

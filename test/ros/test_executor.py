"""The package's executor (ros/executor.py): its wait set is built once and kept while
nothing changes, and it still serves what rclpy's SingleThreadedExecutor serves: messages,
timers, services and their clients' futures, guard conditions, coroutine callbacks, entities
created and destroyed while it spins, a shutdown from another thread. Then the whole graph
on it at 1 kHz answering parameter services while the controller runs."""
import threading
import time

import pytest
import rclpy
from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile
from std_msgs.msg import Float64MultiArray, Int32
from std_srvs.srv import Trigger

from hybrid_dynamics.ros.executor import WaitSetExecutor
from hybrid_dynamics.ros.graph import Graph
from hybrid_dynamics.ros.sources import StandingSource

QOS = QoSProfile(depth=1000)


def spin_until(executor, predicate, timeout=10.0):
    end = time.monotonic() + timeout
    while not predicate() and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
    return predicate()


def _echo_pair(ctx, executor):
    """A node publishing on /exec_test/in and one echoing each message to /exec_test/out."""
    a, b = Node("exec_a", context=ctx), Node("exec_b", context=ctx)
    got = []
    pub = a.create_publisher(Int32, "/exec_test/in", QOS)
    out = b.create_publisher(Int32, "/exec_test/out", QOS)
    b.create_subscription(Int32, "/exec_test/in", lambda m: out.publish(Int32(data=2 * m.data)), QOS)
    a.create_subscription(Int32, "/exec_test/out", lambda m: got.append(m.data), QOS)
    executor.add_node(a)
    executor.add_node(b)
    return a, b, pub, got


def test_messages_timers_services_and_futures_on_a_kept_wait_set(context):
    executor = WaitSetExecutor(context=context)
    a, b, pub, got = _echo_pair(context, executor)
    ticks = []
    a.create_timer(0.002, lambda: ticks.append(time.monotonic()))
    b.create_service(Trigger, "/exec_test/trigger", lambda req, res: setattr(res, "success", True) or
                     setattr(res, "message", f"echoed {len(got)}") or res)
    client = a.create_client(Trigger, "/exec_test/trigger")
    assert spin_until(executor, lambda: pub.get_subscription_count() and client.service_is_ready())
    pub.publish(Int32(data=-1))
    assert spin_until(executor, lambda: -2 in got)         # discovery done both ways
    built = executor.rebuilds
    for k in range(200):
        pub.publish(Int32(data=k))
        executor.spin_once(timeout_sec=0.0)
    assert spin_until(executor, lambda: len(got) >= 201)
    assert got[1:] == [2 * k for k in range(200)]           # every message, in order, echoed
    assert spin_until(executor, lambda: len(ticks) >= 20)
    # 200 messages through two subscriptions and the timer's ticks: the wait set was not rebuilt
    assert executor.rebuilds == built
    future = client.call_async(Trigger.Request())
    executor.spin_until_future_complete(future, timeout_sec=10.0)
    assert future.done() and future.result().success and future.result().message == "echoed 201"
    executor.shutdown()
    assert executor._held is None                           # every kept handle let go
    a.destroy_node()
    b.destroy_node()


def test_entities_created_and_destroyed_in_callbacks(context):
    executor = WaitSetExecutor(context=context)
    node = Node("exec_changes", context=context)
    executor.add_node(node)
    pub = node.create_publisher(Int32, "/exec_test/once", QOS)
    calls, timer_ticks, guard_calls = [], [], []

    def once(msg):               # destroys its own subscription and creates a timer
        calls.append(msg.data)
        node.destroy_subscription(sub)
        node.create_timer(0.001, lambda: timer_ticks.append(1))
    sub = node.create_subscription(Int32, "/exec_test/once", once, QOS)
    assert spin_until(executor, lambda: pub.get_subscription_count() == 1)
    for k in range(5):           # queued together: one wait sees them all
        pub.publish(Int32(data=k))
    assert spin_until(executor, lambda: len(timer_ticks) >= 3)
    assert calls == [0]          # never called again once destroyed, the rest of its queue dropped
    built = executor.rebuilds
    guard = node.create_guard_condition(lambda: guard_calls.append(threading.current_thread()))
    assert spin_until(executor, lambda: executor.rebuilds > built)
    threading.Timer(0.05, guard.trigger).start()          # from another thread
    assert spin_until(executor, lambda: guard_calls)
    assert guard_calls == [threading.current_thread()]   # run in the spinning thread
    executor.shutdown()
    node.destroy_node()


def test_one_pass_runs_every_callback_one_wait_found_ready(context):
    """``spin_ready``: one wait, then every callback it found ready, in the order one
    ``spin_once`` each runs them, in one call; a callback that creates an entity ends the pass
    (the rest is run by the next call, after the table is rebuilt, as ``spin_once`` leaves it)."""
    executor = WaitSetExecutor(context=context)
    node = Node("exec_batch", context=context)
    executor.add_node(node)
    topics = [f"/exec_test/batch{k}" for k in range(4)]
    pubs = [node.create_publisher(Int32, t, QOS) for t in topics]
    got = []
    grow = [False]

    def on(k):
        def callback(msg):
            got.append((k, msg.data))
            if grow[0] and k == 1:
                node.create_timer(10.0, lambda: None)
        return callback
    for k, t in enumerate(topics):
        node.create_subscription(Int32, t, on(k), QOS)
    assert spin_until(executor, lambda: all(p.get_subscription_count() == 1 for p in pubs))

    def publish_all(value):
        for p in pubs:
            p.publish(Int32(data=value))
        time.sleep(0.3)                             # delivered: one wait sees all four
    publish_all(7)
    waits, runs = executor.waits, executor.runs
    executor.spin_ready(timeout_sec=1.0)
    assert got == [(0, 7), (1, 7), (2, 7), (3, 7)]
    assert executor.waits == waits + 1 and executor.runs == runs + 4
    got.clear()
    grow[0] = True
    publish_all(8)
    executor.spin_ready(timeout_sec=1.0)
    assert got == [(0, 8), (1, 8)]                  # the timer made in callback 1 ends the pass
    executor.spin_ready(timeout_sec=1.0)
    assert sorted(got) == [(0, 8), (1, 8), (2, 8), (3, 8)]
    executor.shutdown()
    node.destroy_node()


def test_a_suspended_coroutine_holds_its_callback_group_as_in_rclpy(context):
    """A coroutine subscription callback awaits a service answered by the same executor (the
    service in a group of its own, as rclpy requires); a plain callback of the coroutine's
    group that becomes ready meanwhile runs only after the coroutine ended."""
    executor = WaitSetExecutor(context=context)
    node = Node("exec_async", context=context)
    executor.add_node(node)
    events = []
    node.create_service(Trigger, "/exec_test/answer", lambda req, res: events.append("served") or
                        setattr(res, "message", "42") or res, callback_group=MutuallyExclusiveCallbackGroup())
    client = node.create_client(Trigger, "/exec_test/answer", callback_group=MutuallyExclusiveCallbackGroup())
    ask_pub = node.create_publisher(Int32, "/exec_test/ask", QOS)
    note_pub = node.create_publisher(Int32, "/exec_test/note", QOS)

    async def ask(msg):
        events.append("asked")
        answer = await client.call_async(Trigger.Request())
        events.append(f"answer {answer.message}")
    node.create_subscription(Int32, "/exec_test/ask", ask, QOS)          # the node's default group
    node.create_subscription(Int32, "/exec_test/note", lambda m: events.append("note"), QOS)
    assert spin_until(executor, lambda: client.service_is_ready() and ask_pub.get_subscription_count()
                      and note_pub.get_subscription_count())
    ask_pub.publish(Int32(data=7))
    assert spin_until(executor, lambda: "asked" in events)
    note_pub.publish(Int32(data=1))
    assert spin_until(executor, lambda: "note" in events)
    assert events == ["asked", "served", "answer 42", "note"]
    executor.shutdown()
    node.destroy_node()


def test_shutdown_from_another_thread_ends_the_spin_and_lets_go_of_the_handles(context):
    executor = WaitSetExecutor(context=context)
    node = Node("exec_stop", context=context)
    ticks = []
    node.create_timer(0.001, lambda: ticks.append(1))
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    end = time.monotonic() + 10.0
    while len(ticks) < 20 and time.monotonic() < end:
        time.sleep(0.01)
    assert len(ticks) >= 20
    assert executor.shutdown(timeout_sec=5.0)
    thread.join(timeout=5.0)
    assert not thread.is_alive()
    assert executor._held is None
    node.destroy_node()          # the timer's handle was let go: destroyed now, no error


def test_services_and_waitables_wait_on_a_slower_beat_and_no_message_is_lost(context):
    """With ``service_period`` 50 ms a 1 ms timer publishing a sequence and its subscriber run
    in every wait, the node's services and QoS-event waitables in about one wait per period:
    every message arrives, in order, and a service call made meanwhile is answered."""
    executor = WaitSetExecutor(context=context, service_period=0.05)
    a, b, pub, got = _echo_pair(context, executor)
    b.create_service(Trigger, "/exec_test/slow", lambda req, res: setattr(res, "success", True) or res)
    client = a.create_client(Trigger, "/exec_test/slow")
    assert spin_until(executor, lambda: pub.get_subscription_count() and client.service_is_ready())
    seq = []
    a.create_timer(0.001, lambda: pub.publish(Int32(data=len(seq))) or seq.append(len(seq)))
    assert spin_until(executor, lambda: len(seq) >= 50)
    waits, slow, entities = executor.waits, executor.slow_waits, executor.entities
    future = client.call_async(Trigger.Request())
    assert spin_until(executor, lambda: len(seq) >= 1000, timeout=30.0)
    executor.spin_until_future_complete(future, timeout_sec=10.0)
    assert future.done() and future.result().success
    n = len(seq)
    assert spin_until(executor, lambda: len(got) >= n)
    assert got == [2 * k for k in range(len(got))]          # every message, in order, echoed
    waits, slow, entities = executor.waits - waits, executor.slow_waits - slow, executor.entities - entities
    services = len(executor._services) + len(executor._waitables)
    assert services >= 13 and waits > 900                  # each node's parameter services, its events
    assert slow < waits / 10                                # the slower beat: few waits have them
    # the handles added per wait: the subscriptions, timer and guards, and the others only in `slow` of them
    assert entities == waits * (len(executor._subs) + len(executor._timers) + len(executor._guards)
                                + len(executor._clients)) + slow * services
    executor.shutdown()
    a.destroy_node()
    b.destroy_node()


def test_an_idle_executor_still_answers_a_service_within_its_period(context):
    """Nothing but a service on the executor (no timer, no message): the waits without the
    service end by the period's end, so a request from another executor is answered."""
    executor = WaitSetExecutor(context=context, service_period=0.02)
    server = Node("exec_idle", context=context)
    server.create_service(Trigger, "/exec_test/idle", lambda req, res: setattr(res, "success", True) or res)
    executor.add_node(server)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    asker = Node("exec_asker", context=context)
    other = SingleThreadedExecutor(context=context)
    other.add_node(asker)
    client = asker.create_client(Trigger, "/exec_test/idle")
    try:
        assert spin_until(other, client.service_is_ready)
        time.sleep(0.1)                                    # the executor back in a wait without it
        for _ in range(3):
            future = client.call_async(Trigger.Request())
            other.spin_until_future_complete(future, timeout_sec=5.0)
            assert future.done() and future.result().success
        assert executor.slow_waits >= 3 and executor.waits > executor.slow_waits
    finally:
        other.shutdown()
        assert executor.shutdown(timeout_sec=5.0)
        thread.join(timeout=5.0)
        asker.destroy_node()
        server.destroy_node()


def test_a_negative_service_period_is_refused(context):
    with pytest.raises(ValueError, match="service_period"):
        WaitSetExecutor(context=context, service_period=-1.0)


def _set_damage(client_node, executor, text):
    client = client_node.create_client(SetParameters, "/morphology_manager/set_parameters")
    assert spin_until(executor, client.service_is_ready, timeout=20.0)
    value = ParameterMsg(name="damage")
    value.value.type = ParameterType.PARAMETER_STRING
    value.value.string_value = text
    future = client.call_async(SetParameters.Request(parameters=[value]))
    executor.spin_until_future_complete(future, timeout_sec=20.0)
    return future.result()


def test_the_graph_at_1khz_answers_parameter_services_while_the_controller_runs():
    """The controller on its 1 kHz timer and a stand-in robot at 1 kHz, on the graph's executor
    (the package's), its thread under SCHED_FIFO 10 (``thread_priority``): a peer's node reads
    a parameter and sets a damage event by parameter service while the control loop runs; the
    controller reassembles for it, its cycles go on and its diagnostics keep coming, with the
    priority its thread runs at (or, where the process may not use SCHED_FIFO, the refusal)."""
    g = Graph("jethexa", params={"whole_body_controller": {"trigger": "timer", "update_rate": 1000.0,
                                                           "diagnostics_period": 0.1, "thread_priority": 10},
                                 "morphology_manager": {"auto_detect": False}})
    ctx = Context()
    rclpy.init(context=ctx)
    peer = Node("exec_peer", context=ctx)
    peer_exec = SingleThreadedExecutor(context=ctx)
    peer_exec.add_node(peer)
    diag = []
    from diagnostic_msgs.msg import DiagnosticArray
    peer.create_subscription(DiagnosticArray, "/diagnostics",
                             lambda m: diag.extend(s for s in m.status if s.name.endswith("whole_body_controller")),
                             QOS)
    commands = []
    peer.create_subscription(Float64MultiArray, "/effort_controller/commands", lambda m: commands.append(m.data),
                             QoSProfile(depth=1))
    try:
        assert isinstance(g.executor, WaitSetExecutor)
        ctrl = g.nodes["whole_body_controller"]
        g.add_node(lambda c, r: StandingSource(r, context=c, rate=1000.0, noise=0.001))
        g.start()
        assert g.spin_until(lambda: ctrl.cycles > 500 and ctrl.safe_mode is None, timeout=60.0)
        get = peer.create_client(GetParameters, "/whole_body_controller/get_parameters")
        assert spin_until(peer_exec, get.service_is_ready, timeout=20.0)
        future = get.call_async(GetParameters.Request(names=["update_rate", "trigger"]))
        peer_exec.spin_until_future_complete(future, timeout_sec=20.0)
        rate, trigger = future.result().values
        assert rate.double_value == 1000.0 and trigger.string_value == "timer"
        cycles = ctrl.cycles
        result = _set_damage(peer, peer_exec, "- remove_leg: leg2")
        assert result.results[0].successful
        assert g.spin_until(lambda: ctrl.revision == 1 and ctrl.applied_at_cycle > cycles, timeout=20.0)
        n_cmd, n_diag = len(commands), len(diag)
        assert spin_until(peer_exec, lambda: len(commands) > n_cmd + 20 and len(diag) > n_diag, timeout=20.0)
        leg2 = [i for i, name in enumerate(ctrl.control.joints) if name.startswith("leg2_")]
        assert leg2 and all(commands[-1][i] == 0.0 for i in leg2)       # the new morphology commands
        assert g.spin_until(lambda: ctrl.cycles > cycles + 500, timeout=30.0) and ctrl.safe_mode is None
        assert g.error is None
        values = {kv.key: kv.value for kv in diag[-1].values}
        if ctrl.faults["thread_priority"]:          # refused: reported, the loop ran on
            assert values["thread_priority"] == "0" and values["rejected.thread_priority"] == "1"
        else:
            assert values["thread_priority"] == "10" and ctrl.cycle_priority == 10
    finally:
        peer_exec.shutdown()
        peer.destroy_node()
        rclpy.try_shutdown(context=ctx)
        g.shutdown()

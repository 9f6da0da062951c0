"""The controller's ``cpu_affinity``: the thread that runs the control cycle, and only it, is
bound to the CPUs asked for (read back from the kernel for that thread, by its id), the CPUs it
runs on are on /diagnostics; a CPU the process may not use is a fault on /diagnostics and the
loop runs on where it was; the node's process still stops on SIGINT with its thread bound."""
import os
import subprocess
import sys
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile

from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.ros.graph import Graph
from hybrid_dynamics.ros.sources import StandingSource

from process_graph import default_sigint
from test_node_shutdown import interrupt

CPUS = sorted(os.sched_getaffinity(0))
ONE_CPU = CPUS[-1]                       # a CPU this process may use
NO_SUCH_CPU = (os.cpu_count() or 1) + 64     # a CPU number the machine does not have


def _graph(trigger, cpu_affinity):
    g = Graph("jethexa", params={"whole_body_controller": {"trigger": trigger, "update_rate": 500.0,
                                                           "diagnostics_period": 0.05,
                                                           "cpu_affinity": cpu_affinity},
                                 "morphology_manager": {"auto_detect": False}})
    g.add_node(lambda c, r: StandingSource(r, context=c, rate=500.0, noise=0.001))
    return g


def _diagnostics(ctrl):
    """The controller's last /diagnostics values, as its node publishes them."""
    seen = []
    ctrl.diag_pub.publish = lambda msg, publish=ctrl.diag_pub.publish: (seen.append(msg), publish(msg))
    return seen


def _values(msg):
    return {kv.key: kv.value for kv in msg.status[0].values}


def test_the_cycle_thread_alone_runs_on_the_cpus_asked_for():
    """``trigger: timer``: the executor's thread (it runs the cycle) is bound to one CPU, the
    process's other threads keep theirs; ``trigger: thread``: the node's own loop thread is the one
    bound, not the executor's."""
    g = _graph("timer", [ONE_CPU])
    try:
        ctrl = g.nodes["whole_body_controller"]
        seen = _diagnostics(ctrl)
        g.start()
        assert g.spin_until(lambda: ctrl.cycles > 200 and ctrl.safe_mode is None and seen, timeout=60.0)
        assert os.sched_getaffinity(g._thread.native_id) == {ONE_CPU}      # the kernel's mask of that thread
        assert sorted(os.sched_getaffinity(0)) == CPUS                       # this (main) thread untouched
        assert ctrl.cycle_cpus == [ONE_CPU] and ctrl.faults["cpu_affinity"] == 0
        n = len(seen)
        assert g.spin_until(lambda: len(seen) > n, timeout=20.0)
        assert _values(seen[-1])["cpu_affinity"] == str(ONE_CPU)
    finally:
        g.shutdown()
    g = _graph("thread", [ONE_CPU])
    try:
        ctrl = g.nodes["whole_body_controller"]
        g.start()
        assert g.spin_until(lambda: ctrl.cycles > 200 and ctrl.safe_mode is None, timeout=60.0)
        assert os.sched_getaffinity(ctrl.loop._thread.native_id) == {ONE_CPU}
        assert sorted(os.sched_getaffinity(g._thread.native_id)) == CPUS   # the executor's stays
        assert ctrl.cycle_cpus == [ONE_CPU]
    finally:
        g.shutdown()


def test_a_cpu_the_process_may_not_use_is_a_fault_and_the_loop_runs_on():
    g = _graph("timer", [NO_SUCH_CPU])
    try:
        ctrl = g.nodes["whole_body_controller"]
        seen = _diagnostics(ctrl)
        texts = []
        ctrl.fault = lambda kind, text, field="", fault=ctrl.fault: (texts.append((kind, text)), fault(kind, text, field))
        g.start()
        assert g.spin_until(lambda: ctrl.cycles > 200 and ctrl.safe_mode is None, timeout=60.0)
        cycles = ctrl.cycles
        assert g.spin_until(lambda: ctrl.cycles > cycles + 200, timeout=30.0)     # it runs on
        said = [text for kind, text in texts if kind == "cpu_affinity"]
        assert ctrl.faults["cpu_affinity"] == 1 and len(said) == 1 and f"CPUs [{NO_SUCH_CPU}]" in said[0]
        assert sorted(os.sched_getaffinity(g._thread.native_id)) == CPUS and ctrl.cycle_cpus == CPUS
        values = _values(seen[-1])
        assert values["rejected.cpu_affinity"] == "1" and values["cpu_affinity"] == ",".join(map(str, CPUS))
    finally:
        g.shutdown()


CONTROLLER = ("import sys; from hybrid_dynamics.ros.node_executables import whole_body_controller; "
              "sys.exit(whole_body_controller())")


def test_the_controller_process_with_its_cycle_thread_bound_stops_on_sigint(tmp_path):
    """``whole_body_controller`` in its own process as ``ros2 launch`` starts it, ``cpu_affinity:
    [cpu]``, cycling at 500 Hz on a stand-in robot's joint states: its diagnostics say the cycle
    runs on that CPU, exactly one of its threads (the one that runs the cycle) has that mask in
    the kernel, and SIGINT ends it with exit code 0."""
    log = tmp_path / "controller"
    cmd = [sys.executable, "-c", CONTROLLER, "--ros-args", "-r", "__node:=whole_body_controller",
           "-p", "robot:=jethexa", "-p", "update_rate:=500.0", "-p", "diagnostics_period:=0.1",
           "-p", f"cpu_affinity:=[{ONE_CPU}]"]
    rclpy.init()
    peer = Node("placement_peer")
    diag = []
    peer.create_subscription(DiagnosticArray, "/diagnostics",
                             lambda m: diag.extend(s for s in m.status if s.name.endswith("whole_body_controller")),
                             QoSProfile(depth=50))
    executor = SingleThreadedExecutor()
    executor.add_node(peer)
    robot = StandingSource(load_robot("jethexa"), rate=500.0, noise=0.001)
    executor.add_node(robot)
    proc = None
    try:
        with open(f"{log}.out", "w") as out, open(f"{log}.err", "w") as err:
            proc = subprocess.Popen(cmd, env=dict(os.environ), stdout=out, stderr=err, preexec_fn=default_sigint)
        deadline = time.monotonic() + 180.0

        def running():
            if not diag:
                return False
            v = {kv.key: kv.value for kv in diag[-1].values}
            return int(v["cycles"]) > 100 and v["safe_mode"] == "False"
        while not running() and time.monotonic() < deadline and proc.poll() is None:
            executor.spin_once(timeout_sec=0.02)
        assert running(), f"the controller never cycled: {log.with_suffix('.err').read_text()[-2000:]}"
        values = {kv.key: kv.value for kv in diag[-1].values}
        assert values["cpu_affinity"] == str(ONE_CPU) and values.get("rejected.cpu_affinity", "0") == "0"
        masks = [os.sched_getaffinity(int(tid)) for tid in os.listdir(f"/proc/{proc.pid}/task")]
        if len(CPUS) > 1:
            assert masks.count({ONE_CPU}) == 1 and set(CPUS) in [set(m) for m in masks]
        code, err_text = interrupt(proc, log)
        assert code == 0, f"exit {code} (None: still running after SIGINT)\n{err_text}"
        assert "Traceback" not in err_text, err_text
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        executor.shutdown()
        robot.destroy_node()
        peer.destroy_node()
        rclpy.try_shutdown()

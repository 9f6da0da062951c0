"""A node started as ``ros2 launch`` starts it (its own process, ``spin_node``) stops cleanly
on SIGINT whatever it is doing: exit code 0, nothing on stderr. The node here is kept busy
(a 1 kHz timer publishing, a subscription doing linear algebra on what it receives), and the
signal comes at a different moment of its cycle in each run: with rclpy's own signal
handlers, a KeyboardInterrupt or a publish on a shut-down context surfaced at whatever ran
next (the morphology manager exited 1 now and then, docs/launch.md)."""
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from hybrid_dynamics.ros.qos import SENSOR_QOS
from hybrid_dynamics.ros.stop_signal import STOP_BOUND

from process_graph import Observer, default_sigint

EXIT_BOUND = 2 * STOP_BOUND     # s of wall time a signalled node may take to exit (a bound, not a measured figure)


def start_script(script: str) -> subprocess.Popen:
    """``python -c script`` in its own process with SIGINT at its default, as ``ros2 launch``
    starts a node; stdout and stderr piped (text)."""
    return subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)


@contextmanager
def subscribed(name: str, topic: str, depth: int):
    """A node ``name`` of this process subscribed to ``topic`` (Float64MultiArray): yields the
    list its messages are appended to and the executor to spin it with."""
    rclpy.init()
    node = rclpy.create_node(name)
    got = []
    node.create_subscription(Float64MultiArray, topic, got.append, QoSProfile(depth=depth))
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        yield got, executor
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


BUSY = """
import numpy as np
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray
from hybrid_dynamics.ros.node_base import spin_node

class Busy(Node):
    def __init__(self):
        super().__init__("busy_node")
        self.pub = self.create_publisher(Float64MultiArray, "/busy/out", 10)
        self.create_subscription(Float64MultiArray, "/busy/out", self.on_msg, 10)
        self.create_timer(0.001, self.tick)
        self.x = np.random.default_rng(0).random((40, 40))
    def tick(self):
        self.x = self.x @ self.x.T + np.eye(40)
        self.x /= np.linalg.norm(self.x)
        self.pub.publish(Float64MultiArray(data=self.x[0].tolist()))
    def on_msg(self, msg):
        np.linalg.svd(self.x)

raise SystemExit(spin_node(Busy))
"""


def test_a_busy_node_stops_cleanly_on_sigint_at_any_moment():
    results = []
    with subscribed("busy_observer", "/busy/out", 10) as (got, executor):
        for delay in (0.0, 0.0037, 0.0171, 0.2):
            got.clear()
            proc = start_script(BUSY)
            deadline = time.monotonic() + 120.0
            while len(got) < 50 and time.monotonic() < deadline and proc.poll() is None:
                executor.spin_once(timeout_sec=0.05)
            assert len(got) >= 50, "the busy node never published"      # it was running when signalled
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
            results.append((delay, proc.returncode, err))
    assert all(code == 0 and err == "" for _, code, err in results), results
    assert np.isfinite(np.array(got[-1].data)).all()




def test_a_stopped_node_leaves_its_participant_to_the_process_end():
    """After SIGINT the node's publishers are destroyed (a peer sees them gone at once) but not
    its rcl node, whose ``rcl_node_fini`` deletes the process's DDS participant and hung in
    about 1 of 50 graph stops (node_base.leave_process): the process ends with exit 0 and the
    peer keeps listing the node's name (until the participant's lease ends) where before it
    dropped it with the publishers."""
    rclpy.init()
    node = rclpy.create_node("participant_observer")
    proc = start_script(BUSY)
    try:
        deadline = time.monotonic() + 120.0
        while not (node.get_publishers_info_by_topic("/busy/out") and "busy_node" in node.get_node_names()) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "busy_node" in node.get_node_names(), node.get_node_names()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=EXIT_BOUND)
        assert proc.returncode == 0 and err == "", (proc.returncode, err)
        deadline = time.monotonic() + 10.0
        while node.get_publishers_info_by_topic("/busy/out") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not node.get_publishers_info_by_topic("/busy/out"), "the publisher was not destroyed"
        listed = []
        for _ in range(30):                     # 3 s
            listed.append("busy_node" in node.get_node_names())
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
        node.destroy_node()
        rclpy.try_shutdown()
    assert all(listed), listed


STUCK = """
import time
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray
from hybrid_dynamics.ros.node_base import spin_node

def stuck_in_a_callback():
    time.sleep(3600.0)

class Stuck(Node):
    def __init__(self):
        super().__init__("stuck_node")
        self.pub = self.create_publisher(Float64MultiArray, "/stuck/out", 10)
        self.create_timer(0.01, self.tick)
        self.n = 0
    def tick(self):
        if self.pub.get_subscription_count() == 0:     # counts from the observer's match on
            return
        self.n += 1
        self.pub.publish(Float64MultiArray(data=[float(self.n)]))
        if self.n == 50:
            stuck_in_a_callback()

raise SystemExit(spin_node(Stuck))
"""


def test_a_node_stuck_when_signalled_still_ends_and_says_where():
    """A node whose callback never returns (a 1 h sleep: the main thread only sets the stop
    flag between two sleeps and never gets back to its spin loop) ends within
    ``STOP_BOUND`` of the SIGINT, exit 1, with its stack on stderr naming the callback
    (ros/stop_signal.py); before, it slept on until killed, and said nothing."""
    with subscribed("stuck_observer", "/stuck/out", 100) as (got, executor):
        proc = start_script(STUCK)
        try:
            deadline = time.monotonic() + 120.0
            while (not got or got[-1].data[0] < 50) and time.monotonic() < deadline and proc.poll() is None:
                executor.spin_once(timeout_sec=0.05)
            assert got and got[-1].data[0] == 50, "the node never reached its stuck callback"
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=STOP_BOUND + 10.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                raise AssertionError(f"still running {STOP_BOUND + 10.0} s after SIGINT:\n{err}")
        finally:
            if proc.poll() is None:             # a failed wait above: the node would sleep on for an hour
                proc.kill()
    assert proc.returncode == 1, (proc.returncode, err)
    assert "stuck_in_a_callback" in err and "tick" in err, err


SIM = "import sys; from hybrid_dynamics.ros.node_executables import mujoco_sim; sys.exit(mujoco_sim())"


def start_sim(log: Path, **params) -> subprocess.Popen:
    """``mujoco_sim`` (jethexa) through its console script's entry point, its own process as
    ``ros2 launch`` starts it; stdout and stderr to ``log``.out / .err."""
    cmd = [sys.executable, "-c", SIM, "--ros-args", "-r", "__node:=mujoco_sim"]
    for key, value in params.items():
        cmd += ["-p", f"{key}:={str(value).lower() if isinstance(value, bool) else value}"]
    with open(f"{log}.out", "w") as out, open(f"{log}.err", "w") as err:
        return subprocess.Popen(cmd, env=dict(os.environ), stdout=out, stderr=err, preexec_fn=default_sigint)


def handlers_installed(proc: subprocess.Popen) -> None:
    """Wait until ``proc`` has its stop handlers (ros/stop_signal.py; SIGUSR1 caught, which
    only they set up): the few hundred milliseconds before, the interpreter itself is starting
    and a SIGINT still meets Python's own handler."""
    deadline = time.monotonic() + 120.0
    while proc.poll() is None and time.monotonic() < deadline:
        with open(f"/proc/{proc.pid}/status") as f:
            caught = int(next(line for line in f if line.startswith("SigCgt:")).split()[1], 16)
        if caught >> (signal.SIGUSR1 - 1) & 1:
            return
        time.sleep(0.005)


def interrupt(proc: subprocess.Popen, log: Path):
    """SIGINT to a running ``proc``; (exit code, stderr), the code None if it did not exit
    within :data:`EXIT_BOUND` (then killed)."""
    assert proc.poll() is None, f"exited {proc.returncode} before the signal: {Path(f'{log}.err').read_text()}"
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=EXIT_BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = None
    return code, Path(f"{log}.err").read_text()


def test_the_plant_node_exits_cleanly_on_sigint_in_every_state(tmp_path):
    """The MuJoCo plant's process, signalled while starting (importing its module, as soon as
    its stop handlers are in place; building and settling the plant, kept long with a 2000 s
    settle), lock-step waiting for its first
    command, lock-step stepping on the commands of a stand-in controller, stepping on its
    watchdog after that controller went quiet, and in real time: exit 0 within
    :data:`EXIT_BOUND` every time, and nothing on stderr once it runs. Before the stop
    handlers went in ahead of the node's imports (ros/node_executables.py) a signal while
    importing exited -2 with a KeyboardInterrupt (or was dropped, and the node never
    stopped), and one while settling waited for the whole settle."""
    observer = Observer()
    commands = observer.node.create_publisher(Float64MultiArray, "/effort_controller/commands", 10)
    zero = Float64MultiArray(data=[0.0] * 18)
    answering = [False]                  # the stand-in controller: a command for each joint state
    received = []                        # joint-state stamps

    def on_state(msg):
        received.append(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
        if answering[0]:
            commands.publish(zero)
    observer.node.create_subscription(JointState, "/joint_states", on_state, SENSOR_QOS)
    watch = observer.watch
    results = {}

    def run(state, until, **params):
        watch.clock = -1.0
        log = tmp_path / state.replace(" ", "_")
        proc = start_sim(log, **params)
        until(proc)
        results[state] = interrupt(proc, log) + (watch.clock,)

    def clock_at(t):
        def wait(proc):
            deadline = time.monotonic() + 300.0
            while watch.clock < t and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
        return wait

    def quiet_controller(proc):
        clock_at(0.2)(proc)
        answering[0] = False
        n = len(received)
        deadline = time.monotonic() + 300.0
        while len(received) < n + 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)             # the watchdog sends the state again (one per 50 ms), no step
        assert len(set(received[n + 1:])) == 1, received[n - 2:]

    try:
        run("starting, importing", handlers_installed, lockstep=True, settle=2000.0)
        run("starting, settling", lambda _: time.sleep(8.0), lockstep=True, settle=2000.0)
        run("waiting for the first command", clock_at(0.0), lockstep=True, lockstep_timeout=60.0)
        answering[0] = True
        run("stepping on commands", clock_at(0.3), lockstep=True)
        answering[0] = True
        run("re-sending after the controller went quiet", quiet_controller, lockstep=True, lockstep_timeout=0.05)
        answering[0] = True
        run("real time", clock_at(0.3))
    finally:
        observer.close()
    print("\n" + "\n".join(f"{state}: exit {code}, clock {clock:.3f} s at the signal"
                            for state, (code, _, clock) in results.items()))
    for state, (code, err, clock) in results.items():
        assert code == 0, f"{state}: exit {code} (None: still running {EXIT_BOUND} s after SIGINT)\n{err}"
        if state.startswith("starting"):
            assert clock < 0, f"{state}: the plant had published (clock {clock}): not starting"
        elif state.startswith("re-sending"):        # only the plant's warning that it sent its state again
            lines = err.strip().splitlines()
            assert clock >= 0 and lines and all("sent again" in line for line in lines), (state, clock, err)
        else:
            assert clock >= 0 and err == "", (state, clock, err)
    assert results["re-sending after the controller went quiet"][2] > 0.2

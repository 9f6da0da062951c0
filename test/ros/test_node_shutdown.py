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

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile
from std_msgs.msg import Float64MultiArray

from process_graph import default_sigint

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
    rclpy.init()
    node = rclpy.create_node("busy_observer")
    got = []
    node.create_subscription(Float64MultiArray, "/busy/out", got.append, QoSProfile(depth=10))
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    results = []
    try:
        for delay in (0.0, 0.0037, 0.0171, 0.2):
            got.clear()
            proc = subprocess.Popen([sys.executable, "-c", BUSY], env=dict(os.environ), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
            deadline = time.monotonic() + 120.0
            while len(got) < 50 and time.monotonic() < deadline and proc.poll() is None:
                executor.spin_once(timeout_sec=0.05)
            assert len(got) >= 50, "the busy node never published"      # it was running when signalled
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
            results.append((delay, proc.returncode, err))
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    assert all(code == 0 and err == "" for _, code, err in results), results
    assert np.isfinite(np.array(got[-1].data)).all()

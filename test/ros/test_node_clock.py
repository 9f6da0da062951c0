"""``BaseNode.now`` (ros/node_base.py) reads rclpy's clock handle directly: the same value
as ``get_clock().now()``, on the wall clock and under ``use_sim_time`` (simulated time: the
value /clock set, to the nanosecond), without making rclpy's ``Time`` (``Clock.now``: about
3 us of Python a call, several calls a control cycle)."""
from rclpy.parameter import Parameter
from rclpy.time import Time

from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.ros.node_base import BaseNode


class Bare(BaseNode):
    SPEC = {}


def test_now_is_the_clocks_value_on_the_wall_clock_and_in_simulated_time(context, monkeypatch):
    node = Bare("clock_test", robot=load_robot("jethexa"), context=context)
    try:
        made = []
        clock_now = type(node.get_clock()).now
        monkeypatch.setattr(type(node.get_clock()), "now", lambda c: made.append(c) or clock_now(c))
        node.now()
        assert not made
        for _ in range(50):                         # wall clock: between two reads of rclpy's
            before = node.get_clock().now().nanoseconds * 1e-9
            now = node.now()
            after = node.get_clock().now().nanoseconds * 1e-9
            assert before <= now <= after and after - before < 1.0
        node.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, True)])
        clock = node.get_clock()
        assert clock.ros_time_is_active
        for ns in (0, 1, 1_234_567_891_011, 3_000_000_000_000_000_007):
            clock._set_ros_time_is_active(True)
            with clock.handle:
                clock.handle.set_ros_time_override(Time(nanoseconds=ns)._time_handle)
            assert node.now() == clock.now().nanoseconds * 1e-9 == ns * 1e-9
    finally:
        node.destroy_node()

"""Fixtures of the ROS tests."""
import pytest
import rclpy
from rclpy.context import Context


@pytest.fixture
def context():
    """An rclpy context of the test's own, shut down after it."""
    ctx = Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.try_shutdown(context=ctx)

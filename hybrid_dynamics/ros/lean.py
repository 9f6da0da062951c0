"""``LeanNode``: an rclpy Node that can leave out the default QoS event handlers.

rclpy gives every publisher and subscription an "incompatible QoS" event handler by default;
each is one more waitable the executor's Python code visits at every wake-up (about 60 in the
demo's graph, ~15 % of its time at 200 Hz lock-step). ``default_events=False`` drops them
(a QoS mismatch is then not logged); explicit ``event_callbacks`` are kept.
"""
from __future__ import annotations

from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node


class LeanNode(Node):
    def __init__(self, name: str, *, default_events: bool = True, **kwargs):
        self._default_events = default_events
        super().__init__(name, **kwargs)

    def create_publisher(self, *args, event_callbacks=None, **kwargs):
        if event_callbacks is None and not self._default_events:
            event_callbacks = PublisherEventCallbacks(use_default_callbacks=False)
        return super().create_publisher(*args, event_callbacks=event_callbacks, **kwargs)

    def create_subscription(self, *args, event_callbacks=None, **kwargs):
        if event_callbacks is None and not self._default_events:
            event_callbacks = SubscriptionEventCallbacks(use_default_callbacks=False)
        return super().create_subscription(*args, event_callbacks=event_callbacks, **kwargs)

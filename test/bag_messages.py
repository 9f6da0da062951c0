"""The messages of one topic of a rosbag2 bag written by the demo, deserialized with rosbags
(the tests' independent reader of what the graph recorded)."""
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore


def topic_messages(bag, topic: str) -> list:
    ts = get_typestore(Stores.ROS2_JAZZY)
    with Reader(bag) as reader:
        conns = [c for c in reader.connections if c.topic == topic]
        return [ts.deserialize_cdr(raw, c.msgtype) for c, _, raw in reader.messages(connections=conns)]

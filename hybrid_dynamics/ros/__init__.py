"""ROS 2 layer: rclpy nodes, message conversion, the one-process graph, bags (the only layer importing rclpy)."""

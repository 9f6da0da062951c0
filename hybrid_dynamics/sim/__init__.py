"""MuJoCo reference plant and scenarios: the only layer that imports mujoco."""

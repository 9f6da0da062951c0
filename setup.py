"""ament_python package: `colcon build` on a ROS 2 Jazzy install, or `pip install -e .`."""
import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "hybrid_dynamics"

# ros2 run hybrid_dynamics <node> (hybrid_dynamics/ros/node_executables.py: the stop handlers
# go in before the node's module is imported); `hybrid-dynamics` is the command line tool
NODES = ("state_estimator", "whole_body_controller", "morphology_manager", "mujoco_sim")


def tree(folder):
    """data_files entries installing ``folder`` under share/hybrid_dynamics, keeping sub-folders."""
    entries = {}
    for path in glob(os.path.join(folder, "**", "*"), recursive=True):
        if os.path.isfile(path):
            entries.setdefault(os.path.join("share", PACKAGE, os.path.dirname(path)), []).append(path)
    return sorted(entries.items())


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
        *tree("launch"),
        *tree("config"),
        *tree("robots"),
    ],
    install_requires=["setuptools", "numpy", "scipy", "pyyaml", "numba"],
    zip_safe=True,
    maintainer="hybrid_dynamics developers",
    maintainer_email="dev@hybrid-dynamics.local",
    description="Estimation and QP control of hybrid floating-base robots with changing morphology",
    license="BSD-3-Clause",
    tests_require=["pytest"],
    entry_points={
        "console_scripts": [f"{name} = hybrid_dynamics.ros.node_executables:{name}" for name in NODES]
        + ["hybrid-dynamics = hybrid_dynamics.cli:main"],
    },
)

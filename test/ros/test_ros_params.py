"""ros/params.py: one typed spec per node, the config dataclasses as the single source of the
grouped settings; a real node declares every parameter with its descriptor, and rclpy refuses
a value of the wrong type or out of range."""
from dataclasses import fields

import pytest
import rclpy
from rcl_interfaces.msg import ParameterType
from rclpy.context import Context
from rclpy.parameter import Parameter

from hybrid_dynamics.control.balance import WeightShift
from hybrid_dynamics.control.locomotion import LocomotionConfig
from hybrid_dynamics.estimation.base_estimator import BaseEstimatorConfig
from hybrid_dynamics.estimation.damage_detector import DamageDetectorConfig
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.ros import params as P
from hybrid_dynamics.ros.morphology_manager import MorphologyManagerNode

TYPES = {bool: ParameterType.PARAMETER_BOOL, int: ParameterType.PARAMETER_INTEGER,
         float: ParameterType.PARAMETER_DOUBLE, str: ParameterType.PARAMETER_STRING}


@pytest.mark.parametrize("node", sorted(P.NODES) + ["mujoco_sim"])
def test_every_parameter_has_type_description_and_a_range_for_numbers(node):
    spec = P.MUJOCO_SIM if node == "mujoco_sim" else P.NODES[node]
    assert len(spec) > 5
    for key, param in spec.items():
        d = param.descriptor(key)
        assert d.name == key and d.description.strip(), key
        if type(param.default) in TYPES:
            assert d.type == TYPES[type(param.default)], key
        if d.type == ParameterType.PARAMETER_DOUBLE:
            assert len(d.floating_point_range) == 1 or key.endswith("ground_height"), key
        if d.type == ParameterType.PARAMETER_INTEGER:
            assert len(d.integer_range) == 1, key


@pytest.mark.parametrize("prefix, cls, node", [("locomotion", LocomotionConfig, "whole_body_controller"),
                                               ("weight_shift", WeightShift, "whole_body_controller"),
                                               ("estimator", BaseEstimatorConfig, "state_estimator"),
                                               ("damage_detector", DamageDetectorConfig, "whole_body_controller")])
def test_groups_are_the_config_dataclasses_field_for_field(prefix, cls, node):
    spec = P.NODES[node]
    group = {k[len(prefix) + 1:]: p for k, p in spec.items() if k.startswith(prefix + ".")}
    assert set(group) == {f.name for f in fields(cls)}
    for f in fields(cls):
        assert group[f.name].default == f.default
        assert group[f.name].description.startswith(f"{cls.__name__}.{f.name}")
    # the nested values build the dataclass the library takes
    assert cls(**P.nested({f"{prefix}.{k}": p.default for k, p in group.items()})[prefix]) == cls()


def test_a_node_declares_descriptors_and_rclpy_enforces_them():
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        node = MorphologyManagerNode(load_robot("jethexa"), context=ctx)
        d, = node.describe_parameters(["detect_timeout"])
        assert d.type == ParameterType.PARAMETER_DOUBLE and d.description == "s"
        assert d.floating_point_range[0].from_value == 1e-3
        assert node.set_parameters([Parameter("detect_timeout", value=7.5)])[0].successful
        assert not node.set_parameters([Parameter("detect_timeout", value=-1.0)])[0].successful
        assert not node.set_parameters([Parameter("detect_timeout", value="soon")])[0].successful
        assert node.get_parameter("detect_timeout").value == 7.5
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)

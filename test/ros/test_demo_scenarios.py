"""Every shipped scenario runs through the one-process ROS 2 graph (``hybrid-dynamics demo``
without ``--library``): its settings map onto parameters the nodes declare. A scenario the
library loop takes but the graph refuses fails at start-up, in front of the user (a
``controller: solver_settings`` entry did: the graph takes only ``solver``)."""
import pytest

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.ros import params as P
from hybrid_dynamics.ros.scenario import GraphRun
from hybrid_dynamics.sim.scenario import available, load_scenario


@pytest.mark.parametrize("name", available())
def test_every_shipped_scenario_maps_onto_the_graphs_declared_parameters(name, tmp_path):
    run = GraphRun(load_scenario(name), tmp_path)
    node_params = run._params()
    assert set(node_params) == set(P.NODES)
    for node, values in node_params.items():
        undeclared = set(values) - set(P.NODES[node]) - {"use_sim_time"}      # rclpy's own
        assert not undeclared, (name, node, sorted(undeclared))
    sim = {p.name for p in run._sim_params()}
    assert sim and sim <= set(P.MUJOCO_SIM), (name, sorted(sim - set(P.MUJOCO_SIM)))


def test_a_controller_setting_the_graph_does_not_take_is_refused_naming_it(tmp_path):
    sc = load_scenario("hexapod_locked_joint")
    sc.controller = {**sc.controller, "solver_settings": {"max_iter": 10000}}
    with pytest.raises(Exception, match="solver_settings"):
        GraphRun(sc, tmp_path)._params()


def test_a_scenarios_estimator_settings_reach_both_filters_of_the_graph(tmp_path):
    """The library loop's one base filter and the graph's two (the controller's own, the state
    estimator's that feeds the damage detector) run with the scenario's ``estimator:``."""
    sc = load_scenario("jethexa_soft_damage")
    assert sc.estimator
    params = GraphRun(sc, tmp_path)._params()
    for node in ("state_estimator", "whole_body_controller"):
        for key, value in sc.estimator.items():
            assert params[node][f"estimator.{key}"] == value, (node, key)


def test_an_unknown_estimator_setting_is_refused_naming_file_and_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("robot: jethexa_soft\nestimator: {velocity_nois: 0.5}\n")
    with pytest.raises(InputError, match="velocity_nois") as err:
        load_scenario(str(path))
    assert "bad.yaml" in str(err.value) and "estimator" in str(err.value)


def test_a_scenarios_fall_monitor_settings_reach_the_detector_of_both_runners(tmp_path):
    """``fall_monitor:`` goes to the fall monitor of the detector in the controller's cycle: the
    library loop's, and the graph's (the controller's parameters); a misspelt key is refused
    naming the file and the field."""
    from hybrid_dynamics.sim.runner import ScenarioRun
    sc = load_scenario("jethexa_soft_damage")
    assert sc.fall_monitor == {"samples": 3}
    params = GraphRun(sc, tmp_path)._params()
    assert params["whole_body_controller"]["fall_monitor.samples"] == 3
    sc.controller = {"soft": {"machine_code": False}}             # no C compile in the test
    run = ScenarioRun(sc, tmp_path / "lib", bag=False, plots=False, progress=False, undeclared=True)
    run._build()
    assert run.detection.fall_monitor.config.samples == 3
    path = tmp_path / "bad.yaml"
    path.write_text("robot: jethexa_soft\nfall_monitor: {sample: 3}\n")
    with pytest.raises(InputError, match="sample") as err:
        load_scenario(str(path))
    assert "bad.yaml" in str(err.value) and "fall_monitor" in str(err.value)

"""A hexapod left with three legs stands stably on them (the end-to-end issue: "walks with 4
or 5 legs and stands stably on 3"), in MuJoCo under the QP controller."""
from hybrid_dynamics.sim.runner import ScenarioRun
from hybrid_dynamics.sim.scenario import load_scenario


def test_stands_on_the_remaining_tripod(tmp_path):
    run = ScenarioRun(load_scenario("hexapod_three_legs"), tmp_path / "out", duration=7.0,
                      progress=False, bag=False, plots=False)
    s = run.run()
    assert s["completed"] and not s["fell"], s["stopped"]
    assert s["final_morphology"] == "leg2 removed; leg3 removed; leg6 removed"
    assert s["max_abs_roll_deg"] < 5 and s["max_abs_pitch_deg"] < 5
    # the lost tripod may be the one in stance: the body drops until the swinging feet land,
    # then stands up again on them
    assert s["min_base_height_m"] > 0.04 and s["final_base_height_m"] > 0.1
    assert abs(s["distance_after_damage_m"]) < 0.03     # it stands; no gait lifts a foot off three
    assert s["fallbacks"] == 0 and s["infeasible"] == 0

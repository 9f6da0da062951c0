"""A soft-footed robot walked in MuJoCo through the runtime Pipeline (the library loop of
``demo --library``), with every joint-state sample the plant gave recorded beside MuJoCo's
contact forces at that instant: what the soft feet's, soft shanks' and antenna's MuJoCo tests
check, and the walk every one of them asks for (:func:`assert_walked`)."""
import pytest

from hybrid_dynamics.sim.plant import Plant
from hybrid_dynamics.sim.runner import ScenarioRun
from hybrid_dynamics.sim.scenario import load_scenario


def walk_recorded(scenario: str, directory, duration: float = 3.0):
    """``(run, summary, sent)``: the scenario run ``duration`` s into ``directory`` (no bag, no
    plots, the soft kernels not compiled to C), its summary, and ``sent``: each joint-state
    sample the plant gave, with ``plant.contact_forces()`` appended."""
    sc = load_scenario(scenario)
    sc.controller = {"soft": {"machine_code": False}}          # no C compile in the test
    run = ScenarioRun(sc, directory, duration=duration, bag=False, plots=False, progress=False)
    sent = []
    read = Plant.joint_states

    def recorded(plant):
        sample = read(plant)
        sent.append(sample + (plant.contact_forces(),))
        return sample
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Plant, "joint_states", recorded)
        summary = run.run()
    return run, summary, sent


def assert_walked(summary) -> None:
    """The run completed at a walking speed, upright (roll and pitch under 5 deg), with no
    fallback and no infeasible QP (the walk's figures printed for the test's log)."""
    print({k: summary[k] for k in ("speed_before_damage_mps", "max_abs_roll_deg", "max_abs_pitch_deg",
                                   "min_base_height_m", "fallbacks", "infeasible")})
    assert summary["completed"] and not summary["fell"], summary.get("stopped")
    assert summary["fallbacks"] == 0 and summary["infeasible"] == 0
    assert 0.07 < summary["speed_before_damage_mps"] < 0.13
    assert max(summary["max_abs_roll_deg"], summary["max_abs_pitch_deg"]) < 5.0

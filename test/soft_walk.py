"""A soft-footed robot walked in MuJoCo through the runtime Pipeline (the library loop of
``demo --library``), with every joint-state sample the plant gave recorded beside MuJoCo's
contact forces at that instant: what the soft feet's and soft shanks' MuJoCo tests check."""
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

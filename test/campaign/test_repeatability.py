"""A campaign run repeats bit for bit from one process to the next (issue 14: runs are
deterministic per seed). Three processes run the same three-leg loss (legs 3, 5, 6 at 3 s,
declared) through the damage and the controller's re-assembly, and print a digest of every
command sent and of the plant's last state: the digests must be equal. With ProxQP's dense
solver as the library loop's backend they were not (the same reduced QP solved to one of two
results 7e-14 apart, depending on where its internal memory lay; docs/campaign.md, "Runs
repeat bit for bit")."""
import os
import subprocess
import sys

RUN = """
import hashlib
import numpy as np
from hybrid_dynamics.campaign.execute import REST_FRACTION, scenario_of
from hybrid_dynamics.campaign.spec import expand, load_campaign
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.sim.runner import ScenarioRun
spec = load_campaign("jethexa_tripod")
run = next(r for r in expand(spec, load_robot(spec.robot), 1.3) if r.fault.id == "leg3+leg5+leg6" and r.declared)
sim = ScenarioRun(scenario_of(spec, run), {out!r}, progress=False, bag=False, plots=False, low_fraction=REST_FRACTION)
sim.duration = 3.1
digest, after, record = hashlib.sha256(), [0], sim._record
def hook(t, cycle):
    record(t, cycle)
    if cycle.command is not None:
        digest.update(np.ascontiguousarray(cycle.command, float).tobytes())
        after[0] += t > 3.0
sim._record = hook
sim.run()
digest.update(np.concatenate([sim.plant.q(), sim.plant.v()]).tobytes())
print(type(sim.pipeline.control.controller.solver).__name__, after[0], sim.t_damage, digest.hexdigest())
"""


def test_a_damaged_run_repeats_bit_for_bit_across_processes(tmp_path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    lines = []
    for k in range(3):
        done = subprocess.run([sys.executable, "-c", RUN.format(out=str(tmp_path / f"run{k}"))], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        lines.append(done.stdout.split("\n")[-2].split())
    solver, after, t_damage, _ = lines[0]
    assert solver == "GoldfarbIdnaniSolver"                 # the backend the robot's YAML names
    assert abs(float(t_damage) - 3.0) < 1e-9 and int(after) >= 19   # the damage happened, control went on
    assert len({line[3] for line in lines}) == 1, lines

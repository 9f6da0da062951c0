"""[Feurstein 2021]'s hopper in the MuJoCo plant (independent dynamics, kinematics and integrator)
against ``hopper.simulate``: the same touchdown and lift-off, the same state after them."""
import numpy as np
import pytest

from hybrid_dynamics.hopper import experiments as ex
from hybrid_dynamics.sim.hopper_plant import MujocoHopper


@pytest.mark.parametrize("name,duration", [("prismatic_II", 0.3), ("revolute_IV", 0.3)])
def test_mujoco_plant_hops_like_the_hybrid_simulation(name, duration):
    exp = ex.EXPERIMENTS[name]
    hopper, sim = ex.make_sim(exp)
    x0, v0 = np.array(exp.x0), np.array(exp.v0)
    mj = MujocoHopper(hopper, sim.controller).run(x0, v0, duration)
    ours = sim.run(x0, v0, duration)
    td = [e.t for e in ours.events if e.kind == "touchdown"]
    lo = [e.t for e in ours.events if e.kind == "liftoff"]
    assert len(mj.touchdowns) == len(td) >= 1 and len(mj.liftoffs) == len(lo) >= 1
    assert np.abs(np.subtract(mj.touchdowns, td)).max() < 2e-4
    assert np.abs(np.subtract(mj.liftoffs, lo)).max() < 2e-3
    n = min(len(mj.t), len(ours.t))
    assert np.abs(mj.x[:n] - ours.x[:n]).max() < 5e-3 and np.ptp(ours.x[:n, 1]) > 0.05

"""Damage detection from the generalized-momentum residual.

Reference: MuJoCo's own contact forces (the observer never sees them) for the residual;
the scenario runner (estimated state, QP controller, noisy sensors) for detection latency
and for no false detection over 60 s of healthy walking."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.estimation.damage_detector import DamageDetector, DamageDetectorConfig
from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.sim.plant import Plant
from hybrid_dynamics.sim.runner import ScenarioRun
from hybrid_dynamics.sim.scenario import load_scenario


@pytest.fixture(scope="module")
def robot():
    return load_robot("jethexa")


def test_residual_equals_the_contact_forces_mujoco_applies(robot):
    """Standing on a slope-free floor, r = sum_i J_i^T f_i with f_i MuJoCo's contact forces."""
    plant = Plant(robot)
    det = DamageDetector(robot, {"threshold": 1e9})
    for k in range(2500):
        q, v = plant.q(), plant.v()
        _, _, _, effort = plant.joint_states()
        if k % 5 == 0:
            det.update(plant.time, q, v, effort)
        plant.set_torques(50.0 * (robot.q_stand[7:] - q[7:]) - 0.3 * v[6:])
        plant.step()
    m, d = robot.model, robot.model.createData()
    q = plant.q()
    pin.computeJointJacobians(m, d, q)
    pin.updateFramePlacements(m, d)
    forces = plant.contact_forces()
    expected = sum(pin.getFrameJacobian(m, d, m.getFrameId(c.frame), pin.LOCAL_WORLD_ALIGNED)[:3].T @ forces[c.frame]
                   for c in robot.contacts)
    assert np.allclose(det.r, expected, atol=0.02 * np.abs(expected).max())
    assert det.statistic < 0.05                 # the base rows agree with the legs' forces


def test_config_rejects_unknown_settings(robot):
    with pytest.raises(InputError):
        DamageDetectorConfig.from_dict({"treshold": 3})


@pytest.mark.parametrize("scenario, legs", [
    ("hexapod_damage_s1", {"leg3 lost", "leg4 lost"}),
    # stumps lose their feet while swinging, a femur locks in the air: the swing-leg joint test
    ("hexapod_damage_s2", {"leg4 lost links 2..", "leg5 lost links 2.."}),
    ("hexapod_locked_joint", {"leg1: leg1_femur_joint locked at {angle:.3f} rad"}),
])
def test_undeclared_damage_is_detected_within_half_a_second(tmp_path, scenario, legs):
    run = ScenarioRun(load_scenario(scenario), tmp_path, duration=4.5, undeclared=True,
                      progress=False, bag=False, plots=False)
    s = run.run()
    assert s["completed"] and not s["fell"], s["stopped"]
    assert s["detection_latency_s"] is not None and s["detection_latency_s"] < 0.5
    # a locked joint is reported at the angle the plant locked it at (it depends on the gait)
    angles = dict(run.true_morphology.locked)
    legs = {what.format(angle=next(iter(angles.values()), 0.0)) for what in legs}
    assert {d["what"] for d in s["detections"]} == legs
    assert s["false_detections"] == 0


@pytest.mark.slow
def test_no_false_detection_over_60_s_of_healthy_walking(tmp_path):
    """The threshold (5 N) against the statistic of 60 s of healthy walking with noisy sensors."""
    run = ScenarioRun(load_scenario("hexapod_walk"), tmp_path, duration=60.0, undeclared=True,
                      progress=False, bag=False, plots=False)
    s = run.run()
    assert s["completed"] and not s["fell"]
    assert s["detections"] == [] and s["final_morphology"] == "healthy"
    tested = np.array(run.log.statistic)
    tested = tested[np.isfinite(tested)]
    assert len(tested) > 0.5 * len(run.log.statistic)       # most cycles are tested
    assert tested.max() < 0.5 * run.detector.config.threshold

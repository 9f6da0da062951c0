"""Damage detection from the generalized-momentum residual.

Reference: MuJoCo's own contact forces (the observer never sees them) for the residual;
the scenario runner (estimated state, QP controller, noisy sensors) for detection latency
and for no false detection over 60 s of healthy walking."""
import re

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


ANGLE = re.compile(r"(-?\d+\.\d+) rad")


@pytest.mark.parametrize("scenario, legs", [
    ("hexapod_damage_s1", {"leg3 lost", "leg4 lost"}),
    # stumps lose their feet while swinging, a femur locks in the air: the swing-leg joint test
    ("hexapod_damage_s2", {"leg4 lost links 2..", "leg5 lost links 2.."}),
    ("hexapod_locked_joint", {"leg1: leg1_femur_joint locked at ANGLE rad"}),
])
def test_undeclared_damage_is_detected_within_half_a_second(tmp_path, scenario, legs):
    run = ScenarioRun(load_scenario(scenario), tmp_path, duration=4.5, undeclared=True,
                      progress=False, bag=False, plots=False)
    s = run.run()
    assert s["completed"] and not s["fell"], s["stopped"]
    assert s["detection_latency_s"] is not None and s["detection_latency_s"] < 0.5
    found = {d["what"] for d in s["detections"]}
    assert {ANGLE.sub("ANGLE rad", what) for what in found} == legs
    # a locked joint is reported at the angle the plant locked it at (it depends on the gait),
    # as its encoder reads it (noise 0.2 mrad; printed to 1 mrad)
    locked = [angle for _, angle in run.true_morphology.locked]
    reported = [float(a) for what in found for a in ANGLE.findall(what)]
    assert len(reported) == len(locked) and all(abs(a - b) < 2e-3 for a, b in zip(reported, locked)), (found, locked)
    assert s["false_detections"] == 0


@pytest.mark.slow
def test_no_false_detection_over_60_s_of_healthy_walking(tmp_path):
    """The threshold (5 N) against the statistic of 60 s of healthy walking with noisy sensors
    (the campaign's), and the fall monitor's threshold against the IMU's vertical specific force."""
    run = ScenarioRun(load_scenario("hexapod_walk"), tmp_path, duration=60.0, undeclared=True,
                      progress=False, bag=False, plots=False)
    s = run.run()
    assert s["completed"] and not s["fell"]
    assert s["detections"] == [] and s["final_morphology"] == "healthy"
    tested = np.array(run.log.statistic)
    tested = tested[np.isfinite(tested)]
    assert len(tested) > 0.5 * len(run.log.statistic)       # most cycles are tested
    assert tested.max() < 0.5 * run.detector.config.threshold
    # the IMU never says the body falls (its vertical specific force stays near g: 9.46 m/s^2
    # at the lowest over this walk, against the 7.36 that would start the falling rules)
    monitor = run.fall_monitor
    assert monitor.first is None and run.detector.falling_calls == 0
    assert monitor.config.drop_fraction * 9.81 + 1.5 < monitor.lowest < 9.81


def _standing_run(robot, det, skip=(), seconds=2.5):
    """A PD-held standing plant swaying (joint targets on a 2 Hz sine from 1 s on),
    the detector called every 5 ms except within ``skip`` (a late or dropped message)."""
    plant = Plant(robot)
    stats = []
    for k in range(int(seconds / plant.timestep)):
        q, v = plant.q(), plant.v()
        _, _, _, effort = plant.joint_states()
        t = plant.time
        if k % 5 == 0 and not (skip and skip[0] <= t < skip[1]):
            det.update(t, q, v, effort)
            stats.append((t, det.statistic, det.testing))
        target = robot.q_stand[7:] + (0.03 * np.sin(4 * np.pi * (t - 1.0)) if t >= 1.0 else 0.0)
        plant.set_torques(50.0 * (target - q[7:]) - 0.3 * v[6:])
        plant.step()
    return np.array(stats)


def test_an_interval_longer_than_max_gap_is_held_not_integrated(robot):
    """A 200 ms hole in the calls while the torques change: integrated as if the last torque
    had held (max_gap infinite), the residual jumps past the threshold; held over, it is the
    residual of the run without the hole (the reference), and nothing is decided for
    ``resync`` after it."""
    hole = (1.40, 1.60)
    reference = _standing_run(robot, DamageDetector(robot), seconds=1.75)
    naive = _standing_run(robot, DamageDetector(robot, {"max_gap": 1e9}), skip=hole, seconds=1.75)
    det = DamageDetector(robot)
    held = _standing_run(robot, det, skip=hole, seconds=1.75)
    after = lambda s: s[s[:, 0] >= hole[1], 1]          # noqa: E731
    assert after(naive).max() > det.config.threshold > 2 * after(reference).max()
    assert abs(after(held).max() - after(reference).max()) < 0.05 * after(reference).max()
    assert det.gaps == 1 and det.detections == []
    resync = (held[:, 0] >= hole[1]) & (held[:, 0] < hole[1] + det.config.resync - 0.01)
    assert resync.any() and not held[resync, 2].any()


def test_nothing_is_decided_before_the_startup_grace_and_convergence(robot):
    det = DamageDetector(robot)
    stats = _standing_run(robot, det, seconds=1.6)
    early = stats[:, 0] < det.config.startup_grace
    assert early.any() and not stats[early, 2].any()
    assert stats[~early, 2].any() and det.converged


def test_a_detection_carries_its_evidence(tmp_path):
    run = ScenarioRun(load_scenario("hexapod_damage_s1"), tmp_path, duration=4.0, undeclared=True,
                      progress=False, bag=False, plots=False)
    run.run()
    found = run.detector.detections
    assert {d.leg for d in found} == {"leg3", "leg4"}
    for d in found:
        e = d.evidence()
        # a body falling at the loss (the IMU, estimation/fall_monitor.py) is judged on the
        # falling_* settings
        cfg = run.detector.config.falling() if e["falling"] else run.detector.config
        assert e["test"] in ("base wrench |e|", "swing-leg joint residual")
        assert e["threshold"] == (cfg.threshold if e["test"] == "base wrench |e|" else cfg.swing_threshold)
        assert e["residual"] > e["threshold"] and e["samples"] >= cfg.min_samples
        assert e["above_for_s"] >= cfg.persistence - 1e-9 and e["onset"] >= 3.0


class _NoStopRule(DamageDetector):
    """The detector without its stop rule: a joint on its stop counts as a frozen joint."""

    def _at_stop(self, leg_name, k):
        return False


LOCK_AT = -1.0       # rad, leg 1's femur on its way up (standing: -0.25, stop: -1.6)


def _femur_pushed_in_swing(robot, det, locked=False, push=0.2, seconds=2.0):
    """A PD-held standing plant whose leg 1 is in planned swing from 1 s on (its tibia
    swinging on a 2 Hz sine), its femur
    pushed by a constant -``push`` N m towards its lower stop (-1.6 rad; MuJoCo's joint range
    stops it there) or, ``locked``, locked by the plant where it stands once its femur has
    swung up past ``LOCK_AT`` (the foot in the air); the
    detector called every 5 ms until its first detection. Returns the times of those calls,
    leg 1's femur angle and its residual at each."""
    plant = Plant(robot)
    frames = [c.frame for c in robot.contacts]
    rows = []
    for k in range(int(seconds / plant.timestep)):
        q, v = plant.q(), plant.v()
        _, _, _, effort = plant.joint_states()
        t = plant.time
        lifted = t >= 1.0
        if lifted and locked and q[8] < LOCK_AT and not plant.locked_joints:
            plant.lock_joint("leg1_femur_joint")
        if k % 5 == 0 and not det.detections:
            det.update(t, q, v, effort, {f: not (lifted and f == "leg1_foot") for f in frames})
            rows.append((t, q[8], det.r[1 + 6]))
        target = robot.q_stand[7:].copy()
        if lifted:        # the tibia swings as in a step
            target[2] += 0.3 * np.sin(4 * np.pi * (t - 1.0))
        tau = 50.0 * (target - q[7:]) - 0.3 * v[6:]
        if lifted:
            tau[1] = -push
        plant.set_torques(tau)
        plant.step()
    return np.array(rows).T


def test_a_swing_joint_resting_on_its_stop_is_not_convicted_a_locked_one_is(robot):
    """A joint held by its stop is still and takes a constraint torque, as a locked joint
    does (the campaign's legs 1+4 lost at phase 1: leg 2's femur, pushed into its stop by
    the ground in swing, was convicted as locked and the robot fell). Leg 1's femur pushed
    into its stop in swing: its residual stays above the swing test's threshold and the joint
    still (so the test without its stop rule convicts leg 1), and the detector convicts
    nothing; the same push on the femur locked where it stands is convicted, at its angle."""
    lower = robot.model.lowerPositionLimit[8]
    cfg = DamageDetectorConfig()
    det = DamageDetector(robot)
    t, angles, residuals = _femur_pushed_in_swing(robot, det)
    angles, residuals = angles[t >= 1.5], residuals[t >= 1.5]      # the femur has reached its stop
    assert np.all(np.abs(angles - lower) < cfg.stop_margin)               # resting on the stop
    assert np.all(np.abs(residuals) > 5 * cfg.swing_threshold)           # its constraint torque
    assert det.testing and det.detections == []
    without = _NoStopRule(robot)
    _femur_pushed_in_swing(robot, without)
    assert [(d.leg, d.joint) for d in without.detections] == [("leg1", "leg1_femur_joint")]
    locked = DamageDetector(robot)
    t, angles, _ = _femur_pushed_in_swing(robot, locked, locked=True)
    held = angles[t >= locked.detections[0].onset]
    assert np.all(np.abs(held - LOCK_AT) < 0.05) and np.ptp(held) < 2e-3
    assert [(d.leg, d.kind, d.joint) for d in locked.detections] == [("leg1", "locked", "leg1_femur_joint")]
    assert abs(locked.detections[0].angle - held[-1]) < 2e-3

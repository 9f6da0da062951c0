"""Floating-base and contact-state estimation against ground truth: synthetic jethexa
trajectories built with Pinocchio forward kinematics (feet pinned by per-leg IK), IMU and
encoder readings derived from them, noise added."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.estimation.base_estimator import BaseEstimator, ImuSample
from hybrid_dynamics.estimation.contact_state import ContactForceEstimator, ContactStateEstimator
from hybrid_dynamics.model.robot import load_robot

DT = 0.002


@pytest.fixture(scope="module")
def robot():
    return load_robot("jethexa")


def stand_pose(robot):
    """q_stand lifted so the lowest foot touches z = 0 (its frame, a sphere's centre, at the
    sphere's radius, robot.yaml ``radius``)."""
    q = robot.q_stand.copy()
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    q[2] -= min(data.oMf[robot.model.getFrameId(c.frame)].translation[2] - c.radius for c in robot.contacts)
    return q


def leg_ik(robot, data, q, leg, target, iters=20):
    """Joint angles of ``leg`` putting its foot at ``target`` (world), the base fixed in q."""
    model = robot.model
    fid = model.getFrameId(leg.contact_frame)
    cols = [model.joints[j].idx_v for j in leg.joints]
    rows = [model.joints[j].idx_q for j in leg.joints]
    for _ in range(iters):
        pin.framesForwardKinematics(model, data, q)
        err = target - data.oMf[fid].translation
        if np.linalg.norm(err) < 1e-10:
            break
        J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[:3, cols]
        q[rows] += np.linalg.lstsq(J, err, rcond=None)[0]
    return q


def trajectory(robot, seconds=2.0, swing_group=None):
    """Ground-truth samples: base sways and rolls; feet pinned, or a gait group swinging."""
    model = robot.model
    data = model.createData()
    q0 = stand_pose(robot)
    pin.framesForwardKinematics(model, data, q0)
    feet0 = {c.frame: data.oMf[model.getFrameId(c.frame)].translation.copy() for c in robot.contacts}
    swing_frames = set()
    if swing_group is not None:
        swing_frames = {l.contact_frame for l in robot.legs if l.name in robot.gait_groups[swing_group]}
    n = int(seconds / DT)
    ts = np.arange(n + 2) * DT
    w = 2 * np.pi * 0.8
    amp = np.array([0.02, 0.015, 0.01])
    P = q0[:3] + np.outer(np.sin(w * ts), amp)
    A = -w * w * np.outer(np.sin(w * ts), amp)
    Vw = w * np.outer(np.cos(w * ts), amp)
    qs = []
    q = q0.copy()
    for k, t in enumerate(ts):
        rpy = np.array([0.05 * np.sin(w * t), 0.04 * np.sin(1.3 * w * t), 0.1 * np.sin(0.5 * w * t)])
        q[:3] = P[k]
        q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(rpy)).coeffs()
        for leg in robot.legs:
            target = feet0[leg.contact_frame].copy()
            if leg.contact_frame in swing_frames:
                target[2] += 0.03 * (1 - np.cos(2 * w * t)) / 2
                target[0] += 0.02 * np.sin(2 * w * t)
            q = leg_ik(robot, data, q, leg, target)
        qs.append(q.copy())
    samples = []
    for k in range(1, n + 1):
        q = qs[k]
        v = pin.difference(model, qs[k - 1], qs[k + 1]) / (2 * DT)
        R = pin.Quaternion(q[3:7]).toRotationMatrix()
        acc = R.T @ (A[k] - np.array([0, 0, -9.81]))
        stance = {c.frame: c.frame not in swing_frames for c in robot.contacts}
        samples.append((ts[k], q, v, Vw[k], acc, stance))
    return samples


def run(robot, samples, rng, noise=True):
    est = BaseEstimator(robot)
    errs_p, errs_v = [], []
    for t, q, v, vw, acc, stance in samples:
        qj = q[7:] + (rng.normal(0, 1e-3, len(q) - 7) if noise else 0)
        vj = v[6:] + (rng.normal(0, 2e-2, len(v) - 6) if noise else 0)
        quat = pin.Quaternion(q[3:7])
        if noise:
            quat = pin.Quaternion(quat.toRotationMatrix() @ pin.exp3(rng.normal(0, 3e-3, 3)))
        imu = ImuSample(quat.coeffs().copy(), v[3:6] + (rng.normal(0, 1e-2, 3) if noise else 0),
                        acc + (rng.normal(0, 0.1, 3) if noise else 0))
        s = est.update(t, qj, vj, imu, stance)
        assert np.all(np.isfinite(s.q)) and np.all(np.isfinite(s.v))
        R = pin.Quaternion(s.q[3:7]).toRotationMatrix()
        errs_p.append(s.q[:3] - q[:3])
        errs_v.append(R @ s.v[:3] - vw)
    return np.array(errs_p), np.array(errs_v)


def test_standing_sway_tracks_position_and_velocity(robot):
    samples = trajectory(robot, seconds=1.5)
    ep, ev = run(robot, samples, np.random.default_rng(0))
    assert np.max(np.abs(ep)) < 0.01                 # 1 cm over the run (heights observed)
    assert np.sqrt(np.mean(ev[50:] ** 2)) < 0.03     # m/s RMS after the first 0.1 s
    exact_p, exact_v = run(robot, samples, None, noise=False)
    assert np.max(np.abs(exact_p)) < 2e-3
    assert np.max(np.abs(exact_v[50:])) < 0.01


def test_swinging_legs_are_ignored(robot):
    samples = trajectory(robot, seconds=1.5, swing_group=1)
    ep, ev = run(robot, samples, np.random.default_rng(1))
    assert np.max(np.abs(ep)) < 0.01
    assert np.sqrt(np.mean(ev[50:] ** 2)) < 0.03
    # the same run telling the filter every foot is in stance is visibly worse
    lying = [(t, q, v, vw, acc, {f: True for f in stance}) for t, q, v, vw, acc, stance in samples]
    _, ev_bad = run(robot, lying, np.random.default_rng(1))
    assert np.sqrt(np.mean(ev_bad[50:] ** 2)) > 2 * np.sqrt(np.mean(ev[50:] ** 2))


def test_removed_contacts_are_not_measured(robot):
    samples = trajectory(robot, seconds=0.6)
    est = BaseEstimator(robot)
    est.set_active_contacts([c.frame for c in robot.contacts if c.leg != "leg1"])
    est_ref = BaseEstimator(robot)
    for t, q, v, vw, acc, stance in samples:
        # leg1 reports garbage angles: the estimate must not care
        qj = q[7:].copy()
        qj[0:3] = [1.0, -1.0, 0.5]
        imu = ImuSample(q[3:7], v[3:6], acc)
        s = est.update(t, qj, v[6:], imu, stance)
        s_ref = est_ref.update(t, q[7:], v[6:], imu, stance)
    assert np.linalg.norm(s.q[:3] - q[:3]) < 5e-3
    assert np.linalg.norm(s_ref.q[:3] - q[:3]) < 5e-3


def test_imu_mounted_rotated_is_accounted_for(robot):
    """The IMU frame's fixed rotation in the base is applied (jethexa: imu_link)."""
    est = BaseEstimator(robot)
    assert est.R_bi.shape == (3, 3)
    assert np.allclose(est.R_bi @ est.R_bi.T, np.eye(3))


def test_contact_forces_from_efforts_match_pinocchio(robot):
    model = robot.model
    data = model.createData()
    q = stand_pose(robot)
    v = np.zeros(model.nv)
    f_true = {c.frame: np.array([0.5 * i, -0.3 * i, 10.0 + i]) for i, c in enumerate(robot.contacts)}
    pin.computeJointJacobians(model, data, q)
    pin.updateFramePlacements(model, data)
    h = pin.rnea(model, data, q, v, np.zeros(model.nv))
    gen = h.copy()
    for frame, f in f_true.items():
        J = pin.getFrameJacobian(model, data, model.getFrameId(frame), pin.LOCAL_WORLD_ALIGNED)[:3]
        gen -= J.T @ f
    tau = gen[6:]
    est = ContactForceEstimator(robot).forces(q, v, tau)
    for frame, f in f_true.items():
        assert np.allclose(est[frame], f, atol=1e-6), frame


def test_contact_state_hysteresis_and_sources(robot):
    cs = ContactStateEstimator(robot, {"force_on": 8, "force_off": 3})
    frame = robot.contacts[0].frame
    assert cs.update(forces_z={frame: 5.0})[frame] is True        # between: stays on
    assert cs.update(forces_z={frame: 2.0})[frame] is False
    assert cs.update(forces_z={frame: 5.0})[frame] is False       # between: stays off
    assert cs.update(forces_z={frame: 9.0})[frame] is True
    assert cs.source == "force"
    assert cs.update(heights={frame: 0.05})[frame] is False
    assert cs.update(heights={frame: 0.015})[frame] is False
    assert cs.update(heights={frame: 0.005})[frame] is True
    assert cs.update(schedule={frame: False})[frame] is False
    assert cs.source == "schedule"
    assert cs.update(forces_z={frame: float("nan")})[frame] is False   # NaN ignored


def test_bad_config_is_an_input_error(robot):
    from hybrid_dynamics.errors import InputError
    with pytest.raises(InputError, match="unknown base estimator"):
        BaseEstimator(robot, {"bogus": 1})
    with pytest.raises(InputError, match="contact mode"):
        ContactStateEstimator(robot, {"mode": "psychic"})


def test_estimate_feet_are_the_frames_at_the_estimated_configuration(robot):
    """``BaseState.feet`` is what the gait planner takes for the measured feet (it no longer
    runs its own forward kinematics): Pinocchio's frame placements at the estimate's ``q``,
    on a swinging, rolling trajectory (so base position, orientation and legs all vary)."""
    samples = trajectory(robot, seconds=0.3, swing_group=1)
    est = BaseEstimator(robot)
    data = robot.model.createData()
    rng = np.random.default_rng(3)
    worst, spread = 0.0, 0.0
    for t, q, v, vw, acc, stance in samples:
        imu = ImuSample(q[3:7].copy(), v[3:6], acc)
        s = est.update(t, q[7:] + rng.normal(0, 1e-3, len(q) - 7), v[6:], imu, stance)
        pin.framesForwardKinematics(robot.model, data, s.q)
        assert set(s.feet) == {c.frame for c in robot.contacts}
        for c in robot.contacts:
            ref = data.oMf[robot.model.getFrameId(c.frame)].translation
            worst = max(worst, float(np.abs(s.feet[c.frame] - ref).max()))
        spread = max(spread, float(np.ptp([s.feet[f][2] for f in s.feet])))
    assert spread > 0.01          # swing feet were up: the comparison saw different heights
    assert worst < 1e-12

"""The base estimator's compiled kinematics and frame conversions against Pinocchio:
estimation/foot_kinematics.py (each foot's position and velocity relative to the base) against
``updateFramePlacement`` and ``getFrameVelocity`` frame by frame, on every robot with a
floating base; estimation/base_frame.py (the quaternion conversions, Eigen's) against
``pin.Quaternion`` in every branch of the rotation -> quaternion construction."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.estimation import base_frame
from hybrid_dynamics.estimation.foot_kinematics import FootKinematics
from hybrid_dynamics.model.robot import load_robot


def pinocchio_feet(model, frame_ids, qj, vj):
    data = model.createData()
    q0, v0 = pin.neutral(model), np.zeros(model.nv)
    q0[7:], v0[6:] = qj, vj
    pin.forwardKinematics(model, data, q0, v0)
    r = np.array([pin.updateFramePlacement(model, data, f).translation for f in frame_ids])
    rd = np.array([pin.getFrameVelocity(model, data, f, pin.LOCAL_WORLD_ALIGNED).linear for f in frame_ids])
    return r, rd


@pytest.mark.parametrize("robot_name", ["jethexa", "solo12", "talos", "hybrid_biped"])
def test_feet_are_pinocchios_frames(robot_name):
    robot = load_robot(robot_name)
    model = robot.model
    ids = [model.getFrameId(c.frame) for c in robot.contacts]
    feet = FootKinematics(model, ids)
    assert feet._J is not None            # the compiled path (Pinocchio's storage read in place)
    frame_by_frame = FootKinematics(model, ids)
    frame_by_frame._J = None              # the path for another storage layout
    rng = np.random.default_rng(11)
    nj = model.nq - 7
    lo, hi = model.lowerPositionLimit[7:], model.upperPositionLimit[7:]
    for _ in range(20):
        qj = rng.uniform(np.maximum(lo, -2.0), np.minimum(hi, 2.0))
        vj = rng.normal(0, 2.0, nj)
        r_ref, rd_ref = pinocchio_feet(model, ids, qj, vj)
        assert np.abs(rd_ref).max() > 0.1            # the feet move
        for path in (feet, frame_by_frame):
            r, rd = path(qj, vj)
            assert np.abs(r - r_ref).max() < 1e-14
            assert np.abs(rd - rd_ref).max() < 1e-13 * max(1.0, np.abs(rd_ref).max())


@pytest.mark.parametrize("robot_name, carried", [("hybrid_biped", 12), ("talos", 12)])
def test_feet_from_the_carrying_joints_are_the_whole_models(robot_name, carried, monkeypatch):
    """Only the joints on the feet's paths are computed (hybrid_biped: 12 of 44, TALOS: 12 of
    32); over the bench's walking workload the feet are, bit for bit, those of the whole model
    (the same products in the same order) and Pinocchio's frame by frame (1e-14)."""
    from hybrid_dynamics.control.tsid_peer import workloads
    from hybrid_dynamics.estimation import foot_kinematics
    robot = load_robot(robot_name)
    model = robot.model
    ids = [model.getFrameId(c.frame) for c in robot.contacts]
    feet = FootKinematics(model, ids)
    assert feet.model.njoints - 2 == carried < model.njoints - 2 and feet._J is not None
    with monkeypatch.context() as m:           # the whole model: nothing locked
        m.setattr(foot_kinematics, "carrying_model", lambda model, ids: (model, list(ids), None))
        whole = FootKinematics(model, ids)
    assert whole.model is model
    moved = 0.0
    for s in workloads.workload(robot, "walk", 300):
        qj, vj = s.q[7:], s.v[6:]
        r, rd = feet(qj, vj)
        r_whole, rd_whole = whole(qj, vj)
        np.testing.assert_array_equal(r, r_whole)
        np.testing.assert_array_equal(rd, rd_whole)
        moved = max(moved, np.abs(rd).max())
    r_ref, rd_ref = pinocchio_feet(model, ids, qj, vj)
    assert np.abs(r - r_ref).max() < 1e-14 and np.abs(rd - rd_ref).max() < 1e-13 * max(1.0, np.abs(rd_ref).max())
    assert moved > 0.01                          # the feet move relative to the base


def _rotations(rng):
    """Random rotations, and rotations that take each branch of Eigen's construction: trace
    positive, and each of the diagonal entries the largest with a negative trace."""
    out = [pin.exp3(rng.normal(0, 1.0, 3)) for _ in range(20)]
    for axis in np.eye(3):
        for angle in (np.pi - 1e-3, np.pi, 2.5):
            out.append(pin.exp3(angle * (axis + rng.normal(0, 0.05, 3))))
    return out


def test_quaternion_conversions_are_eigens():
    rng = np.random.default_rng(5)
    branches = set()
    for R_in in _rotations(rng):
        quat = pin.Quaternion(R_in)
        quat.normalize()
        ref = quat.coeffs()
        got = np.empty(4)
        base_frame.quaternion_of_rotation(R_in, got)
        assert np.abs(got - ref).max() < 1e-15
        t = np.trace(R_in)
        branches.add(-1 if t > 0 else int(np.argmax(np.diag(R_in))))
        scaled = 1.7 * ref                        # not normalised: the conversion normalises
        R = np.empty((3, 3))
        base_frame.rotation_of_quaternion(scaled, R)
        ref_R = pin.Quaternion(*scaled[[3, 0, 1, 2]]).normalized().toRotationMatrix()
        assert np.abs(R - ref_R).max() < 1e-15
    assert branches == {-1, 0, 1, 2}


def test_base_motion_is_the_imu_turned_into_the_base():
    rng = np.random.default_rng(8)
    R_bi = pin.exp3(rng.normal(0, 1.0, 3))
    gravity = np.array([0.0, 0.0, -9.81])
    for _ in range(10):
        quat = pin.Quaternion(pin.exp3(rng.normal(0, 1.0, 3))).coeffs().copy()
        w, a = rng.normal(0, 1.0, 3), rng.normal(0, 5.0, 3)
        R, w_b, a_w = np.empty((3, 3)), np.empty(3), np.empty(3)
        base_frame.base_motion(quat, w, a, R_bi, gravity, R, w_b, a_w)
        R_ref = pin.Quaternion(quat[3], quat[0], quat[1], quat[2]).normalized().toRotationMatrix() @ R_bi.T
        assert np.abs(R - R_ref).max() < 1e-15
        assert np.abs(w_b - R_bi @ w).max() < 1e-15
        assert np.abs(a_w - (R_ref @ (R_bi @ a) + gravity)).max() < 1e-14

"""Morphology change: the QP is rebuilt on the MorphologyMap, warm-started from the mapped
previous solution, and its output obeys the dynamics of the damaged robot, checked against a
Pinocchio model built independently from the URDF with the parts removed or locked."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control import References, WholeBodyController
from hybrid_dynamics.control.references import OrientationTarget, Target
from hybrid_dynamics.dynamics.reference import reference_model
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.robot import load_robot


@pytest.fixture(scope="module")
def jethexa():
    return load_robot("jethexa")


def to_reference(ref: pin.Model, mmap: MorphologyMap, q_red, v_red, dv_red):
    """Reduced vectors -> the reference model's, joints matched by name."""
    m = mmap.robot.model
    q, v, a = pin.neutral(ref), np.zeros(ref.nv), np.zeros(ref.nv)
    q[:7], v[:6], a[:6] = q_red[:7], v_red[:6], dv_red[:6]
    for name in mmap.joint_names:
        j = m.getJointId(name)
        qi = int(np.searchsorted(mmap.q_index, m.joints[j].idx_q))
        vi = int(np.searchsorted(mmap.v_index, m.joints[j].idx_v))
        jr = ref.getJointId(name)
        q[ref.joints[jr].idx_q], v[ref.joints[jr].idx_v], a[ref.joints[jr].idx_v] = q_red[qi], v_red[vi], dv_red[vi]
    return q, v, a


def check_damaged_dynamics(robot, mmap, out, q_red, v_red):
    ref = reference_model(robot, mmap.morphology)
    d = ref.createData()
    q, v, a = to_reference(ref, mmap, q_red, v_red, out.dv)
    tau_gen = pin.rnea(ref, d, q, v, a)
    pin.computeJointJacobians(ref, d, q)
    pin.updateFramePlacements(ref, d)
    ext = np.zeros(ref.nv)
    for frame, f in out.contact_forces.items():
        J = pin.getFrameJacobian(ref, d, ref.getFrameId(frame), pin.LOCAL_WORLD_ALIGNED)
        ext += J[:3].T @ f
    res = tau_gen - ext
    scale = max(1.0, np.abs(tau_gen).max())
    assert np.abs(res[:6]).max() < 1e-6 * scale
    for name, t in out.tau.items():
        assert abs(res[ref.joints[ref.getJointId(name)].idx_v] - t) < 1e-6 * scale, name


def standing(robot):
    m = robot.model
    q = robot.q_stand.copy()
    d = m.createData()
    pin.framesForwardKinematics(m, d, q)
    q[2] -= min(d.oMf[m.getFrameId(c.frame)].translation[2] for c in robot.contacts)
    pin.centerOfMass(m, d, q)
    return q, d.com[0].copy()


@pytest.mark.parametrize("solver", ["proxsuite", "osqp"])
def test_s1_legs_3_and_4_removed(jethexa, solver):
    robot = jethexa
    ctrl = WholeBodyController(robot, {"solver": solver})
    q, com = standing(robot)
    v = np.zeros(robot.nv)
    refs = References(com=Target(com), base_orientation=OrientationTarget([0, 0, 0, 1]))
    healthy = {c.frame: True for c in robot.contacts}
    for _ in range(3):
        out = ctrl.update(q, v, healthy, refs)
    assert not out.fallback and len(out.tau) == 18
    mmap = MorphologyMap(robot, Morphology.healthy(robot).remove_leg("leg3").remove_leg("leg4"))
    ctrl.set_morphology(mmap)
    # rebuilt before the next cycle: the new variables, and the mapped warm start waiting
    assert ctrl.formulation.state.n == 24 - 6 and ctrl._warm is not None
    assert set(ctrl.joint_names) == set(mmap.joint_names)
    q_red, v_red = mmap.reduce_q(q), mmap.reduce_v(v)
    refs.com = Target(com + np.array([0.0, 0.0, 0.0]))
    stance = {c.frame: True for c in mmap.contacts}
    for _ in range(3):
        out = ctrl.update(q_red, v_red, stance, refs)
        assert not out.fallback, out.status
        assert len(out.tau) == 12 and "leg3_femur_joint" not in out.tau
        assert set(out.contact_forces) == {f"leg{i}_foot" for i in (1, 2, 5, 6)}
        check_damaged_dynamics(robot, mmap, out, q_red, v_red)
    assert ctrl._warm is None                          # consumed by the first cycle
    # the four feet carry the (lighter) robot's weight
    fz = sum(f[2] for f in out.contact_forces.values())
    mass = sum(ctrl.formulation.state.model.inertias[j].mass for j in range(ctrl.formulation.state.model.njoints))
    assert abs(fz - mass * 9.81) < 0.2 * mass * 9.81
    assert ctrl.stats["fallbacks"] == 0


def test_locked_joint(jethexa):
    robot = jethexa
    ctrl = WholeBodyController(robot)
    q, com = standing(robot)
    v = np.zeros(robot.nv)
    refs = References(com=Target(com), base_orientation=OrientationTarget([0, 0, 0, 1]))
    out0 = ctrl.update(q, v, {c.frame: True for c in robot.contacts}, refs)
    femur = robot.model.joints[robot.model.getJointId("leg2_femur_joint")].idx_q
    mmap = MorphologyMap(robot, Morphology.healthy(robot).lock_joint("leg2_femur_joint", float(q[femur])))
    ctrl.set_morphology(mmap)
    q_red, v_red = mmap.reduce_q(q), mmap.reduce_v(v)
    out = ctrl.update(q_red, v_red, {c.frame: True for c in mmap.contacts}, refs)
    assert not out.fallback, out.status
    assert "leg2_femur_joint" not in out.tau and len(out.tau) == 17
    assert len(out.dv) == 23 and len(out.contact_forces) == 6
    check_damaged_dynamics(robot, mmap, out, q_red, v_red)
    # the warm start was the mapped previous solution: same surviving accelerations' size
    assert np.all(np.isfinite(out.tau_vector)) and np.all(np.isfinite(out0.tau_vector))
    # and back to healthy
    ctrl.set_morphology(None)
    out = ctrl.update(q, v, {c.frame: True for c in robot.contacts}, refs)
    assert not out.fallback and len(out.tau) == 18

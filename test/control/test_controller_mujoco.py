"""MuJoCo, an independent simulator of the same robot (jethexa.xml), against the QP.

Conventions: MuJoCo's free joint has qpos quaternion (w, x, y, z), linear velocity and
acceleration of the body origin in the *world* frame and angular ones in the body frame;
Pinocchio's base velocity is all local, so the world classical acceleration of the base origin
is ``R (dv[0:3] + w x v[0:3])``.
"""
import mujoco
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control import References, WholeBodyController
from hybrid_dynamics.control.references import OrientationTarget, Target
from hybrid_dynamics.model.robot import load_robot


@pytest.fixture(scope="module")
def setup():
    robot = load_robot("jethexa")
    mj = mujoco.MjModel.from_xml_path(str(robot.mjcf))
    return robot, mj


def to_mujoco(robot, mj, q, v):
    """Pinocchio (q, v) -> MuJoCo (qpos, qvel), joints matched by name."""
    m = robot.model
    qpos = np.zeros(mj.nq)
    qvel = np.zeros(mj.nv)
    R = pin.Quaternion(q[3:7]).matrix()
    qpos[:3] = q[:3]
    qpos[3:7] = [q[6], q[3], q[4], q[5]]
    qvel[:3] = R @ v[:3]
    qvel[3:6] = v[3:6]
    for j in range(2, m.njoints):
        jid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, m.names[j])
        qpos[mj.jnt_qposadr[jid]] = q[m.joints[j].idx_q]
        qvel[mj.jnt_dofadr[jid]] = v[m.joints[j].idx_v]
    return qpos, qvel


def mujoco_accelerations(robot, mj, qacc):
    """MuJoCo qacc -> (world linear acc of base origin, local angular acc, joint accs in
    Pinocchio order)."""
    m = robot.model
    joints = np.zeros(m.nv - 6)
    for j in range(2, m.njoints):
        jid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, m.names[j])
        joints[m.joints[j].idx_v - 6] = qacc[mj.jnt_dofadr[jid]]
    return qacc[:3], qacc[3:6], joints


def apply_torques(robot, mj, d, tau):
    for name, t in tau.items():
        d.ctrl[mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_ACTUATOR, name)] = t


def qp_base_acceleration(q, v, dv):
    R = pin.Quaternion(q[3:7]).matrix()
    return R @ (dv[:3] + np.cross(v[3:6], v[:3])), dv[3:6]


def standing_state(robot, rng, perturb=0.0):
    m = robot.model
    q = robot.q_stand.copy()
    q[7:] += perturb * rng.standard_normal(m.nq - 7)
    d = m.createData()
    pin.framesForwardKinematics(m, d, q)
    feet = [d.oMf[m.getFrameId(c.frame)].translation for c in robot.contacts]
    q[2] += 0.01 - min(f[2] for f in feet) - 1e-6     # sphere radius 10 mm, 1 um into the floor
    return q


def test_dynamics_match_mujoco_with_applied_forces(setup):
    """Contacts off in MuJoCo, the QP's contact forces applied as external forces at the
    feet, the QP's torques on the motors: MuJoCo's accelerations are the QP's (the rigid-body
    dynamics of the two models agree) for random states, stances and references."""
    robot, mj = setup
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    d = mujoco.MjData(mj)
    ctrl = WholeBodyController(robot)
    rng = np.random.default_rng(11)
    m = robot.model
    checked = 0
    for _ in range(8):
        q = standing_state(robot, rng, 0.1)
        v = 0.2 * rng.standard_normal(m.nv)
        stance = {c.frame: bool(rng.random() < 0.75) for c in robot.contacts}
        stance[robot.contacts[0].frame] = stance[robot.contacts[3].frame] = stance[robot.contacts[4].frame] = True
        pd = m.createData()
        pin.centerOfMass(m, pd, q)
        refs = References(com=Target(pd.com[0] + [0.01, 0, 0]), base_orientation=OrientationTarget([0, 0, 0, 1]))
        out = ctrl.update(q, v, stance, refs)
        assert not out.fallback
        qpos, qvel = to_mujoco(robot, mj, q, v)
        d.qpos[:], d.qvel[:] = qpos, qvel
        d.xfrc_applied[:] = 0
        apply_torques(robot, mj, d, out.tau)
        mujoco.mj_kinematics(mj, d)
        mujoco.mj_comPos(mj, d)
        pin.framesForwardKinematics(m, pd, q)
        for c in robot.contacts:
            f = out.contact_forces[c.frame]
            p = pd.oMf[m.getFrameId(c.frame)].translation
            body = mj.site_bodyid[mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_SITE, c.frame)]
            d.xfrc_applied[body, :3] += f
            d.xfrc_applied[body, 3:] += np.cross(p - d.xipos[body], f)
        mujoco.mj_forward(mj, d)
        lin, ang, joints = mujoco_accelerations(robot, mj, d.qacc)
        lin_qp, ang_qp = qp_base_acceleration(q, v, out.dv)
        scale = max(1.0, np.abs(out.dv).max())
        assert np.allclose(lin, lin_qp, atol=1e-6 * scale), (lin, lin_qp)
        assert np.allclose(ang, ang_qp, atol=1e-6 * scale), (ang, ang_qp)
        assert np.allclose(joints, out.dv[6:], atol=1e-6 * scale)
        checked += 1
    assert checked == 8


def test_one_step_with_mujoco_contacts(setup):
    """Standing on MuJoCo's floor (soft contacts, elliptic cones, the 10 mm foot spheres),
    one step with the QP torques: MuJoCo's base acceleration is the QP's within 0.3 m/s^2 (3 %
    of g) and 0.5 rad/s^2, while the QP asks for a CoM shift of about 0.5 m/s^2. The tolerance
    covers MuJoCo's contact softness (solref 2 ms, solimp 0.9-0.95: the feet sink a little,
    about 0.2 m/s^2 vertically) and the contact at the sphere bottom instead of its centre;
    without torques the error is about g."""
    robot, _ = setup
    mj = mujoco.MjModel.from_xml_path(str(robot.mjcf))
    d = mujoco.MjData(mj)
    m = robot.model
    ctrl = WholeBodyController(robot)
    rng = np.random.default_rng(5)
    q = standing_state(robot, rng)
    v = np.zeros(m.nv)
    stance = {c.frame: True for c in robot.contacts}
    pd = m.createData()
    pin.centerOfMass(m, pd, q)
    refs = References(com=Target(pd.com[0] + [0.005, 0.0025, 0.0]), base_orientation=OrientationTarget([0, 0, 0, 1]))
    out = ctrl.update(q, v, stance, refs)
    assert not out.fallback
    lin_qp, ang_qp = qp_base_acceleration(q, v, out.dv)
    assert np.linalg.norm(lin_qp) > 0.3
    qpos, qvel = to_mujoco(robot, mj, q, v)
    d.qpos[:], d.qvel[:] = qpos, qvel
    # settle the contact forces: the constraint solver warm-starts from the previous step
    apply_torques(robot, mj, d, out.tau)
    mujoco.mj_forward(mj, d)
    lin, ang, _ = mujoco_accelerations(robot, mj, d.qacc)
    assert np.linalg.norm(lin[:2] - lin_qp[:2]) < 0.05, (lin, lin_qp)     # horizontal: 0.02 seen
    assert np.linalg.norm(lin - lin_qp) < 0.3, (lin, lin_qp)
    assert np.linalg.norm(ang - ang_qp) < 0.5, (ang, ang_qp)
    d0 = mujoco.MjData(mj)
    d0.qpos[:], d0.qvel[:] = qpos, qvel
    mujoco.mj_forward(mj, d0)            # no torques: the robot falls, the check can fail
    lin0, _, _ = mujoco_accelerations(robot, mj, d0.qacc)
    assert np.linalg.norm(lin0 - lin_qp) > 1.0

"""hybrid_biped in MuJoCo (an independent simulator, loops as soft equality constraints):
the estimator fed only the actuators tracks MuJoCo's passive joints ([Mingo Hoffman 2024] Fig. 19
experiment, 10 s at 1 kHz on a fixed base) and the constrained inverse dynamics' actuator
forces reproduce the commanded accelerations."""
import mujoco
import numpy as np
import pytest

from hybrid_dynamics.dynamics.closed_chain import LoopClosureKinematics
from hybrid_dynamics.estimation.passive_state import PassiveStateEstimator
from hybrid_dynamics.model.robot import load_robot


def fixed_base_model(robot, height=1.2):
    xml = robot.mjcf.read_text()
    xml = xml.replace('<freejoint name="root"/>', "")
    xml = xml.replace('<body name="base_link" pos="0 0 0"', f'<body name="base_link" pos="0 0 {height}"', 1)
    return mujoco.MjModel.from_xml_string(xml)


@pytest.fixture(scope="module")
def setup():
    robot = load_robot("hybrid_biped")
    kin = LoopClosureKinematics(robot)
    mj = fixed_base_model(robot)
    assert mj.nq == robot.nq - 7 and mj.nu == 12
    names = [mj.joint(i).name for i in range(mj.njnt)]
    assert names == robot.joint_names
    act_dof = np.array([mj.joint(n).dofadr[0] for n in kin.actuated_joints])
    assert np.array_equal(act_dof, kin.ia - 6)
    trn = [mj.joint(int(mj.actuator_trnid[i, 0])).name for i in range(mj.nu)]
    ctrl_index = np.array([trn.index(n) for n in kin.actuated_joints])
    return robot, kin, mj, act_dof, ctrl_index


AMP = np.array([0.012, 0.01, 0.01, 0.035, 0.004, 0.004] * 2)
FREQ = np.array([0.5, 0.7, 0.6, 0.4, 0.8, 0.9, 0.45, 0.65, 0.55, 0.35, 0.75, 0.85])


def test_estimator_tracks_mujoco_passive_joints_for_10_s(setup):
    robot, kin, mj, act_dof, ctrl_index = setup
    d = mujoco.MjData(mj)
    q0 = robot.q_stand.copy()
    d.qpos[:] = q0[7:]
    mujoco.mj_forward(mj, d)
    est = PassiveStateEstimator(kin, dt=mj.opt.timestep)
    qa0 = q0[kin.qa]
    w = 2 * np.pi * FREQ
    kp, kd = 4e4, 4e2
    worst, worst_res_mj, worst_res_est, worst_act = 0.0, 0.0, 0.0, 0.0
    qfull = q0.copy()
    for k in range(10000):
        t = k * mj.opt.timestep
        qa_m, va_m = d.qpos[kin.qa - 7].copy(), d.qvel[kin.ia - 6].copy()
        e = est.update(qa_m, va_m, q_base=q0[:7])
        assert e.valid, e.message
        qfull[7:] = d.qpos
        if k % 10 == 0:
            worst = max(worst, np.max(np.abs(e.q[kin.qu] - qfull[kin.qu])))
            worst_res_mj = max(worst_res_mj, np.max(np.abs(kin.residual(qfull))))
            worst_res_est = max(worst_res_est, e.residual)
        # reference, constrained ID feed-forward on the estimate, PD on the actuators
        q_ref = qa0 + AMP * np.sin(w * t)
        v_ref = AMP * w * np.cos(w * t)
        a_ref = -AMP * w ** 2 * np.sin(w * t)
        a_cmd = a_ref + kp * (q_ref - qa_m) + kd * (v_ref - va_m)
        tau, _ = kin.inverse_dynamics(e.q, e.v, a_cmd)
        d.ctrl[ctrl_index] = tau
        worst_act = max(worst_act, np.max(np.abs(qa_m - q_ref)))
        mujoco.mj_step(mj, d)
    print(f"passive error {worst:.2e} rad, MuJoCo closure residual {worst_res_mj:.2e} m, "
          f"estimator residual {worst_res_est:.2e}, actuator tracking {worst_act:.2e} m")
    assert worst < 1e-3
    assert worst_res_mj < 1e-3 and worst_res_est < 1e-5
    assert worst_act < 2e-3


def test_id_forces_reproduce_commanded_accelerations_in_mujoco(setup):
    robot, kin, mj, act_dof, ctrl_index = setup
    d = mujoco.MjData(mj)
    rng = np.random.default_rng(4)
    q = robot.q_stand.copy()
    for trial in range(5):
        qa = q[kin.qa] + 0.3 * AMP * rng.uniform(-1, 1, 12)
        q, info = kin.close(kin.with_actuated(q, qa))
        v, _ = kin.complete(q, 0.05 * rng.normal(size=12))
        a_cmd = rng.normal(size=12)
        tau, a = kin.inverse_dynamics(q, v, a_cmd)
        d.qpos[:], d.qvel[:] = q[7:], v[6:]
        d.ctrl[ctrl_index] = tau
        mujoco.mj_forward(mj, d)
        # MuJoCo's own M, bias and constraint Jacobian with the loops held rigidly
        M = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, d, M)
        J = d.efc_J.reshape(d.nefc, mj.nv) if not mujoco.mj_isSparse(mj) else _dense_efc(mj, d)
        K = np.block([[M, J.T], [J, np.zeros((d.nefc, d.nefc))]])
        rhs = np.concatenate([d.qfrc_actuator - d.qfrc_bias, -_jdot_v(mj, d, J)])
        hard = np.linalg.lstsq(K, rhs, rcond=None)[0][:mj.nv]
        err_hard = np.abs(hard[kin.ia - 6] - a_cmd).max()
        # MuJoCo's soft loops (solimp 0.9999) leave a compliance error, J qacc = a_ref - R f:
        # the same KKT system with MuJoCo's R reproduces its qacc, so the gap is that compliance
        Ks = np.block([[M, -J.T], [J, np.diag(d.efc_R)]])
        soft = np.linalg.solve(Ks, np.concatenate([d.qfrc_actuator - d.qfrc_bias, d.efc_aref]))[:mj.nv]
        err_soft = np.abs(d.qacc[kin.ia - 6] - a_cmd).max()
        print(f"actuated acceleration error: rigid loops {err_hard:.1e}, MuJoCo soft loops {err_soft:.1e} "
              f"(compliance model reproduces MuJoCo to {np.abs(soft - d.qacc).max():.1e})")
        assert err_hard < 1e-6
        assert np.abs(soft - d.qacc).max() < 1e-6
        assert err_soft < 0.2 * max(1.0, np.abs(a_cmd).max())


def _dense_efc(mj, d):
    J = np.zeros((d.nefc, mj.nv))
    mujoco.mju_sparse2dense(J, d.efc_J, d.efc_J_rownnz, d.efc_J_rowadr, d.efc_J_colind)
    return J


def _jdot_v(mj, d, J, h=1e-7):
    """Equality-row J_dot v by central differences of MuJoCo's own Jacobian along v."""
    out = []
    for sgn in (1, -1):
        dd = mujoco.MjData(mj)
        dd.qpos[:] = d.qpos
        mujoco.mj_integratePos(mj, dd.qpos, d.qvel, sgn * h)
        dd.qvel[:] = d.qvel
        mujoco.mj_forward(mj, dd)
        Jx = dd.efc_J.reshape(dd.nefc, mj.nv) if not mujoco.mj_isSparse(mj) else _dense_efc(mj, dd)
        out.append(Jx @ d.qvel)
    return (out[0] - out[1]) / (2 * h)

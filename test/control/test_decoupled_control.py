"""The whole-body QP's tasks in decoupled coordinates [Feurstein 2021, Eq. (3.80), Sec. 3.3.4]
(control/tasks/decoupled_centroidal.py, internal_impedance.py): their rows against the
transform engine (dynamics/decoupling.py, built from crba and RNEA derivatives), Pinocchio's
ccrba/dccrba and finite differences along the motion; no joint torque in the x-rows; the same
optimum as the standard tasks when they ask the same; tracking on a short sway."""
import json

import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control.config import controller_config
from hybrid_dynamics.control.controller import WholeBodyController
from hybrid_dynamics.control.references import OrientationTarget, References, Target
from hybrid_dynamics.control.tasks.decoupled_centroidal import force_rows
from hybrid_dynamics.dynamics.decoupling import DecoupledDynamics, decoupling_inverse, external_internal
from hybrid_dynamics.dynamics.lie import rot_to_quat
from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.sim.centroidal_tracking import SWAYS, run

ROBOTS = ["jethexa", "talos"]


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request):
    return load_robot(request.param)


def _state(robot, seed):
    """Joints spread around the standing pose, a tilted base, a random twist."""
    rng = np.random.default_rng(seed)
    m = robot.model
    q = robot.q_stand.copy()
    q[7:] += 0.1 * rng.normal(size=m.nq - 7)
    q[3:7] = rot_to_quat(pin.exp3(0.2 * rng.normal(size=3)))
    return q, 0.5 * rng.normal(size=m.nv)


def _solved(robot, q, v, refs, **config):
    """A decoupled controller after one cycle at (q, v): its state, layout and QP solution."""
    ctrl = WholeBodyController(robot, {"centroidal_coordinates": "decoupled", **config})
    stance = {c.frame: True for c in robot.contacts}
    out = ctrl.update(q, v, stance, refs)
    f = ctrl.formulation
    lay = f.layout(f.stance_tuple(stance))
    f.state.update(q, v)
    return ctrl, f.state, lay, out


def _refs(robot, q):
    c = pin.centerOfMass(robot.model, robot.model.createData(), q)
    return References(com=Target(c + [0.0, 0.01, -0.005]),
                      base_orientation=OrientationTarget(rot_to_quat(pin.exp3(np.array([0.05, -0.03, 0.02])))))


def test_velocity_form_rows_are_the_engines_and_pinocchios(robot):
    """v_x, M_x, C_x v_x, G_x and T_x^{-T} of the controller's x-rows against the decoupling
    engine in the velocity form (crba, RNEA derivatives, closed-form T^{-1}) and ccrba."""
    q, v = _state(robot, 1)
    _, st, _, _ = _solved(robot, q, v, References())
    x = st.decoupled_rows
    dd = DecoupledDynamics(robot.model, form="velocity")
    d = dd.equations(q, v)
    assert np.abs(d.v_T[:6]).max() > 0.1                                  # a moving state
    assert np.allclose(x.v_x, d.v_T[:6], atol=1e-9)
    assert np.allclose(np.linalg.inv(x.M_x_inv), d.M_T[:6, :6], atol=1e-9)
    assert np.abs(d.M_T[:6, 6:]).max() < 1e-9                               # decoupled
    assert np.abs(d.C_T[:6, 6:]).max() < 1e-8 * max(1.0, np.abs(d.C_T).max())   # Hamel C_xy = 0
    C_x_v_x = st.decoupled_coriolis
    assert np.abs(C_x_v_x).max() > 1e-3                                     # not zero in this form
    assert np.allclose(C_x_v_x, d.C_T[:6] @ d.v_T, atol=1e-8 * max(1.0, np.abs(C_x_v_x).max()))
    G_x = np.zeros(6)
    G_x[:3] = -st.mass * st.gravity
    assert np.allclose(d.G_T[:6], G_x, atol=1e-9)
    assert np.allclose(x.T_x_invT, np.linalg.inv(d.T[:6, :6]).T, atol=1e-9)
    data = robot.model.createData()
    pin.ccrba(robot.model, data, q, v)
    assert np.allclose(x.v_x, np.linalg.solve(data.Ig.matrix(), data.hg.vector), atol=1e-9)


def test_x_rows_carry_no_joint_torque(robot):
    """T^{-T} [0; tau] has zero x-rows (T_yx = 0), and the centroidal task touches only the
    contact forces in the QP."""
    q, v = _state(robot, 2)
    dd = DecoupledDynamics(robot.model, form="velocity")
    e = dd.hamel
    M = e.mass_matrix(q)
    T, _ = dd.transform(q, v, M, e.mass_matrix_derivative(q, v))
    S_T = np.vstack([np.zeros((6, e.n)), np.eye(e.n)])                   # torques into [F_b; tau]
    F_T = decoupling_inverse(T, 6).T @ S_T
    assert np.abs(F_T[6:]).max() > 0.5                                    # the y-rows do get torque
    assert np.abs(F_T[:6]).max() < 1e-12
    ctrl, st, lay, _ = _solved(robot, q, v, _refs(robot, q),
                               tasks={"decoupled_centroidal": {"angular_weight": 10.0}})
    task = _task(ctrl, "decoupled_centroidal")
    H, g = np.zeros((lay.nx, lay.nx)), np.zeros(lay.nx)
    task.add(H, g, st, lay, _refs(robot, q))
    assert np.abs(H[lay.f_stance, lay.f_stance]).max() > 1e-3 and np.abs(g[lay.f_stance]).max() > 1e-3
    assert not H[:lay.n].any() and not H[:, :lay.n].any() and not g[:lay.n].any()


def _task(ctrl, name):
    return next(t for t in ctrl.formulation.tasks if t.name == name)


def test_x_rows_and_internal_rows_predict_the_motion_by_finite_differences(robot):
    """With (dv, f) a solution of the QP (base dynamics and contacts hold): the x-rows' v̇_x from
    the forces alone equals d/dt v_x by central differences along (q, v, dv), and the internal
    task's rows (J_int on dv, the x-rows on f) give the base's angular acceleration."""
    q, v = _state(robot, 3)
    m = robot.model
    foot = m.names[m.frames[m.getFrameId(robot.contacts[0].frame)].parentJoint]   # the joint above a foot
    ctrl, st, lay, out = _solved(robot, q, v, _refs(robot, q),
                                 tasks={"internal_impedance": {"kd": 0.0, "rows": "all", "frames": ["base", foot]}})
    assert not out.fallback
    dv = out.dv
    f = np.concatenate([out.point_forces[c.frame].ravel() for c in robot.contacts])
    vdot_x = force_rows(st, lay) @ f - st.decoupled_rows.M_x_inv @ (st.G_x + st.decoupled_coriolis)

    def v_x(qq, vv):
        st.update(qq, vv)
        return st.decoupled_rows.v_x.copy()
    h = 1e-6
    fd = (v_x(pin.integrate(m, q, h * v), v + h * dv) - v_x(pin.integrate(m, q, -h * v), v - h * dv)) / (2 * h)
    assert np.abs(fd).max() > 0.1
    assert np.allclose(vdot_x, fd, atol=1e-5 * max(1.0, np.abs(fd).max()))
    st.update(q, v)
    task = _task(ctrl, "internal_impedance")
    x = np.concatenate([dv, f])
    for frame, fid in zip(task.frames, (-1, m.getFrameId(foot))):
        A, b = task.rows_of(st, lay, frame, References())               # no reference, kd = 0: a = 0
        J, drift = st.frame_terms(fid)
        a_frame = J @ dv + drift                                        # the frame's acceleration
        assert np.abs(a_frame).max() > 0.1
        assert np.allclose(A @ x - b, a_frame, atol=1e-6 * max(1.0, np.abs(a_frame).max()))
        assert np.abs(A[:, :6]).max() < 1e-9                           # J_int: no base column
    # the base's J_int is the engine's J^int = J_jq - A_jb K (LOCAL, A_bb = I), in world axes
    A, _ = task.rows_of(st, lay, task.frames[0], References())
    M = DecoupledDynamics(m).hamel.mass_matrix(q)
    J_local = np.hstack([np.eye(6), np.zeros((6, m.nv - 6))])
    ei = external_internal(M, np.eye(6), [J_local])
    R = st.base_rotation
    assert np.abs(ei.J_int).max() > 1e-3
    assert np.allclose(A[:, 6:m.nv], np.kron(np.eye(2), R) @ ei.J_int, atol=1e-9)


def test_same_optimum_as_the_standard_tasks_when_they_ask_the_same(robot):
    """Angular x-rows off: the decoupled QP's optimum is the standard one's (the CoM rows are
    ComTask's, the base's internal + external rows the base-orientation task's on the constraint
    manifold); with them on it differs (they regulate the locked angular velocity too)."""
    q, v = _state(robot, 4)
    refs = _refs(robot, q)
    stance = {c.frame: True for c in robot.contacts}
    std = WholeBodyController(robot, {"centroidal_coordinates": "standard"}).update(q, v, stance, refs)
    dec = _solved(robot, q, v, refs)[3]
    ang = _solved(robot, q, v, refs, tasks={"decoupled_centroidal": {"angular_weight": 10.0}})[3]
    assert not (std.fallback or dec.fallback or ang.fallback)
    scale = np.abs(std.dv).max()
    assert scale > 0.1
    assert np.abs(dec.dv - std.dv).max() < 1e-6 * scale
    assert np.abs(dec.tau_vector - std.tau_vector).max() < 1e-6 * max(1.0, np.abs(std.tau_vector).max())
    assert np.abs(ang.dv - std.dv).max() > 1e-4 * scale


def test_tracking_no_worse_on_a_short_sway(robot):
    """0.4 s of the sway (MuJoCo jethexa, rigid-contact TALOS): the decoupled formulation's RMS
    CoM and orientation errors are the standard one's or smaller; the robot did follow."""
    sway = SWAYS[robot.name]
    std = run(robot, "standard", 0.4, sway)
    dec = run(robot, "decoupled", 0.4, sway)
    s, d = std.rms(), dec.rms()
    com = np.array(std.com)
    moved = np.linalg.norm(com - com[0], axis=1).max()
    wanted = np.linalg.norm(np.array(std.com_ref) - std.com_ref[0], axis=1).max()
    assert wanted > 0.01 and moved > 0.5 * wanted                          # the reference moved, and so did the robot
    assert s["com_rms_m"] < 0.5 * wanted and max(std.orientation_error) > 0.005
    assert d["fallbacks"] == s["fallbacks"] == 0
    assert d["com_rms_m"] <= s["com_rms_m"] * (1 + 1e-6) + 1e-9
    assert d["orientation_rms_rad"] <= s["orientation_rms_rad"] * (1 + 1e-6) + 1e-9


@pytest.mark.parametrize("overrides, field", [
    ({"centroidal_coordinates": "hamel"}, "centroidal_coordinates"),
    ({"tasks": {"decoupled_centroidal": {"angular_weight": -1.0}}}, "tasks.decoupled_centroidal.angular_weight"),
    ({"tasks": {"decoupled_centroidal": {"kp": float("nan")}}}, "tasks.decoupled_centroidal.kp"),
    ({"tasks": {"internal_impedance": {"kd": "20"}}}, "tasks.internal_impedance.kd"),
    ({"tasks": {"internal_impedance": {"rows": "yaw"}}}, "tasks.internal_impedance.rows"),
    ({"tasks": {"internal_impedance": {"frames": "base"}}}, "tasks.internal_impedance.frames"),
])
def test_bad_decoupled_settings_are_input_errors(overrides, field):
    with pytest.raises(InputError) as err:
        controller_config("jethexa", overrides)
    assert err.value.field == field


def test_unknown_internal_frame_is_an_input_error():
    with pytest.raises(InputError, match="not_a_frame") as err:
        WholeBodyController(load_robot("jethexa"), {"centroidal_coordinates": "decoupled",
                                                    "tasks": {"internal_impedance": {"frames": ["not_a_frame"]}}})
    assert err.value.field == "tasks.internal_impedance.frames"


def test_bench_decoupled_control_writes_json_and_plot(cli, tmp_path):
    res = cli("bench", "decoupled", "--control", "--robots", "jethexa", "--duration", "0.1", "--out", tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out == json.loads((tmp_path / "control.json").read_text())
    (r,) = out
    assert set(r["rms"]) == {"standard", "decoupled", "decoupled_angular"}
    assert r["rms"]["standard"]["cycles"] == 100 and r["cost"]["ratio_p50"] > 0
    assert (tmp_path / "tracking_jethexa.png").stat().st_size > 10000


@pytest.mark.parametrize("name, removed", [("solo12", ()), ("hybrid_biped", ()), ("jethexa", ("leg3", "leg4"))])
def test_same_optimum_on_other_robots_closed_chains_and_a_damaged_morphology(name, removed):
    """The equivalence holds in the closed-chain projected coordinates (hybrid_biped) and on a
    morphology with legs removed (rows sliced by v_index), as on a serial robot."""
    robot = load_robot(name)
    mmap = None
    q = robot.q_stand.copy()
    if removed:
        morph = Morphology.healthy(robot)
        for leg in removed:
            morph = morph.remove_leg(leg)
        mmap = MorphologyMap(robot, morph)
        q = mmap.reduce_q(q)
    contacts = robot.contacts if mmap is None else mmap.contacts
    stance = {c.frame: True for c in contacts}
    refs = _refs(robot, robot.q_stand)
    v = np.zeros(len(q) - 1)
    outs = [WholeBodyController(robot, {"centroidal_coordinates": f}, morphology_map=mmap).update(q, v, stance, refs)
            for f in ("standard", "decoupled")]
    assert not any(o.fallback for o in outs)
    scale = np.abs(outs[0].dv).max()
    assert scale > 0.1
    assert np.abs(outs[1].dv - outs[0].dv).max() < 1e-6 * scale


def test_bad_value_in_a_robot_file_names_file_and_line(tmp_path):
    path = tmp_path / "robot.yaml"
    path.write_text("solver: proxsuite\ncentroidal_coordinates: decoupled\ntasks:\n"
                    "  internal_impedance: {frames: [base], rows: yaw}\n")
    with pytest.raises(InputError) as err:
        controller_config(path=path)
    assert err.value.file == str(path) and err.value.line == 4 and err.value.field == "tasks.internal_impedance.rows"


def test_decoupled_with_soft_leaves_is_an_input_error():
    with pytest.raises(InputError) as err:
        WholeBodyController(load_robot("jethexa_soft"), {"centroidal_coordinates": "decoupled"})
    assert err.value.field == "centroidal_coordinates"

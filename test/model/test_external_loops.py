"""Closed-loop descriptions written outside this project (test/data/*/SOURCE: Gepetto's
example-parallel-robots, BSD-3-Clause; Agility's Cassie in MuJoCo Menagerie, MIT): loaded as
their authors wrote them (community loop YAML, limits missing from the URDF; MJCF connects
between bodies with anchors, ball joints), closed from neutral and random poses, checked against an
independent closure solve, constrained ID against Pinocchio's constraintDynamics, and the
passive-state estimator on a 2 s sinusoid."""
import warnings
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.analysis.closed_loop_checks import run_checks, sinusoid
from hybrid_dynamics.control import WholeBodyController
from hybrid_dynamics.dynamics.closed_chain import LoopClosureKinematics
from hybrid_dynamics.estimation.passive_state import PassiveStateEstimator
from hybrid_dynamics.errors import DescriptionWarning, InputError
from hybrid_dynamics.model.robot import load_robot
from loop_reference import constraint_dynamics

DATA = Path(__file__).parents[1] / "data"
# robot: (loops, rows, passive DoF, free internal motions) as the files define them
EXPECTED = {"five_bar": (1, 6, 4, 1), "five_bar_3d": (1, 3, 3, 0), "five_bar_6d": (1, 6, 6, 0),
            "delta": (3, 18, 12, 3), "cassie_like": (2, 12, 14, 2), "digit_like_2legs": (6, 36, 36, 0),
            "cassie_mjcf": (4, 12, 16, 6), "kangaroo_like_2legs": (24, 90, 118, 28)}
# the others: <name>/robot.yaml. Kangaroo-like: its ball joints substituted (loops_spherical.yaml)
PATHS = {"cassie_mjcf": DATA / "cassie_mjcf" / "cassie.xml",
         "kangaroo_like_2legs": DATA / "kangaroo_like_2legs" / "manifest.yaml"}


def _load(name):
    return _load_path(PATHS.get(name, DATA / name / "robot.yaml"))


def _load_path(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        robot = load_robot(path, base="fixed")
    return robot, [str(w.message) for w in caught if issubclass(w.category, DescriptionWarning)]


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def loaded(request):
    robot, messages = _load(request.param)
    return request.param, robot, LoopClosureKinematics(robot), messages


def test_loads_as_written_and_says_what_it_assumed(loaded):
    name, robot, kin, messages = loaded
    assert not robot.floating and (kin.L, kin.m, kin.n_pas, kin.n_free) == EXPECTED[name]
    # every joint's missing limits are named with the file (the MJCF gives them; a stroke in
    # the loop YAML replaces them)
    urdf = str(DATA / name / "robot.urdf")
    for joint in [j for j in robot.loops.actuated if j not in robot.loops.stroke] if name != "cassie_mjcf" else []:
        assert any(f"joint '{joint}'" in m and urdf in m for m in messages), joint
    # the Kangaroo-like manifest gives a closed stand pose (away from its knees' dead centre)
    assert robot.loop_report["reference"].startswith("closed automatically" if name != "kangaroo_like_2legs" else "given")
    assert (kin.n_free > 0) == any("internal motion" in m for m in messages)
    assert np.abs(kin.residual(robot.q_stand)).max() < 1e-10


_DATA = {}


def _independent_residual(robot, q):
    """Closure from Pinocchio's frame placements alone: log6 of the relative placement for a
    '6d' cut, the relative position for a '3d' one."""
    m = robot.model
    if _DATA.get("model") is not m:    # one Data per model: creating one costs 40 ms for 130 DoF
        _DATA.update(model=m, data=m.createData())
    d = _DATA["data"]
    pin.framesForwardKinematics(m, d, q)
    out = []
    for loop in robot.loops.loops:
        rel = d.oMf[m.getFrameId(loop.frame_a)].actInv(d.oMf[m.getFrameId(loop.frame_b)])
        out.append(pin.log6(rel).vector if loop.kind == "6d" else rel.translation)
    return np.concatenate(out)


def _gauss_newton(fun, x, h=1e-7, tol=1e-12):
    for _ in range(20):
        r = fun(x)
        if np.abs(r).max() < tol:
            break
        J = np.column_stack([(fun(x + h * e) - r) / h for e in np.eye(len(x))])
        x = x - np.linalg.lstsq(J, r, rcond=1e-10)[0]
    return x


def test_closure_from_neutral_and_random_poses_matches_an_independent_solve(loaded):
    name, robot, kin, _ = loaded
    rng = np.random.default_rng(7)
    starts = [pin.neutral(robot.model)]
    # +-0.5 rad on every passive joint; on the Kangaroo-like pair's 118 (24 loops) +-0.3: +-0.5
    # can leave Newton's basin at one loop there, as from a start on another assembly branch
    amplitude = 0.5 if kin.n_pas < 100 else 0.3
    for _ in range(3):
        q = kin.q_ref.copy()
        q[kin.qu] += rng.uniform(-amplitude, amplitude, kin.n_pas)
        starts.append(q)
    for k, start in enumerate(starts):
        start = kin.with_actuated(start, kin.q_ref[kin.qa])
        q, info = kin.close(start)
        assert info["converged"] and info["residual"] < 1e-10, (name, k, info)
        assert np.abs(_independent_residual(robot, q)).max() < 1e-9
        # the same closure solved on Pinocchio's residual alone (Gauss-Newton, least-norm steps,
        # its Jacobian by finite differences), from our solution moved by 1e-5
        def fun(x):
            qq = q.copy()
            qq[kin.qu] = x
            return _independent_residual(robot, qq)
        ref = _gauss_newton(fun, q[kin.qu] + 1e-5 * rng.standard_normal(kin.n_pas))
        assert np.abs(fun(ref)).max() < 1e-9
        # with free internal motions the reference moves along them too: the determined part
        # then differs at second order in that motion
        tol = 1e-7 if not kin.n_free else 1e-5
        assert np.abs(kin.determined(q, ref - q[kin.qu])).max() < tol, (name, k)


def test_constrained_id_reproduced_by_pinocchio_constraint_dynamics(loaded):
    name, robot, kin, _ = loaded
    m = robot.model
    rng = np.random.default_rng(3)
    q = kin.q_ref
    v, _ = kin.complete(q, rng.uniform(-1, 1, kin.n_act))
    a_a = rng.uniform(-2, 2, kin.n_act)
    tau_a, a = kin.inverse_dynamics(q, v, a_a)
    assert np.allclose(a[kin.ia], a_a)
    tau = kin.spring_forces(q, v)          # the MJCF's shin and heel springs act on their joints
    tau[kin.ia] = tau_a
    ddq = constraint_dynamics(robot, q, v, tau)
    assert np.abs(tau_a).max() > 1e-6                        # something is actuated
    scale = max(1.0, np.abs(a).max())
    diff = ddq - a
    assert np.abs(diff[kin.ia]).max() < 1e-8 * scale
    # passive joints: the part the actuators determine, and no difference that carries inertia
    # (the delta's rod spins weigh 1.6e-11 kg m^2: both solvers pick among equivalent values)
    assert np.abs(kin.determined(q, diff[kin.iu])).max() < 1e-8 * scale, (name, np.abs(diff).max())
    d = m.createData()
    M = pin.crba(m, d, q)
    M = np.triu(M) + np.triu(M, 1).T
    assert np.abs(M @ diff).max() < 1e-8 * scale * np.abs(M).max()
    # the loops stay closed at acceleration level, from Pinocchio's frame accelerations
    pin.forwardKinematics(m, d, q, v, ddq)
    pin.updateFramePlacements(m, d)
    for loop in robot.loops.loops:
        ia, ib = m.getFrameId(loop.frame_a), m.getFrameId(loop.frame_b)
        LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        acc_a = pin.getFrameClassicalAcceleration(m, d, ia, LWA)
        acc_b = pin.getFrameClassicalAcceleration(m, d, ib, LWA)
        assert np.abs(acc_b.linear - acc_a.linear).max() < 1e-8 * max(1.0, np.abs(a).max())
        if loop.kind == "6d":
            assert np.abs(acc_b.angular - acc_a.angular).max() < 1e-8 * max(1.0, np.abs(a).max())


def test_estimator_tracks_a_two_second_sinusoid(loaded):
    """1 kHz for 2 s; every 0.1 s the estimate is compared with the closure solved at the
    measured actuators starting from it (the nearest closed pose: with free internal motions
    the passive joints are not unique)."""
    name, robot, kin, _ = loaded
    est = PassiveStateEstimator(kin)
    worst, moved = 0.0, 0.0
    for k in range(2000):
        qa, va, _ = sinusoid(kin, k * 1e-3)
        e = est.update(qa, va)
        assert e.valid, (name, k, e.message)
        if k % 100 == 99:
            q_exact, info = kin.close(kin.with_actuated(e.q, qa), tol=1e-12)
            assert info["converged"]
            # the part the actuators determine (free motions: Newton may move along them)
            worst = max(worst, float(np.abs(kin.determined(q_exact, q_exact[kin.qu] - e.q[kin.qu])).max()))
            moved = max(moved, float(np.abs(kin.determined(kin.q_ref, e.q[kin.qu] - kin.q_ref[kin.qu])).max()))
    assert moved > 1e-2                                      # the passive joints did move
    assert worst < 1e-3, (name, worst)        # the closed-loop check's tolerance (validate closed-loop)


def _copy(tmp_path, name, edit):
    for f in ("robot.urdf", "robot.yaml"):
        (tmp_path / f).write_text((DATA / name / f).read_text())
    (tmp_path / "robot.yaml").write_text(edit((tmp_path / "robot.yaml").read_text()))
    return tmp_path / "robot.yaml"


def test_unknown_key_and_bad_substitution_name_the_file_and_key(tmp_path):
    path = _copy(tmp_path, "five_bar_3d", lambda t: t + "closed_loops: []\n")
    with pytest.raises(InputError, match=r"robot.yaml:4: field 'closed_loops': unknown key 'closed_loops'"):
        load_robot(path)
    path = _copy(tmp_path, "digit_like_2legs", lambda t: t.replace('"UJOINT_XY",\n', '"UJOINT_XX",\n', 1))
    with pytest.raises(InputError, match="field 'joint_type'.*'UJOINT_XX' is not"):
        load_robot(path)
    path = _copy(tmp_path, "cassie_like", lambda t: t + "springs: {motor_knee: {stiffness: 10}}\n")
    with pytest.raises(InputError, match=r"robot.yaml:4: field 'springs.motor_knee': 'motor_knee' is not a passive"):
        load_robot(path)
    path = _copy(tmp_path, "cassie_like", lambda t: t + "springs: {free_knee: {rest: 0.1}}\n")
    with pytest.raises(InputError, match="field 'springs.free_knee': needs a number stiffness"):
        load_robot(path)


def test_mjcf_joint_stiffness_gives_the_springs():
    """Menagerie's Cassie: the shin and heel-spring joints carry stiffness="1500" / "1250" (the
    shin damping="0.1"); each becomes a spring of its passive joint, and nothing else does."""
    springs = _load("cassie_mjcf")[0].loops.springs
    assert {n: (s.stiffness, s.rest, s.damping) for n, s in springs.items()} == {
        f"{side}-{joint}": (k, 0.0, d) for side in ("left", "right")
        for joint, k, d in (("shin", 1500.0, 0.1), ("heel-spring", 1250.0, 0.0))}


def test_validate_fails_when_the_actuators_cannot_move(cli, tmp_path):
    """A prismatic actuator whose URDF limits read [0, 0] and no stroke in the YAML: load warns
    (joint and file named) and validate closed-loop fails instead of passing on nothing."""
    urdf = (DATA / "five_bar_3d" / "robot.urdf").read_text().replace(
        '<joint name="mot1" type="revolute">', '<joint name="mot1" type="prismatic">')
    path = _copy(tmp_path, "five_bar_3d", lambda t: t)
    (tmp_path / "robot.urdf").write_text(urdf)
    with pytest.warns(DescriptionWarning, match=r"robot.urdf: joint 'mot1' has zero-width .*give stroke"):
        load_robot(path)
    out = cli("validate", "closed-loop", "--robot", str(path))
    assert out.returncode == 1 and "FAIL actuators_sampled_move" in out.stdout and "mot1" in out.stdout
    ok = cli("validate", "closed-loop", "--robot", str(DATA / "five_bar_3d" / "robot.yaml"))
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_urdf_path_with_a_6d_loop_closes_both_frames_and_inspect_says_so(cli, tmp_path):
    """The issue's case: a '6d' cut loaded from a plain URDF path (the loop YAML beside it as
    <stem>_loops.yaml) means the two frames coincide, position and orientation; the neutral
    pose is open by 1.46 rad, so a closed reference is found and inspect says so."""
    (tmp_path / "fb.urdf").write_text((DATA / "five_bar_6d" / "robot.urdf").read_text())
    (tmp_path / "fb_loops.yaml").write_text((DATA / "five_bar_6d" / "robot.yaml").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DescriptionWarning)
        robot = load_robot(tmp_path / "fb.urdf", base="fixed")
        floating = load_robot(tmp_path / "fb.urdf")
    assert not robot.floating and floating.floating and floating.nv == robot.nv + 6
    assert np.abs(_independent_residual(robot, robot.q_stand)).max() < 1e-10
    out = cli("inspect", str(tmp_path / "fb.urdf"), "--base", "fixed")
    assert out.returncode == 0, out.stderr
    assert "fixed base" in out.stdout and "closed automatically (open by 1.46" in out.stdout
    assert "hybrid-dynamics: warning: " in out.stderr and "joint 'mot1'" in out.stderr
    assert "Traceback" not in out.stderr and "warnings.warn" not in out.stderr


def test_mjcf_connect_between_bodies_and_ball_joints():
    """Cassie's MJCF: <connect body1 body2 anchor> gives frames at Pinocchio's parsed
    placements (the anchor on body1), ball joints become revolute triples, the free joint a
    floating base unless fixed, the keyframe 'home' (closed by MuJoCo's soft constraints to
    2 mm) the reference."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DescriptionWarning)
        robot = load_robot(PATHS["cassie_mjcf"])
    assert robot.floating and robot.nv == 32 - 2 * 3 + 2 * 3 and robot.nq == robot.nv + 1
    m = robot.model
    frame = m.frames[m.getFrameId("connect0_1")]
    assert m.names[frame.parentJoint] == "left-plantar-rod"
    assert np.allclose(frame.placement.translation, [0.35012, 0, 0])
    assert all(m.existJointName(f"left-achilles-rod_{a}") for a in "xyz")
    assert robot.loop_report["reference"] == "closed automatically (open by 0.00195 at the given pose)"


PARALLELOGRAM = (DATA / "four_bar_weld" / "four_bar.xml").read_text()     # ours, RELPOSE to fill in


@pytest.mark.parametrize("relpose", ["", ' relpose="0.9 0 0 1 0 0 0"'])
def test_mjcf_weld_between_bodies(tmp_path, relpose):
    """MuJoCo's body form of <weld> (body1, body2; relpose given, or MuJoCo's default: the
    relative pose at qpos0): a four-bar whose coupler is two bodies welded together. The frames
    coupler_1, coupler_2 are added, the cut is '6d' with 6 rows of rank 3 (planar), and the
    closure at a crank angle is MuJoCo's own: its weld constraint violation (efc_pos) is zero
    there; with the coupler as long as the ground (no relpose: a parallelogram) the passive
    joints are the closed form (-a1, a1, -a1). Constrained ID matches constraintDynamics."""
    path = tmp_path / "four_bar.xml"
    path.write_text(PARALLELOGRAM.replace("RELPOSE", relpose))
    robot = load_robot(path)
    kin = LoopClosureKinematics(robot)
    m = robot.model
    assert not robot.floating and [l.kind for l in robot.loops.loops] == ["6d"]
    assert (kin.m, kin.rank_l, kin.n_pas, kin.n_free) == (6, 3, 3, 0)
    assert m.names[m.frames[m.getFrameId("coupler_1")].parentJoint] == "a2"
    assert robot.loop_report["reference"] == ("given" if not relpose else "closed automatically (open by 0.1 at the given pose)")
    mj = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(mj)
    adr = [mj.jnt_qposadr[mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, m.names[j])] for j in range(1, m.njoints)]
    for a1 in (-0.6, 0.2, 0.7):
        q, info = kin.close(kin.with_actuated(kin.q_ref, [a1]))
        assert info["converged"]
        d.qpos[adr] = q
        mujoco.mj_forward(mj, d)
        assert d.ne == 6 and np.abs(d.efc_pos[:d.ne]).max() < 1e-10, (relpose, a1, d.efc_pos[:d.ne])
        if not relpose:
            assert np.allclose(q[kin.qu], [-a1, a1, -a1], atol=1e-10)
        else:
            assert abs(q[kin.qu][1] - a1) > 1e-2                      # a trapezoid: not the closed form
    v, _ = kin.complete(q, [0.8])
    tau_a, a = kin.inverse_dynamics(q, v, np.array([-1.5]))
    tau = np.zeros(m.nv)
    tau[kin.ia] = tau_a
    ddq = constraint_dynamics(robot, q, v, tau)
    assert abs(tau_a[0]) > 1e-3 and np.abs(ddq - a).max() < 1e-8 * max(1.0, np.abs(a).max())
    # the same mechanism with its two cranks as two bodies of <worldbody>: named, not dropped
    two_roots = PARALLELOGRAM.replace("RELPOSE", relpose).replace('<body name="frame">', "").replace(
        "    </body>\n  </worldbody>", "  </worldbody>").replace('<geom type="box" size="0.6 0.05 0.02" pos="0.5 0 -0.05" mass="2"/>', "")
    path.write_text(two_roots)
    with pytest.raises(InputError, match=r"four_bar.xml: <worldbody> has 2 bodies \(crank_a, crank_b\).*only the first"):
        load_robot(path)


def test_base_fixed_in_a_robot_manifest(tmp_path):
    """`base: fixed` in a robot manifest (not only the URDF flag): no free flyer, the loops and
    the QP without base rows; `base: floating` adds the six base coordinates; anything else is
    an error naming the manifest's line and field."""
    for f in ("robot.urdf", "robot.yaml"):
        (tmp_path / f).write_text((DATA / "five_bar_3d" / f).read_text())
    manifest = "name: rig\nurdf: robot.urdf\nloops: robot.yaml\nbase: {}\n"
    (tmp_path / "rig.yaml").write_text(manifest.format("fixed"))
    fixed = _quiet_load(tmp_path / "rig.yaml")
    (tmp_path / "rig.yaml").write_text(manifest.format("floating"))
    floating = _quiet_load(tmp_path / "rig.yaml")
    assert not fixed.floating and fixed.name == "rig" and fixed.nv == 5 and fixed.manifest == tmp_path / "rig.yaml"
    assert floating.floating and floating.nv == fixed.nv + 6
    assert LoopClosureKinematics(fixed).nb == 0 and LoopClosureKinematics(floating).nb == 6
    qp = WholeBodyController(fixed).formulation
    assert qp.state.n == len(fixed.actuated_joints) and qp.layout(()).n_unactuated == 0
    assert not {"com", "base_position", "base_orientation", "momentum"} & {t.name for t in qp.tasks}
    (tmp_path / "rig.yaml").write_text(manifest.format("wall"))
    with pytest.raises(InputError, match=r"rig.yaml:4: field 'base': 'wall' is not fixed or floating"):
        load_robot(tmp_path / "rig.yaml")


def _quiet_load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DescriptionWarning)
        return load_robot(path)


def test_measured_springs_set_the_free_internal_motions():
    """Menagerie's Cassie: the loops leave 6 internal motions free, 4 of them the shin and heel
    springs, which Cassie measures. With the springs measured (internal_motion: springs) the
    estimator takes them with the motors: only the 2 rod spins stay least norm, and over 1 s
    of motors and springs moving (springs by +-0.05 rad, at 1 kHz) every estimate has the
    measured springs and closes the loops by Pinocchio's own residual; by least norm the
    springs are not what was measured."""
    robot = _load("cassie_mjcf")[0]
    springs = list(robot.loops.springs)
    kin = LoopClosureKinematics(robot, measured=springs)
    assert (kin.n_free, kin.n_act) == (2, 10 + 4) and kin.actuated_joints[10:] == springs
    truth = LoopClosureKinematics(robot, measured=springs)      # the closures fed to the estimators
    measured, least_norm = PassiveStateEstimator(kin), PassiveStateEstimator(LoopClosureKinematics(robot))
    q = kin.q_ref.copy()
    worst_closure = worst_spring = least_norm_spring = 0.0
    for k in range(1000):
        t = k * 1e-3
        qa, va, _ = sinusoid(truth, t)
        qa[10:] = truth.q_ref[truth.qa[10:]] + 0.05 * np.sin(2 * np.pi * 1.5 * t + np.arange(4))
        va[10:] = 0.05 * 2 * np.pi * 1.5 * np.cos(2 * np.pi * 1.5 * t + np.arange(4))
        q, info = truth.close(truth.with_actuated(q, qa))
        assert info["converged"]
        e = measured.update(qa, va)
        o = least_norm.update(qa[:10], va[:10])
        assert e.valid and o.valid, (k, e.message, o.message)
        if k % 50 == 49:
            worst_closure = max(worst_closure, np.abs(_independent_residual(robot, e.q)).max())
            worst_spring = max(worst_spring, np.abs(e.q[truth.qa[10:]] - qa[10:]).max())
            least_norm_spring = max(least_norm_spring, np.abs(o.q[truth.qa[10:]] - qa[10:]).max())
    assert worst_spring < 1e-12 and worst_closure < 1e-5, (worst_spring, worst_closure)
    assert least_norm_spring > 0.02, least_norm_spring          # the rule changes the estimate


def test_springs_rule_declared_in_the_loop_yaml(tmp_path):
    """internal_motion: springs in a loop YAML: the five-bar's split coaxial joint declared a
    measured spring leaves no free motion (no warning) and the estimator takes it with the
    motors; the rule without springs listed is an error naming the file and field."""
    path = _copy(tmp_path, "five_bar", lambda t: t + "springs: {closedloop1_A: {stiffness: 5.0}}\n"
                 "internal_motion: springs\n")
    robot, messages = _load_path(path)
    assert not any("internal motion" in m for m in messages) and robot.loop_report["free_internal"] == 0
    assert PassiveStateEstimator(robot).actuated_joints == ["mot1", "mot2", "closedloop1_A"]
    assert LoopClosureKinematics(robot).n_free == 1                  # the controller's view is unchanged
    path = _copy(tmp_path, "five_bar", lambda t: t + "internal_motion: springs\n")
    with pytest.raises(InputError, match=r"robot.yaml:4: field 'internal_motion': .*needs the measured spring"):
        load_robot(path)


def test_kangaroo_as_written_fails_naming_the_loop_and_its_ball_joints():
    """Gepetto's kangaroo_like_2legs as published: its URDF exports each ball joint as one
    revolute named spherical_*, and its loop YAML does not substitute them, so the 24 loops
    (90 rows for 66 passive revolutes) cannot close: the error names the file, the loop and
    the joints to list under joint_name (loops_spherical.yaml does, and loads)."""
    with pytest.raises(InputError) as err:
        _load_path(DATA / "kangaroo_like_2legs" / "robot.yaml")
    text = str(err.value)
    assert "kangaroo_like_2legs/robot.yaml" in text and "cannot be closed" in text and "loop closedloop" in text
    assert "revolute joints are named like ball or universal joints (" in text and "spherical_" in text
    assert "joint_type SPHERICAL" in text


def test_validate_closed_loop_passes_on_cassie_with_its_springs():
    """`validate closed-loop` on Menagerie's Cassie (base fixed): the fixed-base ID, which
    counts the shin and heel springs' forces, agrees with the Lagrange-multiplier form that
    counts them too, and every other check holds."""
    info = run_checks(_load("cassie_mjcf")[0])
    names = {c["name"] for c in info["checks"]}
    assert {"fixed_base_id_vs_multiplier_form", "estimator_passive_error_rad"} <= names
    assert info["passed"], info["checks"]

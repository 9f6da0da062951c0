"""hybrid_biped ([Mingo Hoffman 2024]): one source for URDF + loop YAML + MJCF, load-time loop checks."""
import json
import shutil

import numpy as np
import pytest

from hybrid_dynamics.dynamics.closed_chain import LoopClosureKinematics
from hybrid_dynamics.errors import InputError
from hybrid_dynamics.errors import DescriptionWarning
from hybrid_dynamics.model.loops import check_loops, load_loops, load_mjcf_loops
from hybrid_dynamics.model.robot import build_model, load_robot
from hybrid_dynamics.paths import robots_dir

BIPED = robots_dir() / "hybrid_biped"


def test_inspect_reports_the_table_ii_topology(cli):
    out = cli("inspect", "hybrid_biped", "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["total_mass_kg"] == pytest.approx(36.0, abs=0.05)
    assert len(info["actuators"]) == 12 and len(info["passive_joints"]) == 32
    assert sum(l["rows"] for l in info["closed_loops"]) == 32
    assert all(a["transmission"]["lead"] in (0.005, 0.01) for a in info["actuators"])
    assert [c["frame"] for c in info["contacts"]] == ["l_sole", "r_sole"]


def test_stand_pose_closes_every_loop_and_actuators_determine_the_rest():
    robot = load_robot("hybrid_biped")
    kin = LoopClosureKinematics(robot)
    st = kin.compute(robot.q_stand)
    assert np.max(np.abs(st.error)) < 1e-12
    assert np.linalg.matrix_rank(st.J) == kin.m == kin.n_pas == 32
    assert np.linalg.cond(st.J[:, kin.iu]) < 100
    # actuators within their strokes, serial joints within Table II ranges
    m = robot.model
    for name in robot.joint_names:
        i = m.joints[m.getJointId(name)].idx_q
        assert m.lowerPositionLimit[i] - 1e-9 <= robot.q_stand[i] <= m.upperPositionLimit[i] + 1e-9, name


def test_mjcf_loops_through_pinocchio_parser_match_the_yaml():
    model, spec = load_mjcf_loops(BIPED / "hybrid_biped.xml")
    yaml_spec = load_loops(BIPED / "hybrid_biped_loops.yaml", build_model(BIPED / "hybrid_biped.urdf"))
    assert [(l.frame_a, l.frame_b) for l in spec.loops] == [(l.frame_a, l.frame_b) for l in yaml_spec.loops]
    assert spec.actuated == yaml_spec.actuated
    assert model.nv == 50
    # MuJoCo connects keep 3 rows: the planar loops' out-of-plane rows are dependent; the rank is kept
    figures = check_loops(model, spec, load_robot("hybrid_biped").q_stand)
    assert figures["rows"] == 36 and figures["rank"] == 32 and figures["free_internal"] == 0


def _copy(tmp_path, edit):
    for f in ("hybrid_biped.urdf", "hybrid_biped.xml", "robot.yaml"):
        shutil.copy(BIPED / f, tmp_path / f)
    text = (BIPED / "hybrid_biped_loops.yaml").read_text()
    (tmp_path / "hybrid_biped_loops.yaml").write_text(edit(text))
    return tmp_path / "robot.yaml"


def test_yaml_naming_a_missing_frame_is_one_line(cli, tmp_path):
    manifest = _copy(tmp_path, lambda t: t.replace("[l_knee_crank, l_knee_end]", "[l_knee_crank, l_knee_tip]"))
    out = cli("inspect", manifest)
    assert out.returncode == 2 and "l_knee_tip" in out.stderr and "Traceback" not in out.stderr


def test_loops_leaving_passive_dof_undetermined(tmp_path):
    # drop the z row of a hip spherical cut: 31 rows for 32 passive DoF, one free internal motion
    drop = lambda t: t.replace("constrained_axes:\n  - [0, 1]\n  - [0, 1, 2]",   # noqa: E731
                               "constrained_axes:\n  - [0, 1]\n  - [0, 1]")
    with pytest.warns(DescriptionWarning, match="leave 1 internal motion"):
        robot = load_robot(_copy(tmp_path, drop))
    assert robot.loop_report["free_internal"] == 1 and robot.loop_report["free_joints"]
    strict = tmp_path / "strict"
    strict.mkdir()
    with pytest.raises(InputError, match="undetermined.*internal_motion: least_norm"):
        load_robot(_copy(strict, lambda t: drop(t) + "internal_motion: none\n"))


def test_dependent_rows_are_reported(tmp_path):
    # planar knee loop given its out-of-plane row y (identically zero) instead of z
    manifest = _copy(tmp_path, lambda t: t.replace("  - [0, 2]\n  - [0, 1, 2]\n  - [0, 1, 2]\n  - [0, 1]",
                                                   "  - [0, 1]\n  - [0, 1, 2]\n  - [0, 1, 2]\n  - [0, 1]", 1))
    with pytest.warns(DescriptionWarning, match="32 constraint rows of rank 31"):
        load_robot(manifest)


def test_mjcf_loops_with_independent_rows_are_usable():
    """The MJCF path made usable: an independent subset of each connect's 3 rows (by rank at
    MJCF's qpos0, or the YAML's constrained axes) gives the same closed-chain kinematics as
    URDF + loop YAML: the same closed configuration and projection G at perturbed actuators."""
    robot = load_robot("hybrid_biped")
    urdf_kin = LoopClosureKinematics(robot)
    for rows in ("rank", robot.loops):
        model, spec = load_mjcf_loops(BIPED / "hybrid_biped.xml", rows=rows)
        # planar cuts (yaw lever: x, y; knee crank: x, z) lose their out-of-plane row
        assert [l.axes for l in spec.loops] == [l.axes for l in robot.loops.loops]
        report = check_loops(model, spec, robot.q_stand)
        assert report["rows"] == report["rank"] == report["passive"] == 32
        kin = LoopClosureKinematics(None, spec, model=model, q_ref=robot.q_stand)
        assert kin.actuated_joints == urdf_kin.actuated_joints
        # joint i of one model is joint perm[i] of the other (matched by name)
        names = [model.names[j] for j in range(2, model.njoints)]
        perm = np.array([robot.joint_names.index(n) for n in names])
        rng = np.random.default_rng(3)
        q_u = robot.q_stand.copy()
        for trial in range(3):
            qa = robot.q_stand[urdf_kin.qa] + rng.uniform(-0.008, 0.008, 12)
            q_u, info_u = urdf_kin.close(urdf_kin.with_actuated(q_u, qa))
            q_m = np.concatenate([q_u[:7], q_u[7:][perm]])
            q_m, info_m = kin.close(kin.with_actuated(q_m, qa))
            assert info_u["converged"] and info_m["converged"]
            assert np.abs(q_m[7:] - q_u[7:][perm]).max() < 1e-9
            G_u, _ = urdf_kin.projection(q_u)
            G_m, _ = kin.projection(q_m)
            assert np.abs(G_m[6:] - G_u[6:][perm]).max() < 1e-8
    with pytest.raises(ValueError):
        load_mjcf_loops(BIPED / "hybrid_biped.xml", rows="some")

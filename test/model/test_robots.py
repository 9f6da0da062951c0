"""Robot descriptions: jethexa as [Farghdani 2025] gives it, TALOS and solo12 from example-robot-data,
and the URDF and MJCF of each generated robot agreeing with each other."""
import json

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.model.builtin import BUILTIN_DESCRIPTIONS, rendered_files
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.paths import robots_dir


@pytest.mark.parametrize("name", sorted(BUILTIN_DESCRIPTIONS))
def test_generated_files_match_their_source(name):
    for filename, text in rendered_files(BUILTIN_DESCRIPTIONS[name]()).items():
        assert (robots_dir() / name / filename).read_text() == text, \
            f"robots/{name}/{filename} is stale: run `hybrid-dynamics generate`"


def test_inspect_jethexa_reports_paper_000_figures(cli):
    out = cli("inspect", "jethexa", "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert (info["nq"], info["nv"]) == (25, 24)
    assert info["total_mass_kg"] == pytest.approx(2.55, abs=0.01)
    assert len(info["legs"]) == 6
    for i, leg in enumerate(info["legs"], start=1):
        assert leg["name"] == f"leg{i}"
        assert len(leg["joints"]) == 3
        assert leg["contact_frame"] == f"leg{i}_foot"
    assert [c["frame"] for c in info["contacts"]] == [f"leg{i}_foot" for i in range(1, 7)]
    assert len(info["actuators"]) == 18 and info["closed_loops"] == []


def test_jethexa_tripods_and_leg_numbering_follow_the_paper():
    robot = load_robot("jethexa")
    assert robot.gait_groups == [["leg1", "leg4", "leg5"], ["leg2", "leg3", "leg6"]]
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, pin.neutral(robot.model))
    hip = {i: data.oMf[robot.model.getFrameId(f"leg{i}_coxa")].translation for i in range(1, 7)}
    # legs 1-2 front, 3-4 middle, 5-6 rear; odd legs on the right (-y), as in Table I
    assert hip[1][0] == pytest.approx(0.093) and hip[5][0] == pytest.approx(-0.093)
    assert all(hip[i][1] < 0 for i in (1, 3, 5)) and all(hip[i][1] > 0 for i in (2, 4, 6))
    assert abs(hip[3][1]) == pytest.approx(0.073)


def test_jethexa_stands_with_feet_below_the_body():
    robot = load_robot("jethexa")
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, robot.q_stand)
    z = [data.oMf[robot.model.getFrameId(c.frame)].translation[2] for c in robot.contacts]
    assert np.allclose(z, z[0]) and -0.12 < z[0] < -0.09


@pytest.mark.parametrize("name", sorted(BUILTIN_DESCRIPTIONS))
def test_mjcf_and_urdf_describe_the_same_body(name):
    """Mass matrix and gravity of MuJoCo's model equal Pinocchio's, at random states."""
    robot = load_robot(name)
    mj = mujoco.MjModel.from_xml_path(str(robot.mjcf))
    mjd = mujoco.MjData(mj)
    model, data = robot.model, robot.model.createData()
    assert mj.nv == model.nv
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        mjd.qpos[:3], mjd.qpos[3:7], mjd.qpos[7:] = q[:3], [q[6], q[3], q[4], q[5]], q[7:]
        mujoco.mj_forward(mj, mjd)
        M_mj = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, mjd, M_mj)
        # MuJoCo's free joint takes the linear velocity in the world frame, Pinocchio in the base frame
        T = np.eye(model.nv)
        T[:3, :3] = pin.Quaternion(q[3:7]).toRotationMatrix()
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        assert np.allclose(T.T @ M_mj @ T, M, atol=1e-9)
        g = pin.computeGeneralizedGravity(model, data, q)
        assert np.allclose(T.T @ mjd.qfrc_bias, g, atol=1e-8)
    assert rng is not None


@pytest.mark.parametrize("name,nv,legs,joints_per_leg", [("talos", 38, 2, 6), ("solo12", 18, 4, 3)])
def test_serial_references_load_from_example_robot_data(name, nv, legs, joints_per_leg):
    robot = load_robot(name)
    assert robot.nv == nv
    assert len(robot.legs) == legs and all(len(l.joints) == joints_per_leg for l in robot.legs)
    assert "example-robot-data" in str(robot.urdf)
    assert not np.allclose(robot.q_stand[7:], 0)      # the SRDF pose was applied


def test_inspect_a_bare_urdf_guesses_feet(cli, tmp_path):
    urdf = robots_dir() / "jethexa" / "jethexa.urdf"
    out = cli("inspect", str(urdf), "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert sorted(l["contact_frame"] for l in info["legs"]) == [f"leg{i}_foot" for i in range(1, 7)]

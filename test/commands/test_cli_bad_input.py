"""A user's mistake gives one line naming what was wrong, exit status 2, no traceback."""
import shutil
import textwrap

import pytest

from hybrid_dynamics.paths import robots_dir


def assert_user_error(out, *needles):
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_unknown_robot_name(cli):
    assert_user_error(cli("inspect", "robby"), "unknown robot 'robby'", "jethexa")


def test_missing_urdf(cli, tmp_path):
    assert_user_error(cli("inspect", tmp_path / "nothing.urdf"), "nothing.urdf", "not found")


def test_malformed_urdf_names_the_line(cli, tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text('<?xml version="1.0"?>\n<robot name="x">\n  <link name="a">\n</robot>\n')
    assert_user_error(cli("inspect", bad), "bad.urdf:4", "malformed XML")


def test_malformed_manifest_yaml_names_the_line(cli, tmp_path):
    bad = tmp_path / "robot.yaml"
    bad.write_text("name: x\nurdf: [unclosed\n")
    assert_user_error(cli("inspect", bad), "robot.yaml:", "malformed YAML")


def test_contact_frame_missing_from_urdf(cli, tmp_path):
    shutil.copy(robots_dir() / "jethexa" / "jethexa.urdf", tmp_path)
    (tmp_path / "robot.yaml").write_text(textwrap.dedent("""\
        name: broken
        urdf: jethexa.urdf
        contacts:
          - {frame: leg1_foot}
          - {frame: leg9_foot}
        """))
    assert_user_error(cli("inspect", tmp_path / "robot.yaml"), "robot.yaml:5", "leg9_foot", "contacts")


@pytest.mark.parametrize("radius", ["-0.01", "big", "true", "5.0"])
def test_contact_radius_must_be_a_small_length(cli, tmp_path, radius):
    shutil.copy(robots_dir() / "jethexa" / "jethexa.urdf", tmp_path)
    (tmp_path / "robot.yaml").write_text(textwrap.dedent(f"""\
        name: broken
        urdf: jethexa.urdf
        contacts:
          - {{frame: leg1_foot, radius: 0.01}}
          - {{frame: leg2_foot, radius: {radius}}}
        """))
    assert_user_error(cli("inspect", tmp_path / "robot.yaml"), "robot.yaml:5", "radius")


def test_loop_yaml_naming_a_joint_the_urdf_lacks(cli, tmp_path):
    shutil.copy(robots_dir() / "jethexa" / "jethexa.urdf", tmp_path / "hexa.urdf")
    (tmp_path / "hexa_loops.yaml").write_text(textwrap.dedent("""\
        closed_loop:
          - [leg1_foot, leg2_foot]
        type: ['3d']
        name_mot:
          - leg1_coxa_joint
          - knee_x
        """))
    assert_user_error(cli("inspect", tmp_path / "hexa.urdf"), "hexa_loops.yaml:6", "name_mot", "knee_x")


def test_stand_pose_naming_an_unknown_joint(cli, tmp_path):
    shutil.copy(robots_dir() / "jethexa" / "jethexa.urdf", tmp_path)
    (tmp_path / "robot.yaml").write_text("urdf: jethexa.urdf\nstand:\n  joints: {elbow: 0.3}\n")
    assert_user_error(cli("inspect", tmp_path / "robot.yaml"), "robot.yaml:3", "elbow")

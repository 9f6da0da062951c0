"""Soft modules hung from other soft modules, in MuJoCo (sim/soft_feet.py) and in what rviz
draws (soft.leaves.SoftLeaves.shapes), against the soft tree's own recursion.

A chain of three constant-curvature pads under jethexa's leg 1 (the pad of jethexa_soft, then
two more hung from it with offsets and tilts in their joints). MuJoCo's equivalent of each pad
is a pseudo-rigid-body beam (rigid halves, two hinges and a slide at mid-length); the chain
hangs each from its parent's distal half at the parent's distal face. Reference: the soft
tree's poses (soft/tree.py, the recursion's forward pass [Pustina 2024, Eq. (2)]) through the
rigid robot's frame placement (Pinocchio). Straight pads that only change length: the two
agree exactly. Bent pads (one bending axis per pad): each pad's tip differs from the CC rod's
by the closed-form gap between a beam bent at its middle and a circular arc of the same tip
angle (module docstring of sim/soft_feet.py), the gaps adding along the chain (tip angles
agree, so each gap is only rotated).
"""
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import yaml

from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.sim.plant import Plant
from hybrid_dynamics.soft.leaves import SoftLeaves

ROBOTS = Path(__file__).resolve().parents[2] / "robots"
PAD = {"type": "cc", "length": 0.03, "radius": 0.015, "density": 1100, "elongation": True,
       "youngs_modulus": 5.0e5, "poisson": 0.45, "damping_time": 0.01, "n_axial": 2}
CHAIN = [("leg1_pad", 0.03), ("leg1_mid", 0.025), ("leg1_end", 0.02)]


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """jethexa_soft with leg 1's pad carrying two more pads, the others rigid feet."""
    doc = yaml.safe_load((ROBOTS / "jethexa_soft" / "robot.yaml").read_text())
    doc["name"] = "jethexa_soft_chain"
    doc["urdf"] = str(ROBOTS / "jethexa" / "jethexa.urdf")
    doc["mjcf"] = str(ROBOTS / "jethexa" / "jethexa.xml")
    pad = dict(doc["soft_modules"][0])
    doc["soft_modules"] = [
        pad,
        {"name": "leg1_mid", "parent": "leg1_pad", "joint": {"type": "fixed", "xyz": [0.002, -0.001, 0.0],
                                                             "rpy": [0.3, 0.0, 0.2]},
         "body": {**PAD, "length": 0.025, "radius": 0.01}},
        {"name": "leg1_end", "parent": "leg1_mid", "joint": {"type": "fixed", "xyz": [0.0, 0.0, 0.001],
                                                             "rpy": [0.0, -0.4, 0.0]},
         "body": {**PAD, "length": 0.02, "radius": 0.008}},
    ]
    path = tmp_path_factory.mktemp("chain") / "robot.yaml"
    path.write_text(yaml.safe_dump(doc))
    robot = load_robot(str(path))
    return robot, Plant(robot), SoftLeaves(robot)


def mujoco_tips(plant, q_r, q_s):
    """World position of each pad's distal face in MuJoCo at rigid q_r (Pinocchio's
    convention) and pad coordinates q_s (the plant's soft joints, in coordinate order)."""
    plant.set_state(q_r, np.zeros(plant.robot.nv))
    plant.data.qpos[plant._soft_qadr] = q_s
    mujoco.mj_kinematics(plant.model, plant.data)
    out = {}
    for name, length in CHAIN:
        body = mujoco.mj_name2id(plant.model, mujoco.mjtObj.mjOBJ_BODY, f"{name}_tip")
        out[name] = plant.data.xpos[body] + plant.data.xmat[body].reshape(3, 3) @ [0, 0, length / 2]
    return out


def recursion_tips(leaves, q_r, q_s):
    """World position of each pad's distal face from the soft tree's poses (a frame-hung
    soft tree's forward pass, placed at its rigid frame by Pinocchio)."""
    tree = leaves.leaf_tree[0].tree
    data = leaves.model.createData()
    pin.framesForwardKinematics(leaves.model, data, q_r)
    oMf = data.oMf[leaves.root_ids[0]]
    q = np.concatenate([[0, 0, 0, 0, 0, 0, 1], q_s])
    poses = tree.frame_poses(q)                    # (R_i, p_i) of each distal frame, root first
    return {name: oMf.rotation @ poses[i][1] + oMf.translation for i, (name, _) in enumerate(CHAIN, start=1)}


def stand(robot):
    q = robot.q_stand.copy()
    q[2] = 0.3
    return q


def arc_gap(length, delta, theta):
    """|CC tip - PRB tip| of one pad bent by ``theta`` about one axis, its length changed by
    ``delta``, in its joint frame: an arc of length L + delta against a beam hinged at L / 2
    whose distal half is L / 2 + delta long."""
    arc = (length + delta) * np.array([(1 - np.cos(theta)) / theta, np.sin(theta) / theta])
    beam = np.array([(length / 2 + delta) * np.sin(theta), length / 2 + (length / 2 + delta) * np.cos(theta)])
    return float(np.linalg.norm(arc - beam))


def test_a_straight_chain_that_changes_length_is_where_the_recursion_puts_it(chain):
    robot, plant, leaves = chain
    assert leaves.ns == 9 and plant.soft_names == [f"{n}_q{k}" for n, _ in CHAIN for k in range(3)]
    q_r, q_s = stand(robot), np.array([0, 0, -0.001, 0, 0, 0.002, 0, 0, -0.0015])
    got, ref = mujoco_tips(plant, q_r, q_s), recursion_tips(leaves, q_r, q_s)
    for name, _ in CHAIN:
        assert np.allclose(got[name], ref[name], atol=1e-12), (name, got[name] - ref[name])
    # the chain hangs from its parent's distal face: the end is off the first pad's tip
    assert np.linalg.norm(ref["leg1_end"] - ref["leg1_pad"]) > 0.04


def test_a_bent_chain_is_within_the_beam_to_arc_gap_of_the_recursion(chain):
    robot, plant, leaves = chain
    q_r = stand(robot)
    bend = [(0.25, 0.0, 0.001), (0.0, -0.3, -0.002), (0.2, 0.0, 0.0)]      # one bending axis per pad
    q_s = np.array([c for pad in bend for c in pad])
    got, ref = mujoco_tips(plant, q_r, q_s), recursion_tips(leaves, q_r, q_s)
    straight = recursion_tips(leaves, q_r, np.zeros(9))
    bound = 0.0
    for (name, length), (a, b, delta) in zip(CHAIN, bend):
        bound += arc_gap(length, delta, a or b)
        gap = np.linalg.norm(got[name] - ref[name])
        assert gap <= bound + 1e-9, (name, gap, bound)
    # the first pad's gap is the closed form itself
    assert np.linalg.norm(got["leg1_pad"] - ref["leg1_pad"]) == pytest.approx(arc_gap(0.03, 0.001, 0.25), abs=1e-9)
    for name, _ in CHAIN:
        assert np.linalg.norm(ref[name] - straight[name]) > 3 * bound      # the bending moved it more
    print(f"\nend pad's tip: MuJoCo {1e3 * np.linalg.norm(got['leg1_end'] - ref['leg1_end']):.3f} mm from the "
          f"recursion (bound {1e3 * bound:.3f} mm); bending moved it "
          f"{1e3 * np.linalg.norm(ref['leg1_end'] - straight['leg1_end']):.1f} mm")


def test_rviz_draws_every_pad_of_the_chain_end_to_end(chain):
    """The markers' line strips (SoftLeaves.shapes): one per pad, each starting where the
    recursion places its joint frame (its parent's tip, then the joint's offset) and ending
    at its distal face."""
    robot, plant, leaves = chain
    q_r = stand(robot)
    q_s = np.array([0.25, 0.0, 0.001, 0.0, -0.3, -0.002, 0.2, 0.1, 0.0])
    shapes = leaves.shapes(np.concatenate([q_r, q_s]), leaves.model.createData())
    assert sorted(shapes) == sorted(n for n, _ in CHAIN)
    tips = recursion_tips(leaves, q_r, q_s)
    offsets = {"leg1_mid": 0.002 ** 2 + 0.001 ** 2, "leg1_end": 0.001 ** 2}
    for (name, length), parent in zip(CHAIN, [None, "leg1_pad", "leg1_mid"]):
        points = shapes[name]
        assert len(points) == 7
        assert np.allclose(points[-1], tips[name], atol=1e-12)
        if parent is not None:         # the joint's offset from the parent's distal face
            assert np.linalg.norm(points[0] - tips[parent]) == pytest.approx(np.sqrt(offsets[name]), abs=1e-12)
        arc = np.sum(np.linalg.norm(np.diff(points, axis=0), axis=1))
        assert 0.9 * length < arc <= length + 0.003

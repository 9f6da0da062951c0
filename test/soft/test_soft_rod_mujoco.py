"""MuJoCo's equivalent of Cosserat rods with a strain basis (sim/soft_feet.py: a pseudo-rigid-body
chain, one joint per strain component at the middle of each piece) against our statics
(Newton on the soft tree, soft/motion.py) and the closed-form small-deflection cantilever.

A horizontal cantilever, 0.2 m long, 5 mm radius, 1000 kg/m^3, E chosen so that its weight
would bend it by 0.5 % of its length (Euler-Bernoulli, ``w L^4 / (8 E I)``), clamped at a site
of an otherwise empty MuJoCo world (the plant's own builder, sim/soft_feet.py, on a module of a
robot manifest), relaxed to rest by its own Kelvin-Voigt damping. Closed forms (small
deflection; n pieces of length l = L / n, module docstring of sim/soft_feet.py):

* tip force F across the rod: the PRB chain and the PCS rod both give
  ``F L^3 / (3 E I) (1 - 1 / (4 n^2))`` (each piece's angle is the moment at its middle times
  l / E I); a GVS rod whose curvature is linear in s is exact, ``F L^3 / (3 E I)``;
* its weight w per length: the PRB chain ``w L^4 / (8 E I) (1 - 1 / (2 n^2))`` (the moment at
  each hinge), the PCS rod ``(1 - 1 / (3 n^2))`` (the moment averaged over each piece);
* an axial tip force: ``F L / (E A)`` for both. The GVS rod here has 24 steps, so that its own
  midpoint-Magnus map is within 0.1 % of the closed form too.

Tolerance 0.2 % of each deflection: the discretisation terms checked are 1.6-3.1 % (n = 4), the
geometric non-linearity at a tip angle of 0.008-0.011 rad is about theta^2 ~ 1e-4, and MuJoCo is
at rest to 1e-6 m/s. The coordinates the plant reports (its joints mapped back to the strain
coordinates) equal the statics' under the tip force to 0.3 % of their largest.
"""
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import yaml

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.sim.plant import Plant
from hybrid_dynamics.sim.soft_feet import MODAL_PIECES, add_equivalent_modules
from hybrid_dynamics.soft.coordinates import coordinate_names
from hybrid_dynamics.soft.kinematics import MaterialPoint
from hybrid_dynamics.soft.motion import Statics
from hybrid_dynamics.soft.spec import build_module
from hybrid_dynamics.soft.tree import SoftTree

ROBOTS = Path(__file__).resolve().parents[2] / "robots"
LENGTH, RADIUS, DENSITY, G = 0.2, 0.005, 1000.0, 9.81
WEIGHT = DENSITY * np.pi * RADIUS ** 2 * G                         # N/m
SECOND = np.pi * RADIUS ** 4 / 4
YOUNGS = WEIGHT * LENGTH ** 3 / (8 * SECOND * 0.005)                # w L^4 / (8 E I) = 0.005 L
ROD = {"length": LENGTH, "radius": RADIUS, "density": DENSITY, "youngs_modulus": YOUNGS, "poisson": 0.5,
       "damping_time": 0.02, "n_axial": 8}
PCS = {"type": "pcs", "segments": 4, "strains": [0, 1, 5], **ROD}
GVS = {"type": "gvs", "order": 2, "strains": [0, 1], "steps": 24, **ROD}
# the clamp: the rod's axis z along the world's x, its x axis down (its weight acts along +x)
CLAMP = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
TOL = 2e-3


def robot_with(tmp_path, body: dict, joint: dict = None):
    """jethexa with the rod as leg 1's soft module (the contact on its tip), on ``joint``
    (default fixed)."""
    doc = yaml.safe_load((ROBOTS / "jethexa_soft" / "robot.yaml").read_text())
    doc.update(name="jethexa_rod", urdf=str(ROBOTS / "jethexa" / "jethexa.urdf"),
               mjcf=str(ROBOTS / "jethexa" / "jethexa.xml"))
    doc["soft_modules"] = [{"name": "rod", "frame": "leg1_foot", "joint": joint or {"type": "fixed"}, "body": body,
                            "contact": [0, 0, LENGTH]}]
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_robot(str(path))


def equivalent_in_empty_world(robot, gravity=False, clamp=CLAMP, damping=0.0):
    """The robot's soft module alone, clamped at a site of an empty world (its root frame
    ``clamp`` in the world), by the plant's builder: (model, data, Equivalent). ``damping``:
    added to the module joint's axes (a free hinge relaxes to rest only with it)."""
    spec = mujoco.MjSpec()
    spec.option.timestep = 1e-4
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST      # the robots' (damping implicit, tendons' too)
    spec.option.gravity = [0, 0, -G] if gravity else [0, 0, 0]
    x, y, z, w = pin.Quaternion(clamp).coeffs()
    spec.worldbody.add_site(name="leg1_foot", quat=[w, x, y, z])
    eq = add_equivalent_modules(spec, robot)
    model = spec.compile()
    root = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "rod_root")
    for j in np.flatnonzero(model.jnt_bodyid == root):                  # the module joint's own axes
        model.dof_damping[model.jnt_dofadr[j]] = damping
    return model, mujoco.MjData(model), eq


def mujoco_rest(robot, force=np.zeros(3), gravity=False, seconds=3.0, clamp=CLAMP, damping=0.0):
    """The rod clamped in an empty world, relaxed to rest under ``force`` (rod frame, dead
    load at the tip) and/or its weight: (tip displacement in the rod frame, the plant's
    coordinates, the largest joint speed left)."""
    model, data, eq = equivalent_in_empty_world(robot, gravity, clamp, damping)
    tip = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "rod_tip")
    face = np.array([0.0, 0.0, LENGTH / (2 * pieces(robot))])      # the tip: half a piece past the last joints
    for _ in range(int(seconds / model.opt.timestep)):
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        p_tip = data.xpos[tip] + data.xmat[tip].reshape(3, 3) @ face
        f = clamp @ force
        data.xfrc_applied[tip] = np.concatenate([f, np.cross(p_tip - data.xipos[tip], f)])
        mujoco.mj_step(model, data)
    mujoco.mj_kinematics(model, data)
    p_tip = data.xpos[tip] + data.xmat[tip].reshape(3, 3) @ face
    adr, dof = addresses(model, eq)
    return clamp.T @ p_tip - [0, 0, LENGTH], eq.to_coordinates @ data.qpos[adr], np.abs(data.qvel[dof]).max()


def addresses(model, eq):
    """(qpos, dof) addresses of the equivalent's joints."""
    ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in eq.joints]
    return [model.jnt_qposadr[j] for j in ids], [model.jnt_dofadr[j] for j in ids]


def pieces(robot) -> int:
    body = robot.soft_modules[0].block["body"]
    return body.get("segments") or body.get("steps") or (MODAL_PIECES if body["type"] == "modal" else 1)  # CC: one


def our_tree(robot, gravity=False, clamp=CLAMP) -> SoftTree:
    """Our model of the module, its root frame ``clamp`` in a world of gravity (0, 0, -G)."""
    s = robot.soft_modules[0]
    module = build_module(robot.soft_doc, s.where, s.block, None, s.joint)
    return SoftTree([module], gravity=clamp.T @ [0, 0, -G] if gravity else [0, 0, 0])


def ours_rest(robot, force=np.zeros(3), gravity=False, clamp=CLAMP):
    """Our statics of the same rod (Newton, soft/motion.py): (tip displacement, coordinates).
    A dead tip load: its generalized force ``J(q)^T F`` re-evaluated until q stops changing."""
    s = robot.soft_modules[0]
    tree = our_tree(robot, gravity, clamp)
    tip = MaterialPoint(tree, s.name, [0, 0, LENGTH])
    statics = Statics(tree, range(tree.nq))
    q = np.zeros(tree.nq)
    for _ in range(20):
        q_new = statics.solve(q, tau=tip(q, np.zeros(tree.nv))[1].T @ force)
        if np.abs(q_new - q).max() < 1e-13:
            break
        q = q_new
    return tip(q, np.zeros(tree.nv))[0] - [0, 0, LENGTH], q


@pytest.mark.parametrize("body", [PCS, GVS], ids=["pcs", "gvs"])
def test_the_plant_takes_a_strain_rod_and_reports_its_coordinates(tmp_path, body):
    """The plant refused any body but a CC rod (InputError at load); it now builds the PRB chain
    and reports the rod's own coordinates, named as the controller reads them."""
    robot = robot_with(tmp_path, body)
    plant = Plant(robot)
    names, positions = plant.joint_states()[0], plant.joint_states()[1]
    assert plant.soft_names == coordinate_names(robot) == [f"rod_q{k}" for k in range(len(plant.soft_names))]
    assert names[-len(plant.soft_names):] == plant.soft_names and np.all(np.isfinite(positions))
    assert len(plant.soft.joints) == pieces(robot) * len(body["strains"])     # one joint per strain and piece


def test_pcs_cantilever_under_a_tip_force_equals_statics_and_the_closed_form(tmp_path):
    robot = robot_with(tmp_path, PCS)
    n = pieces(robot)
    F = np.array([0.005 * LENGTH * 3 * YOUNGS * SECOND / LENGTH ** 3, 0.0, 0.0])     # 0.5 % of L by the closed form
    mj, q_mj, speed = mujoco_rest(robot, F)
    ours, q = ours_rest(robot, F)
    closed = F[0] * LENGTH ** 3 / (3 * YOUNGS * SECOND)
    assert speed < 1e-6
    assert abs(mj[0] / closed - (1 - 1 / (4 * n ** 2))) < TOL, mj[0] / closed
    assert abs(ours[0] / closed - (1 - 1 / (4 * n ** 2))) < TOL, ours[0] / closed
    assert np.abs(q_mj - q).max() < 3e-3 * np.abs(q).max(), (q_mj, q)
    print(f"\nPCS, tip force: MuJoCo {mj[0] / closed:.5f}, ours {ours[0] / closed:.5f} of the closed form "
          f"(1 - 1/(4 n^2) = {1 - 1 / (4 * n ** 2):.5f}); coordinates apart {np.abs(q_mj - q).max() / np.abs(q).max():.1e}")


def test_pcs_cantilever_under_its_weight_equals_statics_and_the_closed_form(tmp_path):
    robot = robot_with(tmp_path, PCS)
    n = pieces(robot)
    mj, _, speed = mujoco_rest(robot, gravity=True)
    ours, _ = ours_rest(robot, gravity=True)
    closed = WEIGHT * LENGTH ** 4 / (8 * YOUNGS * SECOND)
    assert speed < 1e-6
    assert abs(mj[0] / closed - (1 - 1 / (2 * n ** 2))) < TOL, mj[0] / closed
    assert abs(ours[0] / closed - (1 - 1 / (3 * n ** 2))) < TOL, ours[0] / closed
    print(f"\nPCS, weight: MuJoCo {mj[0] / closed:.5f} (1 - 1/(2 n^2) = {1 - 1 / (2 * n ** 2):.5f}), "
          f"ours {ours[0] / closed:.5f} (1 - 1/(3 n^2) = {1 - 1 / (3 * n ** 2):.5f}) of the closed form")


def test_pcs_cantilever_stretches_under_an_axial_force_as_e_a(tmp_path):
    robot = robot_with(tmp_path, PCS)
    F = np.array([0.0, 0.0, 50.0])
    mj, q_mj, _ = mujoco_rest(robot, F, seconds=0.5)
    ours, q = ours_rest(robot, F)
    closed = F[2] * LENGTH / (YOUNGS * np.pi * RADIUS ** 2)
    assert abs(mj[2] / closed - 1) < TOL and abs(ours[2] / closed - 1) < TOL, (mj[2] / closed, ours[2] / closed)
    assert np.abs(q_mj - q).max() < 3e-3 * np.abs(q).max(), (q_mj, q)
    print(f"\nPCS, axial force: MuJoCo {mj[2] / closed:.5f}, ours {ours[2] / closed:.5f} of F L / (E A)")


def test_gvs_cantilever_under_a_tip_force_equals_statics_and_the_closed_form(tmp_path):
    """Linear curvature: the GVS rod of order 2 is exact; its PRB chain of ``steps`` pieces
    is off by 1 / (4 n^2); the plant's least-squares coordinates are the rod's."""
    robot = robot_with(tmp_path, GVS)
    n = pieces(robot)
    F = np.array([0.0, 0.005 * LENGTH * 3 * YOUNGS * SECOND / LENGTH ** 3, 0.0])
    mj, q_mj, speed = mujoco_rest(robot, F)
    ours, q = ours_rest(robot, F)
    closed = F[1] * LENGTH ** 3 / (3 * YOUNGS * SECOND)
    assert speed < 1e-6
    assert abs(ours[1] / closed - 1) < TOL, ours[1] / closed
    assert abs(mj[1] / closed - (1 - 1 / (4 * n ** 2))) < TOL, mj[1] / closed
    assert np.abs(q_mj - q).max() < 3e-3 * np.abs(q).max(), (q_mj, q)
    print(f"\nGVS, tip force: MuJoCo {mj[1] / closed:.5f} (1 - 1/(4 n^2) = {1 - 1 / (4 * n ** 2):.5f}), ours "
          f"{ours[1] / closed:.5f} of the closed form; coordinates apart {np.abs(q_mj - q).max() / np.abs(q).max():.1e}")


def test_a_body_the_plant_cannot_build_is_refused_naming_the_module(tmp_path):
    robot = robot_with(tmp_path, {"type": "gvs", "order": 4, "strains": [0, 1], "steps": 2, **ROD})
    with pytest.raises(InputError, match="rod.*more steps"):
        Plant(robot)
    lvp = {"type": "lvp", "length": LENGTH, "radius": RADIUS, "density": DENSITY, "elastic_coefficient": 1e5,
           "primitives": ["stretch", "source"], "relax_face": True}
    with pytest.raises(InputError) as refused:
        Plant(robot_with(tmp_path, lvp))
    text = str(refused.value)                       # which module, why, and what to do instead
    assert "'rod'" in text and "lvp body" in text and "constant volume" in text and "soft/motion.py" in text
    assert "soft_modules" in text and "robot.yaml" in text


# hanging from a hinge: the rod's axis z down, its x along the world's x (its y along -y)
HANGING = np.diag([1.0, -1.0, -1.0])
HINGE = {"type": "revolute", "axis": [0, 1, 0]}
# 20 times softer than the cantilevers above: the swung rod bends visibly
SOFT = {**ROD, "youngs_modulus": YOUNGS / 20}
SOFT_PCS, SOFT_CC = {**PCS, **SOFT}, {"type": "cc", "elongation": True, **SOFT}


@pytest.mark.parametrize("body, bend_tol, tip_tol", [(SOFT_PCS, 0.02, 2e-3), (SOFT_CC, 0.15, 1.5e-2)],
                         ids=["pcs", "cc"])
def test_a_rod_on_a_revolute_joint_swung_by_a_tip_force_equals_statics(tmp_path, body, bend_tol, tip_tol):
    """A module on a revolute joint: the rod hangs from a free hinge (axis y) and a horizontal
    tip force of 0.15 of its weight swings it out (0.285 rad; a rigid rod 0.291) and bends it.
    MuJoCo's equivalent (a hinge at the root, then the PRB chain) at rest against our statics
    (Newton on the module, joint and body coordinates together). The rigid swing is the same
    in both (each piece carries its length's mass); what the bending takes off it differs by
    the PRB's discretisation, 1 / (4 n^2) of it at first order: within 2 % of it for the PCS rod
    (n = 4: 1.6 %), 15 % for the CC rod (one piece, one hinge at its middle, where the pinned
    rod's moment is largest, against a constant curvature: 25 % bound). The tip likewise, to
    0.2 % and 1.5 % of its displacement (measured 0.07 % and 1.1 %)."""
    robot = robot_with(tmp_path, body, HINGE)
    plant = Plant(robot)
    assert plant.soft_names[0] == "rod_q0" and plant.soft.joints[0] == "rod_q0"      # the hinge comes first
    F = np.array([0.15 * WEIGHT * LENGTH, 0.0, 0.0])
    mj, q_mj, speed = mujoco_rest(robot, F, gravity=True, clamp=HANGING, damping=4e-3, seconds=4.0)
    ours, q = ours_rest(robot, F, gravity=True, clamp=HANGING)
    rigid = np.arctan(2 * F[0] / (WEIGHT * LENGTH))               # a rigid rod's swing: F L cos = w L L/2 sin
    print(f"\n{body['type']} on a hinge: swing MuJoCo {q_mj[0]:.5f} rad, ours {q[0]:.5f} (rigid rod {rigid:.5f}: "
          f"the bending's part apart {abs(q_mj[0] - q[0]) / abs(rigid - q[0]):.3f}); tip apart "
          f"{np.linalg.norm(mj - ours) / np.linalg.norm(ours):.1e} of its {1e3 * np.linalg.norm(ours):.1f} mm")
    assert speed < 1e-5
    assert abs(rigid - q[0]) > 3e-3                                # the bending matters: not a rigid swing
    assert abs(q_mj[0] - q[0]) < bend_tol * abs(rigid - q[0]), (q_mj[0], q[0], rigid)
    assert np.linalg.norm(mj - ours) < tip_tol * np.linalg.norm(ours), (mj, ours)


def test_a_rod_on_a_revolute_joint_swings_at_our_models_frequency(tmp_path):
    """The hanging rod on its free hinge, released from 0.02 rad: MuJoCo's period of the swing
    against our model's (the lowest eigenvalue of M^-1 K at the hanging equilibrium, K the
    statics' tangent: gravity and elasticity) within 0.3 % (the PRB's bending flexibility
    differs from the rod's by its 1 / (4 n^2) terms, and bending lowers the swing's frequency
    by about (omega / omega_bending)^2 ~ 0.3 %: a part of that; MuJoCo's step is 0.1 ms)."""
    robot = robot_with(tmp_path, SOFT_PCS, HINGE)
    tree = our_tree(robot, gravity=True, clamp=HANGING)
    statics = Statics(tree, range(tree.nq))
    q_eq = statics.solve(np.zeros(tree.nq))
    M, _ = tree.mid(q_eq, np.zeros(tree.nv))
    omega = np.sqrt(np.sort(np.linalg.eigvals(np.linalg.solve(M, statics.tangent(q_eq))).real)[0])
    mass, inertia = WEIGHT * LENGTH / G, WEIGHT * LENGTH / G * (LENGTH ** 2 / 3 + RADIUS ** 2 / 4)
    rigid = np.sqrt(mass * G * LENGTH / 2 / inertia)
    model, data, eq = equivalent_in_empty_world(robot, gravity=True, clamp=HANGING)
    adr, _ = addresses(model, eq)
    data.qpos[adr[0]] = 0.02
    t, angle = [], []
    for _ in range(int(2.5 / model.opt.timestep)):
        mujoco.mj_step(model, data)
        t.append(data.time)
        angle.append(data.qpos[adr[0]])
    t, angle = np.array(t), np.array(angle)
    down = np.flatnonzero((angle[:-1] > 0) & (angle[1:] <= 0))          # downward zero crossings
    crossings = t[down] + angle[down] / (angle[down] - angle[down + 1]) * model.opt.timestep
    period = np.diff(crossings).mean()
    print(f"\nswing on the hinge: MuJoCo {2 * np.pi / period:.4f} rad/s, ours {omega:.4f} rad/s, "
          f"rigid rod {rigid:.4f} rad/s ({len(crossings) - 1} periods)")
    assert len(crossings) >= 3
    assert 1 - omega / rigid > 3e-4                                  # the rod's flexibility is in it ...
    assert abs(2 * np.pi / period / omega - 1) < 1e-4, (2 * np.pi / period, omega)   # ... and in MuJoCo's


def test_a_module_joint_of_several_axes_composes_as_ours(tmp_path):
    """An ``axes`` joint (revolute, prismatic, revolute, placed by xyz and rpy): MuJoCo
    composes a body's joints in sequence, each in the frame the previous ones moved, as our
    AxesJoint does. The rod straight, random joint values: the tip at the same place (1e-12 m)."""
    joint = {"type": "axes", "axes": [["revolute", [0, 1, 0]], ["prismatic", [1, 0, 0]], ["revolute", [1, 0, 1]]],
             "xyz": [0.01, -0.02, 0.03], "rpy": [0.3, -0.2, 0.5]}
    robot = robot_with(tmp_path, PCS, joint)
    tree = our_tree(robot)
    tip = MaterialPoint(tree, "rod", [0, 0, LENGTH])
    model, data, eq = equivalent_in_empty_world(robot)
    adr, _ = addresses(model, eq)
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "rod_tip")
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = np.zeros(tree.nq)
        q[:3] = rng.uniform(-1.0, 1.0, 3)
        data.qpos[adr] = np.linalg.pinv(eq.to_coordinates) @ q
        mujoco.mj_kinematics(model, data)
        p_mj = CLAMP.T @ (data.xpos[body] + data.xmat[body].reshape(3, 3) @ [0, 0, LENGTH / (2 * pieces(robot))])
        assert np.abs(p_mj - tip(q, np.zeros(tree.nv))[0]).max() < 1e-12, (p_mj, tip(q, np.zeros(tree.nv))[0])

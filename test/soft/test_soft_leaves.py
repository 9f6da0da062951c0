"""Soft modules declared in a robot manifest and hung as leaves of the rigid Pinocchio tree
(soft/leaves.py): the combined M and h against two references that do not use Pinocchio's
recursion plus a leaf wrench:

* floating base: one soft recursion of the whole robot [Pustina 2024, Alg. 3] (every rigid
  body a module, the pads attached to their tibia modules), 1e-9 relative;
* fixed base: the Euler-Lagrange equations by automatic differentiation of the kinetic and
  potential energy of every quadrature point of the whole robot (no recursion), 1e-9 relative;

and the contact material points' Jacobian and ``Jdot v`` against central differences. Bad
``soft_modules`` blocks are InputErrors naming the manifest, the module and the field.
"""
import copy
import functools
import operator

import numpy as np
import pinocchio as pin
import pytest
import yaml

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.paths import robots_dir
from hybrid_dynamics.soft.from_pinocchio import tree_from_pinocchio
from hybrid_dynamics.soft.lagrange import LagrangeReference
from hybrid_dynamics.soft.leaves import SoftLeaves
from hybrid_dynamics.soft.spec import build_module
from hybrid_dynamics.soft.tree import SoftTree

MANIFEST = robots_dir() / "jethexa_soft" / "robot.yaml"
URDF = robots_dir() / "jethexa" / "jethexa.urdf"


def two_pads(tmp_path, mutate=None):
    """The shipped manifest with pads on legs 1 and 4 only (a smaller whole-robot reference);
    leg 4's pad is a planar CC rod with elongation on a revolute ankle (a leaf with joint and
    body coordinates)."""
    doc = yaml.safe_load(MANIFEST.read_text())
    doc["urdf"] = str(URDF)
    doc.pop("mjcf")
    pads = doc["soft_modules"]
    first = copy.deepcopy(pads[0])
    other = copy.deepcopy(pads[3])
    other["joint"] = {"type": "revolute", "axis": [0, 1, 0], "xyz": [-0.02, 0, 0], "rpy": [0, 1.5707963267948966, 0]}
    other["body"] = dict(other["body"], planar=True, length=0.02, youngs_modulus=2.0e5)
    other["contact"] = [0, 0, 0.02]
    doc["soft_modules"] = [first, other]
    if mutate:
        mutate(doc)
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def whole_tree(robot) -> SoftTree:
    """Every rigid body a module (Pinocchio order), each pad attached to its frame's joint
    module with the frame placement composed into its joint placement."""
    base = tree_from_pinocchio(robot.model)
    modules = list(base.modules)
    for s in robot.soft_modules:
        frame = robot.model.frames[robot.model.getFrameId(s.frame)]
        own = pin.SE3(pin.rpy.rpyToMatrix(*s.joint.get("rpy", [0, 0, 0])), np.array(s.joint.get("xyz", [0, 0, 0]), float))
        placed = frame.placement * own
        joint = dict(s.joint, xyz=placed.translation.tolist(), rpy=pin.rpy.matrixToRpy(placed.rotation).tolist())
        modules.append(build_module(robot.soft_doc, s.where, s.block, robot.model.names[frame.parentJoint], joint))
    return SoftTree(modules, gravity=np.array(robot.model.gravity.linear))


def random_state(rng, robot, leaves):
    q_r = pin.randomConfiguration(robot.model, -np.ones(robot.nq), np.ones(robot.nq)) if robot.floating \
        else robot.q_stand + 0.4 * rng.standard_normal(robot.nq)
    q_r = np.asarray(q_r, float)
    if robot.floating:
        q_r[:3] = rng.standard_normal(3)
    q = np.concatenate([q_r, 0.3 * rng.standard_normal(leaves.ns)])
    v = rng.standard_normal(leaves.nv)
    return q, v


def rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


def test_floating_base_equals_the_whole_robot_soft_recursion(tmp_path):
    robot = load_robot(two_pads(tmp_path))
    leaves = SoftLeaves(robot)
    assert leaves.ns == 3 + 1 + 2 and len(leaves.trees) == 2 and leaves.mass > 0
    ref = whole_tree(robot)
    assert ref.nv == leaves.nv
    rng = np.random.default_rng(7)
    for _ in range(4):
        q, v = random_state(rng, robot, leaves)
        M, h = leaves.mass_and_nle(q, v)
        M_ref, h_ref = ref.mid(q, v)
        assert np.abs(M[robot.nv:, :robot.nv]).max() > 1e-4           # the pads are coupled
        assert rel(M, M_ref) < 1e-9 and rel(h, h_ref) < 1e-9
        # without the pads the rigid rows would be Pinocchio's alone: the test can tell
        assert rel(M[:robot.nv, :robot.nv], pin.crba(robot.model, robot.model.createData(), q[:robot.nq])) > 1e-6


def test_fixed_base_equals_euler_lagrange_by_automatic_differentiation(tmp_path):
    robot = load_robot(two_pads(tmp_path), base="fixed")
    assert not robot.floating
    leaves = SoftLeaves(robot)
    tree = whole_tree(robot)
    el = LagrangeReference(tree)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, v = random_state(rng, robot, leaves)
        M, h = leaves.mass_and_nle(q, v)
        M_el, Q_el = el(q, v, np.zeros(leaves.nv))
        s = tree.elastic_force(q, v)                             # visco-elastic forces are outside EL
        assert np.abs(s).max() > 0
        assert rel(M, M_el) < 1e-9 and rel(h - s, Q_el) < 1e-9


def test_contact_points_jacobian_and_bias_against_central_differences(tmp_path):
    robot = load_robot(two_pads(tmp_path))
    leaves = SoftLeaves(robot)
    rng = np.random.default_rng(11)
    q, v = random_state(rng, robot, leaves)
    p, J, bias = leaves.contact_points(q, v)
    assert p.shape == (2, 3) and J.shape == (6, leaves.nv)

    def step(q, dv):
        return np.concatenate([pin.integrate(robot.model, q[:robot.nq], dv[:robot.nv]), q[robot.nq:] + dv[robot.nv:]])

    eps = 1e-6
    J_fd = np.column_stack([(leaves.contact_points(step(q, eps * e), v)[0] -
                             leaves.contact_points(step(q, -eps * e), v)[0]).ravel() / (2 * eps)
                            for e in np.eye(leaves.nv)])
    assert np.abs(J - J_fd).max() < 1e-7 * max(1.0, np.abs(J).max())
    # Jdot v: derivative of J(q(t)) v along the motion, central differences in time
    dt = 1e-6
    Jv = [leaves.contact_points(step(q, s * dt * v), v)[1] @ v for s in (1, -1)]
    assert np.abs(bias - (Jv[0] - Jv[1]) / (2 * dt)).max() < 1e-5 * max(1.0, np.abs(bias).max())


def test_shipped_pads_rest_at_the_rigid_feet():
    robot = load_robot("jethexa_soft")
    leaves = SoftLeaves(robot)
    q = leaves.neutral(robot.q_stand)
    p, _, _ = leaves.contact_points(q, np.zeros(leaves.nv))
    model, data = robot.model, robot.model.createData()
    pin.framesForwardKinematics(model, data, robot.q_stand)
    feet = np.array([data.oMf[model.getFrameId(c.frame)].translation for c in robot.contacts])
    assert np.abs(p - feet).max() < 1e-12
    assert leaves.contact_roots == [c.frame for c in robot.contacts]


def _set(path, value):
    """A manifest change: the field at ``path`` set to ``value`` (removed for KeyError)."""
    def mutate(doc):
        node = functools.reduce(operator.getitem, path[:-1], doc)
        node.pop(path[-1]) if value is KeyError else node.__setitem__(path[-1], value)
    return mutate


# what -> (key path under soft_modules as "module.key.key", new value or KeyError to remove it)
BAD = {
    "unknown frame": ("0.frame", "leg9_foot"),
    "no frame nor parent": ("0.frame", KeyError),
    "negative density": ("0.body.density", -1.0),
    "NaN modulus": ("1.body.youngs_modulus", float("nan")),
    "missing radius": ("1.body.radius", KeyError),
    "unknown body": ("0.body.type", "jelly"),
    "contact not a point": ("0.contact", [0, 0]),
    "free-flyer leaf": ("0.joint.type", "free_flyer"),
    "unknown key": ("0.colour", "red"),
}


@pytest.mark.parametrize("what", list(BAD))
def test_bad_soft_module_blocks_name_the_file_module_and_field(tmp_path, what):
    where, value = BAD[what]
    path = ("soft_modules",) + tuple(int(k) if k.isdigit() else k for k in where.split("."))
    manifest = two_pads(tmp_path, _set(path, value))
    with pytest.raises(InputError) as err:
        load_robot(manifest)
    text = str(err.value)
    assert str(manifest) in text and path[-1] in text
    assert ("leg1_pad" if path[1] == 0 else "leg4_pad") in text


def test_bad_distal_face_is_an_input_error_at_build(tmp_path):
    face = [[0, 0, 0.03], [0.01, 0, 0.03], [0.01, 0.01, 0.03]]        # not orthogonal
    robot = load_robot(two_pads(tmp_path, _set(("soft_modules", 0, "body", "face"), face)))
    with pytest.raises(InputError) as err:
        SoftLeaves(robot)
    assert "leg1_pad" in str(err.value) and "face" in str(err.value)

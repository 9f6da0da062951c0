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
from hybrid_dynamics.soft.kinematics import MaterialPoints
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


def chains(tmp_path, mutate=None):
    """The shipped manifest with soft modules hung from other soft modules on legs 1 and 4
    only, the contact on the last of each chain:

    * leg 1: a compliant shank (spatial CC rod with elongation) carrying a planar pad with
      elongation on a revolute ankle (the contact on its tip) and, beside it, a flap (spatial
      CC rod, no contact): a tree of depth 2;
    * leg 4: a shank, a middle rod hung with an offset and a tilt, and a pad hung from that
      (depth 3), the contact on an off-axis material point of the pad."""
    doc = yaml.safe_load(MANIFEST.read_text())
    doc["urdf"] = str(URDF)
    doc.pop("mjcf")
    rod = {"type": "cc", "density": 1100, "elongation": True, "poisson": 0.45, "damping_time": 0.01, "n_axial": 2}
    shank = {"joint": {"type": "fixed", "xyz": [-0.06, 0, 0], "rpy": [0, 1.5707963267948966, 0]},
             "body": {**rod, "length": 0.03, "radius": 0.01, "youngs_modulus": 5.0e6}}
    doc["soft_modules"] = [
        {"name": "leg1_shank", "frame": "leg1_foot", **shank},
        {"name": "leg1_pad", "parent": "leg1_shank",
         "joint": {"type": "revolute", "axis": [0, 1, 0], "xyz": [0, 0, 0.001]},
         "body": {**rod, "planar": True, "length": 0.02, "radius": 0.012, "youngs_modulus": 3.0e5},
         "contact": [0, 0, 0.02]},
        {"name": "leg1_flap", "parent": "leg1_shank", "joint": {"type": "fixed", "xyz": [0.01, 0, 0.01],
                                                               "rpy": [0, 1.2, 0]},
         "body": {**rod, "elongation": False, "length": 0.015, "radius": 0.004, "youngs_modulus": 1.0e6}},
        {"name": "leg4_shank", "frame": "leg4_foot", **shank},
        {"name": "leg4_mid", "parent": "leg4_shank", "joint": {"type": "fixed", "xyz": [0.002, -0.001, 0.0],
                                                              "rpy": [0.3, 0.0, 0.2]},
         "body": {**rod, "length": 0.025, "radius": 0.01, "youngs_modulus": 1.0e6}},
        {"name": "leg4_pad", "parent": "leg4_mid", "joint": {"type": "fixed", "xyz": [0.0, 0.0, 0.001],
                                                            "rpy": [0.0, -0.4, 0.0]},
         "body": {**rod, "length": 0.02, "radius": 0.008, "youngs_modulus": 5.0e5},
         "contact": [0.003, 0, 0.02]},
    ]
    if mutate:
        mutate(doc)
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


MANIFESTS = {"pads": two_pads, "chains": chains}


def whole_tree(robot) -> SoftTree:
    """Every rigid body a module (Pinocchio order), each module hung from a rigid frame
    attached to that frame's joint module with the frame placement composed into its joint
    placement, each module hung from another soft module attached to it as declared."""
    base = tree_from_pinocchio(robot.model)
    modules = list(base.modules)
    for s in robot.soft_modules:
        if s.parent is not None:
            modules.append(build_module(robot.soft_doc, s.where, s.block, s.parent, s.joint))
            continue
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


@pytest.mark.parametrize("manifest", list(MANIFESTS))
def test_floating_base_equals_the_whole_robot_soft_recursion(tmp_path, manifest):
    robot = load_robot(MANIFESTS[manifest](tmp_path))
    leaves = SoftLeaves(robot)
    assert leaves.ns == {"pads": 3 + 1 + 2, "chains": 3 + 3 + 2 + 3 + 3 + 3}[manifest]
    assert len(leaves.trees) == 2 and leaves.mass > 0
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


@pytest.mark.parametrize("manifest", list(MANIFESTS))
def test_fixed_base_equals_euler_lagrange_by_automatic_differentiation(tmp_path, manifest):
    robot = load_robot(MANIFESTS[manifest](tmp_path), base="fixed")
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


@pytest.mark.parametrize("manifest", list(MANIFESTS))
def test_contact_points_jacobian_and_bias_against_central_differences(tmp_path, manifest):
    robot = load_robot(MANIFESTS[manifest](tmp_path))
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


@pytest.mark.parametrize("manifest", list(MANIFESTS))
def test_contact_points_equal_the_whole_robot_recursions_material_points(tmp_path, manifest):
    """Position, Jacobian and ``Jdot v`` of each contact against the material points of the
    whole robot's soft tree (soft/kinematics.py: the recursion's forward pass through every
    rigid body and soft module, no root frame, no Pinocchio), 1e-12 relative; on a chain the
    point moves with every module above it (their columns are not zero)."""
    robot = load_robot(MANIFESTS[manifest](tmp_path))
    leaves = SoftLeaves(robot)
    ref = MaterialPoints(whole_tree(robot), [(s.name, s.contact) for s in robot.soft_modules if s.has_contact])
    rng = np.random.default_rng(13)
    for _ in range(3):
        q, v = random_state(rng, robot, leaves)
        p, J, bias = leaves.contact_points(q, v)
        p_ref, J_ref, bias_ref = ref(q, v)
        assert rel(p.ravel(), p_ref) < 1e-12 and rel(J, J_ref) < 1e-12 and rel(bias, bias_ref) < 1e-12
    for s in robot.soft_modules:
        if s.has_contact and s.parent is not None:
            row, cols = 3 * leaves.contact_roots.index(s.root), leaves.slices[s.parent]
            assert np.abs(J[row:row + 3, robot.nv + cols.start:robot.nv + cols.stop]).max() > 1e-3


@pytest.mark.parametrize("name", ["jethexa_soft", "jethexa_shank", "jethexa_cosserat"])
def test_shipped_pads_rest_at_the_rigid_feet(name):
    robot = load_robot(name)
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
    "Poisson ratio -1": ("1.body.poisson", -1.0),        # was a ZeroDivisionError at build
    "fractional quadrature order": ("0.body.n_axial", 2.5),      # was a TypeError at build
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


# bad chains: what -> (key path under soft_modules, new value or KeyError, the module named)
BAD_CHAINS = {
    "parent declared later": ("4.parent", "leg4_pad", "leg4_mid"),
    "unknown parent": ("1.parent", "leg9_shank", "leg1_pad"),
    "frame and parent": ("1.frame", "leg1_foot", "leg1_pad"),
    "two contacts in one chain": ("3.contact", [0, 0, 0.03], "leg4_pad"),
    "chain not under a contact frame": ("3.frame", "leg4_tibia", "leg4_pad"),
    "free flyer inside a chain": ("4.joint.type", "free_flyer", "leg4_mid"),
    "negative length inside a chain": ("4.body.length", -0.02, "leg4_mid"),
}


@pytest.mark.parametrize("what", list(BAD_CHAINS))
def test_bad_chains_name_the_file_module_and_field(tmp_path, what):
    where, value, module = BAD_CHAINS[what]
    path = ("soft_modules",) + tuple(int(k) if k.isdigit() else k for k in where.split("."))
    manifest = chains(tmp_path, _set(path, value))
    with pytest.raises(InputError) as err:
        load_robot(manifest)
    text = str(err.value)
    field = {"two contacts in one chain": "contact", "chain not under a contact frame": "contact"}.get(what, path[-1])
    assert str(manifest) in text and field in text and f"'{module}'" in text, text


def test_a_relaxed_face_inside_a_chain_is_an_input_error_at_build(tmp_path):
    """A relaxed distal face (LVP body) is not a frame a child can hang from [Pustina 2024,
    Assumption 2]: refused when the leaves are built, naming the module and the field; the
    same body as the last of the chain builds."""
    lvp = {"type": "lvp", "length": 0.025, "radius": 0.01, "density": 1100, "primitives": ["stretch_linear"],
           "elastic_coefficient": 1.0e5, "relax_face": True}
    robot = load_robot(chains(tmp_path, _set(("soft_modules", 4, "body"), lvp)))
    with pytest.raises(InputError) as err:
        SoftLeaves(robot)
    text = str(err.value)
    assert "leg4_mid" in text and "relax_face" in text and str(robot.manifest) in text, text

    def last(doc):
        doc["soft_modules"][5]["body"] = lvp
    assert SoftLeaves(load_robot(chains(tmp_path, last))).ns == 3 + 3 + 2 + 3 + 3 + 1

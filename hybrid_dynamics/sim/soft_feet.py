"""MuJoCo's equivalent of soft modules: each strain rod of ``soft_modules`` (constant curvature,
piecewise-constant strain, variable strain), on its module joint, as a pseudo-rigid-body (PRB)
chain, rigid links joined by springs, added to the rigid robot's MJCF at load. Other bodies
are refused at load, saying why and what to do (``NO_EQUIVALENT``).

A rod of length L is cut into n equal pieces of length l = L / n: one for a constant-curvature
(``cc``) rod, its ``segments`` for a piecewise-constant-strain (``pcs``) rod, its ``steps`` (the
midpoint-Magnus steps of its map) for a variable-strain (``gvs``) rod. At the middle of each
piece a joint per strain component the rod's basis uses: hinges about the section's x, y, z
axes for the two curvatures and the twist, slides along x, y, z for the two shears and the
stretch. The links between the joints are rigid cylinders: a proximal half piece fixed at the
rod's root, whole pieces, a distal half piece carrying the contact sphere at the tip; each
takes the mass of its length.

* A joint's value is the piece's strain times l, ``theta_j = l Phi(s_j) q`` at the piece's
  middle ``s_j`` (the rod's own midpoint rule), and its stiffness the section's stiffness over
  l: ``E I / l`` (bending), ``G J / l = 2 G I / l`` (twist), ``G A / l`` (shear), ``E A / l``
  (stretch), damping ``eta`` times each (the Kelvin-Voigt law of the soft model), zero spring
  reference (the rod at rest is straight). The spring energy is then the rod's, ``1/2 q^T K q``,
  exactly for constant strain per piece (CC, PCS).
* A tip force gives each piece the tip angle the rod's own statics gives it; the moment at a
  hinge is exactly the load's (each link carries the mass of its length), so under a tip force
  the PRB and the PCS rod deflect alike to first order, ``F L^3 / (3 E I) (1 - 1 / (4 n^2))``,
  and under their weight ``w L^4 / (8 E I)`` times ``1 - 1 / (2 n^2)`` (PRB, the moment at the
  hinge) against ``1 - 1 / (3 n^2)`` (PCS, the moment averaged over the piece)
  (test/soft/test_soft_rod_mujoco.py). The CC pad's tip height under bending is off at second
  order (``L theta^2 / 4`` against ``L theta^2 / 6``).
* The plant reports the model's coordinates, ``q = B^+ theta`` with ``B`` the stacked
  ``l Phi(s_j)`` (exact for CC and PCS, where B is invertible; the least-squares fit of the
  basis for a GVS rod, whose PRB has more joints than coordinates). A CC rod's joints are its
  coordinates (B a signed identity): they are named after them, ``<module>_q<k>``, the planar
  rod's hinge about -y.

A module's own joint (``revolute``, ``prismatic``, ``axes``) becomes MuJoCo hinges and slides on
the rod's proximal link, at its placement, in the order given: MuJoCo composes a body's joints
in sequence, each in the frame the previous ones moved, as soft/joints.py's ``AxesJoint``. They
carry no spring (the model's joints have none) and come first among the module's coordinates,
``<module>_q0`` ... (test/soft/test_soft_rod_mujoco.py: a rod on a free hinge swung by a tip
force, and its swing's frequency, against our statics and our model's linearisation).

Why not MuJoCo's elastic cable (the ``mujoco.elasticity.cable`` plugin, shipped with the wheel):
its elements are joined by ball joints (bending and twist only: no stretch nor shear, which our
rods and pads have), and a chain of ball joints has no one-to-one map to the strain coordinates
the controller reads from /joint_states; the PRB chain has one joint per strain coordinate and
piece, and stays stable at the 1 ms step.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import mujoco
import numpy as np
import pinocchio as pin

from ..errors import InputError
from ..model.soft_fields import BODY_FIELDS
from ..soft.bodies import ModalBody, StrainRod
from ..soft.joints import AxesJoint
from ..soft.spec import build_module

STRAINS = ("kx", "ky", "kz", "sx", "sy", "sz")      # rows of a strain basis Phi (angular first)
MODAL_PIECES = 10          # links of a modal body's chain (its kinetic energy to O(1 / n^2))
# why a body has no equivalent here, and what to do instead (docs/soft.md, "In MuJoCo")
NO_EQUIVALENT = {
    "lvp": "its primitives (stretch, bending, twist, shear, source) deform the cross-sections themselves at "
           "constant volume, which no chain of rigid links joined by springs reproduces, and MuJoCo's deformable "
           "bodies (flex) take a mesh and a linear-elastic material, not these maps nor their elastic coefficient. "
           "Simulate the module with the library's own dynamics (soft/motion.py), or give the MuJoCo run a cc or pcs "
           "rod of the same length, radius and stiffness",
    "rigid": "give the rigid part to the robot's URDF and MJCF as a link",
}
BLUE = [0.2, 0.6, 0.9, 1]


@dataclass
class Equivalent:
    """What the plant adds for the soft modules: its joints, and how they give the model's
    coordinates (``coordinates = to_coordinates @ joint values``, also for the rates)."""
    joints: List[str] = field(default_factory=list)
    names: List[str] = field(default_factory=list)          # soft.coordinates.coordinate_names
    to_coordinates: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))


def add_equivalent_modules(spec: "mujoco.MjSpec", robot) -> Equivalent:
    """Add every module of ``robot.soft_modules`` to ``spec``. A module hung from another soft
    module (``parent:``) hangs from that module's distal link at its distal face (half a piece
    from its last joints along the link's axis, plus that joint's stretch), as the soft tree
    hangs it from the parent's distal frame."""
    out = Equivalent()
    blocks = []
    tips: dict = {}                 # module name -> (its distal link, the face's offset in it)
    roots = list(dict.fromkeys(s.root for s in robot.soft_modules))
    for root in roots:
        for s in (s for s in robot.soft_modules if s.root == root):
            joints, names, P = _add_module(spec, robot, s, tips)
            out.joints += joints
            out.names += names
            blocks.append(P)
    n_q, n_j = sum(P.shape[0] for P in blocks), sum(P.shape[1] for P in blocks)
    out.to_coordinates = np.zeros((n_q, n_j))
    i = j = 0
    for P in blocks:
        out.to_coordinates[i:i + P.shape[0], j:j + P.shape[1]] = P
        i, j = i + P.shape[0], j + P.shape[1]
    return out


def _pieces(kind: str, body: dict) -> int:
    return {"cc": 1, "pcs": int(body.get("segments", 1)), "gvs": int(body.get("steps", BODY_FIELDS["gvs"]["steps"]))}[kind]


def _add_module(spec, robot, s, tips: dict):
    """Add module ``s`` (its joint, then its body's chain); returns (MuJoCo joint names, the
    module's coordinate names, the block P of ``coordinates = P @ joint values``)."""
    kind = s.block["body"].get("type")
    module = build_module(robot.soft_doc, s.where, s.block, None, s.joint)
    if not isinstance(module.body, (StrainRod, ModalBody)):
        raise InputError(f"soft module '{s.name}': MuJoCo's equivalent model covers strain rods (cc, pcs, gvs) "
                         f"and modal bodies, not a {kind} body: {NO_EQUIVALENT.get(kind, '')}",
                         file=str(robot.manifest), field="soft_modules")
    axes = module.joint.axes if isinstance(module.joint, AxesJoint) else []      # fixed: none (the manifest
    # refuses a free flyer on a leaf of the rigid tree)
    material = {**BODY_FIELDS[kind], **s.block["body"]}
    chain = _rod_chain(robot, s, module.body, material, len(axes)) if isinstance(module.body, StrainRod) \
        else _modal_chain(module.body, s.name, material)
    link = _placed_root(spec, robot, s, tips)
    # the module's joint: its axes at the body's root, in sequence (each in the frame the
    # previous ones moved, as soft/joints.py's AxesJoint and as MuJoCo composes a body's
    # joints); its coordinates come first, <module>_q0 ..., and carry no spring
    for k, (kind_k, axis) in enumerate(axes):
        link.add_joint(name=f"{s.name}_q{k}", axis=axis.tolist(),
                       type=mujoco.mjtJoint.mjJNT_HINGE if kind_k == "revolute" else mujoco.mjtJoint.mjJNT_SLIDE)
    n = len(chain.joints)
    piece = module.body.length / n
    lengths = [piece / 2] + [piece] * (n - 1) + [piece / 2]
    mass_per_length = float(material["density"]) * (np.pi * float(material["radius"]) ** 2)     # rho A
    bodies = [link]
    _inertial(link, mass_per_length, float(material["radius"]), lengths[0])
    for j in range(n):
        child = bodies[-1].add_body(name=f"{s.name}_tip" if j == n - 1 else f"{s.name}_link{j + 1}",
                                    pos=[0, 0, lengths[j]])
        _inertial(child, mass_per_length, float(material["radius"]), lengths[j + 1])
        for name, axis, hinge, stiff in chain.joints[j]:
            child.add_joint(name=name, axis=axis, stiffness=stiff, damping=chain.damping_time * stiff,
                            springref=0.0, type=mujoco.mjtJoint.mjJNT_HINGE if hinge else mujoco.mjtJoint.mjJNT_SLIDE)
        bodies.append(child)
    _couple(spec, s.name, chain)
    tip = bodies[-1]
    tips[s.name] = (tip, np.array([0.0, 0.0, lengths[-1]]))
    # the contact sphere moves from the rigid foot to the tip of the module that carries the
    # contact (same name: contact forces stay keyed by the foot)
    foot = spec.geom(s.root) if s.has_contact else None
    if foot is not None:
        size, rgba, contype, conaff = list(foot.size), list(foot.rgba), foot.contype, foot.conaffinity
        spec.delete(foot)
        tip.add_geom(name=s.root, type=mujoco.mjtGeom.mjGEOM_SPHERE, size=size, pos=[0, 0, lengths[-1]],
                     rgba=rgba, contype=contype, conaffinity=conaff)
    tip.add_site(name=f"{s.name}_contact", pos=[0, 0, lengths[-1]])
    names = [name for link_joints in chain.joints for name, *_ in link_joints]
    nj = len(axes)
    block = np.zeros((nj + chain.P.shape[0], nj + chain.P.shape[1]))
    block[:nj, :nj] = np.eye(nj)
    block[nj:, nj:] = chain.P
    return [f"{s.name}_q{k}" for k in range(nj)] + names, \
        [f"{s.name}_q{k}" for k in range(nj + chain.P.shape[0])], block


@dataclass
class Chain:
    """A body's equivalent chain: per link (after the fixed proximal half piece) its joints
    (name, axis, hinge or slide, stiffness), ``P`` (its coordinates from the joint values),
    the Kelvin-Voigt damping time, and for a body held to a subspace of the joint values the
    springs coupling them (``springs``: rows of joint coefficients, stiffnesses) and the
    combinations held at zero (``held``)."""
    joints: List[list]
    P: np.ndarray
    damping_time: float
    springs: tuple = (np.zeros((0, 0)), np.zeros(0))
    held: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))


def _rod_chain(robot, s, rod: StrainRod, material: dict, first: int) -> Chain:
    """A strain rod: at the middle of each of its n pieces one joint per strain component its
    basis uses, ``theta_j = l Phi(s_j) q``, stiffness the section's over l (module docstring);
    its coordinates are numbered after the module joint's ``first``."""
    kind = material["type"]
    L, r = rod.length, rod.radius
    E, nu = float(material["youngs_modulus"]), float(material["poisson"])
    n = _pieces(kind, material)
    piece = L / n
    area, second, G = np.pi * r ** 2, np.pi * r ** 4 / 4, E / (2 * (1 + nu))
    section = np.array([E * second, E * second, 2 * G * second, G * area, G * area, E * area])
    # theta = B q: each piece's strain at its middle times its length, on the components used
    Phi = [piece * np.asarray(rod.basis((j + 0.5) * piece), float).reshape(6, rod.nq) for j in range(n)]
    comps = [c for c in range(6) if any(np.abs(P[c]).max() > 0 for P in Phi)]
    rows = [(j, c) for j in range(n) for c in comps]
    B = np.array([Phi[j][c] for j, c in rows])
    if np.linalg.matrix_rank(B) < rod.nq:
        raise InputError(f"soft module '{s.name}': its {n} pieces cannot carry the rod's {rod.nq} coordinates in "
                         "MuJoCo's equivalent model (give the gvs rod more steps)", file=str(robot.manifest),
                         field="soft_modules")
    signed_identity = B.shape[0] == B.shape[1] and np.allclose(np.abs(B), np.abs(B).round()) and \
        np.allclose(np.abs(B) @ np.abs(B).T, np.eye(len(B)))
    if signed_identity:             # the joints are the coordinates (CC)
        signs = B.sum(axis=1)
        coordinate = np.abs(B).argmax(axis=1)
        names = [f"{s.name}_q{first + k}" for k in coordinate]
        P = np.zeros_like(B)
        P[coordinate, np.arange(len(B))] = 1.0
    else:
        signs = np.ones(len(rows))
        names = [f"{s.name}_p{j}_{STRAINS[c]}" for j, c in rows]
        P = np.linalg.pinv(B)
    joints = [[(name, (sign * np.eye(3)[c % 3]).tolist(), c < 3, section[c] / piece)
               for (jj, c), name, sign in zip(rows, names, signs) if jj == j] for j in range(n)]
    return Chain(joints, P, float(material["damping_time"]))


def _modal_chain(body: ModalBody, name: str, material: dict) -> Chain:
    """A modal (Ritz) body [Pustina 2024, Eq. (13)]: its cross-sections translate, by
    ``w(s) = sum_j phi_j(s) q_j d_j``. Link k of n (pieces of l = L / n) carries
    the sections around ``s_k = k l`` and translates by ``w(s_k)`` (the last, a half piece,
    by the distal face's ``w(L)``): two slides (x, y) per link, ``theta_k = w(s_k) -
    w(s_(k-1))``, so ``theta = B q``. The joints are held to B's span (the combinations
    orthogonal to it at zero, MuJoCo tendon equalities) and the body's energy ``1/2 q^T K q``
    is ``1/2 theta^T B+^T K B+ theta`` there: springs on fixed tendons along that matrix's
    eigenvectors (MuJoCo's joint springs are diagonal). The mass of each link is its
    length's; the kinetic energy is then the modal one's by the midpoint rule over the pieces
    (the last half piece's at the face)."""
    n = MODAL_PIECES
    stations = np.arange(n + 1) * body.length / n
    # w(s_k) per coordinate: mode j = (direction d, power p) moves the section by (s / L)^p along d
    W = np.zeros((n + 1, 2, body.nq))
    for j, (d, p) in enumerate(body.modes):
        W[:, d, j] = (stations / body.length) ** p
    B = np.concatenate([W[k] - W[k - 1] for k in range(1, n + 1)])      # rows: link k's x, y slides
    P = np.linalg.pinv(B)
    values, vectors = np.linalg.eigh(P.T @ body.stiffness @ P)
    keep = values > 1e-12 * values.max()
    left, _, _ = np.linalg.svd(B)
    joints = [[(f"{name}_p{k}_{axis}", np.eye(3)[c].tolist(), False, 0.0) for c, axis in enumerate(("sx", "sy"))]
              for k in range(n)]
    return Chain(joints, P, float(material["damping_time"]), (vectors[:, keep].T, values[keep]),
                 left[:, np.linalg.matrix_rank(B):].T)


def _couple(spec, name: str, chain: Chain) -> None:
    """A chain's springs between joints (fixed tendons with a stiffness, damping its
    Kelvin-Voigt time times it) and its held combinations (fixed tendons whose length an
    equality holds at zero, as stiff as the step allows, as the plant's joint locks)."""
    joints = [j for link_joints in chain.joints for j, *_ in link_joints]
    rows, stiffness = chain.springs
    for k, (row, stiff) in enumerate(zip(rows, stiffness)):
        tendon = spec.add_tendon(name=f"{name}_spring{k}", stiffness=float(stiff),
                                 damping=chain.damping_time * float(stiff))
        for joint, coef in zip(joints, row):
            tendon.wrap_joint(joint, float(coef))
    for k, row in enumerate(chain.held):
        tendon = spec.add_tendon(name=f"{name}_held{k}")
        for joint, coef in zip(joints, row):
            tendon.wrap_joint(joint, float(coef))
        eq = spec.add_equality(type=mujoco.mjtEq.mjEQ_TENDON, name1=tendon.name)
        eq.solref = [2 * spec.option.timestep, 1.0]
        eq.solimp = [0.99, 0.999, 0.001, 0.5, 2.0]


def _placed_root(spec, robot, s, tips: dict):
    """The rod's proximal link, fixed at its joint placement in the parent module's distal face
    or in the site of its rigid frame."""
    P = pin.SE3(pin.rpy.rpyToMatrix(*s.joint.get("rpy", [0, 0, 0])), np.array(s.joint.get("xyz", [0, 0, 0]), float))
    if s.parent is not None:
        parent, face = tips[s.parent]
        placed = pin.SE3(np.eye(3), face) * P
    else:
        site = spec.site(s.frame)
        if site is None:
            raise InputError(f"soft module '{s.name}': no site '{s.frame}' in the MJCF {robot.mjcf}",
                             file=str(robot.manifest), field="soft_modules")
        R_site = pin.Quaternion(site.quat[0], *site.quat[1:]).toRotationMatrix()
        placed = pin.SE3(R_site, np.array(site.pos, float)) * P
        parent = site.parent
    x, y, z, w = pin.Quaternion(placed.rotation).coeffs()
    return parent.add_body(name=f"{s.name}_root", pos=placed.translation.tolist(), quat=[w, x, y, z])


def _inertial(body, mass_per_length: float, r: float, length: float) -> None:
    """A solid cylinder of ``length`` along the body's z from its origin, and its drawing."""
    m = mass_per_length * length
    body.explicitinertial = True
    body.mass, body.ipos = m, [0, 0, length / 2]
    body.inertia = [m * (3 * r ** 2 + length ** 2) / 12] * 2 + [m * r ** 2 / 2]
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[0.8 * r, length / 2, 0], pos=[0, 0, length / 2],
                  contype=0, conaffinity=0, rgba=BLUE, mass=0)

"""Planar one-legged hoppers on SE(2) x R^n [Feurstein 2021, Ch. 4]: description, model, geometry.

A hopper YAML (``robots/paper004_hopper/*.yaml``) lists point masses of the base (frame 0) and
of each joint's frame, the joints (``revolute``: o_{j-1,j} = [l_j; 0], theta_{j-1,j} = q_j;
``prismatic``: o = [q_j; 0], theta = 0, [Feurstein 2021, Eq. (4.27)]), the foot in the last
frame, the floor gains and gravity. It becomes a Pinocchio model with a *planar* root joint
(velocity = the SE(2) body twist [v_x, v_y, w] of the thesis), so the Hamel terms come from
``dynamics.floating_hamel`` unchanged.

State as the thesis writes it: x = [o_b^x, o_b^y, theta_b, q], v = [v_b (body frame), w_b, qd].

Geometry [Feurstein 2021, Sec. 4.2]: o_cf = o_if - o_ic (CoM to foot, inertial), r_cf = |o_cf|,
alpha = atan2(o_cf^y, o_cf^x) + pi/2 (from the -y axis, counter-clockwise), with their exact
Jacobians J_r = o^T/r (J_f - J_c) and J_alpha = [-o_y, o_x]/r^2 (J_f - J_c) in the full velocity
(the thesis's mixed-frame forms (4.20)-(4.24) are replaced by these). r_cf depends on q only and
alpha = theta_b + phi(q): the radial term is a joint torque, the polar term a torque on the base
plus a joint torque.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import List

import numpy as np
import pinocchio as pin
from scipy.integrate import quad

from ..dynamics.floating_hamel import FloatingHamel
from ..errors import InputError
from ..model.yamlio import load_yaml
from ..paths import robots_dir

JOINT_TYPES = ("revolute", "prismatic")
FLOOR_KEYS = ("Kx", "Dx", "Ky", "Dy")


def wrap(angle: float) -> float:
    """angle in (-pi, pi]."""
    return math.atan2(math.sin(angle), math.cos(angle))


def hopper_file(name: str) -> Path:
    """``prismatic`` / ``revolute`` (the thesis's hoppers) or a path to a hopper YAML."""
    path = Path(name)
    return path if path.suffix in (".yaml", ".yml") else robots_dir() / "paper004_hopper" / f"{name}.yaml"


@dataclass
class Floor:
    Kx: float
    Dx: float
    Ky: float
    Dy: float


@dataclass
class HopperDescription:
    name: str
    gravity: float
    base_masses: list          # [(m, (x, y), I)]
    joints: list               # [(name, type, (x, y), [(m, (x, y), I)])]
    foot: tuple
    floor: Floor


def _number(doc, value, *keys, positive=False, nonnegative=False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise doc.error(f"expected a finite number, got {value!r}", *keys)
    if positive and not value > 0:
        raise doc.error(f"must be positive, got {value}", *keys)
    if nonnegative and value < 0:
        raise doc.error(f"must not be negative, got {value}", *keys)
    return float(value)


def _point(doc, value, *keys) -> tuple:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise doc.error(f"expected [x, y], got {value!r}", *keys)
    return tuple(_number(doc, c, *keys) for c in value)


def _required(doc, mapping, key, *keys):
    if not isinstance(mapping, dict) or key not in mapping:
        raise doc.error(f"missing '{key}'", *keys, key)
    return mapping[key]


def _masses(doc, entries, *keys) -> list:
    if not isinstance(entries, list) or not entries:
        raise doc.error("expected a non-empty list of {mass, at, inertia}", *keys)
    out = []
    for k, e in enumerate(entries):
        out.append((_number(doc, _required(doc, e, "mass", *keys, k), *keys, k, "mass", nonnegative=True),
                    _point(doc, _required(doc, e, "at", *keys, k), *keys, k, "at"),
                    _number(doc, e.get("inertia", 0.0), *keys, k, "inertia", nonnegative=True)))
    return out


def load_description(name: str) -> HopperDescription:
    """Parse and check a hopper YAML; InputError names the file, line and field."""
    path = hopper_file(name)
    if not path.is_file():
        raise InputError(f"no hopper description '{name}' ({path}): use prismatic, revolute or a YAML path",
                         field="hopper")
    doc = load_yaml(path)
    d = doc.data
    if not isinstance(d, dict):
        raise doc.error("expected a mapping")
    base = _masses(doc, _required(doc, _required(doc, d, "base"), "masses", "base"), "base", "masses")
    if not sum(m for m, _, _ in base) > 0:
        raise doc.error("the base needs a positive total mass", "base", "masses")
    joints = []
    entries = _required(doc, d, "joints")
    if not isinstance(entries, list) or not entries:
        raise doc.error("expected a non-empty list of joints", "joints")
    for k, j in enumerate(entries):
        kind = _required(doc, j, "type", "joints", k)
        if kind not in JOINT_TYPES:
            raise doc.error(f"joint type {kind!r} is not one of {JOINT_TYPES}", "joints", k, "type")
        joints.append((str(j.get("name", f"joint{k + 1}")), kind,
                       _point(doc, _required(doc, j, "offset", "joints", k), "joints", k, "offset"),
                       _masses(doc, _required(doc, j, "masses", "joints", k), "joints", k, "masses")))
    floor = _required(doc, d, "floor")
    gains = {key: _number(doc, _required(doc, floor, key, "floor"), "floor", key, nonnegative=True)
             for key in FLOOR_KEYS}
    return HopperDescription(name=str(d.get("name", path.stem)),
                             gravity=_number(doc, _required(doc, d, "gravity"), "gravity", positive=True),
                             base_masses=base, joints=joints, foot=_point(doc, _required(doc, d, "foot"), "foot"),
                             floor=Floor(**gains))


def _inertia(masses) -> pin.Inertia:
    """The point masses of one frame as one spatial inertia (rotation about z only)."""
    total = pin.Inertia.Zero()
    for m, (x, y), I in masses:
        total += pin.Inertia(m, np.array([x, y, 0.0]), np.diag([0.0, 0.0, I]))
    return total


def build_model(desc: HopperDescription) -> pin.Model:
    model = pin.Model()
    model.name = desc.name
    model.gravity = pin.Motion(np.array([0.0, -desc.gravity, 0.0]), np.zeros(3))
    parent = model.addJoint(0, pin.JointModelPlanar(), pin.SE3.Identity(), "base")
    model.appendBodyToJoint(parent, _inertia(desc.base_masses), pin.SE3.Identity())
    for name, kind, (x, y), masses in desc.joints:
        joint = pin.JointModelRZ() if kind == "revolute" else pin.JointModelPX()
        parent = model.addJoint(parent, joint, pin.SE3(np.eye(3), np.array([x, y, 0.0])), name)
        model.appendBodyToJoint(parent, _inertia(masses), pin.SE3.Identity())
    model.addFrame(pin.Frame("foot", parent, 0, pin.SE3(np.eye(3), np.array([*desc.foot, 0.0])), pin.FrameType.OP_FRAME))
    return model


@dataclass
class Geometry:
    """Foot, CoM and the leg's polar coordinates at one state, with their Jacobians (1 x nv)."""
    foot: np.ndarray
    foot_velocity: np.ndarray
    J_foot: np.ndarray          # 2 x nv, inertial
    com: np.ndarray
    com_velocity: np.ndarray
    r: float
    alpha: float
    J_r: np.ndarray
    J_alpha: np.ndarray


class Hopper:
    """The hopper's model, its dynamics terms and its geometry, in the thesis's state."""

    def __init__(self, desc: HopperDescription):
        self.desc = desc
        self.model = build_model(desc)
        self.data = self.model.createData()
        self.hamel = FloatingHamel(self.model)
        self.nv = self.model.nv
        self.n = self.nv - 3
        self.mass = sum(m for m, _, _ in desc.base_masses) + sum(m for j in desc.joints for m, _, _ in j[3])
        self._foot = self.model.getFrameId("foot")
        self._lower = np.tril_indices(self.nv, -1)

    @classmethod
    def load(cls, name: str) -> "Hopper":
        return cls(load_description(name))

    def to_pinocchio(self, x) -> np.ndarray:
        x = np.asarray(x, float)
        if x.shape != (self.nv,) or not np.isfinite(x).all():
            raise InputError(f"the hopper state x = {np.round(x, 6).tolist()} must be {self.nv} finite numbers "
                             "[o_x, o_y, theta, q...]", field="x")
        q = np.empty(self.model.nq)
        q[:2], q[2], q[3], q[4:] = x[:2], math.cos(x[2]), math.sin(x[2]), x[3:]
        return q

    def dynamics(self, x, v):
        """(M, C v + G) at the state (crba, rnea(q, v, 0))."""
        q = self.to_pinocchio(x)
        M = pin.crba(self.model, self.data, q).copy()
        M[self._lower] = M.T[self._lower]                     # crba fills the upper triangle
        return M, pin.rnea(self.model, self.data, q, np.asarray(v, float), np.zeros(self.nv))

    def geometry(self, x, v) -> Geometry:
        model, data = self.model, self.data
        q = self.to_pinocchio(x)
        v = np.asarray(v, float)
        pin.forwardKinematics(model, data, q, v)
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        Jc = pin.jacobianCenterOfMass(model, data, q)[:2]
        com = data.com[0][:2].copy()
        Jf = pin.getFrameJacobian(model, data, self._foot, pin.LOCAL_WORLD_ALIGNED)[:2]
        foot = data.oMf[self._foot].translation[:2].copy()
        o = foot - com
        r = float(np.hypot(o[0], o[1]))
        Jrel = Jf - Jc
        return Geometry(foot=foot, foot_velocity=Jf @ v, J_foot=Jf, com=com, com_velocity=Jc @ v, r=r,
                        alpha=wrap(math.atan2(o[1], o[0]) + math.pi / 2),
                        J_r=(o / r) @ Jrel, J_alpha=(np.array([-o[1], o[0]]) / (r * r)) @ Jrel)

    def kinetic_energy(self, x, v) -> float:
        M, _ = self.dynamics(x, v)
        return 0.5 * float(v @ M @ v)

    def potential_energy(self, x) -> float:
        """m g y_CoM, zero at the floor."""
        pin.centerOfMass(self.model, self.data, self.to_pinocchio(x))
        return self.mass * self.desc.gravity * float(self.data.com[0][1])

    def centroidal_angular_momentum(self, x, v) -> float:
        return float(self.hamel.centroidal(self.to_pinocchio(x), v).h_c[2])

    def locked_rotation_rate(self, x) -> np.ndarray:
        """T_w = (M_bb^{-1} M_bq)_w: d theta_bc / dq of the CoM frame aligned with the locked velocity."""
        M, _ = self.dynamics(x, np.zeros(self.nv))
        return np.linalg.solve(M[:3, :3], M[:3, 3:])[2]

    def theta_bc(self, x, q_ref: float = 0.0) -> float:
        """theta_bc(q) = int_{q_ref}^{q} T_w dq (one joint: (3.72) always holds)."""
        if self.n != 1:
            raise InputError("theta_bc by quadrature is for one-joint hoppers; use dynamics.com_frame",
                             field="joints")
        base = np.array([0.0, 0.0, 0.0])
        return float(quad(lambda s: self.locked_rotation_rate(np.r_[base, s])[0], q_ref, x[3],
                          epsabs=1e-13, epsrel=1e-12)[0])


def theta_bc_revolute(masses: List[float], q: float) -> float:
    """The thesis's closed form of theta_bc(q) for the revolute hopper (trunk m01, thigh m02, shank
    m11, equal link lengths, masses at the trunk point and the link midpoints) [Feurstein 2021,
    Sec. 4.3, listing l. 223-230]."""
    m01, m02, m11 = masses
    A = m01 * m11 + m02 * m11
    B = 2 * m01 * m11 + m02 * m11
    a = m01 * m02 + 5 * m01 * m11 + 2 * m02 * m11
    b = 2 * B
    root = math.sqrt(a * a - b * b)
    return B * q / b + 2 * math.atan2(math.tan(q / 2) * root, a + b) * (A * b - B * a) / (b * root)

"""One source of truth for a robot's geometry and inertia, written out as URDF and as MJCF.

A :class:`Description` is a tree of links joined by joints (URDF semantics: the joint
frame is the child link frame, its origin is given in the parent link frame). Loop-closure
constraints (:class:`~hybrid_dynamics.model.loops.LoopClosure`), which URDF cannot hold, are kept beside the tree and become MuJoCo
``<equality connect/weld>`` elements and the loop YAML read by
:mod:`hybrid_dynamics.model.loops`.

The built-in robots (``jethexa``, ``hybrid_biped``) are Python functions returning a
``Description``; ``hybrid-dynamics generate`` writes their files under ``robots/`` and a
test checks that the files in the repository match the generator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple
from xml.sax.saxutils import quoteattr

import numpy as np

from .loops import LoopClosure

Vec3 = Tuple[float, float, float]


def rpy_to_matrix(rpy: Sequence[float]) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes X, Y, Z) to a rotation matrix: R = Rz(y) Ry(p) Rx(r)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def matrix_to_quat_wxyz(R: np.ndarray) -> np.ndarray:
    """Rotation matrix to a unit quaternion (w, x, y, z), w >= 0 (MuJoCo's order)."""
    m = np.asarray(R, dtype=float)
    t = np.trace(m)
    if t > 0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0] * 4
        q[0] = (m[k, j] - m[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (m[j, i] + m[i, j]) / s
        q[1 + k] = (m[k, i] + m[i, k]) / s
    q = np.array(q)
    return q if q[0] >= 0 else -q


@dataclass
class Pose:
    xyz: Vec3 = (0.0, 0.0, 0.0)
    rpy: Vec3 = (0.0, 0.0, 0.0)

    def matrix(self) -> np.ndarray:
        T = np.eye(4)
        T[:3, :3] = rpy_to_matrix(self.rpy)
        T[:3, 3] = self.xyz
        return T


@dataclass
class Inertial:
    """Mass, centre of mass and rotational inertia about the CoM, in the link frame."""
    mass: float
    com: Vec3 = (0.0, 0.0, 0.0)
    inertia: Tuple[float, float, float, float, float, float] = (0, 0, 0, 0, 0, 0)  # ixx iyy izz ixy ixz iyz


@dataclass
class Geom:
    """A shape on a link. ``kind`` is box (full sizes), sphere (radius) or cylinder (radius, length).

    ``collides`` geoms touch the ground in MuJoCo; the others are visual only.
    """
    kind: str
    size: Tuple[float, ...]
    pose: Pose = field(default_factory=Pose)
    collides: bool = False
    rgba: Tuple[float, float, float, float] = (0.6, 0.6, 0.65, 1.0)


@dataclass
class Link:
    name: str
    inertial: Optional[Inertial] = None
    geoms: List[Geom] = field(default_factory=list)


@dataclass
class Joint:
    """A URDF joint: ``revolute``, ``prismatic`` or ``fixed``."""
    name: str
    kind: str
    parent: str
    child: str
    origin: Pose = field(default_factory=Pose)
    axis: Vec3 = (0.0, 0.0, 1.0)
    lower: float = -math.pi
    upper: float = math.pi
    effort: float = 0.0
    velocity: float = 0.0
    damping: float = 0.0
    actuated: bool = True


@dataclass
class Description:
    name: str
    base: str
    floating: bool = True
    header: str = ""
    links: Dict[str, Link] = field(default_factory=dict)
    joints: List[Joint] = field(default_factory=list)
    loops: List[LoopClosure] = field(default_factory=list)
    mjcf_options: Dict[str, str] = field(default_factory=dict)
    # ball-screw data of actuated prismatic joints, written to the loop YAML:
    # joint -> {"lead": m/rev, "efficiency": 0..1, "max_force": N}
    transmissions: Dict[str, Dict[str, float]] = field(default_factory=dict)

    # ----------------------------------------------------------------- building
    def add_link(self, link: Link) -> Link:
        if link.name in self.links:
            raise ValueError(f"duplicate link {link.name!r}")
        self.links[link.name] = link
        return link

    def add_joint(self, joint: Joint) -> Joint:
        for end in (joint.parent, joint.child):
            if end not in self.links:
                raise ValueError(f"joint {joint.name!r} names unknown link {end!r}")
        self.joints.append(joint)
        return joint

    def children(self, link: str) -> List[Joint]:
        return [j for j in self.joints if j.parent == link]

    def total_mass(self) -> float:
        return sum(l.inertial.mass for l in self.links.values() if l.inertial)

    # ----------------------------------------------------------------- URDF
    def to_urdf(self) -> str:
        out = ['<?xml version="1.0"?>']
        if self.header:
            out.append("<!--\n" + self.header.strip("\n") + "\n-->")
        out.append(f"<robot name={quoteattr(self.name)}>")
        for link in self.links.values():
            out.append(f"  <link name={quoteattr(link.name)}>")
            if link.inertial:
                ine = link.inertial
                ixx, iyy, izz, ixy, ixz, iyz = ine.inertia
                out.append("    <inertial>")
                out.append(f'      <origin xyz="{_v(ine.com)}" rpy="0 0 0"/>')
                out.append(f'      <mass value="{_f(ine.mass)}"/>')
                out.append(f'      <inertia ixx="{_f(ixx)}" ixy="{_f(ixy)}" ixz="{_f(ixz)}" '
                           f'iyy="{_f(iyy)}" iyz="{_f(iyz)}" izz="{_f(izz)}"/>')
                out.append("    </inertial>")
            for g in link.geoms:
                for tag in (("visual", "collision") if g.collides else ("visual",)):
                    out.append(f"    <{tag}>")
                    out.append(f'      <origin xyz="{_v(g.pose.xyz)}" rpy="{_v(g.pose.rpy)}"/>')
                    out.append(f"      <geometry>{_urdf_shape(g)}</geometry>")
                    out.append(f"    </{tag}>")
            out.append("  </link>")
        for j in self.joints:
            out.append(f"  <joint name={quoteattr(j.name)} type=\"{j.kind}\">")
            out.append(f'    <parent link="{j.parent}"/>')
            out.append(f'    <child link="{j.child}"/>')
            out.append(f'    <origin xyz="{_v(j.origin.xyz)}" rpy="{_v(j.origin.rpy)}"/>')
            if j.kind != "fixed":
                out.append(f'    <axis xyz="{_v(j.axis)}"/>')
                out.append(f'    <limit lower="{_f(j.lower)}" upper="{_f(j.upper)}" '
                           f'effort="{_f(j.effort)}" velocity="{_f(j.velocity)}"/>')
                if j.damping:
                    out.append(f'    <dynamics damping="{_f(j.damping)}"/>')
            out.append("  </joint>")
        out.append("</robot>")
        return "\n".join(out) + "\n"

    # ----------------------------------------------------------------- loop YAML
    def to_loop_yaml(self) -> str:
        """The loop-closure sidecar of :mod:`hybrid_dynamics.model.loops` (empty without loops)."""
        if not self.loops:
            return ""
        out = []
        if self.header:
            out.extend("# " + line if line else "#" for line in self.header.strip("\n").splitlines())
        out.append("closed_loop:")
        out.extend(f"  - [{l.frame_a}, {l.frame_b}]" for l in self.loops)
        out.append("type: [" + ", ".join(f"'{l.kind}'" for l in self.loops) + "]")
        out.append("constrained_axes:")
        out.extend("  - [" + ", ".join(str(a) for a in l.axes) + "]" for l in self.loops)
        out.append("name_mot:")
        out.extend(f"  - {j.name}" for j in self.joints if j.kind != "fixed" and j.actuated)
        if self.transmissions:
            out.append("transmissions:")
            for name, t in self.transmissions.items():
                out.append(f"  {name}: {{" + ", ".join(f"{k}: {_f(v)}" for k, v in t.items()) + "}")
        return "\n".join(out) + "\n"

    # ----------------------------------------------------------------- MJCF
    def to_mjcf(self) -> str:
        """MJCF with the same tree, inertias, limits; motors on actuated joints; a floor,
        an IMU site and sensors; loop closures as equality constraints."""
        opts = {"timestep": "0.001", "integrator": "implicitfast", "cone": "elliptic",
                "friction": "1.0 0.005 0.0001", "solref": "0.002 1"}
        opts.update(self.mjcf_options)
        out = [f'<mujoco model={quoteattr(self.name)}>']
        if self.header:
            out.append("<!--\n" + self.header.strip("\n") + "\n-->")
        out.append('  <compiler angle="radian" autolimits="true"/>')
        out.append(f'  <option timestep="{opts["timestep"]}" integrator="{opts["integrator"]}" '
                   f'cone="{opts["cone"]}"/>')
        out.append('  <default>')
        out.append(f'    <geom contype="0" conaffinity="0" friction="{opts["friction"]}" '
                   f'solref="{opts["solref"]}"/>')
        out.append('  </default>')
        out.append('  <worldbody>')
        out.append('    <light pos="0 0 3" dir="0 0 -1" directional="true"/>')
        out.append('    <geom name="floor" type="plane" size="0 0 0.05" rgba="0.8 0.8 0.8 1" '
                   'contype="1" conaffinity="1"/>')
        self._mjcf_body(out, self.base, Pose(), indent=4, root=True)
        out.append('  </worldbody>')
        if self.loops:
            out.append('  <equality>')
            solref = opts.get("eq_solref", "0.002 1")
            solimp = f' solimp="{opts["eq_solimp"]}"' if "eq_solimp" in opts else ""
            for loop in self.loops:
                tag = "weld" if loop.kind == "6d" else "connect"
                out.append(f'    <{tag} site1="{loop.frame_a}" site2="{loop.frame_b}" '
                           f'solref="{solref}"{solimp}/>')
            out.append('  </equality>')
        actuated = [j for j in self.joints if j.kind != "fixed" and j.actuated]
        if actuated:
            out.append('  <actuator>')
            for j in actuated:
                out.append(f'    <motor name="{j.name}" joint="{j.name}" '
                           f'ctrlrange="{_f(-j.effort)} {_f(j.effort)}"/>')
            out.append('  </actuator>')
        out.append('  <sensor>')
        out.append('    <framequat name="imu_quat" objtype="site" objname="imu"/>')
        out.append('    <gyro name="imu_gyro" site="imu"/>')
        out.append('    <accelerometer name="imu_acc" site="imu"/>')
        out.append('  </sensor>')
        out.append('</mujoco>')
        return "\n".join(out) + "\n"

    def _mjcf_body(self, out: List[str], name: str, pose: Pose, indent: int, root: bool = False,
                   joint: Optional[Joint] = None) -> None:
        pad = " " * indent
        link = self.links[name]
        quat = matrix_to_quat_wxyz(rpy_to_matrix(pose.rpy))
        out.append(f'{pad}<body name="{name}" pos="{_v(pose.xyz)}" quat="{_v(quat)}">')
        if root and self.floating:
            out.append(f'{pad}  <freejoint name="root"/>')
            out.append(f'{pad}  <site name="imu" pos="0 0 0"/>')
        if joint is not None and joint.kind != "fixed":
            kind = "hinge" if joint.kind == "revolute" else "slide"
            out.append(f'{pad}  <joint name="{joint.name}" type="{kind}" axis="{_v(joint.axis)}" '
                       f'range="{_f(joint.lower)} {_f(joint.upper)}" damping="{_f(joint.damping)}"/>')
        if link.inertial and link.inertial.mass > 0:
            ine = link.inertial
            ixx, iyy, izz, ixy, ixz, iyz = ine.inertia
            out.append(f'{pad}  <inertial pos="{_v(ine.com)}" mass="{_f(ine.mass)}" '
                       f'fullinertia="{_f(ixx)} {_f(iyy)} {_f(izz)} {_f(ixy)} {_f(ixz)} {_f(iyz)}"/>')
        for g in link.geoms:
            gq = matrix_to_quat_wxyz(rpy_to_matrix(g.pose.rpy))
            contact = ' contype="1" conaffinity="0"' if g.collides else ""
            out.append(f'{pad}  <geom type="{g.kind}" size="{_mjcf_size(g)}" pos="{_v(g.pose.xyz)}" '
                       f'quat="{_v(gq)}" rgba="{_v(g.rgba)}"{contact}/>')
        # children in joint-name order: the order in which Pinocchio's URDF parser (urdfdom's
        # joint map) numbers them, so that MuJoCo's and Pinocchio's coordinates line up
        for child in sorted(self.children(name), key=lambda j: j.name):
            sub = self.links[child.child]
            if child.kind == "fixed" and not (sub.inertial and sub.inertial.mass > 0) \
                    and not self.children(child.child):
                # a massless leaf on a fixed joint is a frame: a site in MuJoCo
                q = matrix_to_quat_wxyz(rpy_to_matrix(child.origin.rpy))
                out.append(f'{pad}  <site name="{child.child}" pos="{_v(child.origin.xyz)}" quat="{_v(q)}"/>')
                for g in sub.geoms:
                    T = child.origin.matrix() @ g.pose.matrix()
                    gq = matrix_to_quat_wxyz(T[:3, :3])
                    contact = ' contype="1" conaffinity="0"' if g.collides else ""
                    out.append(f'{pad}  <geom name="{child.child}" type="{g.kind}" size="{_mjcf_size(g)}" '
                               f'pos="{_v(T[:3, 3])}" quat="{_v(gq)}" rgba="{_v(g.rgba)}"{contact}/>')
            else:
                self._mjcf_body(out, child.child, child.origin, indent + 2, joint=child)
        out.append(f"{pad}</body>")


def _f(x: float) -> str:
    return f"{float(x):.10g}"


def _v(xs) -> str:
    return " ".join(_f(x) for x in xs)


def _urdf_shape(g: Geom) -> str:
    if g.kind == "box":
        return f'<box size="{_v(g.size)}"/>'
    if g.kind == "sphere":
        return f'<sphere radius="{_f(g.size[0])}"/>'
    if g.kind == "cylinder":
        return f'<cylinder radius="{_f(g.size[0])}" length="{_f(g.size[1])}"/>'
    raise ValueError(f"unknown geom kind {g.kind!r}")


def _mjcf_size(g: Geom) -> str:
    if g.kind == "box":
        return _v([s / 2 for s in g.size])     # MuJoCo boxes take half sizes
    if g.kind == "sphere":
        return _f(g.size[0])
    if g.kind == "cylinder":
        return _v([g.size[0], g.size[1] / 2])  # radius, half length
    raise ValueError(f"unknown geom kind {g.kind!r}")

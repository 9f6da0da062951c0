"""Damaged reference models built independently of the engines, for validation.

The reference for a morphology is Pinocchio's parse of an edited URDF, never anything the
engines computed:
  * a removed leg or removed links: the joint of the first removed link, its child link and
    everything below them are deleted from the XML;
  * a locked joint: the joint becomes ``fixed`` and the lock rotation (or translation, for a
    prismatic joint) is folded into its ``<origin>``; Pinocchio's parser then merges the
    child body into its parent itself.
The coordinates of the reference are matched to the engine's by joint name.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Dict, List

import numpy as np
import pinocchio as pin

from ..errors import InputError
from .lie import rot_axis


def _floats(text: str, default) -> np.ndarray:
    return np.array([float(x) for x in text.split()]) if text else np.array(default, float)


def damaged_urdf(robot, morphology) -> str:
    """The robot's URDF text with the morphology's removals and locks applied by XML edits."""
    root = ET.parse(robot.urdf).getroot()
    joints = {j.get("name"): j for j in root.findall("joint")}
    children_of: Dict[str, List[ET.Element]] = {}
    for j in joints.values():
        children_of.setdefault(j.find("parent").get("link"), []).append(j)
    links = {l.get("name"): l for l in root.findall("link")}
    model = robot.model
    kept = morphology.kept
    for leg in robot.legs:
        k = kept[leg.name]
        if k >= len(leg.joints):
            continue
        stack = [joints[model.names[leg.joints[k]]]]
        while stack:                                       # delete the joint and all below it
            j = stack.pop()
            child = j.find("child").get("link")
            root.remove(j)
            if child in links:
                root.remove(links.pop(child))
            stack.extend(children_of.get(child, []))
    for name, angle in morphology.locked:
        j = joints.get(name)
        if j is None:
            raise InputError(f"unknown joint '{name}'", field="joint")
        origin = j.find("origin")
        if origin is None:
            origin = ET.SubElement(j, "origin")
        xyz = _floats(origin.get("xyz", ""), [0, 0, 0])
        rpy = _floats(origin.get("rpy", ""), [0, 0, 0])
        axis_el = j.find("axis")
        axis = _floats(axis_el.get("xyz", "") if axis_el is not None else "", [1, 0, 0])
        axis = axis / np.linalg.norm(axis)
        R = pin.rpy.rpyToMatrix(*rpy)
        if j.get("type") == "prismatic":
            xyz = xyz + R @ (axis * angle)
        else:
            R = R @ rot_axis(axis, angle)
        origin.set("xyz", " ".join(f"{x:.17g}" for x in xyz))
        origin.set("rpy", " ".join(f"{x:.17g}" for x in pin.rpy.matrixToRpy(R)))
        j.set("type", "fixed")
        for tag in ("axis", "limit", "dynamics", "mimic", "safety_controller", "calibration"):
            for el in j.findall(tag):
                j.remove(el)
    return ET.tostring(root, encoding="unicode")


def reference_model(robot, morphology) -> pin.Model:
    return pin.buildModelFromXML(damaged_urdf(robot, morphology), pin.JointModelFreeFlyer())


class Reference:
    """A damaged Pinocchio model and the permutations to and from an engine's coordinates."""

    def __init__(self, robot, morphology, engine_joint_names: List[str]):
        self.model = reference_model(robot, morphology)
        self.data = self.model.createData()
        m = self.model
        names = [m.names[j] for j in range(2, m.njoints)]
        if sorted(names) != sorted(engine_joint_names):
            raise AssertionError(f"reference joints {names} differ from the engine's {engine_joint_names}")
        pos = {n: i for i, n in enumerate(engine_joint_names)}
        perm = np.array([pos[n] for n in names], dtype=int)     # ref joint r = engine joint perm[r]
        self.v_perm = np.concatenate([np.arange(6), 6 + perm])
        self.q_perm = np.concatenate([np.arange(7), 7 + perm])

    def q(self, q_engine):
        return np.asarray(q_engine)[self.q_perm]

    def v(self, v_engine):
        return np.asarray(v_engine)[self.v_perm]

    def to_engine(self, x_ref):
        out = np.empty_like(x_ref)
        out[self.v_perm] = x_ref
        return out

    def matrix_to_engine(self, X):
        out = np.empty_like(X)
        out[np.ix_(self.v_perm, self.v_perm)] = X
        return out

    def tip_jacobians(self, q_engine, tips: List[str]) -> np.ndarray:
        m, d = self.model, self.data
        q = self.q(q_engine)
        pin.computeJointJacobians(m, d, q)
        pin.updateFramePlacements(m, d)
        rows = []
        for name in tips:
            J = pin.getFrameJacobian(m, d, m.getFrameId(name), pin.LOCAL)
            out = np.empty_like(J)
            out[:, self.v_perm] = J
            rows.append(out)
        return np.vstack(rows) if rows else np.zeros((0, m.nv))

    def tip_fext(self, q_engine, tips: List[str], f_tips) -> List[pin.Force]:
        """Tip wrenches (LOCAL at each tip frame) as Pinocchio's per-joint external forces."""
        m = self.model
        fext = [pin.Force.Zero() for _ in range(m.njoints)]
        for name, F in zip(tips, np.asarray(f_tips).reshape(-1, 6)):
            frame = m.frames[m.getFrameId(name)]
            fext[frame.parentJoint] += frame.placement.act(pin.Force(F[:3], F[3:]))
        return fext

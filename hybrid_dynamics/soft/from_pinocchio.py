"""Soft-module trees from a Pinocchio model of rigid bodies: each Pinocchio joint becomes a
module (placement = joint placement, rigid body = the joint's inertia), so that the rigid
special case of the recursion can be checked against Pinocchio [Pustina 2024, Sec. 5]."""
from __future__ import annotations

from typing import List

import numpy as np
import pinocchio as pin

from hybrid_dynamics.soft.bodies import RigidBody
from hybrid_dynamics.soft.joints import AxesJoint, FreeFlyerJoint, Joint, Placement
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.tree import SoftTree

_AXES = {"X": (1, 0, 0), "Y": (0, 1, 0), "Z": (0, 0, 1)}


def joint_from_pinocchio(jmodel, placement: pin.SE3) -> Joint:
    """The module joint of one Pinocchio joint (revolute, prismatic, free flyer)."""
    where = Placement(np.array(placement.rotation), np.array(placement.translation))
    name = jmodel.shortname()
    if name == "JointModelFreeFlyer":
        return FreeFlyerJoint(where)
    for kind, prefix in (("revolute", "JointModelR"), ("prismatic", "JointModelP")):
        if name.startswith(prefix + "Unaligned") or name == prefix + "U":
            return AxesJoint([(kind, np.array(jmodel.axis))], where)
        if name in (prefix + a for a in _AXES):
            return AxesJoint([(kind, _AXES[name[-1]])], where)
    raise ValueError(f"joint type {name} has no soft-module equivalent")


def modules_from_pinocchio(model: pin.Model) -> List[Module]:
    """One module per joint of the Pinocchio model (rigid body = the joint's inertia), in its
    order, named after the joints."""
    modules: List[Module] = []
    for j in range(1, model.njoints):
        inertia = model.inertias[j]
        parent = model.parents[j]
        modules.append(Module(model.names[j], joint_from_pinocchio(model.joints[j], model.jointPlacements[j]),
                              RigidBody(inertia.mass, np.array(inertia.lever),
                                        np.array(inertia.inertia)),
                              None if parent == 0 else model.names[parent]))
    return modules


def tree_from_pinocchio(model: pin.Model, gravity=None) -> SoftTree:
    """A SoftTree whose q, v ordering equals the Pinocchio model's."""
    g = np.array(model.gravity.linear) if gravity is None else gravity
    return SoftTree(modules_from_pinocchio(model), gravity=g)

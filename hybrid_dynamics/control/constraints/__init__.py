"""Constraints of the whole-body QP, one per module: rows ``lo <= C x <= hi``."""
from .actuation_limits import ActuationLimits
from .base import INF, Constraint
from .contact import ContactAcceleration
from .dynamics import FloatingBaseDynamics
from .friction_cone import FrictionCone, pyramid, tangent_basis
from .joint_limits import JointLimits

__all__ = ["Constraint", "INF", "FloatingBaseDynamics", "ContactAcceleration", "FrictionCone",
           "ActuationLimits", "JointLimits", "pyramid", "tangent_basis"]

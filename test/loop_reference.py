"""Pinocchio's own constrained dynamics of a closed-loop robot, the independent reference of the
closed-linkage tests: one ``RigidConstraintModel`` per cut (6D for a '6d' loop, 3D for a '3d'
one, LOCAL) and ``constraintDynamics`` with tight proximal settings."""
import numpy as np
import pinocchio as pin


def constraint_dynamics(robot, q, v, tau):
    """ddq of the spanning tree under the generalized force ``tau`` with every cut closed."""
    m = robot.model
    models = pin.StdVec_RigidConstraintModel()
    for loop in robot.loops.loops:
        fa, fb = m.frames[m.getFrameId(loop.frame_a)], m.frames[m.getFrameId(loop.frame_b)]
        kind = pin.ContactType.CONTACT_6D if loop.kind == "6d" else pin.ContactType.CONTACT_3D
        models.append(pin.RigidConstraintModel(kind, m, fa.parentJoint, fa.placement, fb.parentJoint,
                                               fb.placement, pin.ReferenceFrame.LOCAL))
    datas = pin.StdVec_RigidConstraintData()
    for c in models:
        datas.append(c.createData())
    d = m.createData()
    pin.initConstraintDynamics(m, d, models, datas)
    return np.array(pin.constraintDynamics(m, d, q, v, tau, models, datas, pin.ProximalSettings(1e-14, 1e-10, 2000)))

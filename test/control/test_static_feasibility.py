"""Static feasibility of damaged postures, checked against Pinocchio's RNEA (the floating-base
rows must vanish: the foot forces hold the robot up), its forward kinematics (feet on the
ground) and scipy's Qhull (the CoM inside the polygon of the feet, by the reported margin)."""
import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial import ConvexHull

from hybrid_dynamics.control.static_feasibility import static_feasibility
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.robot import load_robot


@pytest.fixture(scope="module")
def jethexa():
    return load_robot("jethexa")


def _qhull_margin(points, p):
    hull = ConvexHull(points)
    # equations: n . x + d <= 0 inside, n unit
    return float(-(hull.equations[:, :2] @ p + hull.equations[:, 2]).max())


@pytest.mark.parametrize("damage", [
    lambda m: m,
    lambda m: m.remove_leg("leg3").remove_leg("leg4"),
    lambda m: m.remove_leg("leg1").remove_leg("leg3"),
    lambda m: m.remove_leg("leg2").remove_leg("leg4").remove_leg("leg6"),
    lambda m: m.lock_joint("leg1_femur_joint", -0.25).remove_links("leg5", 2),
])
def test_feasible_posture_holds_by_rnea_fk_and_qhull(jethexa, damage):
    morph = damage(Morphology.healthy(jethexa))
    res = static_feasibility(jethexa, morph)
    assert res.feasible, res.reason
    model = MorphologyMap(jethexa, morph).model
    data = model.createData()
    q = res.q
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    feet = np.array([data.oMf[model.getFrameId(f)].translation for f in res.forces])
    assert len(feet) >= 3 and np.abs(feet[:, 2]).max() < 1e-4              # every foot on the ground
    tau = pin.rnea(model, data, q, np.zeros(model.nv), np.zeros(model.nv)).copy()
    pin.computeJointJacobians(model, data, q)
    for frame, fz in res.forces.items():
        assert fz >= -1e-9
        J = pin.getFrameJacobian(model, data, model.getFrameId(frame), pin.LOCAL_WORLD_ALIGNED)
        tau -= J[:3].T @ np.array([0.0, 0.0, fz])
    weight = sum(i.mass for i in model.inertias) * 9.81
    assert np.abs(tau[:6]).max() < 1e-3 * weight                             # floating base balanced
    free = [j for j in range(2, model.njoints) if model.inertias[j].mass > 0 and
            model.names[j] not in morph.locked_joints]
    iv = [model.joints[j].idx_v for j in free]
    assert np.all(np.abs(tau[iv]) <= model.effortLimit[iv] * (1 + 1e-3))     # within the torque limits
    assert np.all(q[7:] >= model.lowerPositionLimit[7:] - 1e-9) and np.all(q[7:] <= model.upperPositionLimit[7:] + 1e-9)
    com = pin.centerOfMass(model, data, q)
    assert _qhull_margin(feet[:, :2], com[:2]) == pytest.approx(res.margin, abs=1e-6)
    assert res.margin > 0.0


def test_two_feet_left_is_infeasible(jethexa):
    morph = Morphology.healthy(jethexa)
    for leg in ("leg1", "leg2", "leg3", "leg4"):
        morph = morph.remove_leg(leg)
    res = static_feasibility(jethexa, morph)
    assert not res.feasible and res.margin == -np.inf and "2 feet" in res.reason


def test_too_weak_motors_are_infeasible(jethexa):
    """Motors at 1 % of their torque cannot carry the body (0.034 N m against ~0.3 N m per
    femur for the standing weight share): no posture passes."""
    weak = load_robot("jethexa")
    weak.model.effortLimit[6:] *= 0.01
    res = static_feasibility(weak, Morphology.healthy(weak))
    assert not res.feasible and (res.torque_ratio > 1.0 or res.margin <= 0.0), res

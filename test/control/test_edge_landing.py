"""The landing on an edge of three feet (control/locomotion/edge_landing.py): the measured
body's planar state and its angular momentum about the edge against Pinocchio's centroidal
momentum of the damaged JetHexa, and the criterion on it (the CoM outside the edge, rolling
outwards or at rest: beyond a stand) against bodies inside and outside."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control.locomotion.edge_landing import edge_momentum
from hybrid_dynamics.control.locomotion.planar_landing import standing_with
from hybrid_dynamics.control.locomotion.planner import LocomotionPlanner
from hybrid_dynamics.model.robot import load_robot

LEFT = ("leg1", "leg2", "leg4")         # legs 3, 5 and 6 lost: the CoM 5.7 cm outside the 1-4 edge standing


@pytest.fixture(scope="module")
def three_feet():
    robot = load_robot("jethexa")
    mmap, q = standing_with(robot, LEFT)
    model, data = mmap.model, mmap.model.createData()
    pin.ccrba(model, data, q, np.zeros(model.nv))
    inertia = data.Ig.inertia.copy()                   # centroidal, base axes (level)
    return robot, mmap, q, float(data.mass[0]), inertia


def measured_state(robot, mmap, q, v, mass, inertia, third=None):
    """The arguments of EdgeLanding.planar for the damaged body at ``(q, v)`` (Pinocchio's CoM,
    its velocity, the base and the three feet; the floor under the feet other than ``third``)."""
    model, data = mmap.model, mmap.model.createData()
    pin.forwardKinematics(model, data, q, v)
    pin.updateFramePlacements(model, data)
    com = pin.centerOfMass(model, data, q, v)
    vcom = data.vcom[0].copy()
    R = pin.Quaternion(q[6], *q[3:6]).toRotationMatrix()
    frames = [next(l.contact_frame for l in robot.legs if l.name == name) for name in LEFT]
    feet = [data.oMf[model.getFrameId(f)].translation.copy() for f in frames]
    ground = min(f[2] for f, name in zip(feet, frames) if name != third) - robot.contacts[0].radius
    return (frames, feet, ground, com, vcom, q[:3].copy(), R, R @ v[3:6], mass, inertia)


def test_the_angular_momentum_about_the_edge_is_pinocchios(three_feet):
    """The body tilted and moving (base velocity, a turn about the edge's direction, the joints
    still): ``H_L = -I phi' + m (z s' - s z')`` of the measured planar state equals Pinocchio's
    centroidal angular momentum taken about the edge's line, ``a . (h_G + (c - p) x m v_c)``
    (``a`` the outward roll axis, ``p`` a point of the line), for either sense of the roll."""
    robot, mmap, q0, mass, inertia = three_feet
    planner = LocomotionPlanner(robot)
    model = mmap.model
    data = model.createData()
    rng = np.random.default_rng(3)
    checked = 0
    level = measured_state(robot, mmap, q0, np.zeros(model.nv), mass, inertia)
    _, _, geometry = planner.edge_landing.planar(*level)
    for _ in range(6):
        # turned about the vertical and about the edge's direction: the edge stays level
        q = q0.copy()
        yaw = pin.exp3(np.array([0.0, 0.0, rng.normal(0.0, 0.5)]))
        u = yaw @ geometry["u"]
        R = pin.exp3(rng.normal(0.0, 0.15) * u) @ yaw
        q[3:7] = pin.Quaternion(R).coeffs()
        q[:3] = (0.01, -0.02, 0.09)
        v = np.zeros(model.nv)
        v[:3] = R.T @ rng.normal(0.0, 0.3, 3)                # base frame
        v[3:6] = R.T @ (rng.normal(0.0, 2.0) * u)            # a turn about the edge's direction
        args = measured_state(robot, mmap, q, v, mass, inertia, third=geometry["third"])
        planar, x, edge = planner.edge_landing.planar(*args)
        assert edge["third"] == geometry["third"] and abs(edge["u"] @ u) == pytest.approx(1.0, abs=1e-9)
        com, vcom = args[3], args[4]
        h_G = pin.computeCentroidalMomentum(model, data, q, v).angular
        outward = np.cross([0.0, 0.0, 1.0], edge["n"])
        on_floor = np.append(edge["origin"][:2], edge["floor"])      # the feet's contact points' line
        expected = outward @ (h_G + np.cross(com - on_floor, mass * vcom))
        assert edge_momentum(planar, x) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert x[0] == pytest.approx(edge["n"] @ (com - on_floor), abs=1e-12)
        checked += abs(expected) > 1e-3
    assert checked >= 5                                      # moving bodies, not zeros


def test_the_criterion_fires_outside_the_edge_not_inside(three_feet):
    """At rest with the CoM outside the 1-4 edge (the standing pose of legs 3+5+6 lost): beyond
    a stand. The same body with its feet spread so that the CoM is inside the triangle, or
    outside but rolling back inwards: not."""
    robot, mmap, q, mass, inertia = three_feet
    planner = LocomotionPlanner(robot)
    model = mmap.model
    v = np.zeros(model.nv)
    args = measured_state(robot, mmap, q, v, mass, inertia)
    planar, x, geometry = planner.edge_landing.planar(*args)
    assert x[0] > 0.05 and planner.edge_landing.falls_over(*args)
    frames, feet = args[0], [f.copy() for f in args[1]]
    third = frames.index(geometry["third"])
    for k in range(3):
        if k != third:                       # the edge's feet moved outwards, past the CoM
            feet[k][:2] += 0.1 * geometry["n"][:2]
    inside = (frames, feet) + args[2:]
    assert planner.edge_landing.planar(*inside)[1][0] < 0.0 and not planner.edge_landing.falls_over(*inside)
    v[3:6] = pin.Quaternion(q[6], *q[3:6]).toRotationMatrix().T @ (-5.0 * np.cross([0.0, 0.0, 1.0], geometry["n"]))
    back = measured_state(robot, mmap, q, v, mass, inertia)
    assert edge_momentum(*planner.edge_landing.planar(*back)[:2]) < 0.0 and not planner.edge_landing.falls_over(*back)


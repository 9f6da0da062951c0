"""The planar two-feet landing study (analysis/two_feet_landing.py): its dynamics against
closed-form motions, its model of the JetHexa against Pinocchio, and the optimiser against the
two cases whose answer is known (no force: the free fall; the CoM over the foot line with
force to spare: a touch-down as slow as wanted)."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.analysis.two_feet_landing import (GRAVITY, PlanarRobot, best_landing, corner_speed,
                                                       lowest_corner, planar_robot, simulate)
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.robot import load_robot


def box_robot(e=0.15, max_force=80.0):
    half = np.array([0.1, 0.018])
    corners = np.array([[sx * half[0], sz * half[1]] for sx in (-1, 1) for sz in (-1, 1)])
    return PlanarRobot(mass=1.75, inertia=0.015, e=e, height=0.11, corners=corners,
                       hips=np.array([[-0.05, 0.0, 0.09], [-0.05, 0.0, -0.09]]), reach=0.245,
                       friction=0.8, max_force=max_force)


def test_the_planar_dynamics_follow_closed_form_motions():
    """No force: a free fall, no turn. A constant vertical force F at the foot line, the CoM
    ``e`` from it: the CoM's height ``z0 + (F/m - g) t^2 / 2`` and, the CoM's distance to the
    line unchanged (no horizontal force), the tilt ``-e F t^2 / (2 I)``."""
    robot = box_robot()
    T = 0.12
    free = simulate(robot, np.zeros((6, 2)), T)[-1]
    assert np.allclose(free, [robot.e, robot.height - 0.5 * GRAVITY * T ** 2, 0.0, 0.0, -GRAVITY * T, 0.0], atol=1e-12)
    F = 30.0
    pushed = simulate(robot, np.tile([0.0, F], (6, 1)), T)[-1]
    assert pushed[0] == pytest.approx(robot.e, abs=1e-12)
    assert pushed[1] == pytest.approx(robot.height + 0.5 * (F / robot.mass - GRAVITY) * T ** 2, abs=1e-12)
    assert pushed[2] == pytest.approx(-robot.e * F * T ** 2 / (2 * robot.inertia), rel=1e-9)
    assert pushed[5] == pytest.approx(-robot.e * F * T / robot.inertia, rel=1e-9)
    # the lowest corner moves with the body: its speed is that of the rigid body's point
    h = 1e-6
    a, b = simulate(robot, np.tile([0.0, F], (6, 1)), T - h)[-1], simulate(robot, np.tile([0.0, F], (6, 1)), T + h)[-1]
    assert corner_speed(robot, pushed) == pytest.approx((lowest_corner(robot, b[None])[0] - lowest_corner(robot, a[None])[0]) / (2 * h), rel=1e-5)


def test_the_jethexa_with_its_rear_feet_left_against_pinocchio():
    """Legs 1-4 lost: mass, CoM height and offset from the rear feet's line, and the inertia
    about that line's direction, against Pinocchio's centroidal quantities of the damaged model;
    the legs' vertical force capacity against the torque limits (no leg stronger than 3 of its
    joints at 3.4 N m allow, every leg able to carry the weight)."""
    robot = load_robot("jethexa")
    model = planar_robot(robot, ["leg5", "leg6"])
    morph = Morphology.healthy(robot)
    for leg in ("leg1", "leg2", "leg3", "leg4"):
        morph = morph.remove_leg(leg)
    mmap = MorphologyMap(robot, morph)
    data = mmap.model.createData()
    q = mmap.expand_q(mmap.reduce_q(robot.q_stand))
    q[3:7] = (0, 0, 0, 1)
    com = pin.centerOfMass(mmap.model, data, q)
    pin.ccrba(mmap.model, data, q, np.zeros(mmap.model.nv))
    pin.framesForwardKinematics(mmap.model, data, q)
    foot = data.oMf[mmap.model.getFrameId("leg5_foot")].translation
    assert model.mass == pytest.approx(pin.computeTotalMass(mmap.model), rel=1e-12)
    assert model.e == pytest.approx(com[0] - foot[0], abs=1e-9)            # the rear feet's line is lateral
    assert model.height == pytest.approx(com[2] - foot[2] + 0.01, abs=1e-9)  # foot spheres of 10 mm
    assert model.inertia == pytest.approx(data.Ig.inertia[1, 1], rel=1e-9)
    assert model.mass * GRAVITY < model.max_force < 2 * 3 * 3.4 / 0.01


def test_without_force_the_body_falls_freely_and_over_the_line_it_lands_slowly():
    """The optimiser against two known answers: with (almost) no force to brake, the best
    touch-down is the free fall's; with the CoM over the foot line and force to spare, the body
    can be lowered as slowly as wanted (under 0.05 m/s here). The first case also shows the
    study is not vacuous: a bound the forces do not allow is not reported."""
    weak = best_landing(box_robot(e=0.0, max_force=0.05), nodes=6, starts=(0.3,))
    assert weak.speed == pytest.approx(weak.free_fall_speed, rel=0.02)
    assert weak.free_fall_speed == pytest.approx(np.sqrt(2 * GRAVITY * (0.11 - 0.018)), rel=1e-9)
    over = best_landing(box_robot(e=0.0), nodes=6, starts=(0.3, 0.6))
    assert over.speed < 0.05 and over.edge_speed < 0.05, over

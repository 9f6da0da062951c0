"""The planar landing model (control/locomotion/planar_landing.py), two feet and three: its dynamics
against closed-form motions and an independent integrator, its model of the JetHexa against
Pinocchio, and the optimiser against the two cases whose answer is known (no force: the free
fall; the CoM over the foot line with force to spare: a touch-down as slow as wanted)."""
import itertools

import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control.locomotion.planar_landing import (GRAVITY, PlanarRobot, best_landing, corner_speed,
                                                            lowest_corner, planar_robot, rate, simulate)
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.robot import load_robot


def box_robot(e=0.15, max_force=80.0):
    half = np.array([0.1, 0.018])
    corners = np.array([[sx * half[0], sz * half[1]] for sx in (-1, 1) for sz in (-1, 1)])
    return PlanarRobot(mass=1.75, inertia=0.015, e=e, height=0.11, corners=corners,
                       hips=np.array([[-0.05, 0.0, 0.09], [-0.05, 0.0, -0.09]]), reach=0.245,
                       friction=0.8, max_force=max_force)


def standing_with_legs_lost(robot, lost):
    """Pinocchio's damaged model standing level on the robot's standing joints with ``lost``
    removed: its map, data (centroidal inertia and frames computed) and CoM."""
    morph = Morphology.healthy(robot)
    for leg in lost:
        morph = morph.remove_leg(leg)
    mmap = MorphologyMap(robot, morph)
    data = mmap.model.createData()
    q = mmap.expand_q(mmap.reduce_q(robot.q_stand))
    q[3:7] = (0, 0, 0, 1)
    com = pin.centerOfMass(mmap.model, data, q)
    pin.ccrba(mmap.model, data, q, np.zeros(mmap.model.nv))
    pin.framesForwardKinematics(mmap.model, data, q)
    return mmap, data, com


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
    mmap, data, com = standing_with_legs_lost(robot, ("leg1", "leg2", "leg3", "leg4"))
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


def box_robot_three(e=0.05, max_force=80.0, third_force=40.0, d=0.13):
    """The box robot with a third foot ``d`` inside the foot line (the CoM ``e`` outside it)."""
    robot = box_robot(e=e, max_force=max_force)
    robot.third = np.array([d, -e - d + 0.02, 0.0, 0.05])
    robot.third_force = third_force
    robot.base = np.array([0.01, 0.02])
    return robot


def independent_final_state(robot, forces, duration):
    """The planar equations of the module docstring written out again and integrated by scipy's
    adaptive Dormand-Prince (DOP853), interval by interval, from rest at the standing pose."""
    from scipy.integrate import solve_ivp
    m, inertia, d = robot.mass, robot.inertia, robot.third[0] if robot.third is not None else 0.0
    x = np.array([robot.e, robot.height, 0.0, 0.0, 0.0, 0.0])
    dt = duration / len(forces)
    for f in forces:
        fs, fz, f3s, f3z = (list(f) + [0.0, 0.0])[:4]

        def rhs(_, y):
            s, z = y[0], y[1]
            return [y[3], y[4], y[5], (fs + f3s) / m, (fz + f3z) / m - GRAVITY,
                    (-s * fz + z * fs + (-d - s) * f3z + z * f3s) / inertia]
        x = solve_ivp(rhs, (0.0, dt), x, method="DOP853", rtol=1e-12, atol=1e-12).y[:, -1]
    return x


@pytest.mark.parametrize("three", [False, True])
def test_the_optimisers_landing_re_simulated_independently_lands_as_reported(three):
    """The force profile the optimiser reports, integrated again by scipy (DOP853, the equations
    written out in the test), ends with the body's lowest corner on the floor, and the CoM's,
    the base's and that corner's downward speeds are the ones reported; two feet and three."""
    robot = box_robot_three() if three else box_robot(e=0.08)
    forces = np.random.default_rng(3).uniform(0.0, 30.0, (6, 4 if three else 2))     # the dynamics alone first
    assert np.allclose(simulate(robot, forces, 0.2)[-1], independent_final_state(robot, forces, 0.2), atol=1e-9)
    best = best_landing(robot, nodes=6, starts=(0.3,), carried=(1.0,))
    assert np.isfinite(best.speed), best
    x = independent_final_state(robot, np.array(best.forces), best.duration)
    assert lowest_corner(robot, x[None])[0] == pytest.approx(0.0, abs=1e-6)
    assert -x[4] == pytest.approx(best.speed, abs=1e-5)
    assert -corner_speed(robot, x) == pytest.approx(best.edge_speed, abs=1e-5)
    c, s = np.cos(x[2]), np.sin(x[2])
    assert -(x[4] + x[5] * (c * robot.base[0] - s * robot.base[1])) == pytest.approx(best.base_speed, abs=1e-5)
    assert np.degrees(abs(x[2])) == pytest.approx(best.tilt_deg, abs=1e-4)


def test_three_feet_limits_free_fall_and_over_the_line():
    """The two known answers with a third foot: no force anywhere, the free fall's touch-down;
    the CoM over the foot line with force to spare, as slow as wanted. And the third foot's
    force is allowed, not imposed, and it can only turn the body over the line the way the
    line's own force does (``dH_L/dt = m g e + d F3_z``: the same sign of ``phi''``), so the
    optimiser, free to use up to twice the weight there, leaves that foot unloaded."""
    weak = best_landing(box_robot_three(e=0.0, max_force=0.05, third_force=0.05), nodes=6, starts=(0.3,), carried=(1.0,))
    assert weak.speed == pytest.approx(weak.free_fall_speed, rel=0.02)
    over = best_landing(box_robot_three(e=0.0), nodes=6, starts=(0.3, 0.6), carried=(1.0,))
    assert over.speed < 0.05 and over.edge_speed < 0.05, over
    robot = box_robot_three()
    x = np.array([robot.e, robot.height, 0.0, 0.0, 0.0, 0.0])
    line, third = rate(robot, x, np.array([0.0, 10.0, 0.0, 0.0]))[5], rate(robot, x, np.array([0.0, 0.0, 0.0, 10.0]))[5]
    assert line < 0.0 and third < 0.0 and third == pytest.approx(-(robot.third[0] + robot.e) * 10.0 / robot.inertia)
    allowed = best_landing(robot, nodes=6, starts=(0.3,), carried=(1.0,))
    assert np.isfinite(allowed.speed) and max(row[3] for row in allowed.forces) < 0.05 * robot.mass * GRAVITY, allowed


def test_three_jethexa_feet_around_which_the_com_is_not():
    """Legs 3, 5, 6 lost (feet 1, 2, 4 left): the CoM against Pinocchio's, outside the feet's
    triangle beyond the edge 1-4 (the edge it is furthest outside of, by scipy's Qhull of the
    three feet), foot 2 the third foot at its distance from that edge, the inertia about the
    edge's direction; a triple with the CoM inside (legs 1, 4, 5 lost) has no such model. At
    the standing pose exactly six triples leave the CoM outside: the six whose declared runs
    fall in the campaign."""
    from scipy.spatial import ConvexHull
    robot = load_robot("jethexa")
    model = planar_robot(robot, ["leg1", "leg2", "leg4"])
    mmap, data, com = standing_with_legs_lost(robot, ("leg3", "leg5", "leg6"))
    feet = {leg: data.oMf[mmap.model.getFrameId(f"{leg}_foot")].translation for leg in ("leg1", "leg2", "leg4")}
    hull = ConvexHull(np.array([p[:2] for p in feet.values()]))
    outside = hull.equations[:, :2] @ com[:2] + hull.equations[:, 2]          # > 0: outside that facet
    assert max(outside) == pytest.approx(model.e, abs=1e-9) and model.e > 0.05
    edge = np.array([feet["leg1"][:2], feet["leg4"][:2]])
    u = (edge[1] - edge[0]) / np.linalg.norm(edge[1] - edge[0])
    normal = np.array([-u[1], u[0]])
    assert abs(normal @ (com[:2] - edge[0])) == pytest.approx(model.e, abs=1e-9)
    assert abs(normal @ (feet["leg2"][:2] - edge[0])) == pytest.approx(model.third[0], abs=1e-9)
    axis = np.append(u, 0.0)
    assert model.inertia == pytest.approx(axis @ data.Ig.inertia @ axis, rel=1e-9)
    assert model.mass == pytest.approx(pin.computeTotalMass(mmap.model), rel=1e-12)
    with pytest.raises(ValueError, match="inside"):
        planar_robot(robot, ["leg2", "leg3", "leg6"])
    names = [leg.name for leg in robot.legs]
    outside_triples = []
    for left in itertools.combinations(names, 3):
        try:
            planar_robot(robot, list(left))
        except ValueError:
            continue
        outside_triples.append("+".join(n for n in names if n not in left))
    assert sorted(outside_triples) == ["leg1+leg2+leg3", "leg1+leg2+leg4", "leg1+leg3+leg5",
                                       "leg2+leg4+leg6", "leg3+leg5+leg6", "leg4+leg5+leg6"]

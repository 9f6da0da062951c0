"""MuJoCo's equivalent of a modal (Ritz) body (sim/soft_feet.py: a chain of links whose
sections translate, two slides per link held to the span of the body's shapes, its stiffness
on fixed tendons) against our model of the body (soft/bodies.py ``ModalBody``: statics by
Newton, the linearised dynamics' eigenvalues) and the Euler-Bernoulli cantilever.

The body of test_soft_rod_mujoco.py's cantilevers (0.2 m, 5 mm radius, 1000 kg/m^3, E such
that its weight would bend it by 0.5 % of its length), two shapes per direction ((s/L)^2,
(s/L)^3), clamped horizontally in an empty MuJoCo world by the plant's own builder.
"""
import mujoco
import numpy as np
import pytest

from hybrid_dynamics.sim.plant import Plant
from hybrid_dynamics.sim.soft_feet import MODAL_PIECES
from hybrid_dynamics.soft.motion import Statics

from test_soft_rod_mujoco import (DENSITY, LENGTH, RADIUS, SECOND, WEIGHT, YOUNGS, addresses,
                                  equivalent_in_empty_world, mujoco_rest, our_tree, ours_rest, robot_with)

MODAL = {"type": "modal", "length": LENGTH, "radius": RADIUS, "density": DENSITY, "youngs_modulus": YOUNGS,
         "damping_time": 0.02, "modes_per_direction": 2}


def test_the_plant_takes_a_modal_body_and_reports_its_coordinates(tmp_path):
    plant = Plant(robot_with(tmp_path, MODAL))
    assert plant.soft_names == [f"rod_q{k}" for k in range(4)]
    assert len(plant.soft.joints) == 2 * MODAL_PIECES                     # two slides per link
    assert np.allclose(plant.joint_states()[1][-4:], 0.0)


def test_modal_cantilever_under_a_tip_force_is_the_beams_cubic(tmp_path):
    """A tip force across the body: its shapes hold the Euler-Bernoulli cubic exactly, so our
    statics gives ``F L^3 / (3 E I)``; MuJoCo's chain, whose energy on the shapes' span is the
    body's and whose held combinations are stiff constraints, the same to 0.1 % (measured)."""
    robot = robot_with(tmp_path, MODAL)
    F = np.array([0.005 * LENGTH * 3 * YOUNGS * SECOND / LENGTH ** 3, 0.0, 0.0])     # 0.5 % of L by the closed form
    mj, q_mj, speed = mujoco_rest(robot, F)
    ours, q = ours_rest(robot, F)
    closed = F[0] * LENGTH ** 3 / (3 * YOUNGS * SECOND)
    print(f"\nmodal, tip force: MuJoCo {mj[0] / closed:.5f}, ours {ours[0] / closed:.5f} of F L^3 / (3 E I); "
          f"coordinates apart {np.abs(q_mj - q).max() / np.abs(q).max():.1e}")
    assert speed < 1e-6
    assert abs(ours[0] / closed - 1) < 1e-6
    assert abs(mj[0] / closed - 1) < 1e-3
    assert np.abs(q_mj - q).max() < 1e-3 * np.abs(q).max(), (q_mj, q)


def test_modal_cantilever_under_its_weight_equals_statics(tmp_path):
    """Its weight: our statics puts the distributed load on the shapes exactly (quadrature),
    MuJoCo's chain lumps each link's weight at its station (the last half link's at the face),
    which differs at O(1 / n^2) of the deflection (n = 10): within 1 % (measured 0.34 %)."""
    robot = robot_with(tmp_path, MODAL)
    mj, _, speed = mujoco_rest(robot, gravity=True)
    ours, _ = ours_rest(robot, gravity=True)
    closed = WEIGHT * LENGTH ** 4 / (8 * YOUNGS * SECOND)
    print(f"\nmodal, weight: MuJoCo {mj[0] / closed:.5f}, ours {ours[0] / closed:.5f} of w L^4 / (8 E I)")
    assert speed < 1e-6
    assert abs(mj[0] / ours[0] - 1) < 1e-2, (mj[0], ours[0])


def test_modal_cantilevers_first_mode_at_our_models_frequency(tmp_path):
    """Released from its deflection under a tip force, undamped, no gravity: MuJoCo's period
    of the first bending mode against our model's (the lowest eigenvalue of M^-1 K, M of the
    recursion at rest) and the Euler-Bernoulli 1.8751^2 sqrt(E I / (rho A L^4)) (two Ritz
    shapes: 0.5 % above it). MuJoCo's links carry their length's mass at their station: the
    kinetic energy by the midpoint rule, O(1 / n^2) of it (n = 10): within 1 % (measured 0.47 %)."""
    robot = robot_with(tmp_path, {**MODAL, "damping_time": 0.0})
    tree = our_tree(robot)
    statics = Statics(tree, range(tree.nq))
    M, _ = tree.mid(np.zeros(tree.nq), np.zeros(tree.nv))
    omega = np.sqrt(np.sort(np.linalg.eigvals(np.linalg.solve(M, statics.tangent(np.zeros(tree.nq)))).real)[0])
    beam = 1.8751 ** 2 * np.sqrt(YOUNGS * SECOND / (DENSITY * np.pi * RADIUS ** 2 * LENGTH ** 4))
    model, data, eq = equivalent_in_empty_world(robot)
    adr, _ = addresses(model, eq)
    _, q_static = ours_rest(robot, np.array([0.001, 0.0, 0.0]))
    data.qpos[adr] = np.linalg.pinv(eq.to_coordinates) @ q_static
    mujoco.mj_forward(model, data)
    t, tip = [], []
    for _ in range(int(0.3 / model.opt.timestep)):
        mujoco.mj_step(model, data)
        t.append(data.time)
        tip.append((eq.to_coordinates @ data.qpos[adr])[0] + (eq.to_coordinates @ data.qpos[adr])[1])
    t, tip = np.array(t), np.array(tip) - np.mean(tip)
    down = np.flatnonzero((tip[:-1] > 0) & (tip[1:] <= 0))
    crossings = t[down] + tip[down] / (tip[down] - tip[down + 1]) * model.opt.timestep
    measured = 2 * np.pi / np.diff(crossings).mean()
    print(f"\nmodal, first mode: MuJoCo {measured:.2f} rad/s, ours {omega:.2f} rad/s, Euler-Bernoulli {beam:.2f} rad/s "
          f"({len(crossings) - 1} periods)")
    assert len(crossings) >= 3
    assert abs(omega / beam - 1) < 1e-2
    assert abs(measured / omega - 1) < 1e-2, (measured, omega)

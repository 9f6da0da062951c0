"""How slowly can a hexapod left with two feet land its body? A planar trajectory optimisation.

With two feet left no standing posture exists (``control/static_feasibility.py``): the body
must come down, and the campaign asks for its first contact with the floor at under 0.2 m/s
vertically, without tipping past 30 deg. This module bounds what any controller could do.

**Model** (in the vertical plane normal to the line through the two feet; ``s`` horizontal,
from that line towards the CoM, ``z`` up, the line at the origin): the robot as one rigid
body of mass ``m`` and inertia ``I`` about the line's direction through its CoM, tilted by
``phi`` in that plane; the two feet's forces summed into one force ``(F_s, F_z)`` at the line
(both feet lie on it, so only the sum acts in this plane)::

    m s'' = F_s,    m z'' = F_z - m g,    I phi'' = -s F_z + z F_s

(the moment of the force about the CoM). Bounds: ``F_z >= 0`` (the ground pushes),
``|F_s| <= mu F_z`` (no slip), ``F_z <=`` the two legs' vertical force capacity at the
standing pose under their torque limits (``|J^T f| <= tau_max``, per leg), and each hip
within the leg's reach of its foot. The legs are massless here and their motion is free:
only the force they pass matters, which is the best case for the controller.

**Problem**: from rest at the standing height, the force profile (piecewise constant over
``nodes`` intervals, their length free) minimising the CoM's vertical speed when the body's
lowest corner first meets the floor, the tilt staying under ``max_tilt`` (SLSQP from a few
starts; a local optimum, so an upper bound on the best achievable speed).

**Why it is hard**: a force at the foot line passes ``e`` (the CoM's distance from it) away
from the CoM unless it leans towards the CoM by ``atan(e / h)``, and the friction cone allows
``atan(mu)``: for the JetHexa's front or rear pair (``e`` ~ 0.12-0.18 m, ``h`` ~ 0.11 m) every
braking force turns the body towards the lost legs.
"""
from __future__ import annotations

from dataclasses import dataclass
import itertools
from typing import Dict, List, Tuple
from xml.etree import ElementTree

import numpy as np
import pinocchio as pin
from scipy.optimize import minimize

from ..model.morphology import Morphology, MorphologyMap

GRAVITY = 9.81


@dataclass
class PlanarRobot:
    """The planar model of one two-footed fault (module docstring); lengths in m."""
    mass: float
    inertia: float              # kg m^2, about the foot line's direction through the CoM
    e: float                    # CoM's horizontal distance from the foot line, standing
    height: float               # CoM height, standing
    corners: np.ndarray         # (k, 2) the body box's corners in the plane, from the CoM (body frame)
    hips: np.ndarray            # (2, 3) per foot: hip from the CoM in the plane (s, z), and its offset along the line
    reach: float                # largest hip-to-foot distance
    friction: float
    max_force: float            # N, the two legs' vertical force capacity


@dataclass
class Landing:
    speed: float                # m/s, the CoM's downward speed at the body's first floor contact
    edge_speed: float           # m/s, the touching corner's downward speed then
    tilt_deg: float             # at that contact
    duration: float             # s from the loss
    free_fall_speed: float      # m/s, the same drop with no force


def simulate(robot: PlanarRobot, forces: np.ndarray, duration: float, substeps: int = 4) -> np.ndarray:
    """States ``(s, z, phi, s', z', phi')`` at the ``len(forces) + 1`` nodes, from rest at the
    standing pose, under piecewise-constant ``forces`` (rows ``(F_s, F_z)``), RK4."""
    def rate(x, f):
        s, z = x[0], x[1]
        return np.array([x[3], x[4], x[5], f[0] / robot.mass, f[1] / robot.mass - GRAVITY,
                         (-s * f[1] + z * f[0]) / robot.inertia])
    x = np.array([robot.e, robot.height, 0.0, 0.0, 0.0, 0.0])
    out = [x.copy()]
    h = duration / (len(forces) * substeps)
    for f in forces:
        for _ in range(substeps):
            k1 = rate(x, f)
            k2 = rate(x + 0.5 * h * k1, f)
            k3 = rate(x + 0.5 * h * k2, f)
            k4 = rate(x + h * k3, f)
            x = x + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(x.copy())
    return np.array(out)


def lowest_corner(robot: PlanarRobot, states: np.ndarray) -> np.ndarray:
    """Height of the body's lowest corner at each state."""
    c, s = np.cos(states[:, 2]), np.sin(states[:, 2])
    heights = states[:, 1:2] + np.outer(s, robot.corners[:, 0]) + np.outer(c, robot.corners[:, 1])
    return heights.min(axis=1)


def corner_speed(robot: PlanarRobot, state: np.ndarray) -> float:
    """Vertical velocity of the body's lowest corner at ``state``."""
    c, s = np.cos(state[2]), np.sin(state[2])
    k = int(np.argmin(state[1] + s * robot.corners[:, 0] + c * robot.corners[:, 1]))
    return float(state[4] + state[5] * (c * robot.corners[k, 0] - s * robot.corners[k, 1]))


def hip_distance(robot: PlanarRobot, states: np.ndarray) -> np.ndarray:
    """Largest hip-to-foot distance of the two legs at each state."""
    c, s = np.cos(states[:, 2]), np.sin(states[:, 2])
    far = np.zeros(len(states))
    for hs, hz, along in robot.hips:
        ps = states[:, 0] + c * hs - s * hz
        pz = states[:, 1] + s * hs + c * hz
        far = np.maximum(far, np.sqrt(ps ** 2 + pz ** 2 + along ** 2))
    return far


def best_landing(robot: PlanarRobot, nodes: int = 12, max_tilt_deg: float = 30.0,
                 starts: tuple = (0.25, 0.5, 0.9)) -> Landing:
    """The slowest touch-down found (module docstring), over SLSQP runs from ``starts``
    (initial durations, s) with the weight carried at first."""
    mu, tilt = robot.friction, np.radians(max_tilt_deg)

    def unpack(x):
        return x[1:].reshape(nodes, 2), x[0]

    memo = {}

    def states(x):          # SLSQP asks for objective and constraints at the same x
        key = x.tobytes()
        if key not in memo:
            memo.clear()
            forces, duration = unpack(x)
            memo[key] = simulate(robot, forces, duration)
        return memo[key]

    def objective(x):       # the CoM's and the touching corner's vertical speeds at the contact
        st = states(x)
        return st[-1, 4] ** 2 + corner_speed(robot, st[-1]) ** 2

    def inequalities(x):
        forces, _ = unpack(x)
        st = states(x)
        return np.concatenate([mu * forces[:, 1] - forces[:, 0], mu * forces[:, 1] + forces[:, 0],
                               lowest_corner(robot, st[1:-1]), tilt - np.abs(st[1:, 2]),
                               robot.reach - hip_distance(robot, st[1:])])

    bounds = [(0.05, 2.0)] + [(-mu * robot.max_force, mu * robot.max_force), (0.0, robot.max_force)] * nodes
    best = None
    for duration in starts:
        x0 = np.concatenate([[duration], np.tile([0.0, 0.5 * robot.mass * GRAVITY], nodes)])
        res = minimize(objective, x0, method="SLSQP", bounds=bounds,
                       constraints=[{"type": "ineq", "fun": inequalities},
                                    {"type": "eq", "fun": lambda x: lowest_corner(robot, states(x)[-1:])}],
                       options={"maxiter": 300, "ftol": 1e-10})
        ok = np.all(inequalities(res.x) >= -1e-6) and abs(lowest_corner(robot, states(res.x)[-1:])[0]) < 1e-6
        if ok and (best is None or res.fun < best.fun):
            best = res
    start = np.array([[robot.e, robot.height, 0.0, 0.0, 0.0, 0.0]])
    free = float(np.sqrt(2 * GRAVITY * lowest_corner(robot, start)[0]))       # the same drop, no force
    if best is None:
        return Landing(np.nan, np.nan, np.nan, np.nan, free)
    st = states(best.x)
    return Landing(float(-st[-1, 4]), -corner_speed(robot, st[-1]), float(np.degrees(abs(st[-1, 2]))),
                   float(best.x[0]), free)


def planar_robot(robot, legs_left: List[str]) -> PlanarRobot:
    """The planar model of ``robot`` left with the two legs ``legs_left`` (the others lost),
    from its model at the standing pose: CoM and inertia of what is left (Pinocchio), the feet
    and hips, the body box's corners (the base link's collision box), the legs' reach and
    vertical force capacity under their torque limits."""
    if len(legs_left) != 2:
        raise ValueError("the planar landing model is for two feet left")
    morph = Morphology.healthy(robot)
    for leg in robot.legs:
        if leg.name not in legs_left:
            morph = morph.remove_leg(leg.name)
    mmap = MorphologyMap(robot, morph)
    model, data = mmap.model, mmap.model.createData()
    q = mmap.expand_q(mmap.reduce_q(robot.q_stand))
    q[3:7] = (0, 0, 0, 1)
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    com = pin.centerOfMass(model, data, q)
    pin.ccrba(model, data, q, np.zeros(model.nv))
    inertia_com = data.Ig.inertia
    legs = [next(l for l in robot.legs if l.name == name) for name in legs_left]
    feet = [data.oMf[model.getFrameId(l.contact_frame)].translation.copy() for l in legs]
    hips = [data.oMi[model.getJointId(robot.model.names[l.joints[0]])].translation.copy() for l in legs]
    ground = float(np.mean([f[2] for f in feet])) - robot.contacts[0].radius
    u = np.append((feet[1] - feet[0])[:2], 0.0)
    u /= np.linalg.norm(u)
    n = np.array([-u[1], u[0], 0.0])
    if n @ (com - feet[0]) < 0:
        n = -n
    e = float(n @ (com - feet[0]))
    size, centre = base_box(robot)
    corners = centre + 0.5 * np.array([[sx * size[0], sy * size[1], sz * size[2]]
                                       for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    corners_plane = np.stack([(corners - com) @ n, corners[:, 2] - com[2]], axis=1)
    hips_plane = np.array([[n @ (h - com), h[2] - com[2], u @ (h - f)] for h, f in zip(hips, feet)])
    reach, capacity = 0.0, 0.0
    for leg in legs:
        fid = model.getFrameId(leg.contact_frame)
        J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
        joints = [model.getJointId(robot.model.names[j]) for j in leg.joints]
        cols = [model.joints[j].idx_v for j in joints]
        lever = np.abs(J[2, cols])                       # N m per newton of vertical force
        capacity += float(np.min(model.effortLimit[cols][lever > 1e-9] / lever[lever > 1e-9]))
        # the leg stretched straight: its links' lengths end to end
        links = [np.linalg.norm(model.jointPlacements[j].translation) for j in joints[1:]]
        reach = max(reach, float(sum(links) + np.linalg.norm(model.frames[fid].placement.translation)))
    return PlanarRobot(mass=float(data.mass[0]), inertia=float(u @ inertia_com @ u),
                       e=e, height=float(com[2] - ground), corners=corners_plane, hips=hips_plane,
                       reach=reach, friction=float(robot.friction), max_force=capacity)


def base_box(robot):
    """(size, centre) of the base link's collision box in its URDF, base frame."""
    root = ElementTree.parse(robot.urdf).getroot()
    base = next(f.name for f in robot.model.frames if f.parentJoint == 1 and f.type == pin.FrameType.BODY)
    link = root.find(f"link[@name='{base}']")
    for collision in ([] if link is None else link.findall("collision")):
        box = collision.find("geometry/box")
        if box is not None:
            origin = collision.find("origin")
            xyz = [0.0, 0.0, 0.0] if origin is None else [float(v) for v in origin.get("xyz", "0 0 0").split()]
            return np.array([float(v) for v in box.get("size").split()]), np.array(xyz)
    raise ValueError(f"{robot.urdf}: the base link has no collision box")


def two_feet_faults(robot, max_tilt_deg: float = 30.0) -> Dict[str, Tuple[float, Landing]]:
    """Every four-leg loss of ``robot`` (keyed by the lost legs, ``+``-joined): the CoM's
    distance from the two feet's line and the best landing found."""
    names = [leg.name for leg in robot.legs]
    out = {}
    for left in itertools.combinations(names, 2):
        model = planar_robot(robot, list(left))
        out["+".join(n for n in names if n not in left)] = (model.e, best_landing(model, max_tilt_deg=max_tilt_deg))
    return out

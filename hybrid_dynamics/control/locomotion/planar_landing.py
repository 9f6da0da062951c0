"""How slowly can a hexapod left with two or three feet land its body? A planar trajectory
optimisation.

With two feet left no standing posture exists (``control/static_feasibility.py``): the body
must come down, and the campaign asks for its first contact with the floor at under 0.2 m/s
vertically, without tipping past 30 deg. This module bounds what any controller could do
(``hybrid-dynamics analyze landing``, the tables in ``analysis/two_feet_landing.py``), and the
controller itself follows its solution from the measured state when the body falls over an
edge of three feet (:mod:`.edge_landing`).

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

**Problem**: from rest at the standing height (or from a given state, ``start``), the force profile (piecewise constant over
``nodes`` intervals, their length free) minimising the CoM's vertical speed when the body's
lowest corner first meets the floor, the tilt staying under ``max_tilt`` (SLSQP from a few
starts; a local optimum, so an upper bound on the best achievable speed).

**Why it is hard**: a force at the foot line passes ``e`` (the CoM's distance from it) away
from the CoM unless it leans towards the CoM by ``atan(e / h)``, and the friction cone allows
``atan(mu)``: for the JetHexa's front or rear pair (``e`` ~ 0.12-0.18 m, ``h`` ~ 0.11 m) every
braking force turns the body towards the lost legs.

**Three feet left, the CoM outside their triangle** (:func:`planar_robot` with three legs): the model is
the same plane, normal to the triangle's edge ``L`` the CoM is furthest outside of, the two
feet of ``L`` summed at the line, and the third foot a second point of force
``(F3_s, F3_z)`` at ``s = -d`` (``d`` its distance from ``L``, on the far side from the CoM),
bounded like the others (``F3_z >= 0``, friction, its leg's capacity, its hip within reach)::

    m s'' = F_s + F3_s,   m z'' = F_z + F3_z - m g,   I phi'' = -s F_z + z F_s + (-d - s) F3_z + z F3_s

Why this edge and this model: every contact is on one side of ``L`` (the CoM on the other), so
about ``L`` the angular momentum changes as ``dH_L/dt = m g e + d F3_z`` (friction at a floor
point has no moment about a floor line; ``test/control/test_line_balance.py`` checks the
law against Pinocchio): the third foot can only add to the roll over ``L``, never take from
it, and ``L`` is the edge the CoM is outside of (about an edge with the CoM inside, gravity
itself turns the body back onto the third foot). What the model leaves out: the motion along
``L`` and the turns about the floor normal and about ``L``'s normal (with three point feet
their moments can be balanced, so they are taken as held), and the third foot's position
along ``L``. The third foot's force is allowed, not imposed: the optimiser would use it where
braking the fall were worth the extra roll, and it does not (checked in
``test/control/test_planar_landing.py`` on a box robot and in the JetHexa's table of
docs/campaign.md: the third foot stays unloaded at the optimum), which is the claim: with the
CoM outside the triangle the body lands on the edge's two feet. Also checked there: the
optimiser's force profile, re-simulated by an independent integrator, lands at the speeds it
reports.

Like the two-feet figures these are local optima from a few starts: **upper bounds on the
best achievable, not proofs** that nothing slower exists.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import itertools
from typing import List, Optional, Sequence, Tuple
from xml.etree import ElementTree

import numpy as np
import pinocchio as pin
from scipy.optimize import minimize

from ...model.morphology import Morphology, MorphologyMap

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
    base: np.ndarray = field(default_factory=lambda: np.zeros(2))   # the base frame's origin in the plane, from the CoM (body frame)
    third: Optional[np.ndarray] = None   # three feet: (d, its hip's s and z from the CoM, the hip's offset along the line from the foot)
    third_force: float = 0.0    # N, the third leg's vertical force capacity


@dataclass
class Landing:
    speed: float                # m/s, the CoM's downward speed at the body's first floor contact
    edge_speed: float           # m/s, the touching corner's downward speed then
    tilt_deg: float             # at that contact
    duration: float             # s from the loss
    free_fall_speed: float      # m/s, the same drop with no force
    base_speed: float = float("nan")    # m/s, the base frame origin's downward speed at the contact (the campaign measures it)
    forces: list = field(default_factory=list)   # the profile found: rows (F_s, F_z[, F3_s, F3_z]) over equal intervals of ``duration``


def rate(robot: PlanarRobot, x: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Time derivative of the states ``x`` (rows ``(s, z, phi, s', z', phi')``) under the
    forces ``f`` (rows ``(F_s, F_z)`` at the foot line, then ``(F3_s, F3_z)`` at the third foot,
    ``s = -d``, if given; module docstring)."""
    s, z = x[..., 0], x[..., 1]
    fs, fz = f[..., 0], f[..., 1]
    moment = -s * f[..., 1] + z * f[..., 0]
    if f.shape[-1] > 2:
        fs, fz = fs + f[..., 2], fz + f[..., 3]
        moment = moment + (-robot.third[0] - s) * f[..., 3] + z * f[..., 2]
    return np.stack([x[..., 3], x[..., 4], x[..., 5], fs / robot.mass, fz / robot.mass - GRAVITY,
                     moment / robot.inertia], axis=-1)


def start_state(robot: PlanarRobot) -> np.ndarray:
    """At rest at the standing pose."""
    return np.array([robot.e, robot.height, 0.0, 0.0, 0.0, 0.0])


def point_speed(state: np.ndarray, point: np.ndarray) -> float:
    """Vertical velocity of the body point ``point`` (in the plane, from the CoM, body frame)."""
    c, s = np.cos(state[2]), np.sin(state[2])
    return float(state[4] + state[5] * (c * point[0] - s * point[1]))


def simulate(robot: PlanarRobot, forces: np.ndarray, duration, substeps: int = 4,
             start: Optional[np.ndarray] = None) -> np.ndarray:
    """States ``(s, z, phi, s', z', phi')`` at the ``len(forces) + 1`` nodes, from ``start``
    (default: rest at the standing pose, :func:`start_state`), under piecewise-constant
    ``forces`` (rows ``(F_s, F_z[, F3_s, F3_z])``), RK4. Batched: ``forces`` (B, nodes, width)
    and ``duration`` (B,) give (B, nodes + 1, 6)."""
    forces = np.asarray(forces, float)
    if forces.ndim == 2:
        return simulate(robot, forces[None], np.array([duration]), substeps, start)[0]
    x = np.tile(start_state(robot) if start is None else np.asarray(start, float), (len(forces), 1))
    out = [x.copy()]
    h = (np.asarray(duration, float) / (forces.shape[1] * substeps))[:, None]
    for f in forces.transpose(1, 0, 2):
        for _ in range(substeps):
            k1 = rate(robot, x, f)
            k2 = rate(robot, x + 0.5 * h * k1, f)
            k3 = rate(robot, x + 0.5 * h * k2, f)
            k4 = rate(robot, x + h * k3, f)
            x = x + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(x.copy())
    return np.stack(out, axis=1)


def lowest_corner(robot: PlanarRobot, states: np.ndarray) -> np.ndarray:
    """Height of the body's lowest corner at each state."""
    c, s = np.cos(states[:, 2]), np.sin(states[:, 2])
    heights = states[:, 1:2] + np.outer(s, robot.corners[:, 0]) + np.outer(c, robot.corners[:, 1])
    return heights.min(axis=1)


def corner_speed(robot: PlanarRobot, state: np.ndarray) -> float:
    """Vertical velocity of the body's lowest corner at ``state``."""
    c, s = np.cos(state[2]), np.sin(state[2])
    k = int(np.argmin(state[1] + s * robot.corners[:, 0] + c * robot.corners[:, 1]))
    return point_speed(state, robot.corners[k])


def hip_distance(robot: PlanarRobot, states: np.ndarray) -> np.ndarray:
    """Largest hip-to-foot distance of the two legs at each state."""
    c, s = np.cos(states[:, 2]), np.sin(states[:, 2])
    far = np.zeros(len(states))
    for hs, hz, along in robot.hips:
        ps = states[:, 0] + c * hs - s * hz
        pz = states[:, 1] + s * hs + c * hz
        far = np.maximum(far, np.sqrt(ps ** 2 + pz ** 2 + along ** 2))
    if robot.third is not None:
        d, hs, hz, along = robot.third
        ps = states[:, 0] + c * hs - s * hz + d
        pz = states[:, 1] + s * hs + c * hz
        far = np.maximum(far, np.sqrt(ps ** 2 + pz ** 2 + along ** 2))
    return far


STARTS = (0.15, 0.25, 0.5, 0.9)     # s, initial durations of the optimiser's starts
CARRIED = (0.5, 1.0)                # ... and the fractions of the weight the feet carry at first


def best_landing(robot: PlanarRobot, nodes: int = 12, max_tilt_deg: float = 30.0,
                 starts: tuple = STARTS, carried: tuple = CARRIED, start: Optional[np.ndarray] = None,
                 maxiter: int = 300) -> Landing:
    """The slowest touch-down found (module docstring), over SLSQP runs from every pair of
    ``starts`` (initial durations, s) and ``carried`` (the fraction of the weight the line's
    feet carry at first, constant; a third foot starts unloaded), the body starting from
    ``start`` (``(s, z, phi, s', z', phi')``; default: at rest at the standing pose)."""
    start = start_state(robot) if start is None else np.asarray(start, float)
    mu, tilt = robot.friction, np.radians(max_tilt_deg)
    width = 2 if robot.third is None else 4

    def unpack(x):
        return x[1:].reshape(nodes, width), x[0]

    def values(x, st):
        """The objective (the CoM's and the touching corner's vertical speeds at the contact,
        squared), the inequalities and the contact's equality at ``x``, its states ``st``."""
        forces, _ = unpack(x)
        cones = [mu * forces[:, k + 1] + sign * forces[:, k] for k in range(0, width, 2) for sign in (-1.0, 1.0)]
        return (st[-1, 4] ** 2 + corner_speed(robot, st[-1]) ** 2,
                np.concatenate(cones + [lowest_corner(robot, st[1:-1]), tilt - np.abs(st[1:, 2]),
                                        robot.reach - hip_distance(robot, st[1:])]),
                lowest_corner(robot, st[-1:]))

    memo = {}

    def evaluated(x, slopes=False):
        """``values`` at ``x`` and, with ``slopes``, their forward-difference Jacobians, the
        perturbed trajectories simulated in one batch (SLSQP asks for the objective, the
        constraints and their Jacobians at the same ``x``)."""
        key = x.tobytes()
        if key not in memo or (slopes and "jac" not in memo[key]):
            steps = 1.5e-8 * np.maximum(1.0, np.abs(x))
            X = np.vstack([x, x + np.diag(steps)]) if slopes else x[None]
            forces = X[:, 1:].reshape(len(X), nodes, width)
            rows = [values(xi, st) for xi, st in zip(X, simulate(robot, forces, X[:, 0], start=start))]
            entry = {"val": rows[0]}
            if slopes:
                entry["jac"] = tuple(np.array([np.atleast_1d(r[i]) - np.atleast_1d(rows[0][i]) for r in rows[1:]]).T
                                     / steps for i in range(3))
            memo.clear()
            memo[key] = entry
        return memo[key]["jac" if slopes else "val"]

    def objective(x):
        return evaluated(x)[0]

    def inequalities(x):
        return evaluated(x)[1]

    per_node = [(-mu * robot.max_force, mu * robot.max_force), (0.0, robot.max_force)]
    if robot.third is not None:
        per_node += [(-mu * robot.third_force, mu * robot.third_force), (0.0, robot.third_force)]
    bounds = [(0.05, 2.0)] + per_node * nodes
    best = None
    for duration, share in itertools.product(starts, carried):
        first = [0.0, min(share * robot.mass * GRAVITY, robot.max_force)] + [0.0, 0.0] * (width == 4)
        x0 = np.concatenate([[duration], np.tile(first, nodes)])
        res = minimize(objective, x0, method="SLSQP", bounds=bounds, jac=lambda x: evaluated(x, True)[0][0],
                       constraints=[{"type": "ineq", "fun": inequalities, "jac": lambda x: evaluated(x, True)[1]},
                                    {"type": "eq", "fun": lambda x: evaluated(x)[2],
                                     "jac": lambda x: evaluated(x, True)[2]}],
                       options={"maxiter": maxiter, "ftol": 1e-10})
        ok = np.all(inequalities(res.x) >= -1e-6) and abs(evaluated(res.x)[2][0]) < 1e-6
        if ok and (best is None or res.fun < best.fun):
            best = res
    # the same drop with no force (from the start's vertical speed, either sign)
    free = float(np.sqrt(start[4] ** 2 + 2 * GRAVITY * lowest_corner(robot, start[None])[0]))
    if best is None:
        return Landing(np.nan, np.nan, np.nan, np.nan, free)
    forces, duration = unpack(best.x)
    st = simulate(robot, forces, duration, start=start)
    return Landing(float(-st[-1, 4]), -corner_speed(robot, st[-1]), float(np.degrees(abs(st[-1, 2]))),
                   float(duration), free, base_speed=-point_speed(st[-1], robot.base), forces=forces.tolist())


def nearest_edge(point_xy: np.ndarray, feet_xy: Sequence[np.ndarray]) -> Tuple[int, int, int, float]:
    """``(a, b, k, e)``: of the triangle of three feet, the edge ``a``-``b`` ``point_xy`` is
    furthest outside of (``e`` > 0 outside, its distance from the edge's line), ``k`` the third."""
    best = None
    for k in range(3):
        a, b = [j for j in range(3) if j != k]
        u = feet_xy[b] - feet_xy[a]
        n = np.array([-u[1], u[0]]) / np.linalg.norm(u)
        if n @ (feet_xy[k] - feet_xy[a]) > 0:
            n = -n
        e = float(n @ (point_xy - feet_xy[a]))
        if best is None or e > best[3]:
            best = (a, b, k, e)
    return best


def standing_with(robot, legs_left: List[str]) -> Tuple[MorphologyMap, np.ndarray]:
    """``robot`` left with only the legs ``legs_left`` (the others lost): its morphology map and
    its standing configuration with the base level (identity orientation)."""
    morph = Morphology.healthy(robot)
    for leg in robot.legs:
        if leg.name not in legs_left:
            morph = morph.remove_leg(leg.name)
    mmap = MorphologyMap(robot, morph)
    q = mmap.expand_q(mmap.reduce_q(robot.q_stand))
    q[3:7] = (0, 0, 0, 1)
    return mmap, q


def planar_robot(robot, legs_left: List[str]) -> PlanarRobot:
    """The planar model of ``robot`` left with the two or three legs ``legs_left`` (the others
    lost), from its model at the standing pose: CoM and inertia of what is left (Pinocchio),
    the feet and hips, the body box's corners (the base link's collision box), the legs' reach
    and vertical force capacity under their torque limits. Three legs: the plane is normal to
    the edge of their feet's triangle the CoM is furthest outside of, the third foot beside it
    (module docstring); a ``ValueError`` if the CoM is inside the triangle (the feet can hold
    the body)."""
    if len(legs_left) not in (2, 3):
        raise ValueError("the planar landing model is for two or three feet left")
    mmap, q = standing_with(robot, legs_left)
    model, data = mmap.model, mmap.model.createData()
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    com = pin.centerOfMass(model, data, q)
    pin.ccrba(model, data, q, np.zeros(model.nv))
    inertia_com = data.Ig.inertia
    legs = [next(l for l in robot.legs if l.name == name) for name in legs_left]
    feet = [data.oMf[model.getFrameId(l.contact_frame)].translation.copy() for l in legs]
    hips = [data.oMi[model.getJointId(robot.model.names[l.joints[0]])].translation.copy() for l in legs]
    ground = float(np.mean([f[2] for f in feet])) - robot.contacts[0].radius

    def across(a, b, away=None):
        """(u, n, e): the line through feet a, b, its floor normal towards the CoM (away from
        foot ``away``), the CoM's distance along it."""
        u = np.append((feet[b] - feet[a])[:2], 0.0)
        u /= np.linalg.norm(u)
        n = np.array([-u[1], u[0], 0.0])
        if (n @ (feet[away] - feet[a]) > 0) if away is not None else (n @ (com - feet[a]) < 0):
            n = -n
        return u, n, float(n @ (com - feet[a]))
    third = None
    if len(legs) == 3:
        a, b, k, _ = nearest_edge(com[:2], [f[:2] for f in feet])
        u, n, e = across(a, b, away=k)
        third = (legs.pop(k), feet.pop(k), hips.pop(k))
        if e <= 0.0:
            raise ValueError(f"legs {', '.join(legs_left)}: the CoM is inside their feet's triangle")
    else:
        u, n, e = across(0, 1)
    corners = box_corners(robot)
    corners_plane = np.stack([(corners - com) @ n, corners[:, 2] - com[2]], axis=1)
    hips_plane = np.array([[n @ (h - com), h[2] - com[2], u @ (h - f)] for h, f in zip(hips, feet)])
    planar = PlanarRobot(mass=float(data.mass[0]), inertia=float(u @ inertia_com @ u),
                         e=e, height=float(com[2] - ground), corners=corners_plane, hips=hips_plane,
                         reach=max(leg_reach(robot, model, leg) for leg in legs), friction=float(robot.friction),
                         max_force=sum(leg_capacity(robot, model, data, q, leg) for leg in legs),
                         base=np.array([n @ (q[:3] - com), q[2] - com[2]]))
    if third is not None:
        leg, foot, hip = third
        planar.third = np.array([-float(n @ (foot - feet[0])), n @ (hip - com), hip[2] - com[2], u @ (hip - foot)])
        planar.third_force = leg_capacity(robot, model, data, q, leg)
        planar.reach = max(planar.reach, leg_reach(robot, model, leg))
    return planar


def leg_capacity(robot, model, data, q, leg) -> float:
    """N: the largest vertical force the foot of ``leg`` passes at ``q`` (``model``'s, its
    ``data`` at ``q``) under the leg's torque limits, ``|J^T f| <= tau_max``."""
    fid = model.getFrameId(leg.contact_frame)
    J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
    joints = [model.getJointId(robot.model.names[j]) for j in leg.joints]
    cols = [model.joints[j].idx_v for j in joints]
    lever = np.abs(J[2, cols])                       # N m per newton of vertical force
    return float(np.min(model.effortLimit[cols][lever > 1e-9] / lever[lever > 1e-9]))


def leg_reach(robot, model, leg) -> float:
    """The leg stretched straight: its links' lengths end to end."""
    fid = model.getFrameId(leg.contact_frame)
    joints = [model.getJointId(robot.model.names[j]) for j in leg.joints]
    links = [np.linalg.norm(model.jointPlacements[j].translation) for j in joints[1:]]
    return float(sum(links) + np.linalg.norm(model.frames[fid].placement.translation))


def box_corners(robot) -> np.ndarray:
    """(8, 3): the corners of the base link's collision box, base frame (:func:`base_box`)."""
    size, centre = base_box(robot)
    return centre + 0.5 * np.array([[sx * size[0], sy * size[1], sz * size[2]]
                                    for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])


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

"""Landing a body that falls over an edge of its three feet: the planar optimiser's landing,
solved from the measured state, as the whole-body controller's references.

Three feet left with the CoM outside their triangle cannot hold the body: about the edge ``L``
of the triangle the CoM is outside of, every contact lies on one side and the angular momentum
``H_L = I phi' + m (h e' - e h')`` (``phi`` the outward roll here) grows as
``dH_L/dt = m g e + d F3_z`` (:mod:`.planar_landing`): no foot force turns the body back, only
the CoM's offset ``e`` does, and bringing the CoM back inside means rolling the body further out
while it falls (the two-foot law of :mod:`.line_balance`: ~3 deg of roll per millimetre; tried
on legs 3+5+6 lost, it turned the body 5.7 -> 17 deg in 55 ms and its edge hit the floor at
0.38 m/s, campaign). :meth:`EdgeLanding.falls_over` is that criterion: the CoM outside the
edge (``e >= 0``) and ``H_L >= 0`` (:func:`edge_momentum`); what is left is a landing on it.

The planar model of :mod:`.planar_landing` (the plane normal to ``L``, the edge's two feet
summed at the line, the third foot at ``-d``) started from the **measured** state (the CoM's
offset and height, their rates, the body's roll about ``L`` and its rate; the body's corners
and hips as measured, turned back about ``L``) gives, by :func:`.planar_landing.best_landing`
(8 intervals, 2 starts), the force profile whose touch-down is slowest.
:meth:`EdgeLanding.reference` hands the controller the trajectory it implies: the CoM across
``L`` and in height (position, velocity, acceleration ``F / m - g``), the body's roll about
``L`` (angle, rate, acceleration ``M / I``), the CoM along ``L`` held where it was measured, the
body's turn about the other two axes held as measured, and the third foot lifted (the optimiser
leaves it unloaded). The whole-body QP's CoM and orientation tasks track it with their own
feedback (``kp``/``kd``) and find the two edge feet's forces that produce its accelerations.
The planner (``LocomotionPlanner._edge_landing_step``) plans twice or more: first to rest a few
millimetres above the floor (the optimum's touch-down is grazing, and a body tracking it a
little low meets the floor early), then onto the floor from the state measured at the end of
the first plan, again if it is not yet down. Once down, the body is held where it came to
rest on the edge, the third foot in the air where it was (taken as a stance foot again under
the hip the landing had turned up, it drove the legs into their limits and the body, landed at
0.19 m/s, tipped over 45 deg: legs 3+5+6 lost, campaign).

A time-varying LQR around the plan (the edge feet's force corrected on the measured state's
deviation, the references set to the measured state) was tried in place of the tasks'
feedback: on the campaign's falling triples it changed the touch-down speeds both ways
(docs/campaign.md) and was left out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Sequence

import numpy as np
import pinocchio as pin

from .line_balance import yaw_only
from .planar_landing import Landing, PlanarRobot, best_landing, lowest_corner, nearest_edge, rate, simulate

FINE = 10           # reference samples per interval of the optimiser's force profile


@dataclass
class LegGeometry:
    """One leg, base frame, at the standing pose: its hip, its reach, its vertical force capacity."""
    hip: np.ndarray
    reach: float
    capacity: float


def edge_momentum(model: PlanarRobot, x: np.ndarray) -> float:
    """``H_L`` (kg m^2/s): the angular momentum of the body in state ``x`` (``(s, z, phi, s',
    z', phi')`` of ``model``) about the edge's line, positive rolling outwards (away from the
    third foot): ``-I phi' + m (z s' - s z')`` (``phi`` turns the outer side up)."""
    s, z, _, ds, dz, dphi = x
    return float(-model.inertia * dphi + model.mass * (z * ds - s * dz))


class EdgeLanding:
    """The body landed on an edge of its three feet's triangle (module docstring)."""

    def __init__(self, corners: np.ndarray, legs: Dict[str, LegGeometry], friction: float,
                 nodes: int = 8, starts: tuple = (0.1, 0.2), max_tilt_deg: float = 30.0):
        self.corners = np.asarray(corners, float)       # (k, 3) the body box's corners, base frame
        self.legs = legs
        self.friction = friction
        self.nodes, self.starts, self.max_tilt_deg = nodes, starts, max_tilt_deg
        self.plan: Optional[Landing] = None

    def planar(self, frames: Sequence[str], feet: Sequence[np.ndarray], floor: float, com: np.ndarray,
               vcom: np.ndarray, base: np.ndarray, R: np.ndarray, w: np.ndarray, mass: float,
               inertia: np.ndarray, clearance: float = 0.0):
        """The planar model of the measured body over the edge of the three feet's triangle its
        CoM is furthest outside of, and its state: ``(model, start, geometry)``. ``frames``/``feet``
        the three walking feet (world), ``floor`` the floor's height (the model's floor
        ``clearance`` higher), ``com``/``vcom`` the CoM and its velocity, ``base``/``R``/``w`` the
        base's position, rotation and world angular velocity, ``mass`` and ``inertia``
        (centroidal, base axes) of the body left. The plane's ``s`` points away from the third
        foot, ``phi`` turns ``s`` towards ``z`` (the outer side up); the body's turn about the
        other two axes is taken as it is measured, and held."""
        feet = [np.asarray(f, float) for f in feet]
        com = np.asarray(com, float)
        a, b, k, e = nearest_edge(com[:2], [f[:2] for f in feet])
        u = np.append(feet[b][:2] - feet[a][:2], 0.0)
        u /= np.linalg.norm(u)
        n = np.array([-u[1], u[0], 0.0])
        if n @ (feet[k] - feet[a]) > 0:
            n = -n
        axis = np.cross(n, [0.0, 0.0, 1.0])
        phi = float(axis @ pin.log3(R @ yaw_only(R).T))
        held = pin.exp3(-phi * axis) @ R            # the body turned back about the edge
        com_b = R.T @ (com - base)                   # the CoM in the base frame

        def plane(p_b):
            """A base-frame point, from the CoM, in the plane ``(s, z)`` of the body turned back
            about the edge (the model turns it by ``phi`` again)."""
            r = held @ (p_b - com_b)
            return np.array([n @ r, r[2]])

        def hip(j):
            leg = self.legs[frames[j]]
            return [*plane(leg.hip), u @ (com + held @ (leg.hip - com_b) - feet[j])]
        third = hip(k)
        model = PlanarRobot(
            mass=mass, inertia=float(u @ (R @ inertia @ R.T) @ u), e=e, height=float(com[2] - floor - clearance),
            corners=np.array([plane(c) for c in self.corners]), hips=np.array([hip(a), hip(b)]),
            reach=max(self.legs[f].reach for f in frames), friction=self.friction,
            max_force=self.legs[frames[a]].capacity + self.legs[frames[b]].capacity, base=plane(np.zeros(3)),
            third=np.array([-float(n @ (feet[k] - feet[a])), *third]), third_force=self.legs[frames[k]].capacity)
        start = np.array([e, com[2] - floor - clearance, phi, n @ vcom, vcom[2], axis @ w])
        geometry = dict(origin=feet[a].copy(), u=u, n=n, axis=axis, held=held, third=frames[k],
                        along=float(u @ (com - feet[a])), floor=floor + clearance, clearance=clearance)
        return model, start, geometry

    def falls_over(self, *measured) -> bool:
        """Whether the measured body (the arguments of :meth:`planar`) is beyond what its three
        feet can hold: its CoM outside the edge (``e >= 0``) and its angular momentum about the
        edge outwards or zero, ``H_L = -I phi' + m (z s' - s z') >= 0`` (module docstring)."""
        model, x, _ = self.planar(*measured)
        return x[0] >= 0.0 and edge_momentum(model, x) >= 0.0

    def solve(self, t: float, *measured, clearance: float = 0.0) -> Optional[Landing]:
        """Plan from the measured state at ``t`` (the arguments of :meth:`planar`) the slowest
        touch-down of the body's lowest corner on a floor ``clearance`` above the real one.
        None (and nothing planned) if that corner is already on it or no landing is found."""
        model, start, geometry = self.planar(*measured, clearance=clearance)
        if lowest_corner(model, start[None])[0] <= 0.0:
            return None
        plan = best_landing(model, nodes=self.nodes, max_tilt_deg=self.max_tilt_deg, starts=self.starts,
                            carried=(1.0,), start=start, maxiter=100)
        if not np.isfinite(plan.speed):
            return None
        forces = np.repeat(np.asarray(plan.forces, float), FINE, axis=0)
        forces[:, 2:] = 0.0              # the third foot is lifted (the optimiser leaves it unloaded)
        self.states = simulate(model, forces, plan.duration, start=start)
        self.rates = rate(model, self.states[:-1], forces)
        self.model, self.plan, self.t0, self.geometry = model, plan, float(t), geometry
        self.third = geometry["third"]
        return plan

    @property
    def end(self) -> float:
        return self.t0 + self.plan.duration

    def reference(self, t: float):
        """CoM position, velocity and acceleration (world), base rotation, world angular
        velocity and acceleration at ``t`` along the plan (the motion along the edge held)."""
        g = self.geometry
        h = self.plan.duration / (len(self.states) - 1)
        x = (t - self.t0) / h
        i = int(np.clip(np.floor(x), 0, len(self.states) - 2))
        f = float(np.clip(x - i, 0.0, 1.0))
        s, z, phi, ds, dz, dphi = (1 - f) * self.states[i] + f * self.states[i + 1]
        acc = self.rates[i]
        com = g["origin"] + g["along"] * g["u"] + s * g["n"]
        com[2] = g["floor"] + z
        v = ds * g["n"] + np.array([0.0, 0.0, dz])
        a = acc[3] * g["n"] + np.array([0.0, 0.0, acc[4]])
        R_ref = pin.exp3(phi * g["axis"]) @ g["held"]
        return com, v, a, R_ref, dphi * g["axis"], acc[5] * g["axis"]

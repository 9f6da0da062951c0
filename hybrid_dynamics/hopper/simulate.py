"""The hopper's hybrid simulation: floor model, stance/flight phases with hysteresis, a stiff
integrator with event handling, and cumulative work per port [Feurstein 2021, Secs. 4.2-4.4].

Floor [Feurstein 2021, Eq. (4.13)] with the signs the thesis leaves ambiguous fixed: in contact
(foot below the floor, y_f < 0) F_x = -K_x (x_f - x_td) - D_x xdot_f with x_td the foot's x at
the touchdown (the horizontal spring's anchor), F_y = max(-K_y y_f - D_y ydot_f, 0); no force
out of contact, no Coulomb limit (as in the thesis). The floor acts on the foot only, through
J_f^T F. ``floor_anchor="origin"`` anchors the horizontal spring at x = 0 instead, as the printed
F^x = K^x o_if^x reads (the Fig. 4.7 sweep depends on this choice: docs/decoupled.md).

Phases: contact switches exactly where y_f crosses 0 (an event: the floor force jumps there).
The controller's phase has hysteresis: stance starts at a touchdown, flight only once the foot
has risen ``lift_height`` above the floor, so that a contact chatter does not toggle the polar
spring (the revolute Exps II-VI depend on this choice: docs/decoupled.md).

Integrator: LSODA (stiff/non-stiff switching; the floor damping gives time constants of ~5e-5 s)
between events, restarted at each event with the new phase. The state carries the cumulative
work of every port (floor, joint torques, base torque) and of every controller term, integrated
with the state, so that the energy balance

    E_mech(t) - E_mech(0) = W_floor + W_joint + W_base

closes to the integrator's tolerance (``Log.balance_residual``). A non-finite state stops the
run with InputError at the time it appears; nothing is integrated past it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
from scipy.integrate import solve_ivp

from ..errors import InputError
from .controller import HopperController
from .model import Hopper

WORKS = ("floor", "floor_touchdown", "joint", "base", "radial_spring", "radial_damper", "pump", "polar")
FALLEN_COM_HEIGHT = 0.03
LIFT_HEIGHT = 1e-3                        # m: stance ends when the foot is this far above the floor
FLOOR_ANCHORS = ("touchdown", "origin")


@dataclass
class Mode:
    contact: bool = False
    anchor: float = 0.0
    stance: bool = False
    impact: bool = False          # from a touchdown until the foot's vertical velocity turns upward


@dataclass
class Event:
    t: float
    kind: str                     # touchdown, liftoff
    x: np.ndarray
    v: np.ndarray


@dataclass
class Log:
    t: np.ndarray
    x: np.ndarray                 # (k, 4) [o_x, o_y, theta, q]
    v: np.ndarray                 # (k, 4)
    works: np.ndarray             # (k, len(WORKS)) cumulative
    events: List[Event]
    fallen: bool
    series: Dict[str, np.ndarray] = field(default_factory=dict)   # r, alpha, E terms, h_c, floor force

    def work(self, name: str) -> np.ndarray:
        return self.works[:, WORKS.index(name)]

    def count(self, kind: str) -> int:
        return sum(e.kind == kind for e in self.events)

    @property
    def balance_residual(self) -> float:
        """max_t |E_mech(t) - E_mech(0) - (W_floor + W_joint + W_base)(t)|."""
        e = self.series["kinetic"] + self.series["gravity"]
        ports = self.work("floor") + self.work("joint") + self.work("base")
        return float(np.abs(e - e[0] - ports).max())


class HopperSim:
    def __init__(self, hopper: Hopper, controller: HopperController, lift_height: float = LIFT_HEIGHT,
                 rtol: float = 1e-10, atol: float = 1e-12, log_dt: float = 1e-3, floor_anchor: str = "touchdown"):
        if floor_anchor not in FLOOR_ANCHORS:
            raise InputError(f"floor anchor '{floor_anchor}' is not one of {', '.join(FLOOR_ANCHORS)}",
                             field="floor_anchor")
        if not lift_height > 0:
            raise InputError(f"lift height {lift_height} must be a positive distance (m)", field="lift_height")
        self.floor_anchor = floor_anchor
        self.hopper, self.controller = hopper, controller
        self.lift_height, self.rtol, self.atol, self.log_dt = lift_height, rtol, atol, log_dt
        self.floor = hopper.desc.floor
        self._foot_key, self._foot_value = None, None

    def _anchor(self, foot) -> float:
        """Where the horizontal floor spring is anchored for a contact starting at ``foot``."""
        return float(foot[0]) if self.floor_anchor == "touchdown" else 0.0

    def floor_force(self, geo, mode: Mode) -> np.ndarray:
        if not mode.contact:
            return np.zeros(2)
        f, fd = geo.foot, geo.foot_velocity
        fl = self.floor
        return np.array([-fl.Kx * (f[0] - mode.anchor) - fl.Dx * fd[0],
                         max(-fl.Ky * f[1] - fl.Dy * fd[1], 0.0)])

    def rhs(self, t, y, mode: Mode) -> np.ndarray:
        h = self.hopper
        nv = h.nv
        x, v = y[:nv], y[nv:2 * nv]
        geo = h.geometry(x, v)
        M, b = h.dynamics(x, v)
        cmd = self.controller.command(x, v, geo, 0.5 * float(v @ M @ v), mode.stance)
        F = self.floor_force(geo, mode)
        Q_ctrl = cmd.total
        vdot = np.linalg.solve(M, Q_ctrl + geo.J_foot.T @ F - b)
        c, s = math.cos(x[2]), math.sin(x[2])
        floor_power = float(F @ geo.foot_velocity)
        out = np.empty_like(y)
        out[:nv] = (c * v[0] - s * v[1], s * v[0] + c * v[1], *v[2:])    # o_dot = R v_b, theta_dot = w
        out[nv:2 * nv] = vdot
        out[2 * nv:] = (floor_power, floor_power if mode.impact else 0.0, float(Q_ctrl[3:] @ v[3:]),
                        float(Q_ctrl[:3] @ v[:3]), float(cmd.radial_spring @ v), float(cmd.radial_damper @ v),
                        float(cmd.pump @ v), float(cmd.polar @ v))
        if not np.isfinite(out).all():
            raise InputError(f"the hopper's state derivative became non-finite at t = {t:.6f} s "
                             f"(x = {np.round(x, 6).tolist()}, v = {np.round(v, 6).tolist()})", field="state")
        return out

    def _foot(self, y):
        """Foot position and velocity and the CoM, for the event functions (which scipy calls
        one after the other on the same state: the last state's values are kept)."""
        key = y[:2 * self.hopper.nv].tobytes()
        if key != self._foot_key:
            nv = self.hopper.nv
            geo = self.hopper.geometry(y[:nv], y[nv:2 * nv])
            self._foot_key, self._foot_value = key, (geo.foot, geo.foot_velocity, geo.com)
        return self._foot_value

    def _events(self, mode: Mode):
        def floor(t, y, *_):
            return self._foot(y)[0][1]
        floor.terminal, floor.direction = True, (1 if mode.contact else -1)
        events = [floor]
        if mode.stance and not mode.contact:
            def lift(t, y, *_):
                return self._foot(y)[0][1] - self.lift_height
            lift.terminal, lift.direction = True, 1
            events.append(lift)
        if mode.impact:
            def rebound(t, y, *_):
                return self._foot(y)[1][1]
            rebound.terminal, rebound.direction = True, 1
            events.append(rebound)

        def fallen(t, y, *_):
            return self._foot(y)[2][1] - FALLEN_COM_HEIGHT
        fallen.terminal, fallen.direction = True, -1
        events.append(fallen)
        return events

    def run(self, x0, v0, duration: float, stop_after_liftoffs: Optional[int] = None) -> Log:
        h = self.hopper
        nv = h.nv
        h.to_pinocchio(x0)
        v0 = np.asarray(v0, float)
        if v0.shape != (nv,) or not np.isfinite(v0).all():
            raise InputError(f"the hopper velocity v = {v0.tolist()} must be {nv} finite numbers", field="v")
        y = np.r_[np.asarray(x0, float), v0, np.zeros(len(WORKS))]
        foot = self._foot(y)[0]
        mode = Mode(contact=foot[1] < 0, anchor=self._anchor(foot), stance=foot[1] < 0)
        t, events, ts, ys, fallen = 0.0, [], [np.array([0.0])], [y[:, None]], False
        grid = np.arange(0.0, duration + 0.5 * self.log_dt, self.log_dt)
        while t < duration - 1e-12:
            t_eval = grid[(grid > t) & (grid <= duration)]
            sol = solve_ivp(self.rhs, (t, duration), y, method="LSODA", t_eval=t_eval, args=(mode,),
                            events=self._events(mode), rtol=self.rtol, atol=self.atol)
            if sol.status == -1:
                raise InputError(f"the hopper simulation failed at t = {sol.t[-1] if len(sol.t) else t:.6f} s: "
                                 f"{sol.message}", field="state")
            if len(sol.t):
                ts.append(sol.t)
                ys.append(np.reshape(sol.y, (len(y), -1)))
            if sol.status == 0:
                break
            hit = [k for k, te in enumerate(sol.t_events) if len(te)]
            k = hit[0]
            t, y = float(sol.t_events[k][0]), sol.y_events[k][0].copy()
            kind = self._events(mode)[k].__name__
            if kind == "fallen":
                fallen = True
                break
            if kind == "floor" and not mode.contact:
                events.append(Event(t, "recontact" if mode.stance else "touchdown", y[:nv].copy(), y[nv:2 * nv].copy()))
                mode = Mode(contact=True, anchor=self._anchor(self._foot(y)[0]), stance=True, impact=True)
            elif kind == "floor":
                mode = Mode(contact=False, anchor=mode.anchor, stance=True, impact=False)
            elif kind == "lift":
                mode = Mode(contact=False, anchor=mode.anchor, stance=False, impact=False)
                events.append(Event(t, "liftoff", y[:nv].copy(), y[nv:2 * nv].copy()))
                if stop_after_liftoffs is not None and sum(e.kind == "liftoff" for e in events) >= stop_after_liftoffs:
                    ts.append(np.array([t]))
                    ys.append(y[:, None])
                    break
            else:                                                   # rebound: the floor's compression is over
                mode = Mode(contact=mode.contact, anchor=mode.anchor, stance=mode.stance, impact=False)
        T = np.concatenate(ts)
        Y = np.concatenate(ys, axis=1).T
        order = np.argsort(T, kind="stable")
        log = Log(t=T[order], x=Y[order, :nv], v=Y[order, nv:2 * nv], works=Y[order, 2 * nv:], events=events,
                  fallen=fallen)
        log.series = self.series(log)
        return log

    def series(self, log: Log) -> Dict[str, np.ndarray]:
        """r, alpha, energy terms and h_c at every logged sample."""
        h, ctrl = self.hopper, self.controller
        keys = ("r", "alpha", "kinetic", "gravity", "spring", "energy", "h_x", "h_y", "h_angular", "com_y", "foot_y")
        out = {k: np.empty(len(log.t)) for k in keys}
        for i, (x, v) in enumerate(zip(log.x, log.v)):
            geo = h.geometry(x, v)
            kinetic = h.kinetic_energy(x, v)
            cmd = ctrl.command(x, v, geo, kinetic, stance=False)
            hc = h.hamel.centroidal(h.to_pinocchio(x), v).h_c
            values = (geo.r, geo.alpha, kinetic, h.mass * h.desc.gravity * geo.com[1], cmd.spring_energy,
                      cmd.energy, hc[0], hc[1], hc[2], geo.com[1], geo.foot[1])
            for k, val in zip(keys, values):
                out[k][i] = val
        return out

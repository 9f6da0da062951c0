"""The hopper's impedance controllers [Feurstein 2021, Sec. 4.2, Eqs. (4.14)-(4.25)].

Always a radial spring-damper between CoM and foot, plus the energy pump [Feurstein 2021,
Eq. (4.18)] (after Garofalo and Giordano):

    tau_r = -K_r (r_cf - r_des) - D_r rdot_cf + tau_E,    tau_E = -K_E (E - E_des) rdot_cf

and in stance only a polar spring-damper tau_p = -K_p (alpha - alpha_des) - D_p alphadot on

- Controller I: nothing (radial only, under-actuated);
- Controller II: alpha = alpha_{i,cf}, the inertial angle of the CoM-to-foot line;
- Controller III: alpha_c = theta_b + theta_bc(q) + offset, the orientation of the CoM frame
  aligned with the locked velocity (theta_bc' = T_w, Sec. 3.2.4). The thesis leaves the offset
  open (its listing adds pi/2); here it is chosen so that alpha_c = alpha_{i,cf} at the initial
  state, so that alpha_des means the same for II and III.

Generalized forces Q = J_r^T tau_r + J_alpha^T tau_p in the full velocity [v_b, w_b, qd] (the
exact Jacobians of ``model.Geometry``): the radial part is a joint torque, the polar part a torque
on the base (the thesis's fictitious external torque, "fully actuated") plus a joint torque.
E = kinetic + gravity (zero at the floor) + radial spring energy 1/2 K_r (r - r_des)^2 (the
thesis does not say; with the spring energy the pump regulates, without it E overshoots).
D_r acts in flight only when ``damp_in_flight_only`` (Exps IV-VI: "D_r in flight").
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy.interpolate import CubicSpline

from ..errors import InputError, reject_unknown_settings
from .model import Geometry, Hopper, wrap

CONTROLLERS = ("I", "II", "III")


@dataclass
class Gains:
    controller: str = "I"
    K_r: float = 2200.0
    D_r: float = 0.0
    damp_in_flight_only: bool = False
    K_p: float = 0.0
    D_p: float = 0.0
    K_E: float = 0.0
    r_des: float = 0.0
    alpha_des: float = 0.0
    E_des: Optional[float] = None

    @classmethod
    def from_dict(cls, data: dict, where: str = "gains") -> "Gains":
        reject_unknown_settings(cls, data, "hopper gain", where)
        g = cls(**data)
        if g.controller not in CONTROLLERS:
            raise InputError(f"controller {g.controller!r} is not one of {CONTROLLERS}", field=f"{where}.controller")
        for name in ("K_r", "D_r", "K_p", "D_p", "K_E", "r_des"):
            value = getattr(g, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise InputError(f"{name} = {value!r} must be a finite number >= 0", field=f"{where}.{name}")
        if g.K_E > 0 and (g.E_des is None or not math.isfinite(g.E_des)):
            raise InputError("the energy pump (K_E > 0) needs a finite E_des", field=f"{where}.E_des")
        return g


@dataclass
class Command:
    """The controller's generalized forces per term at one state, and its energy."""
    radial_spring: np.ndarray
    radial_damper: np.ndarray
    pump: np.ndarray
    polar: np.ndarray
    energy: float
    spring_energy: float

    @property
    def total(self) -> np.ndarray:
        return self.radial_spring + self.radial_damper + self.pump + self.polar


class HopperController:
    def __init__(self, hopper: Hopper, gains: Gains, x0=None):
        self.hopper, self.gains = hopper, gains
        self._theta_bc = None
        self._offset = 0.0
        if gains.controller == "III":
            if x0 is None:
                raise InputError("Controller III needs the initial state to fix its angle offset", field="x0")
            self._theta_bc = self._theta_bc_spline(float(x0[3]))
            g = hopper.geometry(x0, np.zeros(hopper.nv))
            self._offset = g.alpha - (float(x0[2]) + float(self._theta_bc(x0[3])))

    def _theta_bc_spline(self, q0: float) -> CubicSpline:
        """theta_bc(q) on q0 +- 3 (rad or m), from the exact rate T_w (one joint: (3.72) holds)."""
        if self.hopper.n != 1:
            raise InputError("Controller III is implemented for one-joint hoppers", field="controller")
        grid = np.linspace(q0 - 3.0, q0 + 3.0, 601)
        rate = np.array([self.hopper.locked_rotation_rate(np.r_[0.0, 0.0, 0.0, s])[0] for s in grid])
        spline_rate = CubicSpline(grid, rate)
        return spline_rate.antiderivative()

    def polar_angle(self, x, v, geo: Geometry):
        """(alpha, alpha_dot, J) of the polar spring: alpha_{i,cf} (II) or alpha_c (III)."""
        if self.gains.controller == "III":
            rate = float(self._theta_bc.derivative()(x[3]))
            J = np.zeros(self.hopper.nv)
            J[2], J[3] = 1.0, rate
            return wrap(float(x[2]) + float(self._theta_bc(x[3])) + self._offset), float(J @ v), J
        return geo.alpha, float(geo.J_alpha @ v), geo.J_alpha

    def command(self, x, v, geo: Geometry, kinetic: float, stance: bool) -> Command:
        g = self.gains
        h = self.hopper
        rdot = float(geo.J_r @ v)
        stretch = geo.r - g.r_des
        spring_energy = 0.5 * g.K_r * stretch * stretch
        energy = kinetic + h.mass * h.desc.gravity * float(geo.com[1]) + spring_energy
        zero = np.zeros(h.nv)
        damper = zero if (g.damp_in_flight_only and stance) else -g.D_r * rdot * geo.J_r
        pump = zero if g.K_E == 0 else -g.K_E * (energy - g.E_des) * rdot * geo.J_r
        polar = zero
        if stance and g.controller != "I":
            alpha, alpha_dot, J = self.polar_angle(x, v, geo)
            polar = (-g.K_p * wrap(alpha - g.alpha_des) - g.D_p * alpha_dot) * J
        return Command(radial_spring=-g.K_r * stretch * geo.J_r, radial_damper=damper, pump=pump, polar=polar,
                       energy=energy, spring_energy=spring_energy)

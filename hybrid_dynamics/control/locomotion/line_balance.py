"""Balancing a body over the line of its two feet while it comes down.

With two point feet left (a hexapod that lost four legs) every contact force acts at a point
of the line ``L`` through the two feet, and friction at a floor point has no moment about a
floor line, so the angular momentum about ``L`` changes by gravity alone::

    dH_L/dt = m g e,    H_L = I phi' + m (h e' - e h')

``e`` the CoM's horizontal distance from ``L`` (along the floor normal ``n`` of the line),
``h`` its height, ``phi`` the body's rotation about the line's direction ``a = z x n`` (positive:
the body's top towards ``+n``), ``I`` the centroidal inertia about ``a``. No force of the feet
can stop the roll about ``L``: the only lever is where the CoM is, and the body moves it across
the line (a horizontal foot force ``m e''``) only by turning the other way about its CoM::

    I phi'' = m g e - m h e''

(the moment of the feet's force ``(m e'', m g)`` at the line, about the CoM). This is a
linear system in ``x = (e, e', phi, phi')`` with input ``u = e''``; :func:`balance_gains` is its
LQR state feedback ``u = -K x``, which keeps the CoM over the line by turning the body as
little as the weights allow. The JetHexa left with two diagonal feet has ``I`` = 0.005 kg m^2
and ``m h`` = 0.19 kg m: every millimetre the CoM is brought back costs about 4 deg of body
roll (:data:`WEIGHTS`), so the balance holds a CoM that starts within millimetres of the
line, not one that has fallen off it.

:class:`LineBalance` turns that feedback into the whole-body controller's references: the CoM's
acceleration across the line ``u`` (its position and velocity across set to the measured ones,
so the task's feedback terms add nothing to it), and the body's orientation about ``a`` set to
the measured one with the angular acceleration ``phi'' = (m g e - m h u) / I`` that the same
motion implies (the other two axes held level, the yaw kept): the two tasks then ask the same
motion and the QP need not trade one for the other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Tuple

import numpy as np
import pinocchio as pin
from scipy.linalg import solve_continuous_are

GRAVITY = 9.81      # m/s^2

# LQR weights of the line balance: the largest CoM offset (m) and speed (m/s) across the line,
# body roll (rad) and roll rate (rad/s) and CoM acceleration (m/s^2) each state is scaled by
# (Bryson's rule). An offset at rest is brought back with 3.9 deg of roll per millimetre at
# most for the JetHexa's diagonal feet, 2.8 for its middle pair (CoM 0.1 m up, planar rigid body
# pushed at the line: test/control/test_line_balance.py)
WEIGHTS = {"e": 0.01, "de": 0.5, "phi": 0.2, "dphi": 5.0, "u": 2.0}


def balance_gains(mass: float, inertia: float, height: float) -> np.ndarray:
    """LQR gains ``K`` (4,) of ``u = e'' = -K (e, e', phi, phi')`` for the line dynamics of the
    module docstring (``I phi'' = m g e - m h u``) at CoM height ``height``."""
    A = np.array([[0.0, 1.0, 0.0, 0.0],
                  [0.0, 0.0, 0.0, 0.0],
                  [0.0, 0.0, 0.0, 1.0],
                  [mass * GRAVITY / inertia, 0.0, 0.0, 0.0]])
    B = np.array([[0.0], [1.0], [0.0], [-mass * height / inertia]])
    w = WEIGHTS
    Q = np.diag([w["e"] ** -2, w["de"] ** -2, w["phi"] ** -2, w["dphi"] ** -2])
    R = np.array([[w["u"] ** -2]])
    P = solve_continuous_are(A, B, Q, R)
    return (np.linalg.solve(R, B.T @ P))[0]


def line_through(first: np.ndarray, second: np.ndarray, points: np.ndarray, margin: float) -> np.ndarray:
    """How far the line through two feet passes from ``points``, for every pair of candidate
    feet: ``first`` (A, 2) and ``second`` (B, 2) world xy, ``points`` (P, 2) world xy (the CoM and
    its capture point). Returns (A, B) the largest distance of a point from the line, +inf where
    a point is not between the two feet along the line with ``margin`` to spare (beyond a foot
    the body tips about it, not about the line)."""
    a, b = np.asarray(first, float)[:, None, :], np.asarray(second, float)[None, :, :]
    d = b - a
    length = np.maximum(np.linalg.norm(d, axis=-1), 1e-9)
    u = d / length[..., None]
    worst = np.zeros(length.shape)
    for p in np.asarray(points, float).reshape(-1, 2):
        rel = p - a
        along = (rel * u).sum(-1)
        worst = np.maximum(worst, np.where((along >= margin) & (along <= length - margin),
                                           np.abs(u[..., 0] * rel[..., 1] - u[..., 1] * rel[..., 0]), np.inf))
    return worst


def yaw_only(R: np.ndarray) -> np.ndarray:
    """The rotation about z of ``R``'s heading (its tilt removed)."""
    yaw = np.arctan2(R[1, 0], R[0, 0])
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@dataclass
class LineBalance:
    """The line through two feet (world xy ``feet``) and the body balanced over it."""
    feet: np.ndarray            # (2, 2) world xy of the two feet
    mass: float                 # kg, of what is left
    inertia: float              # kg m^2, centroidal, about the line's direction
    along: np.ndarray = field(init=False)
    normal: np.ndarray = field(init=False)
    _gains: Dict[int, np.ndarray] = field(init=False, default_factory=dict)

    def __post_init__(self):
        self.place(self.feet)

    def place(self, feet_xy) -> None:
        """The line through the feet at ``feet_xy`` (2 x 2, world xy; the inertia is kept)."""
        self.feet = np.asarray(feet_xy, float).reshape(2, 2).copy()
        d = self.feet[1] - self.feet[0]
        self.along = d / np.linalg.norm(d)
        self.normal = np.array([-self.along[1], self.along[0]])

    @classmethod
    def of(cls, feet_xy, mass: float, inertia_world: np.ndarray) -> "LineBalance":
        """The balance for feet at ``feet_xy`` of a body of ``mass`` whose centroidal inertia
        (world axes, 3 x 3) is ``inertia_world``."""
        feet = np.asarray(feet_xy, float).reshape(2, 2)
        d = feet[1] - feet[0]
        a = np.array([d[0], d[1], 0.0]) / np.linalg.norm(d)
        return cls(feet, float(mass), float(a @ inertia_world @ a))

    @property
    def axis(self) -> np.ndarray:
        """``a = z x n`` (3,): the body's roll ``phi`` is about it."""
        return np.array([-self.normal[1], self.normal[0], 0.0])

    def offset(self, point: np.ndarray) -> float:
        """Signed horizontal distance of ``point`` from the line (``+`` along ``normal``)."""
        return float(self.normal @ (np.asarray(point, float)[:2] - self.feet[0]))

    def roll(self, R: np.ndarray, w_world: np.ndarray) -> Tuple[float, float]:
        """(phi, phi'): the body's rotation about :attr:`axis` from level (yaw kept) and its
        rate, for the base rotation ``R`` and world angular velocity ``w_world``."""
        a = self.axis
        return float(a @ pin.log3(R @ yaw_only(R).T)), float(a @ w_world)

    def gains(self, height: float) -> np.ndarray:
        key = int(round(height / 0.005))          # re-computed every 5 mm of height
        if key not in self._gains:
            self._gains[key] = balance_gains(self.mass, self.inertia, max(key * 0.005, 0.005))
        return self._gains[key]

    def reference(self, com: np.ndarray, vcom: np.ndarray, R: np.ndarray, w_world: np.ndarray,
                  height: float, margin: float, roll: float = 0.0, roll_rate: float = 0.0):
        """One cycle of the balance (module docstring): ``(com_xy, vcom_xy, acom_xy, R_ref,
        w_ref, dw_ref)`` (world). ``com``/``vcom`` the measured CoM and its velocity, ``R`` and
        ``w_world`` the base's rotation and angular velocity, ``height`` the CoM's above the
        feet. Along the line the CoM is held inside the segment between the feet, ``margin``
        from each (``u`` acts across the line only)."""
        e, de = self.offset(com), float(self.normal @ np.asarray(vcom, float)[:2])
        phi, dphi = self.roll(R, w_world)
        u = -float(self.gains(height) @ np.array([e, de, phi - roll, dphi - roll_rate]))
        length = float(self.along @ (self.feet[1] - self.feet[0]))
        s = float(np.clip(self.along @ (np.asarray(com, float)[:2] - self.feet[0]), min(margin, 0.5 * length),
                          max(length - margin, 0.5 * length)))
        com_xy = self.feet[0] + s * self.along + e * self.normal
        vcom_xy, acom_xy = de * self.normal, u * self.normal
        a = self.axis
        R_ref = pin.exp3(phi * a) @ yaw_only(R)
        ddphi = (self.mass * GRAVITY * e - self.mass * height * u) / self.inertia
        return com_xy, vcom_xy, acom_xy, R_ref, dphi * a, ddphi * a

"""What became of the robot in one run: walked, stood, safe landing or fell.

From the ground truth after the damage: MuJoCo's base trajectory, and the first instant a geom
of the robot other than a foot touched the floor (``sim.plant.Plant.body_touch``, with the
base's vertical speed before that contact acted):

- **fell**: the body tipped over (its tilt above :data:`TIP_DEG`, or the runner stopped the
  run on its tilt or height limit without the body touching the floor), or the body touched
  the floor faster than :data:`LANDING_SPEED`: the base, or the points of the body that
  touched (``BodyTouch.point_speed``);
- **safe landing**: the body touched the floor at most :data:`LANDING_SPEED` vertically, the
  base and the touching points, and did not tip over (a body resting propped on an edge is a
  landing, not standing). By the base's speed alone a body turning fast onto its edge is a
  landing while the edge hits the floor at over 1 m/s (``control/locomotion/planar_landing.py``: the
  slowest base touch-down with two feet left is such a roll);
- **walked**: the body never touched the floor and the base moved on at least
  :data:`WALK_FRACTION` of the commanded speed (from 1 s after the damage to the end);
- **stood**: the body never touched the floor and did not walk (or no walking was asked for).

A run that raised, whose worker died, or that ran out of wall time is **crashed** or
**timeout** instead: not an outcome of the robot, and counted apart.

The **tilt** is the angle between the body's vertical axis and the world's,
``arccos(cos(roll) cos(pitch))`` (the (3, 3) entry of ``R = Rz(yaw) Ry(pitch) Rx(roll)``), not
the larger of |roll| and |pitch|: rolled and pitched 25 deg at once the body is tilted 34.8
deg. Legs 1, 2 and 5 lost (undeclared, jethexa_tripod) reached 28.6 deg of roll and 23.9 of
pitch, a tilt of 31.5 deg, and was called a safe landing while each angle stayed under 30.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

OUTCOMES = ("walked", "stood", "safe landing", "fell", "crashed", "timeout")
SURVIVED = ("walked", "stood", "safe landing")
LANDING_SPEED = 0.2        # m/s (issue 14: base vertical speed at touch-down)
TIP_DEG = 30.0             # deg of tilt (the body's vertical axis from the world's): tipped over
WALK_FRACTION = 0.2        # of the commanded speed


def tilt_deg(rpy_deg: np.ndarray) -> np.ndarray:
    """The body's tilt (deg) at each row of ``rpy_deg`` (roll, pitch, yaw in deg; module docstring)."""
    r = np.radians(np.asarray(rpy_deg, float))
    return np.degrees(np.arccos(np.clip(np.cos(r[..., 0]) * np.cos(r[..., 1]), -1.0, 1.0)))


def classify(stopped: str, t: np.ndarray, rpy_deg: np.ndarray, t_damage: Optional[float],
             touch_speed: Optional[float], commanded_speed: float, speed_after: Optional[float],
             touch_point_speed: Optional[float] = None) -> dict:
    """The outcome and the figures it was decided on (see the module docstring); ``t`` from
    the start of the gait, ``t_damage`` in the same clock (None: no damage happened);
    ``touch_speed``: the base's downward speed (m/s) when the body first touched the floor,
    None if it never did; ``touch_point_speed``: the touching points' (None: not measured)."""
    if stopped.startswith("error"):
        return {"outcome": "crashed"}
    if stopped.startswith("timeout"):
        return {"outcome": "timeout"}
    after = t >= (t_damage if t_damage is not None else t[0])
    if not after.any():
        return {"outcome": "crashed"}
    tilt = float(tilt_deg(rpy_deg[after]).max())
    result = {"max_tilt_deg": round(tilt, 2),
              "touchdown_speed_mps": None if touch_speed is None else round(max(touch_speed, 0.0), 4),
              "touch_point_speed_mps": None if touch_point_speed is None else round(max(touch_point_speed, 0.0), 4)}
    if stopped.startswith("fell") and touch_speed is None or tilt > TIP_DEG:
        result["outcome"] = "fell"
    elif touch_speed is not None:
        slow = touch_speed < LANDING_SPEED and (touch_point_speed is None or touch_point_speed < LANDING_SPEED)
        result["outcome"] = "safe landing" if slow else "fell"
    elif commanded_speed > 0 and (speed_after or 0.0) >= WALK_FRACTION * commanded_speed:
        result["outcome"] = "walked"
    else:
        result["outcome"] = "stood"
    return result

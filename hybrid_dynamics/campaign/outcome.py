"""What became of the robot in one run: walked, stood, safe landing or fell.

From the ground truth after the damage: MuJoCo's base trajectory, and the first instant a geom
of the robot other than a foot touched the floor (``sim.plant.Plant.body_touch``, with the
base's vertical speed before that contact acted):

- **fell**: the body tipped over (roll or pitch above :data:`TIP_DEG`, or the runner stopped
  the run on its tilt or height limit without the body touching the floor), or the body
  touched the floor faster than :data:`LANDING_SPEED`;
- **safe landing**: the body touched the floor at most :data:`LANDING_SPEED` vertically and
  did not tip over (a body resting propped on an edge is a landing, not standing);
- **walked**: the body never touched the floor and the base moved on at least
  :data:`WALK_FRACTION` of the commanded speed (from 1 s after the damage to the end);
- **stood**: the body never touched the floor and did not walk (or no walking was asked for).

A run that raised, whose worker died, or that ran out of wall time is **crashed** or
**timeout** instead: not an outcome of the robot, and counted apart.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

OUTCOMES = ("walked", "stood", "safe landing", "fell", "crashed", "timeout")
SURVIVED = ("walked", "stood", "safe landing")
LANDING_SPEED = 0.2        # m/s (issue 14: base vertical speed at touch-down)
TIP_DEG = 30.0             # deg of roll or pitch: tipped over
WALK_FRACTION = 0.2        # of the commanded speed


def classify(stopped: str, t: np.ndarray, rpy_deg: np.ndarray, t_damage: Optional[float],
             touch_speed: Optional[float], commanded_speed: float, speed_after: Optional[float]) -> dict:
    """The outcome and the figures it was decided on (see the module docstring); ``t`` from
    the start of the gait, ``t_damage`` in the same clock (None: no damage happened);
    ``touch_speed``: the base's downward speed (m/s) when the body first touched the floor,
    None if it never did."""
    if stopped.startswith("error"):
        return {"outcome": "crashed"}
    if stopped.startswith("timeout"):
        return {"outcome": "timeout"}
    after = t >= (t_damage if t_damage is not None else t[0])
    if not after.any():
        return {"outcome": "crashed"}
    tilt = float(np.abs(rpy_deg[after, :2]).max())
    result = {"max_tilt_deg": round(tilt, 2),
              "touchdown_speed_mps": None if touch_speed is None else round(max(touch_speed, 0.0), 4)}
    if stopped.startswith("fell") and touch_speed is None or tilt > TIP_DEG:
        result["outcome"] = "fell"
    elif touch_speed is not None:
        result["outcome"] = "safe landing" if touch_speed < LANDING_SPEED else "fell"
    elif commanded_speed > 0 and (speed_after or 0.0) >= WALK_FRACTION * commanded_speed:
        result["outcome"] = "walked"
    else:
        result["outcome"] = "stood"
    return result

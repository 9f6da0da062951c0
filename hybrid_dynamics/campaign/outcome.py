"""What became of the robot in one run: walked, stood, safe landing or fell.

From the ground-truth base trajectory after the damage (``sim.runner.Log``):

- **fell**: the body tipped over (roll or pitch above :data:`TIP_DEG`, or the runner stopped
  the run on its 45 deg tilt limit), or the base came down (below :data:`LOW_FRACTION` of
  its standing height) faster than :data:`LANDING_SPEED`;
- **safe landing**: the base came down, at most :data:`LANDING_SPEED` vertically at
  touch-down and without tipping over;
- **walked**: the base stayed up and moved on at least :data:`WALK_FRACTION` of the
  commanded speed (from 1 s after the damage to the end);
- **stood**: the base stayed up and did not walk (or no walking was asked for).

Touch-down is the first instant the base is within :data:`REST_BAND` of the lowest height it
reaches; its vertical speed there is the largest downward speed over the :data:`TOUCHDOWN_WINDOW`
before it (finite differences of the 200 Hz ground truth).
A run that raised, whose worker died, or that ran out of wall time is **crashed** or
**timeout** instead: not an outcome of the robot, and counted apart.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

OUTCOMES = ("walked", "stood", "safe landing", "fell", "crashed", "timeout")
SURVIVED = ("walked", "stood", "safe landing")
LANDING_SPEED = 0.2        # m/s (issue 14: base vertical speed at touch-down)
TIP_DEG = 30.0             # deg of roll or pitch: tipped over
LOW_FRACTION = 0.25        # of the standing base height: the body on the ground (jethexa's rests at 0.15;
                           # at 0.4 a dip to 0.33 that the legs caught and walked on from was a 'fall')
WALK_FRACTION = 0.2        # of the commanded speed
REST_BAND = 0.005          # m above the lowest base height
TOUCHDOWN_WINDOW = 0.05    # s


def touchdown_speed(t: np.ndarray, z: np.ndarray) -> Tuple[float, float]:
    """(time of touch-down, largest downward base speed in the window before it), m/s >= 0."""
    k = int(np.argmax(z <= z.min() + REST_BAND))
    if k == 0:
        return float(t[0]), 0.0
    vz = np.diff(z) / np.maximum(np.diff(t), 1e-9)
    window = (t[1:] > t[k] - TOUCHDOWN_WINDOW) & (t[1:] <= t[k])
    return float(t[k]), float(max(0.0, -vz[window].min(initial=0.0)))


def classify(stopped: str, t: np.ndarray, pos: np.ndarray, rpy_deg: np.ndarray, t_damage: Optional[float],
             stand_height: float, commanded_speed: float, speed_after: Optional[float]) -> dict:
    """The outcome and the figures it was decided on (see the module docstring); ``t`` from
    the start of the gait, ``t_damage`` in the same clock (None: no damage happened)."""
    if stopped.startswith("error"):
        return {"outcome": "crashed"}
    if stopped.startswith("timeout"):
        return {"outcome": "timeout"}
    after = t >= (t_damage if t_damage is not None else t[0])
    if not after.any():
        return {"outcome": "crashed"}
    ta, za = t[after], pos[after, 2]
    tilt = float(np.abs(rpy_deg[after, :2]).max())
    low = bool(za.min() < LOW_FRACTION * stand_height)
    result = {"max_tilt_deg": round(tilt, 2), "touchdown_speed_mps": None}
    if low:
        _, v_td = touchdown_speed(ta, za)
        result["touchdown_speed_mps"] = round(v_td, 4)
    if stopped.startswith("fell") and not low or tilt > TIP_DEG:
        result["outcome"] = "fell"
    elif low:
        result["outcome"] = "safe landing" if result["touchdown_speed_mps"] < LANDING_SPEED else "fell"
    elif commanded_speed > 0 and (speed_after or 0.0) >= WALK_FRACTION * commanded_speed:
        result["outcome"] = "walked"
    else:
        result["outcome"] = "stood"
    return result

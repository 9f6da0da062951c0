"""The landing study's tables: for every three-leg loss of a robot whose CoM is outside its
three feet, and for every four-leg loss, the slowest touch-down the planar model of
``control/locomotion/planar_landing.py`` finds (``hybrid-dynamics analyze landing``). Local
optima from a few starts: **upper bounds on the best achievable, not proofs**."""
from __future__ import annotations

import itertools
from typing import Dict, Tuple

from ..control.locomotion.planar_landing import Landing, best_landing, planar_robot


def three_feet_faults(robot, max_tilt_deg: float = 30.0) -> Dict[str, Tuple[float, Landing]]:
    """Every three-leg loss of ``robot`` whose CoM, at the standing pose, is outside the three
    feet's triangle (keyed by the lost legs, ``+``-joined): the CoM's distance outside its
    nearest edge and the best landing found (the third foot allowed, module docstring)."""
    names = [leg.name for leg in robot.legs]
    out = {}
    for left in itertools.combinations(names, 3):
        try:
            model = planar_robot(robot, list(left))
        except ValueError:
            continue                     # the CoM inside: the three feet can hold the body
        out["+".join(n for n in names if n not in left)] = (model.e, best_landing(model, max_tilt_deg=max_tilt_deg))
    return out


def two_feet_faults(robot, max_tilt_deg: float = 30.0) -> Dict[str, Tuple[float, Landing]]:
    """Every four-leg loss of ``robot`` (keyed by the lost legs, ``+``-joined): the CoM's
    distance from the two feet's line and the best landing found."""
    names = [leg.name for leg in robot.legs]
    out = {}
    for left in itertools.combinations(names, 2):
        model = planar_robot(robot, list(left))
        out["+".join(n for n in names if n not in left)] = (model.e, best_landing(model, max_tilt_deg=max_tilt_deg))
    return out

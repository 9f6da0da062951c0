"""The time series of one scenario run (library loop, or read back from the graph's bag):
what the summary and the plots are computed from."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np


@dataclass
class Log:
    """Time series of one run, one row per control cycle."""
    t: List[float] = field(default_factory=list)
    pos: List[np.ndarray] = field(default_factory=list)        # ground truth base position
    rpy: List[np.ndarray] = field(default_factory=list)        # ground truth roll pitch yaw (rad)
    est_pos: List[np.ndarray] = field(default_factory=list)
    solve_ms: List[float] = field(default_factory=list)
    cycle_ms: List[float] = field(default_factory=list)
    fallback: List[bool] = field(default_factory=list)
    infeasible: List[bool] = field(default_factory=list)
    forces: Dict[str, List[np.ndarray]] = field(default_factory=dict)   # MuJoCo contact forces
    statistic: List[float] = field(default_factory=list)       # detector |e|
    legs_alive: List[int] = field(default_factory=list)
    events: List[dict] = field(default_factory=list)           # morphology timeline

"""Gait patterns and the scheduler: which feet are in stance at time t, for any set of legs.

A gait is periodic with period ``T``; leg ``i`` swings during ``[o_i T, (o_i + d_s) T)``
modulo ``T`` (``o_i`` its offset, ``d_s`` the swing fraction) and stands otherwise.

* **Tripod** ([Farghdani 2025, Eq. (64), Table IV]): the two gait groups alternate,
  phase difference pi, swing fraction 1/2, ``T_g = 1.3 s``. The paper's ambiguities, fixed
  here: which half-cycle is swing (group 1 = {1, 4, 5} swings first); the odd factor
  ``Phi_i (1 - 2/N_g)`` (dropped: both groups sweep the same stride, half a period apart).
* **Wave** (static, for a damaged robot): one leg swings at a time, legs ordered rear to
  front on one side and then on the other (for four legs this is the crawl LH, LF, RH, RF).
  Each leg's slot ``T / n`` starts with a *shift* part (fraction ``shift_fraction``, every
  foot down) during which the body moves its CoM into the support polygon of the feet that
  stay down while the next leg swings; the leg swings in the rest of its slot.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...errors import InputError


@dataclass(frozen=True)
class GaitPattern:
    name: str
    period: float                      # s
    offsets: Tuple[Tuple[str, float], ...]   # (leg, phase at which its swing starts, in [0, 1))
    swing_fraction: float              # of the period
    static: bool = False               # shift the body between swings (wave gaits)
    shift_fraction: float = 0.0        # of a slot (static gaits)

    @property
    def legs(self) -> List[str]:
        return [leg for leg, _ in self.offsets]

    @property
    def duty(self) -> float:
        return 1.0 - self.swing_fraction

    @property
    def stance_time(self) -> float:
        return self.duty * self.period

    @property
    def swing_time(self) -> float:
        return self.swing_fraction * self.period


def tripod(groups: Sequence[Sequence[str]], period: float = 1.3) -> GaitPattern:
    """Two groups alternating, half a period apart (Farghdani et al.'s (2025) tripod gait)."""
    if len(groups) != 2 or not all(groups):
        raise InputError("a tripod gait needs two non-empty leg groups", field="gait_groups")
    offsets = tuple((leg, 0.0) for leg in groups[0]) + tuple((leg, 0.5) for leg in groups[1])
    return GaitPattern("tripod", float(period), offsets, 0.5)


def wave_order(hips: Mapping[str, Sequence[float]]) -> List[str]:
    """Legs rear to front on the left side, then rear to front on the right (crawl order)."""
    left = sorted((leg for leg, p in hips.items() if p[1] > 0), key=lambda leg: hips[leg][0])
    right = sorted((leg for leg, p in hips.items() if p[1] <= 0), key=lambda leg: hips[leg][0])
    return left + right


def wave(hips: Mapping[str, Sequence[float]], slot: float = 0.4, shift_fraction: float = 0.35) -> GaitPattern:
    """One leg at a time; ``hips`` maps each walking leg to its hip (x, y) in the base frame."""
    order = wave_order(hips)
    n = len(order)
    if n <= 3:   # on three legs the robot can stand, not walk statically: every foot stays down
        # (fewer than three cannot even stand; all that is left is to keep every foot down)
        return stand(order, slot * n)
    offsets = tuple((leg, (k + shift_fraction) / n) for k, leg in enumerate(order))
    return GaitPattern("wave", slot * n, offsets, (1.0 - shift_fraction) / n, True, shift_fraction)


def stand(legs: Sequence[str], period: float = 1.0) -> GaitPattern:
    """Every foot down, the body shifted over them (a static pattern with no swing)."""
    return GaitPattern("stand", float(period), tuple((leg, 0.0) for leg in legs), 0.0, True, 1.0)


@dataclass
class LegPhase:
    stance: bool
    progress: float      # 0..1 through the current stance or swing
    start: float         # time the current stance or swing began
    end: float           # time it ends


class GaitScheduler:
    """Evaluates a :class:`GaitPattern` started at time ``t0`` (every foot down before it),
    its cycles counted from ``origin`` (default ``t0``): leg ``i`` swings in ``[origin + (k +
    o_i) T, origin + (k + o_i + d_s) T)`` for every such interval that starts at or after
    ``t0``."""

    JOIN = 0.02          # of a swing: how late a controller may join a slot (on_clock)

    def __init__(self, pattern: GaitPattern, t0: float = 0.0, origin: Optional[float] = None):
        self.pattern = pattern
        self.t0 = float(t0)
        self.origin = self.t0 if origin is None else float(origin)
        self.offsets: Dict[str, float] = dict(pattern.offsets)

    @classmethod
    def on_clock(cls, pattern: GaitPattern, t: float, origin: float = 0.0) -> "GaitScheduler":
        """The pattern's phase a function of the clock alone (cycles counted from ``origin``),
        starting with the first slot (a swing, or for a static gait the shift before it) that
        begins at or after ``t``, or that began less than ``JOIN`` of a swing before it (a
        controller whose first cycle comes one control period after the origin joins that
        slot: the foot is then 0.02 mm above its start): two controllers started at different
        instants on one clock step in phase."""
        p = cls(pattern, t, origin)
        if pattern.swing_fraction <= 0.0:
            return p
        T = pattern.period
        lead = pattern.shift_fraction * T / len(pattern.offsets) if pattern.static else 0.0
        t_join = t - cls.JOIN * pattern.swing_time
        first = min(origin + (np.ceil((t_join + lead - origin) / T - o - 1e-9) + o) * T for o in p.offsets.values())
        return cls(pattern, first - lead, origin)

    def phase(self, t: float, leg: str) -> LegPhase:
        p = self.pattern
        if p.swing_fraction <= 0.0 or t < self.t0:
            return LegPhase(True, 0.0, self.t0 if t >= self.t0 else -np.inf, np.inf)
        T = p.period
        # cycles since the leg's last swing start: one phase ``tau`` for every leg, so the
        # legs' swings stay complementary at a boundary whatever the rounding of ``t``
        # (an end time computed on its own rounded up once, and both tripods swung at t = 1.3)
        u = ((t - self.origin) / T - self.offsets[leg]) % 1.0
        start_swing = t - u * T
        end_swing = start_swing + p.swing_time
        if u < p.swing_fraction and start_swing >= self.t0 - 1e-9:
            return LegPhase(False, u / p.swing_fraction, start_swing, end_swing)
        # before a leg's first swing (the first of its swing starts at or after t0) it has stood since t0
        first = self.origin + (np.ceil((self.t0 - self.origin) / T - self.offsets[leg] - 1e-9)
                               + self.offsets[leg]) * T
        start = max(end_swing, self.t0) if t >= first else self.t0
        end = start_swing + T if t >= first else first
        return LegPhase(True, (t - start) / max(end - start, 1e-9), start, end)

    def stance(self, t: float) -> Dict[str, bool]:
        return {leg: self.phase(t, leg).stance for leg in self.offsets}

    def slot(self, t: float) -> Tuple[int, float, float]:
        """Static gaits: (index of the leg whose slot this is, slot start, slot end)."""
        p = self.pattern
        n = len(p.offsets)
        length = p.period / n
        k = int(np.floor((t - self.origin) / length))
        start = self.origin + k * length
        return k % n, start, start + length

    def next_swing(self, t: float, leg: str) -> Optional[Tuple[float, float]]:
        """(start, end) of the leg's next swing at or after t; None if it never swings."""
        p = self.pattern
        if p.swing_fraction <= 0.0:
            return None
        ph = self.phase(t, leg)
        if not ph.stance:
            return ph.start, ph.end
        return ph.end, ph.end + p.swing_time

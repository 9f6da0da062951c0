"""Timing of a control loop: per cycle, the latency from the joint state's arrival to the
command on the wire and the cycle's own compute time, kept in a ring of the last ``size``
cycles, with the percentiles of the last ``window`` for /diagnostics, and deadline misses;
and every cycle's start and end on the steady clock (:meth:`LoopStatistics.ran`), so that a
benchmark can tell a late start from a long cycle and line them up with other events."""
from __future__ import annotations

from typing import Dict

import numpy as np


class LoopStatistics:
    def __init__(self, size: int = 20000, window: int = 1000):
        self.size = size
        self.window = window
        self.latency = np.zeros(size)
        self.compute = np.zeros(size)
        self.count = 0
        self.deadline_misses = 0
        self.spans = np.zeros((size, 2))   # every cycle's (start, end), time.perf_counter
        self.runs = 0

    def ran(self, start: float, end: float) -> None:
        """One cycle ran from ``start`` to ``end`` (s, time.perf_counter)."""
        i = self.runs % self.size
        self.spans[i, 0] = start
        self.spans[i, 1] = end
        self.runs += 1

    def timeline(self) -> np.ndarray:
        """(start, end) of the last ``size`` cycles, oldest first."""
        if self.runs <= self.size:
            return self.spans[:self.runs].copy()
        i = self.runs % self.size
        return np.concatenate([self.spans[i:], self.spans[:i]])

    def add(self, latency: float, compute: float) -> None:
        i = self.count % self.size
        self.latency[i] = latency
        self.compute[i] = compute
        self.count += 1

    def latencies(self) -> np.ndarray:
        """Latencies (s) of the last ``size`` cycles, oldest first."""
        return self._ordered(self.latency)

    def computes(self) -> np.ndarray:
        """Compute times (s) of the last ``size`` cycles, oldest first."""
        return self._ordered(self.compute)

    def _ordered(self, ring: np.ndarray) -> np.ndarray:
        if self.count <= self.size:
            return ring[:self.count].copy()
        i = self.count % self.size
        return np.concatenate([ring[i:], ring[:i]])

    def recent_ms(self) -> Dict[str, str]:
        """p50 and p99 latency (ms, text) of the last ``window`` cycles, "nan" before any: the
        whole ring would be ~1 ms of sorting inside the cycle's callback group."""
        n = min(self.count, self.window)
        i = self.count % self.size
        if n == 0:
            return {"latency_p50_ms": "nan", "latency_p99_ms": "nan"}
        idx = (np.arange(i - n, i)) % self.size
        p50, p99 = np.percentile(self.latency[idx], (50, 99))       # one sort, not two
        return {"latency_p50_ms": f"{1e3 * p50:.3f}", "latency_p99_ms": f"{1e3 * p99:.3f}"}

    def reset(self) -> None:
        self.count = 0
        self.deadline_misses = 0
        self.runs = 0

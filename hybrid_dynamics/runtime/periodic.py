"""A periodic loop on a thread of its own, at absolute deadlines: the controller node's
``trigger: thread`` (ros/whole_body_controller.py) runs its cycle here, away from the
executor's callbacks.

Tick ``k`` is due at ``t0 + k * period`` (``t0``: when the loop started), so that a late wake
-up does not shift every later cycle (a relative ``sleep(period)`` accumulates each cycle's
compute and wake-up delay). A cycle that overran one or more ticks does not catch up in a
burst (as rclcpp's EventsExecutor does with an overrunning timer): the ticks it overran are
skipped, counted in :attr:`PeriodicLoop.skipped`, and the next cycle starts at the next tick
still ahead.

``clock`` and ``sleep`` are the monotonic clock and its sleep (``time.perf_counter`` and
``time.sleep``, CLOCK_MONOTONIC and clock_nanosleep on Linux: the sleep ends within tens of
microseconds of the deadline); tests pass a simulated pair.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Optional


class PeriodicLoop:
    """``body()`` every ``period`` seconds at absolute deadlines until :meth:`stop`."""

    def __init__(self, period: float, body: Callable[[], None], name: str = "periodic",
                 clock: Callable[[], float] = time.perf_counter, sleep: Callable[[float], None] = time.sleep):
        if not period > 0.0:
            raise ValueError(f"period must be positive, not {period}")
        self.period = float(period)
        self.body = body
        self.name = name
        self.clock = clock
        self.sleep = sleep
        self.cycles = 0          # body() calls
        self.skipped = 0         # ticks overrun by a cycle, not run
        self.max_lateness = 0.0  # s, the latest a cycle started after its tick
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.error: Optional[BaseException] = None

    def start(self) -> "PeriodicLoop":
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop after the cycle in progress (joined within ``timeout`` s)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._thread = None

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        try:
            self.run(self._stop.is_set)
        except Exception as exc:    # the loop ends; kept for its owner to report (diagnostics)
            self.error = exc

    def run(self, stopped: Callable[[], bool], ticks: Optional[int] = None) -> None:
        """The loop in the calling thread, until ``stopped()`` (or ``ticks`` ticks have passed,
        run or skipped)."""
        period = self.period
        t0 = self.clock()
        k = 1                                   # the next tick: t0 + k * period
        while not stopped() and (ticks is None or k <= ticks):
            delay = t0 + k * period - self.clock()
            if delay > 0.0:
                self.sleep(delay)
            if stopped():
                return
            self.max_lateness = max(self.max_lateness, self.clock() - (t0 + k * period))
            self.body()
            self.cycles += 1
            # the next tick still ahead: ticks that passed during this cycle are skipped
            ahead = int((self.clock() - t0) // period) + 1
            if ahead > k + 1:
                self.skipped += ahead - k - 1
            k = max(k + 1, ahead)

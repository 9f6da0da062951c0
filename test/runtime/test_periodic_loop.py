"""The controller's own-thread loop (runtime/periodic.py) on a simulated clock: cycles start
at absolute deadlines whatever each one computed, an overrunning cycle skips the ticks it
overran (counted) instead of running them in a burst, and the loop stops when asked. No
wall-clock time is asserted: the clock and its sleep are simulated."""
import threading

import pytest

from hybrid_dynamics.runtime.periodic import PeriodicLoop


class SimClock:
    """``clock()`` and ``sleep(d)`` of a simulated time; ``work(d)`` is a body's compute."""

    def __init__(self, t0=100.0, wake_delay=0.0):
        self.t = t0
        self.wake_delay = wake_delay      # the OS wakes the thread this late after a sleep
        self.sleeps = []

    def clock(self):
        return self.t

    def sleep(self, d):
        assert d > 0
        self.sleeps.append(d)
        self.t += d + self.wake_delay


def run_loop(period, computes, wake_delay=0.0):
    """Run one body per entry of ``computes`` (s of work each); the start times of the bodies."""
    clk = SimClock(wake_delay=wake_delay)
    starts = []
    todo = list(computes)

    def body():
        starts.append(clk.t)
        clk.t += todo.pop(0)

    loop = PeriodicLoop(period, body, clock=clk.clock, sleep=clk.sleep)
    loop.run(lambda: not todo)
    return loop, starts, clk


def test_cycles_start_at_absolute_deadlines_whatever_they_compute():
    period = 1e-3
    computes = [0.1e-3, 0.7e-3, 0.3e-3, 0.9e-3, 0.05e-3] * 20
    loop, starts, _ = run_loop(period, computes, wake_delay=40e-6)
    t0 = starts[0] - period - 40e-6
    assert loop.cycles == len(computes) and loop.skipped == 0
    for k, s in enumerate(starts, start=1):         # tick k at t0 + k period, woken 40 us late
        assert s == pytest.approx(t0 + k * period + 40e-6, abs=1e-12)
    assert loop.max_lateness == pytest.approx(40e-6, abs=1e-12)


def test_an_overrun_skips_the_ticks_it_overran_without_a_burst():
    period = 1e-3
    computes = [0.2e-3] * 5 + [3.5e-3] + [0.2e-3] * 5   # the sixth cycle overruns 3 ticks
    loop, starts, _ = run_loop(period, computes)
    t0 = starts[0] - period
    ticks = [round((s - t0) / period, 9) for s in starts]
    assert ticks[:6] == [1, 2, 3, 4, 5, 6]
    # the overrun ended at tick 6 + 3.5: ticks 7, 8, 9 are skipped, the next cycle runs at 10
    assert ticks[6:] == [10, 11, 12, 13, 14]
    assert loop.skipped == 3 and loop.cycles == len(computes)
    gaps = [b - a for a, b in zip(starts[6:], starts[7:])]
    assert min(gaps) == pytest.approx(period)        # no burst after the overrun


def test_stop_ends_the_thread_and_a_body_error_is_kept():
    ran = threading.Event()
    loop = PeriodicLoop(1e-3, ran.set, name="test-loop").start()
    assert ran.wait(5.0) and loop.running()
    loop.stop()
    assert not loop.running()
    n = loop.cycles
    assert n > 0

    def fail():
        raise RuntimeError("boom")
    bad = PeriodicLoop(1e-3, fail, name="test-fail").start()
    bad._thread.join(5.0)
    assert isinstance(bad.error, RuntimeError) and bad.cycles == 0
    with pytest.raises(ValueError):
        PeriodicLoop(0.0, fail)

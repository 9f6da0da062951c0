"""runtime/realtime.py: the control cycle's thread under SCHED_FIFO, read back from the kernel
(``os.sched_getscheduler``, ``/proc/<pid>/task/<tid>/stat``); a refusal is reported, not raised.
Each case runs in a thread of its own, which ends, so the test process never keeps a real-time
thread."""
import os
import threading

import pytest

from hybrid_dynamics.runtime import realtime
from hybrid_dynamics.runtime.realtime import fifo_priority, use_fifo_priority


def in_thread(fn):
    out = {}

    def body():
        out["tid"] = threading.get_native_id()
        out["result"] = fn()
        with open(f"/proc/{os.getpid()}/task/{out['tid']}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        out["kernel_rt_priority"], out["kernel_policy"] = int(fields[37]), int(fields[38])   # stat 40, 41
    t = threading.Thread(target=body)
    t.start()
    t.join()
    return out


def _fifo_allowed() -> bool:
    return in_thread(lambda: use_fifo_priority(1))["result"] is None


def test_zero_leaves_the_thread_on_the_default_scheduler():
    out = in_thread(lambda: (use_fifo_priority(0), fifo_priority()))
    assert out["result"] == (None, 0)
    assert out["kernel_policy"] == os.SCHED_OTHER


@pytest.mark.skipif(not _fifo_allowed(), reason="this process may not use SCHED_FIFO (no CAP_SYS_NICE or rtprio)")
def test_a_priority_puts_only_the_calling_thread_under_sched_fifo():
    out = in_thread(lambda: (use_fifo_priority(37), fifo_priority()))
    assert out["result"] == (None, 37)
    assert out["kernel_policy"] == os.SCHED_FIFO and out["kernel_rt_priority"] == 37
    assert os.sched_getscheduler(0) != os.SCHED_FIFO and fifo_priority() == 0    # this thread untouched


def test_a_refusal_or_a_bad_priority_is_reported_and_changes_nothing(monkeypatch):
    def refuse(*args):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(realtime.os, "sched_setscheduler", refuse)
    out = in_thread(lambda: (use_fifo_priority(50), fifo_priority()))
    text, priority = out["result"]
    assert "SCHED_FIFO 50" in text and "Operation not permitted" in text and "CAP_SYS_NICE" in text
    assert priority == 0 and out["kernel_policy"] == os.SCHED_OTHER
    assert "not in 1..99" in use_fifo_priority(120)

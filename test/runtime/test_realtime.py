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


def cpus_in_thread(fn):
    """``fn()`` in a thread of its own; its result, the thread's CPUs read back from the kernel by
    its id (``Cpus_allowed_list`` of ``/proc/<pid>/task/<tid>/status``) after it."""
    out = {}

    def body():
        out["result"] = fn()
        with open(f"/proc/{os.getpid()}/task/{threading.get_native_id()}/status") as f:
            text = next(line for line in f if line.startswith("Cpus_allowed_list:")).split()[1]
        out["kernel_cpus"] = sorted(c for part in text.split(",") for c in _span(part))
    t = threading.Thread(target=body)
    t.start()
    t.join()
    return out


def _span(part):
    a, _, b = part.partition("-")
    return range(int(a), int(b or a) + 1)


def test_cpus_bind_only_the_calling_thread():
    """The thread that asks for one CPU runs on it alone (the kernel's own list for that thread);
    the process's other threads keep theirs; nothing asked ([-1], []) leaves the thread as it was."""
    every = sorted(os.sched_getaffinity(0))
    one = every[-1]
    out = cpus_in_thread(lambda: (realtime.use_cpus([one]), realtime.thread_cpus()))
    assert out["result"] == (None, [one]) and out["kernel_cpus"] == [one]
    assert sorted(os.sched_getaffinity(0)) == every
    for nothing in ([-1], []):
        out = cpus_in_thread(lambda: (realtime.use_cpus(nothing), realtime.thread_cpus()))
        assert out["result"] == (None, every) and out["kernel_cpus"] == every


def test_cpus_the_process_may_not_use_are_reported():
    """A CPU number the machine does not have: the thread stays where it was and the text says
    so; with one it may use among them, it runs on that one and the text names where it runs; a
    negative number is refused before the kernel is asked."""
    every = sorted(os.sched_getaffinity(0))
    missing = (os.cpu_count() or 1) + 64
    out = cpus_in_thread(lambda: (realtime.use_cpus([missing]), realtime.thread_cpus()))
    text, cpus = out["result"]
    assert f"CPUs [{missing}]" in text and cpus == every and out["kernel_cpus"] == every
    out = cpus_in_thread(lambda: (realtime.use_cpus([every[0], missing]), realtime.thread_cpus()))
    text, cpus = out["result"]
    assert cpus == [every[0]] and f"runs on CPUs [{every[0]}]" in text and out["kernel_cpus"] == [every[0]]
    assert "0 or more" in realtime.use_cpus([-2])
    assert realtime.cpu_list("0, 1") == [0, 1] and realtime.cpu_list("") == []
    with pytest.raises(ValueError):
        realtime.cpu_list("one")


PROCESS = """
import os, threading, time
from hybrid_dynamics.runtime.realtime import use_process_cpus
stop = threading.Event()
before = threading.Thread(target=stop.wait)
before.start()
refused = use_process_cpus([{cpu}])
after = threading.Thread(target=stop.wait)
after.start()
masks = [sorted(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")]
stop.set()
print(refused, len(masks), all(m == [{cpu}] for m in masks))
"""


def test_process_cpus_bind_every_thread_of_the_process():
    """``use_process_cpus`` (``bench pipeline --graph-cpus``, the stand-in robot's ``--cpus``), in
    a process of its own: the thread that existed before, the calling one and one started after
    all run on the CPU asked for."""
    import subprocess
    import sys
    one = sorted(os.sched_getaffinity(0))[-1]
    out = subprocess.run([sys.executable, "-c", PROCESS.format(cpu=one)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    refused, n, bound = out.stdout.split()
    assert refused == "None" and int(n) >= 3 and bound == "True"

"""The control cycle's thread on the real-time scheduler, as ros2_control's ``thread_priority``
puts its controller manager's update thread (``SCHED_FIFO``, priority 50 there).

Why (issue 15, 1 kHz from Python): the deadline misses of the controller's 1 kHz loop are late
starts, and a late start is the cycle's thread waiting for a core that other processes hold
(docs/control_loop.md). Under ``SCHED_FIFO`` the thread, once its timer or its sleep wakes it,
preempts every process of the default scheduler; between cycles it sleeps and leaves the cores
to them. Linux keeps 5 % of each core for the default scheduler whatever a real-time thread
does (``/proc/sys/kernel/sched_rt_runtime_us``), so a runaway loop cannot lock the machine.

It needs the privilege to raise a thread's scheduling class (``CAP_SYS_NICE``, or an
``rtprio`` limit in ``/etc/security/limits.conf`` as ros2_control's documentation sets up for
its users); without it the thread stays where it was and the caller reports why.
"""
from __future__ import annotations

import os
from typing import Optional

MAX_PRIORITY = 99


def use_fifo_priority(priority: int) -> Optional[str]:
    """Put the calling thread under ``SCHED_FIFO`` at ``priority`` (1-99); 0 leaves it as it
    is. Returns None when done (or nothing asked), else why not (text for the caller's log)."""
    priority = int(priority)
    if priority == 0:
        return None
    if not 1 <= priority <= MAX_PRIORITY:
        return f"thread_priority {priority} is not in 1..{MAX_PRIORITY}"
    if not hasattr(os, "sched_setscheduler"):
        return "this platform has no sched_setscheduler (SCHED_FIFO)"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))    # 0: the calling thread
    except OSError as err:
        return (f"cannot run the control thread under SCHED_FIFO {priority} ({err.strerror}): it needs "
                "CAP_SYS_NICE or an rtprio limit (limits.conf); it runs on the default scheduler")
    return None


def fifo_priority() -> int:
    """The calling thread's SCHED_FIFO priority, 0 if it is on another scheduler."""
    if not hasattr(os, "sched_getscheduler") or os.sched_getscheduler(0) != os.SCHED_FIFO:
        return 0
    return os.sched_getparam(0).sched_priority

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

The same thread on chosen CPUs (:func:`use_cpus`), as ros2_control's ``cpu_affinity`` binds its
update thread: on a robot, cores kept for it (``isolcpus``, a cpuset), so that no other
process's thread shares its core. Only the calling thread moves (Linux keeps a mask per thread);
threads it starts later inherit the mask.
"""
from __future__ import annotations

import os
from typing import List, Optional, Sequence

MAX_PRIORITY = 99
ANY_CPU = (-1,)          # the ``cpu_affinity`` parameter's default: leave the thread's CPUs alone


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


def use_cpus(cpus: Sequence[int]) -> Optional[str]:
    """Bind the calling thread to the CPUs ``cpus`` (their numbers, as ``os.sched_setaffinity``
    takes them); empty or :data:`ANY_CPU` leaves it as it is. Returns None when the thread runs
    on exactly those CPUs (or nothing was asked), else why not (text for the caller's log): a
    negative number, a CPU this process may not use (the thread then stays where it was, or runs
    on those of the asked CPUs it may use)."""
    return _bind(0, cpus)


def _bind(tid: int, cpus: Sequence[int]) -> Optional[str]:
    """:func:`use_cpus` for thread ``tid`` (0: the calling one)."""
    cpus = [int(c) for c in cpus]
    if not cpus or tuple(cpus) == ANY_CPU:
        return None
    if not hasattr(os, "sched_setaffinity"):
        return "this platform has no sched_setaffinity (cpu_affinity)"
    if min(cpus) < 0:
        return f"CPUs {cpus} asked for: CPU numbers are 0 or more ([-1] alone: any CPU)"
    try:
        os.sched_setaffinity(tid, cpus)
    except ProcessLookupError:           # a thread that ended meanwhile
        return None
    except (OSError, OverflowError, ValueError) as err:
        why = getattr(err, "strerror", None) or str(err)
        return f"cannot bind the thread to CPUs {cpus} ({why}): it runs on CPUs {sorted(os.sched_getaffinity(tid))}"
    got = sorted(os.sched_getaffinity(tid))
    if got != sorted(set(cpus)):
        return f"CPUs {cpus} asked for: the thread runs on CPUs {got} (the others are not available to this process)"
    return None


def use_process_cpus(cpus: Sequence[int]) -> Optional[str]:
    """Bind every thread of this process to ``cpus`` (threads made later inherit it from the
    thread that makes them), as ``taskset`` places a process; the same text as :func:`use_cpus`
    when a thread could not be bound."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:                    # no procfs: the calling thread, which makes the others
        return use_cpus(cpus)
    for tid in tids:
        refused = _bind(tid, cpus)
        if refused is not None:
            return refused
    return None


def thread_cpus() -> List[int]:
    """The CPUs the calling thread may run on."""
    if not hasattr(os, "sched_getaffinity"):
        return []
    return sorted(os.sched_getaffinity(0))


def cpu_list(text: str) -> List[int]:
    """CPU numbers from a command line's comma-separated list (``"1"``, ``"0,1"``; empty: none)."""
    try:
        return [int(c) for c in text.split(",") if c.strip()]
    except ValueError:
        raise ValueError(f"not a comma-separated list of CPU numbers: {text!r}") from None

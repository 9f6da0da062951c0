"""SIGINT and SIGTERM in a node's process (``ros2 launch`` sends the first on Ctrl-C, the
second on its timeout): a flag, installed before anything slow runs.

While the node spins, a signal only sets :attr:`StopSignal.requested`, which the spin loop
reads between the executor's passes (node_base.spin_node: each wait's ready callbacks): the node is destroyed and the context shut
down outside any callback. While the process is still starting (importing the node's module:
numba kernels, MuJoCo, Pinocchio; building the model, settling the plant: seconds), the
signal also raises :class:`StopDuringStart` so that start-up ends at once; the executable
then exits 0 (node_executables.py).

Why the flag is set as well: Python's own SIGINT handler raised KeyboardInterrupt at whatever
bytecode ran next, and where that was a callback whose exceptions Python only reports (a
ctypes callback of llvmlite loading a cached numba kernel, a ``__del__``), the interrupt was
printed and dropped: the node finished starting, spun, and never stopped (a morphology
manager signalled during its imports had to be killed after 20 s). A dropped
:class:`StopDuringStart` leaves :attr:`requested` set, and the spin loop stops before its
first callback.

Whatever the process is doing when the first signal comes, it ends within :data:`STOP_BOUND`
seconds: the signal also wakes a watcher thread (through ``signal.set_wakeup_fd``, written by
the C-level handler even while the main thread is stuck in C code and never gets to the Python
handler), which arms faulthandler's watchdog, a C thread of its own: a process still alive
:data:`STOP_BOUND` s later writes every thread's Python stack to stderr and exits 1. A stop
that hangs (once in about a dozen process-per-node runs, the MuJoCo plant's, at the end of a
run; killed after 30 s with an empty stderr, where is not known) then says where it hung.
SIGUSR1 writes the same stacks at any time (``kill -USR1 PID``; the test harness sends it
before it kills a node).
"""
from __future__ import annotations

import faulthandler
import signal
import socket
import threading

# s from the first SIGINT or SIGTERM to the process's end, whatever it is doing (then exit 1 with
# every thread's stack on stderr); a clean stop takes well under a second
STOP_BOUND = 10.0


class StopDuringStart(BaseException):
    """SIGINT or SIGTERM arrived before the node was spinning (a BaseException, as
    KeyboardInterrupt, so that no ``except Exception`` of a library swallows it)."""


class StopSignal:
    """:meth:`install` puts the handlers in place (once per process); :meth:`started` when
    the node spins; :attr:`requested` once a signal came. The first signal before
    :meth:`started` raises :class:`StopDuringStart`; every other one only sets the flag."""

    def __init__(self):
        self.requested = False
        self.starting = True
        self._installed = False

    def install(self) -> "StopSignal":
        if not self._installed:
            self._installed = True
            self._watch_the_stop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, self._on_signal)      # may raise StopDuringStart from here on
            faulthandler.register(signal.SIGUSR1, all_threads=True)
        return self

    def _watch_the_stop(self) -> None:
        """The first signal arms faulthandler's :data:`STOP_BOUND` watchdog, from a daemon
        thread reading the wake-up socket the C-level handler writes to."""
        receive, send = socket.socketpair()
        send.setblocking(False)
        signal.set_wakeup_fd(send.fileno(), warn_on_full_buffer=False)
        self._wakeup = (receive, send)              # kept open for the process's life

        def watch() -> None:
            receive.recv(1)
            faulthandler.dump_traceback_later(STOP_BOUND, exit=True)
        threading.Thread(target=watch, name="stop_watchdog", daemon=True).start()

    def started(self) -> None:
        """From now on a signal only sets the flag."""
        self.starting = False

    def _on_signal(self, signum, frame) -> None:
        self.requested = True
        if self.starting:
            self.starting = False           # raised once: a second signal (SIGTERM after SIGINT) cannot
            raise StopDuringStart(signal.Signals(signum).name)   # interrupt the clean-up of the first


# the process's one handler pair (signal handlers are per process)
PROCESS_STOP = StopSignal()

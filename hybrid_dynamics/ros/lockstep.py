"""When a lock-step plant advances (``mujoco_sim`` with ``lockstep: true``).

The controller (``trigger: joint_states``) answers every joint state it receives with one
command, and the plant advances one period per answer, so exactly one published state awaits
its command: the loop is deterministic whatever the machine's load. A watchdog steps the plant
anyway after ``lockstep_timeout`` wall seconds without a command (a message lost, or the loop
to start). Stepping on *every* command after that would keep two states in flight for good
(the slow controller's late answer ticks, then the answer to the watchdog's state ticks
again), and each further watchdog step one more: on a loaded machine the commands ended up
several periods late, the robot fell. :class:`LockstepPacer` counts the states awaiting an
answer and steps only when none does.

A state can also be lost (its answer never comes). That shows after a watchdog step: its
answer arrives and one is still owed, and the next timeout then forgets what is owed."""
from __future__ import annotations

from typing import Optional


class LockstepPacer:
    """``stepped()`` after each published state; ``command()`` on each command (True: step
    now); ``watchdog()`` before a step forced by the timeout."""

    def __init__(self):
        self.awaited = 0                            # published states whose command has not come
        self.commands = 0
        self._at_watchdog: Optional[int] = None     # commands received at the last forced step

    def stepped(self) -> None:
        self.awaited += 1

    def command(self) -> bool:
        self.commands += 1
        self.awaited = max(self.awaited - 1, 0)
        if self.awaited == 0:
            self._at_watchdog = None                # back to one state in flight
            return True
        return False

    def watchdog(self) -> None:
        if self._at_watchdog is not None and self.commands > self._at_watchdog:
            self.awaited = 0        # answers came since the forced step, yet one is owed: lost
        self._at_watchdog = self.commands

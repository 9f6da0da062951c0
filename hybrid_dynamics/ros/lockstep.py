"""When a lock-step plant advances (``mujoco_sim`` with ``lockstep: true``).

The controller (``trigger: joint_states``) answers every joint state it receives with one
command, and the plant advances one period on the answer to the state it published last, so
exactly one state awaits its command: the loop is deterministic whatever the machine's load.

Each command says which state it answers: the stamp of that joint state, in the label of a
second dimension of its layout (``answers <sec>.<nanosec>``, size 1: the layout still
describes the same values, a column; effort controllers ignore it). The plant steps only on
the answer to its current state: never without a command, never on an older state's answer.
A watchdog re-sends the current state (same stamp) after ``lockstep_timeout`` wall seconds
without its answer (a joint state lost on the best-effort topic, or the loop to start); a
controller that receives a state it has answered already sends the same command again
(ros/whole_body_controller.py), and the answers to the copies the plant then receives after
it stepped are older than its state: counted (``stale_answers``) and ignored.

Before (counting commands, and stepping without one after the timeout): two answers in a row
slower than the timeout (a controller's process stalled twice on a loaded machine) left two
states in flight for good, each further such pair one more: the plant then applied every
command one period late, then two, and at two periods jethexa_shank's legs oscillated and
threw the body up (a femur at -37.5 rad/s, base 0.28 m high: the library loop with the command
delayed two periods, reproducing the per-process failure of 1 run in 26; docs/launch.md).

A command without the label (a controller of one's own) is taken as the answer to the current
state, as before.
"""
from __future__ import annotations

from typing import Optional

ANSWERS = "answers "


def stamp_ns(stamp) -> int:
    """A builtin_interfaces/Time as whole nanoseconds (exact: stamps are compared, not rounded)."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def answer_label(ns: int) -> str:
    """The layout label of a command answering the joint state stamped ``ns``."""
    return f"{ANSWERS}{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def answered_stamp(layout) -> Optional[int]:
    """The stamp (ns) of the joint state a command answers (its layout's second dimension), or
    None if it does not say."""
    if len(layout.dim) < 2 or not layout.dim[1].label.startswith(ANSWERS):
        return None
    sec, _, nanosec = layout.dim[1].label[len(ANSWERS):].partition(".")
    try:
        return int(sec) * 1_000_000_000 + int(nanosec)
    except ValueError:
        return None


class LockstepGate:
    """The plant's side: ``published(ns)`` after each state it publishes (a re-sent copy too),
    ``stepped()`` when it steps; ``answers(ns)`` on each command: True if the command answers
    the state awaiting one (step on it). ``stale`` counts the answers to older states."""

    def __init__(self):
        self.awaiting: Optional[int] = None      # stamp of the published state awaiting its answer
        self.stale = 0

    def published(self, ns: int) -> None:
        self.awaiting = ns

    def stepped(self) -> None:
        self.awaiting = None

    def answers(self, ns: Optional[int]) -> bool:
        if self.awaiting is None or (ns is not None and ns != self.awaiting):
            self.stale += 1
            return False
        return True

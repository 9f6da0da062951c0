"""The lock-step plant steps only on the answer to the state it published last
(hybrid_dynamics/ros/lockstep.py), against a simulated controller that answers each state it
receives once, in order (first in, first out), after a delay, and whose joint states can be
lost: whatever the delays and losses, every step applies the command computed from the state
it steps from."""
import random
from collections import deque

from std_msgs.msg import MultiArrayLayout, MultiArrayDimension

from hybrid_dynamics.ros.lockstep import LockstepGate, answer_label, answered_stamp

TIMEOUT = 3          # ticks without an answer before the watchdog re-sends the state


class Loop:
    """A plant of states 0, 1, 2, ... stepping through ``gate``; a controller answering each
    state it receives ``delay.get(state, 1)`` ticks after it could start (first in, first
    out: a slow answer holds the next ones back) and a copy of a state it has answered 1 tick
    after (the same command again), never a copy in ``lost``; the watchdog
    re-sends the state after ``TIMEOUT`` ticks without its answer."""

    def __init__(self, delay=None, lost=()):
        self.gate = LockstepGate()
        self.delay, self.lost = dict(delay or {}), set(lost)
        self.state = 0
        self.sent = 0                 # copies sent, of every state (an index into ``lost``)
        self.queue = deque()          # (due tick, state answered), in arrival order
        self.applied = []             # (state stepped from, state whose answer was applied)
        self.resent = 0
        self.answered = set()         # states the controller has computed an answer to (a copy: sent again at once)

    def publish(self, now):
        self.gate.published(self.state)
        if self.sent not in self.lost:
            start = max(now, self.queue[-1][0]) if self.queue else now
            first = all(state != self.state for _, state in self.queue) and self.state not in self.answered
            self.queue.append((start + (self.delay.get(self.state, 1) if first else 1), self.state))
            self.answered.add(self.state)
        self.sent += 1

    def run(self, ticks):
        self.publish(0)
        quiet = 0
        for now in range(1, ticks):
            quiet += 1
            while self.queue and self.queue[0][0] <= now:
                _, answered = self.queue.popleft()
                if self.gate.answers(answered):
                    self.applied.append((self.state, answered))
                    self.gate.stepped()
                    self.state += 1
                    self.publish(now)
                    quiet = 0
            if quiet >= TIMEOUT:
                self.resent += 1
                self.publish(now)           # the same state again
                quiet = 0
        return self


def test_two_slow_answers_in_a_row_leave_no_command_late():
    """The pair that left two states in flight for good with the former rule (count the
    commands, step without one after the timeout): from then on every command was applied a
    period late."""
    loop = Loop(delay={20: 5, 21: 5}).run(300)
    assert all(s == a for s, a in loop.applied), [x for x in loop.applied if x[0] != x[1]][:5]
    assert loop.resent == 2 and loop.gate.stale == 2          # each slow state sent twice, answered twice
    assert loop.state > 280                                   # and the loop kept its pace


def test_random_delays_and_losses_never_step_on_another_states_answer():
    for trial in range(300):
        rng = random.Random(trial)
        delay = {k: rng.choice([2, 4, 5, 7, 9, 13]) for k in rng.sample(range(5, 150), rng.randint(1, 15))}
        lost = set(rng.sample(range(5, 200), rng.randint(0, 4)))
        loop = Loop(delay, lost).run(400)
        assert all(s == a for s, a in loop.applied), (trial, [x for x in loop.applied if x[0] != x[1]][:5])
        assert [s for s, _ in loop.applied] == list(range(len(loop.applied)))      # one step per state
        assert loop.state > 150, (trial, loop.state)


def test_a_lost_joint_state_costs_one_timeout():
    loop = Loop(lost={20}).run(300)
    assert loop.resent == 1 and loop.gate.stale == 0
    assert all(s == a for s, a in loop.applied)


def test_an_unlabelled_command_answers_the_current_state():
    gate = LockstepGate()
    assert not gate.answers(None)             # nothing published yet: nothing to answer
    gate.published(5_000_000)
    assert gate.answers(None) and gate.answers(5_000_000) and not gate.answers(0)
    gate.stepped()
    assert not gate.answers(5_000_000) and gate.stale == 3


def test_the_answer_label_round_trips_and_keeps_the_layout_a_column():
    ns = 12 * 1_000_000_000 + 5_000_001
    layout = MultiArrayLayout(dim=[MultiArrayDimension(label="joints", size=18, stride=18),
                                   MultiArrayDimension(label=answer_label(ns), size=1, stride=1)])
    assert layout.dim[1].label == "answers 12.005000001"
    assert answered_stamp(layout) == ns
    assert answered_stamp(MultiArrayLayout(dim=layout.dim[:1])) is None
    layout.dim[1].label = "answers 12.x"
    assert answered_stamp(layout) is None

"""The lock-step plant keeps one state in flight (hybrid_dynamics/ros/lockstep.py), against a
simulated controller that answers each state it receives once, in order, after a delay."""
from collections import deque

from hybrid_dynamics.ros.lockstep import LockstepPacer

SLOW = {10, 30, 31, 50, 77}       # states whose answer takes longer than the watchdog's timeout


class Loop:
    """A plant stepping through ``pacer`` and a controller answering each state it receives 1
    tick later, ``slow`` ones 5 ticks later, ``lost`` ones never; the watchdog forces a step
    after 3 ticks without a command."""

    def __init__(self, pacer, slow=SLOW, lost=()):
        self.pacer, self.slow, self.lost = pacer, set(slow), set(lost)
        self.published = 0
        self.queue = deque()          # (due tick, state index)

    def step(self, now):
        self.pacer.stepped()
        if self.published not in self.lost:
            self.queue.append((now + (5 if self.published in self.slow else 1), self.published))
        self.published += 1

    def run(self, ticks):
        """States in flight (published, not yet answered) at each tick."""
        self.step(0)
        in_flight, quiet = [], 0
        for now in range(1, ticks):
            answered = False
            while self.queue and self.queue[0][0] <= now:
                self.queue.popleft()
                answered = True
                if self.pacer.command():
                    self.step(now)
            quiet = 0 if answered else quiet + 1
            if quiet >= 3:
                self.pacer.watchdog()
                self.step(now)
                quiet = 0
            in_flight.append(len(self.queue))
        return in_flight


class SteppingOnEveryCommand(LockstepPacer):
    """What the plant did before: every command steps."""

    def command(self) -> bool:
        super().command()
        return True


def test_slow_answers_after_forced_steps_leave_one_state_in_flight():
    loop = Loop(LockstepPacer())
    in_flight = loop.run(300)
    assert max(in_flight[-100:]) == 1
    assert loop.published > 250            # and the loop kept its pace


def test_stepping_on_every_command_adds_a_state_in_flight_per_forced_step():
    """The failure the pacer removes (commands several periods late on a loaded machine)."""
    in_flight = Loop(SteppingOnEveryCommand()).run(300)
    assert max(in_flight[-100:]) >= len(SLOW)


def test_a_lost_state_costs_two_timeouts_then_one_state_is_in_flight_again():
    loop = Loop(LockstepPacer(), slow=(), lost={20})
    in_flight = loop.run(300)
    assert max(in_flight[-100:]) == 1 and loop.pacer.awaited == 1
    assert loop.published > 285

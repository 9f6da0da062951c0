"""The runtime Pipeline (the cycle the controller node runs, driven as the node does in
lock-step or on its timer, test/fuzz_inputs.LibraryLoop) under adversarial input: the three finite,
well-formed, absurd messages that used to stop the controller for good, and hypothesis
streams of joint states, IMU samples and damage events (about a third valid). Properties:
no exception, every command finite and within the URDF effort limits, every rejection named
by its field and counted, QP commands again within 20 ms (10 cycles at 500 Hz) of valid input."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_inputs import (ABSURD, DT, FLOOD_FAULTS, RECOVERY_CYCLES, Builder, LibraryLoop, Spec, input_specs,
                         rejection_matches)
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.ros import params as P
from hybrid_dynamics.runtime.pipeline import Pipeline


@pytest.fixture(scope="module")
def robot():
    return load_robot("jethexa")


def make_loop(robot, **overrides):
    p = P.nested({**P.defaults("whole_body_controller"), "update_rate": 500.0, **overrides})
    return LibraryLoop(robot, Pipeline(robot, p))


class Stream:
    """The loop, its message builder and the stream clock."""

    def __init__(self, robot, **overrides):
        self.loop = make_loop(robot, **overrides)
        self.build = Builder(robot)
        self.t = 1.0

    def pair(self, accepted: bool = True):
        """A valid IMU + joint-state pair, asserted accepted unless ``accepted`` is False."""
        self.t += DT
        outs = [self.loop.feed("imu", self.build.imu(self.t), self.t),
                self.loop.feed("joint_states", self.build.joint_state(self.t), self.t)]
        assert not accepted or outs == [None, None], outs
        return self.loop.kinds[-1]

    def send(self, spec: Spec):
        self.t += DT
        if spec.topic == "pair":
            return self.pair()
        if spec.topic == "damage":
            return self.loop.damage(spec.args[0])
        msg = (self.build.joint_state if spec.topic == "joint_states" else self.build.imu)(self.t, spec)
        out = self.loop.feed(spec.topic, msg, self.t)
        assert rejection_matches(spec, out), (spec, out)
        return out

    def cycles_to_recover(self) -> int:
        """Valid pairs until a QP command (not safe mode, not the fallback). The first ones
        may be refused as out of order: a faulty stamp up to ``stamp_lead`` ahead is accepted
        and the honest stream re-anchors after ``reanchor_after`` stamps (StampGate)."""
        for k in range(1, RECOVERY_CYCLES + 1):
            if self.pair(accepted=False) == "qp":
                return k
        return RECOVERY_CYCLES + 1


def check_commands(loop, start=0):
    cmds = np.array(loop.commands[start:])
    assert len(cmds) and np.all(np.isfinite(cmds))
    assert np.all(np.abs(cmds) <= loop.command_limits() + 1e-9)


@pytest.mark.parametrize("name", list(ABSURD))
def test_three_absurd_messages_then_valid_data_resume_at_once(robot, name):
    """The issue's reproduction: three copies, then valid data: the first valid cycle is a QP
    command equal to the one before (a robot standing still), and the cause is counted."""
    s = Stream(robot)
    for _ in range(100):
        s.pair()
    before = s.loop.commands[-1].copy()
    assert s.loop.kinds[-1] == "qp"
    n = len(s.loop.commands)
    for _ in range(3):
        s.send(ABSURD[name])
    # in lock-step every joint-state message gets its command, a rejected one too (the cycle
    # of the last accepted samples), so a plant waiting for it never stalls
    if ABSURD[name].topic == "joint_states":
        assert len(s.loop.commands) == n + 3 and s.loop.kinds[-3:] == ["qp"] * 3
        assert np.allclose(s.loop.commands[-1], before, atol=1e-6)
    assert s.cycles_to_recover() == 1
    assert np.allclose(s.loop.commands[-1], before, atol=1e-6)
    field = next(iter(ABSURD[name].fields))
    assert s.loop.state.rejected_fields[field] == 3 and s.loop.state.rejected["implausible"] == 3
    assert s.loop.state.restarts == 0                       # it never reached a filter


@pytest.mark.parametrize("name", ["imu linear_acceleration.z = 1e308", "joint velocity = 1e308"])
def test_without_limits_the_estimator_health_recovers(robot, name):
    """The second line of defence: with the plausibility limits opened up, the absurd sample
    reaches the filter; its health check restarts it and the QP is back within 20 ms. (The
    gyroscope's rate is the base angular velocity itself, unfiltered: only its limit keeps
    1e6 rad/s out of the QP.)"""
    s = Stream(robot, **{"limits.max_linear_acceleration": float("inf"), "limits.max_angular_velocity":
                         float("inf"), "limits.velocity_factor": float("inf")})
    for _ in range(100):
        s.pair()
    before = s.loop.commands[-1].copy()
    spec = ABSURD[name]
    for _ in range(3):                      # each in a pair with a valid sample of the other topic
        s.t += DT
        imu = s.build.imu(s.t, spec if spec.topic == "imu" else Spec("imu", "valid"))
        js = s.build.joint_state(s.t, spec if spec.topic == "joint_states" else Spec("joint_states", "valid"))
        assert s.loop.feed("imu", imu, s.t) is None and s.loop.feed("joint_states", js, s.t) is None
    assert s.cycles_to_recover() <= RECOVERY_CYCLES
    assert s.loop.state.restarts >= 1 and "base estimator" in s.loop.state.restart_reason
    for _ in range(20):
        s.pair()
    assert np.allclose(s.loop.commands[-1], before, atol=1e-3)
    check_commands(s.loop)


def run_fuzz(stream, specs):
    start = len(stream.loop.commands)
    for spec in specs:
        stream.send(spec)
    stream.loop.damage("restore: {}")
    assert stream.cycles_to_recover() <= RECOVERY_CYCLES
    check_commands(stream.loop, start)
    state = stream.loop.state
    assert sum(state.rejected_fields.values()) == stream.loop.rejections
    assert "" not in state.rejected_fields


@pytest.fixture(scope="module")
def stream(robot):
    s = Stream(robot)
    s.pair()
    return s


N_INPUTS = 200                      # per example; 50 examples: 10^4 inputs (>10^4 messages)


@settings(max_examples=50, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(specs=st.lists(input_specs(18), min_size=N_INPUTS, max_size=N_INPUTS))
def test_fuzz_mixed_stream(stream, specs):
    run_fuzz(stream, specs)


@pytest.mark.long
@settings(max_examples=1000, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(specs=st.lists(input_specs(18), min_size=N_INPUTS, max_size=N_INPUTS))
def test_fuzz_mixed_stream_long(stream, specs):
    run_fuzz(stream, specs)


def library_flood(robot, n_messages, seed=0):
    """The flood on the timer-driven cycle (500 Hz) with a deterministic clock: a message
    every 0.5 ms, a third of them valid IMU + joint state pairs, the rest FLOOD_FAULTS."""
    s = Stream(robot)
    rng = np.random.default_rng(seed)
    loop, build = s.loop, s.build
    for _ in range(50):
        s.pair()
    loop.lockstep = False
    start, sent, now, next_cycle = len(loop.commands), 0, s.t, s.t
    t0 = now
    while sent < n_messages:
        now += 0.0005
        if rng.random() < 1 / 3:
            loop.feed("imu", build.imu(now), now)
            loop.feed("joint_states", build.joint_state(now), now)
            sent += 2
        else:
            spec = FLOOD_FAULTS[rng.integers(len(FLOOD_FAULTS))]
            msg = (build.joint_state if spec.topic == "joint_states" else build.imu)(now, spec)
            assert rejection_matches(spec, loop.feed(spec.topic, msg, now)), spec
            sent += 1
        if now >= next_cycle:
            loop.timer_cycle(now)
            next_cycle += DT
    s.t = now
    loop.lockstep = True
    kinds = loop.kinds[start:]
    assert len(kinds) >= int((now - t0) / DT) - 1              # a cycle every 2 ms of the flood
    check_commands(loop, start)
    return s, kinds


@pytest.mark.parametrize("n_messages", [6000, pytest.param(20000, marks=pytest.mark.long)])
def test_flood_keeps_the_timer_loop_out_of_safe_mode(robot, n_messages):
    """Staleness is judged on valid samples only: under the flood every 2 ms cycle is a QP
    cycle (the issue saw safe mode for the whole flood), and valid data after it at once."""
    s, kinds = library_flood(robot, n_messages)
    assert kinds.count("safe") == 0
    assert kinds.count("qp") >= 0.99 * len(kinds)
    assert s.loop.state.rejected["implausible"] > 0 and s.loop.state.rejected["out_of_order"] > 0
    assert s.cycles_to_recover() == 1


def test_safe_mode_damps_while_joints_are_fresh_zero_when_not_and_leaves_at_once(robot):
    """Safe mode (docs/ros.md): IMU stale with fresh joint states -> -kd qd on the actuated
    joints within the URDF effort limits; joint states stale too -> zero; the first timer
    cycle after a fresh pair of both is a QP cycle again."""
    s = Stream(robot)
    loop, build = s.loop, s.build
    loop.lockstep = False
    for _ in range(20):
        s.t += DT
        loop.feed("imu", build.imu(s.t), s.t)
        loop.feed("joint_states", build.joint_state(s.t), s.t)
        loop.timer_cycle(s.t)
    assert loop.kinds[-1] == "qp"
    rates = np.linspace(-20.0, 20.0, len(build.joints))          # beyond 3.4 N m at kd = 1 on purpose
    msg_of = lambda t: build.joint_state(t, Spec("joint_states", "valid"))
    kinds = []
    for _ in range(40):                                           # 80 ms of joint states, no IMU
        s.t += DT
        m = msg_of(s.t)
        m.velocity = [float(x) for x in np.clip(rates, -19.0, 19.0)]
        assert loop.feed("joint_states", m, s.t) is None
        loop.timer_cycle(s.t)
        kinds.append(loop.kinds[-1])
    assert kinds[:20].count("safe") == 0 and kinds[-1] == "safe"      # stale after stale_timeout
    kd = loop.control.kd_safe
    order = [build.joints.index(n) for n in loop.control.joints]
    expected = np.clip(-kd * np.clip(rates, -19.0, 19.0)[order], -loop.command_limits(), loop.command_limits())
    assert np.allclose(loop.commands[-1], expected) and np.any(np.abs(expected) == loop.command_limits())
    for _ in range(30):                                           # 60 ms of nothing at all
        s.t += DT
        loop.timer_cycle(s.t)
    assert loop.kinds[-1] == "safe" and np.all(loop.commands[-1] == 0.0)
    s.t += DT
    loop.feed("imu", build.imu(s.t), s.t)
    loop.feed("joint_states", build.joint_state(s.t), s.t)
    loop.timer_cycle(s.t)
    assert loop.kinds[-1] == "qp"

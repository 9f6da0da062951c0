"""The damage detector's inputs paired by stamp (runtime/detector_inputs.py): streams delivered
late and out of order, as between processes, give the samples an in-order delivery gives."""
import numpy as np
import pytest

from hybrid_dynamics.estimation.base_estimator import ImuSample
from hybrid_dynamics.runtime.detector_inputs import DetectorInputs

FRAMES = ["a_foot", "b_foot"]
PERIOD = 0.001           # efforts at 1 kHz
EVERY = 10               # an estimate every 10 efforts
STANCE_EVERY = 2         # a controller cycle every 2 efforts


def streams(n=600, seed=0):
    """(kind, stamp, payload) of one run, in time order."""
    rng = np.random.default_rng(seed)
    events = []
    for k in range(1, n + 1):
        t = round(k * PERIOD, 6)
        events.append(("effort", t, rng.normal(size=3)))
        if k % STANCE_EVERY == 0:
            events.append(("stance", t, [float((k // 50) % 2), 1.0]))
        if k % EVERY == 0:
            events.append(("base", t, (rng.normal(size=7), rng.normal(size=6))))
            events.append(("joints", t, (rng.normal(size=3), rng.normal(size=3))))
    return events


def feed(inputs, event):
    kind, t, payload = event
    if kind == "effort":
        inputs.add_effort(t, payload)
    elif kind == "stance":
        inputs.add_stance(t, payload)
    elif kind == "base":
        inputs.add_base(t, *payload)
    else:
        inputs.add_joints(t, *payload)
    return inputs.ready()


def delivered_late(events, lags, seed=1):
    """Each stream delayed by its own lag (in stamps) plus jitter, each stream kept in order
    (DDS keeps a publisher's order), the streams interleaved by arrival time."""
    rng = np.random.default_rng(seed)
    arrival = []
    last = {}
    for i, (kind, t, payload) in enumerate(events):
        a = max(t + lags[kind] + rng.uniform(0, 0.004), last.get(kind, -1.0))
        last[kind] = a
        arrival.append((a, i))
    return [events[i] for _, i in sorted(arrival)]


def run(events):
    inputs = DetectorInputs(FRAMES)
    out = []
    for e in events:
        out += feed(inputs, e)
    return out, inputs


def test_late_and_out_of_order_streams_give_the_in_order_samples():
    events = streams()
    reference, _ = run(events)
    # the efforts 40 ms behind the estimate of the same stamp, the two halves of an estimate
    # in either order, the stance 5 ms late: what the morphology manager saw between processes
    late, inputs = run(delivered_late(events, {"effort": 0.04, "stance": 0.005, "base": 0.002, "joints": 0.0}))
    assert len(reference) == 600 // EVERY and inputs.dropped == 0
    assert [s.t for s in late] == [s.t for s in reference]
    for a, b in zip(late, reference):
        assert np.array_equal(a.q, b.q) and np.array_equal(a.v, b.v) and a.stance == b.stance
        assert np.allclose(a.tau, b.tau)


def test_torque_is_the_mean_over_the_interval_and_the_stance_that_of_the_stamp():
    events = streams()
    samples, _ = run(events)
    efforts = {t: p for kind, t, p in events if kind == "effort"}
    stances = {t: p for kind, t, p in events if kind == "stance"}
    prev = None
    for s in samples:
        window = [efforts[t] for t in efforts if (prev if prev is not None else s.t - 1e-9) < t <= s.t]
        assert np.allclose(s.tau, np.mean(window, axis=0))
        planned = stances[max(t for t in stances if t <= s.t)]
        assert s.stance == {f: x > 0.5 for f, x in zip(FRAMES, planned)}
        prev = s.t
    assert len({s.stance["a_foot"] for s in samples}) == 2         # the stance did change


def test_an_estimate_whose_half_never_comes_is_dropped_not_paired():
    events = [e for e in streams(200) if not (e[0] == "base" and abs(e[1] - 0.1) < 1e-9)]
    samples, inputs = run(events)
    assert 0.1 not in [s.t for s in samples] and inputs.dropped == 1
    assert len(samples) == 200 // EVERY - 1


@pytest.mark.parametrize("silent", ["effort", "stance"])
def test_nothing_is_paired_while_a_stream_is_silent(silent):
    events = [e for e in streams(600) if e[0] != silent]        # 0.6 s: longer than max_wait
    samples, inputs = run(events)
    assert samples == [] and inputs.dropped > 0


def test_each_sample_carries_the_imu_sample_of_its_stamp():
    """The fall monitor's input (estimation/fall_monitor.py): the latest IMU sample stamped at
    or before the estimate, here the one of the same stamp (the IMU at 1 kHz, sent with the
    joint states); without an IMU stream, none."""
    events = streams()
    imu_events = [("imu", t, ImuSample(np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(3), np.array([0.0, 0.0, t])))
                  for kind, t, _ in events if kind == "effort"]
    merged = sorted(events + imu_events, key=lambda e: (e[1], e[0] != "imu"))   # each IMU sample first
    inputs = DetectorInputs(FRAMES)
    samples = []
    for kind, t, payload in merged:
        if kind == "imu":
            inputs.add_imu(t, payload)
        else:
            samples += feed(inputs, (kind, t, payload))
    assert len(samples) == 600 // EVERY
    assert [s.imu.linear_acceleration[2] for s in samples] == [s.t for s in samples]
    without, _ = run(events)
    assert [s.imu for s in without] == [None] * len(without)

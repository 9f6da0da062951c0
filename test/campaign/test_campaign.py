"""The campaign machinery on a real Dask cluster: a 6-run campaign on 2 local worker
processes, one run's worker killed on purpose, then a restart that runs only what is missing."""
import csv

import numpy as np
import pytest

from hybrid_dynamics.campaign.execute import (REST_FRACTION, TABLE, feasibility_row, measure, read_table,
                                              run_campaign, run_one, scenario_of)
from hybrid_dynamics.campaign.outcome import classify, touchdown_speed
from hybrid_dynamics.campaign.report import write_report
from hybrid_dynamics.campaign.spec import expand, load_campaign
from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.sim.runner import ScenarioRun

SPEC = """\
description: "six single leg losses, one killed on purpose"
robot: jethexa
speeds: [0.1]
faults: [leg]
damage_at: 1.0
phases: 1
after: 0.6
declared: [true]
seeds: [3]
inject_crash: [leg6]
"""


def test_six_runs_on_two_workers_crash_recorded_restart_skips_done(tmp_path):
    spec_path = tmp_path / "six.yaml"
    spec_path.write_text(SPEC)
    spec = load_campaign(str(spec_path))
    out = tmp_path / "out"
    first = run_campaign(spec, out, workers=2, progress=False)
    assert first.workers == 2 and first.ran == 6 and first.skipped == 0
    rows = read_table(out / TABLE)
    assert len(rows) == 6 and len({r["run_id"] for r in rows}) == 6
    by_fault = {r["fault"]: r for r in rows}
    assert set(by_fault) == {f"leg{i}" for i in range(1, 7)}
    crashed = by_fault["leg6"]
    assert crashed["outcome"] == "crashed" and "worker died" in crashed["stopped"], crashed
    for fault in ("leg1", "leg2", "leg3", "leg4", "leg5"):
        row = by_fault[fault]
        # a one-leg loss is statically feasible; the run simulated and measured something
        assert row["outcome"] in ("walked", "stood"), row
        assert row["feasible"] == "True" and float(row["feasibility_margin_m"]) > 0.0
        assert 0.02 < float(row["min_height_m"]) < 0.2 and float(row["wall_s"]) > 0.0

    # interrupted: the last two rows never written; the restart runs exactly those two
    with (out / TABLE).open() as fh:
        lines = fh.readlines()
    kept, dropped = lines[:-2], [r["run_id"] for r in rows[-2:]]
    (out / TABLE).write_text("".join(kept))
    second = run_campaign(spec, out, workers=2, progress=False)
    assert second.ran == 2 and second.skipped == 4
    again = read_table(out / TABLE)
    assert len(again) == 6 and sorted(r["run_id"] for r in again[-2:]) == sorted(dropped)
    # deterministic per seed: a re-run gives the same figures (wall time aside)
    for new in again[-2:]:
        old = next(r for r in rows if r["run_id"] == new["run_id"])
        assert {k: v for k, v in new.items() if k != "wall_s"} == {k: v for k, v in old.items() if k != "wall_s"}

    report = write_report(again, out, "six")
    text = report.read_text()
    assert "| leg, declared | 6 |" in text and (out / "heatmap.png").stat().st_size > 1000
    with (out / "survival.csv").open() as fh:
        survival = {r["class"]: r for r in csv.DictReader(fh)}
    assert survival["leg, declared"]["crashed"] == "1"
    assert float(survival["leg, declared"]["survival_%"]) == 100.0 * (
        sum(r["outcome"] in ("walked", "stood") for r in again) / 5)


def test_outcome_from_a_free_fall_and_a_slow_descent():
    """Touch-down speed against the analytic free fall (v = g t) and a constant-speed descent."""
    t = np.arange(0.0, 1.0, 0.005)
    z_fall = np.maximum(0.12 - 0.5 * 9.81 * t ** 2, 0.02)
    t_hit = np.sqrt(2 * 0.10 / 9.81)
    _, v = touchdown_speed(t, z_fall)
    assert abs(v - 9.81 * t_hit) < 9.81 * 0.006          # within one sample of g t
    z_slow = np.maximum(0.12 - 0.1 * t, 0.02)
    _, v_slow = touchdown_speed(t, z_slow)
    assert abs(v_slow - 0.1) < 1e-6
    rpy = np.zeros((len(t), 3))
    pos = np.zeros((len(t), 3))
    pos[:, 2] = z_fall
    assert classify("completed", t, pos, rpy, 0.0, 0.12, 0.1, 0.0)["outcome"] == "fell"
    pos[:, 2] = z_slow
    assert classify("completed", t, pos, rpy, 0.0, 0.12, 0.1, 0.0)["outcome"] == "safe landing"
    pos[:, 2] = 0.11
    assert classify("completed", t, pos, rpy, 0.0, 0.12, 0.1, 0.05)["outcome"] == "walked"
    assert classify("completed", t, pos, rpy, 0.0, 0.12, 0.1, 0.0)["outcome"] == "stood"
    # a dip the legs catch above the ground (the body's bottom still up) and walk on from
    pos[:, 2] = np.where(t < 0.5, 0.11, np.maximum(0.11 - 0.3 * (t - 0.5), 0.04))
    pos[t > 0.8, 2] = 0.11
    assert classify("completed", t, pos, rpy, 0.0, 0.12, 0.1, 0.05)["outcome"] == "walked"
    pos[:, 2] = np.where(t < 0.5, 0.11, np.maximum(0.11 - 0.3 * (t - 0.5), 0.02))
    assert classify("completed", t, pos, rpy, 0.0, 0.12, 0.1, 0.0)["outcome"] == "fell"
    rpy[-1, 0] = np.radians(50.0)
    assert classify("fell: tilt over 45 deg", t, pos, np.degrees(rpy), 0.0, 0.12, 0.1, 0.0)["outcome"] == "fell"


@pytest.mark.parametrize("text, field", [
    ("faults: [leg, wings]\n", "faults"),
    ("phases: 0\n", "phases"),
    ("inject_crash: [leg9]\n", "inject_crash"),
    ("scenario: {gait: fast}\n", "scenario.gait"),
    ("seeds: [0.5]\n", "seeds"),
])
def test_bad_spec_names_file_line_and_field(tmp_path, text, field):
    path = tmp_path / "bad.yaml"
    path.write_text("robot: jethexa\n" + text)
    with pytest.raises(InputError) as err:
        load_campaign(str(path))
    assert err.value.field == field and err.value.line == 2 and str(path) in str(err.value)


def test_cli_unknown_campaign_is_one_line(cli):
    out = cli("campaign", "no_such_campaign", "--workers", "1")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "unknown campaign 'no_such_campaign'" in out.stderr and "jethexa" in out.stderr


def test_front_pair_lost_mid_swing_is_survived(tmp_path):
    """The campaign run that fell at every phase before (legs 1 and 2 lost at 3.0 s while
    the other tripod swings; the body sank onto the middle feet at 0.7 m/s): the middle foot
    lands turned forward and the swing under which the body sinks is aborted, so MuJoCo's
    base (ground truth) stays up and level through the 2 s after the loss."""
    spec = load_campaign("jethexa")
    robot = load_robot(spec.robot)
    run = next(r for r in expand(spec, robot, 1.3)
               if r.fault.id == "leg1+leg2" and r.phase == 0 and r.declared)
    row = run_one(spec, run, str(tmp_path))
    assert row["outcome"] in ("walked", "stood"), row
    assert row["stopped"] == "completed" and row["qp_failures"] == 0
    assert row["min_height_m"] > 0.5 * 0.113 and max(row["max_roll_deg"], row["max_pitch_deg"]) < 10.0


QUAD = """\
description: "four legs lost: two feet left, statically infeasible"
robot: jethexa
speeds: [0.1]
faults: [leg_quad]
damage_at: 3.0
phases: 1
after: 2.0
declared: [true]
seeds: [0]
scenario:
  sensors: {gyro_std: 0.002, accel_std: 0.02, gyro_bias: [0.001, -0.001, 0.0005], joint_position_std: 0.0002, joint_velocity_std: 0.002}
"""


def landing(spec, run, tmp_path):
    """Run ``run`` and measure its landing: (row of the table, the largest downward speed of
    MuJoCo's own base velocity (ground truth) over the 50 ms before touch-down, the run).
    Asserts that the base did come down (below a quarter of its standing height)."""
    sim = ScenarioRun(scenario_of(spec, run), tmp_path / "run", progress=False, bag=False, plots=False,
                      low_fraction=REST_FRACTION)
    vz, record = [], sim._record

    def with_velocity(t, cycle):
        record(t, cycle)
        vz.append(float(sim.plant.ground_truth().linear_velocity[2]))

    sim._record = with_velocity
    row = measure(sim, sim.run(), run)
    t = np.array(sim.log.t) - sim.log.t[0]
    z = np.array(sim.log.pos)[:, 2]
    after = t >= sim.t_damage - sim.log.t[0]
    t_td, _ = touchdown_speed(t[after], z[after])
    k = int(np.searchsorted(t, t_td))
    window = (t > t_td - 0.05) & (t <= t_td)
    assert z[k] < 0.25 * sim.stand_height                          # it did come down
    return row, -min(vz[i] for i in np.flatnonzero(window)), sim


def test_two_feet_left_sit_down_and_land_slowly(tmp_path):
    """Legs 1-4 lost while walking (the rear pair left: no standing posture, static
    feasibility says so): the planner sits down at once and the body lands at under
    0.2 m/s, measured on MuJoCo's own base velocity (ground truth) at touch-down, and tilts
    less than 30 deg. Held level, the same fault fell at 1.10 m/s (the body dropped freely
    within 0.17 s)."""
    spec_path = tmp_path / "quad.yaml"
    spec_path.write_text(QUAD)
    spec = load_campaign(str(spec_path))
    robot = load_robot(spec.robot)
    run = next(r for r in expand(spec, robot, 1.3) if r.fault.id == "leg1+leg2+leg3+leg4")
    assert not feasibility_row(spec.robot, run.fault.event_list())["feasible"]
    row, speed, sim = landing(spec, run, tmp_path)
    assert row["outcome"] == "safe landing" and speed < 0.2, (row, speed)
    assert max(row["max_roll_deg"], row["max_pitch_deg"]) < 30.0
    assert sim.pipeline.gait.reference.gait == "sit"


def test_a_falling_pair_loss_sits_down_and_lands_slowly(tmp_path):
    """Legs 1 and 3 lost at phase 1 while the other tripod swings (statically feasible, but
    the two feet left down let the body tip; once every foot is down its capture point is
    outside their polygon and it sinks): before the fall trigger it came down at 0.84 m/s
    (campaign). Now the planner sees the measured CoM low, sinking and its capture point
    outside, sits down, and the body lands under 0.2 m/s on MuJoCo's base velocity, tilted
    less than 30 deg."""
    spec = load_campaign("jethexa")
    robot = load_robot(spec.robot)
    run = next(r for r in expand(spec, robot, 1.3)
               if r.fault.id == "leg1+leg3" and r.phase == 1 and r.declared)
    assert feasibility_row(spec.robot, run.fault.event_list())["feasible"]
    row, speed, sim = landing(spec, run, tmp_path)
    assert row["outcome"] == "safe landing" and speed < 0.2, (row, speed)
    assert max(row["max_roll_deg"], row["max_pitch_deg"]) < 30.0
    assert sim.pipeline.gait.reference.gait == "sit"

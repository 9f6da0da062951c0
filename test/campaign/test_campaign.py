"""The campaign machinery on a real Dask cluster: a 6-run campaign on 2 local worker
processes, one run's worker killed on purpose, then a restart that runs only what is missing."""
import csv
import json

import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.campaign.execute import (REST_FRACTION, TABLE, feasibility_row, measure, read_table,
                                              run_campaign, run_one, scenario_of, slug)
from hybrid_dynamics.campaign.outcome import classify, tilt_deg
from hybrid_dynamics.campaign.report import write_report
from hybrid_dynamics.campaign.spec import expand, load_campaign
from hybrid_dynamics.errors import InputError
from hybrid_dynamics.estimation.damage_detector import DamageDetector
from hybrid_dynamics.estimation.fall_monitor import FallMonitor
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.sim.runner import ScenarioRun
from mujoco_geometry import body_box_bottom

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


def test_outcome_goes_by_the_body_touching_the_floor():
    """No body contact: walked or stood by the speed after the fault; a body contact under
    0.2 m/s (the base and the touching points) without tipping: safe landing, faster: fell; tipped past 30 deg: fell whatever
    touched; a run stopped on its limits without a body contact: fell."""
    t = np.arange(0.0, 1.0, 0.005)
    rpy = np.zeros((len(t), 3))
    assert classify("completed", t, rpy, 0.0, None, 0.1, 0.05)["outcome"] == "walked"
    assert classify("completed", t, rpy, 0.0, None, 0.1, 0.0)["outcome"] == "stood"
    assert classify("completed", t, rpy, 0.0, None, 0.0, 0.0)["outcome"] == "stood"
    assert classify("completed", t, rpy, 0.0, 0.15, 0.1, 0.05)["outcome"] == "safe landing"
    assert classify("completed", t, rpy, 0.0, 0.25, 0.1, 0.0)["outcome"] == "fell"
    # the base slow, but the edge that touched fast (a body turned onto its edge): fell
    assert classify("completed", t, rpy, 0.0, 0.15, 0.1, 0.05, touch_point_speed=1.1)["outcome"] == "fell"
    assert classify("completed", t, rpy, 0.0, 0.15, 0.1, 0.05, touch_point_speed=0.18)["outcome"] == "safe landing"
    assert classify("fell: base height 0.020 m", t, rpy, 0.0, None, 0.1, 0.0)["outcome"] == "fell"
    rpy[-1, 0] = 35.0
    assert classify("completed", t, rpy, 0.0, 0.05, 0.1, 0.0)["outcome"] == "fell"
    assert classify("completed", t, rpy, 0.9, None, 0.1, 0.05)["outcome"] == "fell"
    assert classify("completed", t, rpy, 0.0, None, 0.1, 0.0)["max_tilt_deg"] == 35.0


def test_tilt_is_the_bodys_vertical_axis_from_the_worlds():
    """The tilt the outcome goes by is the angle of the body's vertical axis from the world's,
    here against Pinocchio's rotation of the same roll, pitch and yaw; a body rolled 28.6 deg
    and pitched 23.9 deg at once (each under 30) is tilted 36.6 deg and fell (by the larger of
    |roll| and |pitch| it was a safe landing; legs 1, 2 and 5 lost, undeclared, jethexa_tripod,
    reached those angles, at a tilt of 31.5 deg)."""
    rng = np.random.default_rng(3)
    rpy = rng.uniform(-80.0, 80.0, (50, 3))
    axis = np.array([pin.rpy.rpyToMatrix(*np.radians(a))[:, 2] for a in rpy])
    assert np.allclose(tilt_deg(rpy), np.degrees(np.arccos(axis[:, 2])), atol=1e-9)
    t = np.arange(0.0, 1.0, 0.005)
    tilted = np.zeros((len(t), 3))
    tilted[-1, :2] = (28.6, 23.9)
    verdict = classify("completed", t, tilted, 0.0, 0.078, 0.1, 0.0)
    assert verdict["outcome"] == "fell" and abs(verdict["max_tilt_deg"] - 36.6) < 0.1, verdict
    tilted[-1, :2] = (20.0, 20.0)           # 28.0 deg: a landing
    assert classify("completed", t, tilted, 0.0, 0.078, 0.1, 0.0)["outcome"] == "safe landing"


def test_a_body_resting_on_its_edge_did_not_stand(tmp_path, monkeypatch):
    """Legs 2 and 3 lost at phase 0, hidden from the software, with the fall monitor off (with
    it the pair is found within 25 ms and the robot does not come down): the body sinks onto
    one edge of its box, propped on the feet left, its base above a quarter of its standing
    height and tilted less than 30 deg (the height rule called such runs "stood" or
    "walked"). The box's lowest corner (MuJoCo's geom pose, not its contacts) reached the
    floor, the plant recorded the body's first contact, and the outcome is a landing, not
    standing. (This was legs 2+6, then 1+3, at phase 2, until the detector found the legs
    lost just before their touch-down at the landing: those runs now stand or walk.)"""
    monkeypatch.setattr(FallMonitor, "update", lambda self, t, imu: None)
    spec = load_campaign("jethexa")
    run = next(r for r in expand(spec, load_robot(spec.robot), 1.3)
               if r.fault.id == "leg2+leg3" and r.phase == 0 and not r.declared)
    sim = ScenarioRun(scenario_of(spec, run), tmp_path / "edge", progress=False, bag=False, plots=False,
                      low_fraction=REST_FRACTION)
    bottom, record = [], sim._record

    def with_box(t, cycle):
        record(t, cycle)
        bottom.append(body_box_bottom(sim.plant))

    sim._record = with_box
    row = measure(sim, sim.run(), run)
    assert row["stopped"] == "completed" and row["min_height_m"] > 0.25 * sim.stand_height, row
    assert max(row["max_roll_deg"], row["max_pitch_deg"]) < 30.0, row
    assert min(bottom) < 2e-3 and bottom[0] > 0.05
    assert sim.plant.body_touch is not None and row["touchdown_speed_mps"] is not None
    assert row["outcome"] in ("safe landing", "fell"), row


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
    assert row["touchdown_speed_mps"] is None                 # nothing but the feet touched the floor


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
    MuJoCo's own base velocity (ground truth, per control cycle) over the 50 ms before the
    body first touched the floor, the run). Asserts that the body did touch the floor."""
    sim = ScenarioRun(scenario_of(spec, run), tmp_path / "run", progress=False, bag=False, plots=False,
                      low_fraction=REST_FRACTION)
    vz, record = [], sim._record

    def with_velocity(t, cycle):
        record(t, cycle)
        vz.append(float(sim.plant.ground_truth().linear_velocity[2]))

    sim._record = with_velocity
    row = measure(sim, sim.run(), run)
    touch = sim.plant.body_touch
    assert touch is not None                                       # it did come down
    t = np.array(sim.log.t)
    window = (t > touch.t - 0.05) & (t <= touch.t)
    return row, -min(vz[i] for i in np.flatnonzero(window)), sim


def test_two_feet_left_sit_down_and_the_landing_is_the_first_body_contact(tmp_path):
    """Legs 1-4 lost while walking (statically infeasible: the planner sits down at once).
    The landing is measured where the body first touches the floor (MuJoCo's contacts,
    1 kHz): that speed agrees with MuJoCo's base velocity over the control cycles just
    before, and the outcome follows it. (The former measure, the speed when the base came
    within 5 mm of its lowest height, took the body settling after its edge had hit: "under
    0.2 m/s" where the body hit the floor at 0.9 m/s, docs/campaign.md.)"""
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(QUAD)
    spec = load_campaign(str(spec_path))
    run = next(r for r in expand(spec, load_robot(spec.robot), 1.3) if r.fault.id == "leg1+leg2+leg3+leg4")
    assert not feasibility_row(spec.robot, run.fault.event_list())["feasible"]
    row, speed, sim = landing(spec, run, tmp_path)
    assert sim.pipeline.gait.reference.gait == "sit"
    assert speed > 0.05 and abs(row["touchdown_speed_mps"] - speed) < 0.05, (row, speed)
    assert row["outcome"] == ("safe landing" if row["touchdown_speed_mps"] < 0.2 else "fell"), row


@pytest.mark.parametrize("fault, declared", [("leg2+leg3+leg4+leg5", True), ("leg1+leg2+leg5+leg6", True),
                                             ("leg1+leg3+leg4+leg6", True), ("leg2+leg3+leg4+leg5", False)])
def test_two_feet_on_a_line_under_the_com_bring_the_body_down_balanced(tmp_path, fault, declared):
    """Four legs lost while walking (declared), the two feet left on a line under the CoM
    (1+6, 3+4, 2+5): the body sat down free to tilt, rolled about that line and tipped past 45
    deg (main e8aec7a: 53, 46 and 50 deg). Balanced over the line while it comes down
    (control/locomotion/line_balance.py), the body touches the floor slowly or not at all:
    MuJoCo's base falls at under 0.2 m/s over the 50 ms before its first body contact, that
    contact (MuJoCo's, base and touching points) is under 0.2 m/s, and the body's tilt (MuJoCo's
    orientation, every control cycle) stays under 30 deg. Feet 1+6 and 3+4 land; feet 2+5 end
    balanced on the two feet with the body a few millimetres above the floor (its legs folded
    to their stops) and the run counts as stood. Undeclared (feet 1+6), the four legs are found
    in one decision as the body starts to fall (``falling_max_legs`` 4; with 3, legs 3, 4 and 5
    were found 0.2 s after the loss, the body already sinking at 0.65 m/s, and it fell) and the
    body comes down as in the declared run."""
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(QUAD.replace("declared: [true]", f"declared: [{str(declared).lower()}]"))
    spec = load_campaign(str(spec_path))
    run = next(r for r in expand(spec, load_robot(spec.robot), 1.3) if r.fault.id == fault)
    sim = ScenarioRun(scenario_of(spec, run), tmp_path / "run", progress=False, bag=False, plots=False,
                      low_fraction=REST_FRACTION)
    vz, tilt, record = [], [], sim._record

    def with_truth(t, cycle):
        record(t, cycle)
        truth = sim.plant.ground_truth()
        vz.append(float(truth.linear_velocity[2]))
        R = pin.Quaternion(truth.orientation[3], *truth.orientation[:3]).toRotationMatrix()
        tilt.append(float(np.degrees(np.arccos(np.clip(R[2, 2], -1.0, 1.0)))))

    sim._record = with_truth
    row = measure(sim, sim.run(), run)
    t = np.array(sim.log.t)
    after = t >= sim.t_damage
    assert max(np.array(tilt)[after]) < 30.0, row
    assert sim.pipeline.gait.planner.balance_from is not None         # it came down balanced
    touch = sim.plant.body_touch
    if fault != "leg1+leg3+leg4+leg6":
        assert touch is not None and row["outcome"] == "safe landing", row
    if touch is not None:
        window = (t > touch.t - 0.05) & (t <= touch.t)
        assert -min(np.array(vz)[window]) < 0.2 and -touch.vz < 0.2 and touch.point_speed < 0.2, row
    assert row["outcome"] in ("safe landing", "stood"), row
    if not declared:
        detections = sim.detector.detections
        assert sorted(d.describe() for d in detections) == [f"{leg} lost" for leg in fault.split("+")]
        assert len({d.t for d in detections}) == 1 and float(row["detection_latency_s"]) <= 0.025, row


def test_two_feet_in_the_air_land_with_their_line_under_the_com(tmp_path):
    """Legs 2+3+5+6 lost while walking (declared): feet 1 and 4 are left, both in the air, and
    their line on the gait's footholds passes 7.6 cm beside the CoM, so the body sat down
    free to tilt, rolled over that line and tipped past 45 deg (main: base 0.52, touching points
    1.44 m/s, 46.0 deg). Landed where their line passes under the CoM and its capture point
    (each foot turned about its hip within its coxa's stops, ``LocomotionPlanner._line_landing``;
    the CoM taken as the body left's, 2 cm ahead of the estimate's former one), the two feet
    brake the body before it touches: MuJoCo's first body contact under 0.2 m/s (base and
    touching points), the tilt (MuJoCo's, every control cycle) under 30 deg, a safe landing. A
    margin of this run, not of the rule: with the feet sent at 1.1, 1.2 or 1.4 m/s instead of 1.0
    the base still touches at under 0.1 m/s but the touching points at 0.14-0.29 m/s with the
    tilt up to 31.5 deg: fell (docs/campaign.md)."""
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(QUAD)
    spec = load_campaign(str(spec_path))
    run = next(r for r in expand(spec, load_robot(spec.robot), 1.3) if r.fault.id == "leg2+leg3+leg5+leg6")
    sim = ScenarioRun(scenario_of(spec, run), tmp_path / "run", progress=False, bag=False, plots=False,
                      low_fraction=REST_FRACTION)
    tilt, record = [], sim._record

    def with_truth(t, cycle):
        record(t, cycle)
        truth = sim.plant.ground_truth()
        R = pin.Quaternion(truth.orientation[3], *truth.orientation[:3]).toRotationMatrix()
        tilt.append(float(np.degrees(np.arccos(np.clip(R[2, 2], -1.0, 1.0)))))

    sim._record = with_truth
    row = measure(sim, sim.run(), run)
    touch = sim.plant.body_touch
    assert touch is not None and -touch.vz < 0.2 and touch.point_speed < 0.2, row
    assert max(tilt) < 30.0 and row["outcome"] == "safe landing", row
    planner = sim.pipeline.gait.planner
    feet = [planner.feet_pos[f][:2] for f in ("leg1_foot", "leg4_foot")]
    nominal = [planner.nominal0[f][:2] for f in ("leg1_foot", "leg4_foot")]
    assert min(np.linalg.norm(p - q - planner.N[:2]) for p, q in zip(feet, nominal)) > 0.02   # sent off the gait's footholds


@pytest.mark.parametrize("fault, phase", [("leg1+leg3", 1), ("leg1+leg2", 1), ("leg5+leg6", 0), ("leg1+leg3", 0)])
def test_a_pair_lost_with_two_feet_down_walks_on(tmp_path, fault, phase):
    """A pair lost while the other tripod swings (declared): two feet are left down while
    the feet in the air land on the new gait's footholds 6-10 cm away within 50 ms. With the
    joint-limit bounds on the landing legs, the QP moved those feet by throwing the body
    (stance forces 30 and 22 N, then 2-7 N of the 21 N weight) and the body hit the floor
    (legs 1+3: 0.68 m/s, legs 1+2: 0.44 m/s, at the body's first contact). Legs in the air
    bounded by their torque limits only: nothing but the feet touches the floor, the body
    stays above half its standing height and tilts less than 10 deg. Legs 5+6: leg 1's foot
    landed turned 0.5 rad outwards and leg 1 is last in the front legs' crawl order; the body
    walking on carried its foot onto its coxa's stop before its first swing, the CoM stayed
    4-5 cm behind its path, and 1.5 s after the loss the body came down on its rear edge at
    0.51 m/s, until the crawl order was started so that no leg stands onto its stop first.
    Legs 1+3 at phase 0: feet 2 and 6 down on the left, feet 4 and 5 landing; on the wave
    gait's footholds the CoM was 2.9 cm inside the diagonal 2-5, the body crossed it while two
    feet carried it and sat down onto its edge (0.13 m/s), until foot 5 landed turned forward
    about its hip, where it catches the body."""
    spec = load_campaign("jethexa")
    run = next(r for r in expand(spec, load_robot(spec.robot), 1.3)
               if r.fault.id == fault and r.phase == phase and r.declared)
    row = run_one(spec, run, str(tmp_path))
    assert row["stopped"] == "completed" and row["touchdown_speed_mps"] is None, row
    assert row["outcome"] in ("walked", "stood") and row["min_height_m"] > 0.5 * 0.113, row
    assert max(row["max_roll_deg"], row["max_pitch_deg"]) < 10.0, row


def test_a_leg_lost_just_before_its_landing_is_found_at_the_landing(tmp_path):
    """Leg 2 lost (undeclared) in the air, 35 ms before its planned touch-down: the contact
    switch's pause of the tests used to wipe the swing test's evidence (6 calls in 30 ms of
    the 50 ms it needs), and the loss was found 0.85 s late, after the body dipped onto it.
    The swing test of a leg whose evidence began in its swing goes on through the pause: leg 2
    alone is found within 0.1 s of the loss, and the robot walks on."""
    spec = load_campaign("jethexa")
    run = next(r for r in expand(spec, load_robot(spec.robot), 1.3)
               if r.fault.id == "leg2" and r.phase == 2 and not r.declared)
    row = run_one(spec, run, str(tmp_path))
    found = json.loads((tmp_path / "runs" / slug(run.run_id) / "summary.json").read_text())["detections"]
    assert [d["what"] for d in found] == ["leg2 lost"], found
    assert 0.0 < float(row["detection_latency_s"]) <= 0.1, row
    assert row["outcome"] == "walked", row


def test_a_pair_lost_as_one_leg_lands_and_the_other_lifts_is_found_at_once(tmp_path):
    """Legs 1 and 3 lost (undeclared) at phase 2: leg 3 is in the air, due to land, leg 1 due
    to lift as it does. Leg 3 is found at its landing (above); leg 1, commanded to swing, does
    not move: it is convicted with it, not after the 0.3 s holdoff that follows the first
    detection (when it was never found and the body came down on its edge at 0.66 m/s). Both
    legs within 0.1 s of the loss, and the robot walks on."""
    spec = load_campaign("jethexa")
    run = next(r for r in expand(spec, load_robot(spec.robot), 1.3)
               if r.fault.id == "leg1+leg3" and r.phase == 2 and not r.declared)
    row = run_one(spec, run, str(tmp_path))
    found = json.loads((tmp_path / "runs" / slug(run.run_id) / "summary.json").read_text())["detections"]
    assert sorted(d["what"] for d in found) == ["leg1 lost", "leg3 lost"], found
    assert 0.0 < float(row["detection_latency_s"]) <= 0.1, row
    assert row["outcome"] == "walked", row


def _run_with_fall_monitor(spec, run, tmp_path, monkeypatch, monitor: bool):
    """Run ``run`` with the fall monitor, or with it never saying "falling"."""
    if not monitor:
        monkeypatch.setattr(FallMonitor, "update", lambda self, t, imu: None)
    sim = ScenarioRun(scenario_of(spec, run), tmp_path / f"run_{monitor}", progress=False, bag=False, plots=False,
                      low_fraction=REST_FRACTION)
    return measure(sim, sim.run(), run), sim


def test_a_swing_femur_on_its_stop_is_not_taken_for_a_locked_one(tmp_path, monkeypatch):
    """Legs 1 and 4 lost (undeclared) at phase 1, with the fall monitor off (with it the pair
    is found at 15 ms, below): only foot 5 is left down and the body sinks onto the swinging
    tripod; leg 2's foot, pushed up by the ground, holds its femur on its stop (-1.6 rad)
    with a constraint torque on that joint, as a lock would. The detector convicted it as
    locked (with the pair, at 0.475 s) and the body came down at 0.34 m/s; a joint on its
    stop is not taken for a locked one: the pair alone is found, and the robot walks on. The
    state did occur: the stop rule held back the swing test on leg 2's femur."""
    held, at_stop = [], DamageDetector._at_stop

    def spy(self, leg, k):
        if at_stop(self, leg, k):
            held.append((leg, k))
            return True
        return False

    monkeypatch.setattr(DamageDetector, "_at_stop", spy)
    spec = load_campaign("jethexa")
    run = next(r for r in expand(spec, load_robot(spec.robot), 1.3)
               if r.fault.id == "leg1+leg4" and r.phase == 1 and not r.declared)
    row, sim = _run_with_fall_monitor(spec, run, tmp_path, monkeypatch, monitor=False)
    assert ("leg2", 1) in held
    assert sorted(d.describe() for d in sim.detector.detections) == ["leg1 lost", "leg4 lost"]
    assert row["outcome"] == "walked" and row["touchdown_speed_mps"] is None, row


@pytest.mark.parametrize("fault, phase", [("leg4+leg6", 0), ("leg1+leg2", 1)])
def test_a_pair_lost_while_the_other_tripod_swings_is_found_as_the_body_starts_to_fall(
        tmp_path, monkeypatch, fault, phase):
    """An undeclared pair lost while the other tripod swings: the body falls at once (two
    feet left down), but the observer needs 50-105 ms to explain it, and by then the body
    comes down (0.30-0.40 m/s at the first body contact). The IMU's vertical specific force
    drops below 0.75 g within 5-20 ms (estimation/fall_monitor.py): the detector decides on its
    falling_* settings, finds the pair within 25 ms, and the robot walks or stands. Without
    the monitor the same run is found later and falls."""
    spec = load_campaign("jethexa")
    run = next(r for r in expand(spec, load_robot(spec.robot), 1.3)
               if r.fault.id == fault and r.phase == phase and not r.declared)
    row, sim = _run_with_fall_monitor(spec, run, tmp_path, monkeypatch, monitor=True)
    assert sim.fall_monitor.first - sim.t_damage <= 0.025
    assert sorted(d.describe() for d in sim.detector.detections) == sorted(f"{leg} lost" for leg in fault.split("+"))
    assert all(d.falling for d in sim.detector.detections)
    assert float(row["detection_latency_s"]) <= 0.025 and row["outcome"] in ("walked", "stood"), row
    row, _ = _run_with_fall_monitor(spec, run, tmp_path, monkeypatch, monitor=False)
    assert float(row["detection_latency_s"]) >= 0.05 and row["outcome"] == "fell", row


def measured(spec_name: str, fault: str, declared: bool, tmp_path, phase=None):
    """The run of ``fault`` (declared or not, at damage ``phase`` when given) of the campaign
    ``spec_name``, run through the library loop as the campaign runs it: (the simulation, its
    row of the table)."""
    spec = load_campaign(spec_name)
    run = next(r for r in expand(spec, load_robot(spec.robot), 1.3)
               if r.fault.id == fault and r.declared == declared and (phase is None or r.phase == phase))
    sim = ScenarioRun(scenario_of(spec, run), tmp_path / "run", progress=False, bag=False, plots=False,
                      low_fraction=REST_FRACTION)
    return sim, measure(sim, sim.run(), run)


def test_three_legs_lost_hidden_are_found_together_as_the_body_falls(tmp_path):
    """Legs 1, 3 and 6 lost at once (undeclared, jethexa_tripod): the IMU says the body falls
    and the three legs' encoders stop. Two legs at most were blamed at once, the third found
    only after the 0.3 s holdoff that follows a detection, and meanwhile the planner caught
    the body on a morphology that still counted it: the edge hit the floor at 0.54 m/s. On a
    fall's evidence three legs may go together (``falling_max_legs``): the three are found in
    one decision within 25 ms of the loss and the robot stands on the three feet left, nothing
    but the feet touching the floor (MuJoCo's contacts)."""
    sim, row = measured("jethexa_tripod", "leg1+leg3+leg6", False, tmp_path)
    detections = sim.detector.detections
    assert sorted(d.describe() for d in detections) == ["leg1 lost", "leg3 lost", "leg6 lost"]
    assert len({d.t for d in detections}) == 1 and all(d.falling for d in detections)
    assert float(row["detection_latency_s"]) <= 0.025, row
    assert row["outcome"] == "stood" and row["touchdown_speed_mps"] is None, row
    assert sim.plant.body_touch is None and row["max_tilt_deg"] < 10.0, row


def test_feet_landing_with_no_foot_down_are_not_sent_below_the_floor(tmp_path):
    """Legs 2, 3 and 6 lost at once while they carried the body (undeclared, jethexa_tripod):
    they are found 75 ms later, the estimate's base 3.3 cm above MuJoCo's because the lost
    feet counted as down until then. Feet 1, 4 and 5, in the air at the loss, land; judged
    from the estimate they were 3.3 cm up, so the touch-down search sent them on down while
    they stood on the floor: with no foot down the estimate had nothing to hold its height
    to and rose with them, and the legs threw the base up to 0.25 m, after which it tipped
    past 45 deg (the declared run stands). A foot lands on time when no walking foot is down:
    the robot stands, nothing but the feet touching the floor (MuJoCo's contacts), its base
    (MuJoCo's) never above its standing height."""
    sim, row = measured("jethexa_tripod", "leg2+leg3+leg6", False, tmp_path)
    assert sorted(d.describe() for d in sim.detector.detections) == ["leg2 lost", "leg3 lost", "leg6 lost"]
    assert float(row["detection_latency_s"]) >= 0.05, row                 # late: the estimate is off by then
    assert row["max_tilt_deg"] < 30.0 and sim.plant.body_touch is None, row
    assert max(p[2] for p in sim.log.pos) < 1.05 * sim.stand_height, row
    assert row["outcome"] == "stood" and row["stopped"] == "completed", row


def test_a_landing_leg_is_not_convicted_on_a_falls_short_evidence(tmp_path):
    """Leg 6 lost (undeclared) at phase 2: the body dips and the IMU says it falls. Leg 2,
    landing, moves slowly at its touch-down; on the falling settings' 20 ms of encoders its
    femur looked still and the swing test convicted it as locked (then the robot fell). While
    the body falls the short evidence serves only a leg gone still as a whole: leg 6 alone is
    found, and the robot walks on."""
    sim, row = measured("jethexa", "leg6", False, tmp_path, phase=2)
    assert sim.fall_monitor.first is not None and sim.detector.falling_calls > 0
    assert [d.describe() for d in sim.detector.detections] == ["leg6 lost"]
    assert row["outcome"] == "walked", row



@pytest.mark.parametrize("declared", [True, False])
def test_a_body_inside_its_measured_feet_is_not_taken_for_falling(tmp_path, declared):
    """Legs 2, 3 and 5 lost (jethexa_tripod): feet 1 and 4 land after the loss, and foot 1, the
    body falling onto it, touches the floor 6 cm from its landing target (undeclared: the
    estimate's feet at 0.1 s). The falling check counted it at its target: the capture point
    was judged outside the feet while the CoM stood 2-4 cm inside the measured ones, and the
    body sat down free to tilt onto its edge (undeclared: the edge at 0.28 m/s, tilt 22.6 deg,
    fell; declared: a landing at 0.08 m/s). Counted where the estimate measures it, the robot
    stands on its three feet: nothing but the feet touches the floor (MuJoCo's contacts), the
    body is never taken for falling, its tilt stays under 10 deg."""
    sim, row = measured("jethexa_tripod", "leg2+leg3+leg5", declared, tmp_path)
    assert sim.pipeline.gait.planner.sitting is None, row
    assert sim.plant.body_touch is None and row["max_tilt_deg"] < 10.0, row
    assert row["outcome"] == "stood" and row["stopped"] == "completed", row


def test_three_feet_falling_over_an_edge_land_on_it(tmp_path):
    """Legs 3, 5 and 6 lost while walking (declared, jethexa_tripod): feet 1 and 4 land 80-90 ms
    after the loss, by when the CoM is on the 1-4 edge and the body falls at 0.6 m/s and rolls
    outwards over it at 2 rad/s. Sat down free to tilt, its edge met the floor at 0.23 m/s
    (the touching points at 0.46). Beyond a stand (the CoM outside the edge, the angular
    momentum about it outwards), it now lands on that edge along the planar optimiser's plan
    from its measured state: MuJoCo's base and the body's touching points meet the floor under
    0.2 m/s, and it does not tip over once down (held where it came to rest, the third foot in
    the air: taken as a stance foot again, it drove the legs into their limits, 26 cycles of
    softened joint limits, and the body tipped over 45 deg after landing at 0.19 m/s)."""
    sim, row = measured("jethexa_tripod", "leg3+leg5+leg6", True, tmp_path)
    planner = sim.pipeline.gait.planner
    assert planner.edge_landing.plan is not None and planner.edge_landing.third == "leg2_foot", row
    touch = sim.plant.body_touch
    assert touch is not None and -touch.vz < 0.2 and touch.point_speed < 0.2, (touch, row)
    assert planner.edge_stage == "down" and row["qp_failures"] == 0, row
    assert row["max_tilt_deg"] < 30.0 and row["outcome"] == "safe landing", row

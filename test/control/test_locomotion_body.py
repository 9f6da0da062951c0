"""CoM path of the static (wave) gait and the damaged hexapod staying up.

Geometry (planner only): the planned CoM stays inside the polygon of the feet that are down,
with margin, with bounded acceleration and a continuous velocity. Physics (MuJoCo, shortened
runs of the scenarios): S2 walks 10 s without falling or tilting, S1 undeclared survives the
loss of two legs (one of them in stance) under 15 deg, the locked-joint scenario never needs
the QP fallback."""
import numpy as np
import pytest

from hybrid_dynamics.control.locomotion import LocomotionPlanner
from hybrid_dynamics.control.locomotion.body import ComPath, plan_com_path
from hybrid_dynamics.control.locomotion.swing import convex_hull, halfplanes, margin
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.robot import load_robot

DT = 0.005


@pytest.fixture(scope="module")
def robot():
    return load_robot("jethexa")


def damaged(robot, which):
    m = Morphology.healthy(robot)
    return {"s1": m.remove_leg("leg3").remove_leg("leg4"),
            "s2": m.remove_links("leg4", 2).remove_links("leg5", 2),
            "locked": m.lock_joint("leg1_femur_joint", -0.25)}[which]


def test_com_path_is_the_exact_double_integrator_and_respects_its_polygon():
    h, K = 0.04, 30
    p_ref = np.stack([0.1 * h * np.arange(1, K + 1), np.zeros(K)], axis=1)    # 0.1 m/s along x
    square = halfplanes(convex_hull([(-1, 0.03), (1, 0.03), (1, 0.08), (-1, 0.08)]))
    polys = [square if 10 <= i < 20 else None for i in range(K)]   # y in [0.03, 0.08] for a while
    path = plan_com_path(0.0, h, np.zeros(2), np.array([0.1, 0.0]), p_ref, polys,
                         margin=0.01, a_max=2.0, max_shift=0.1)
    assert isinstance(path, ComPath)
    for i in range(10, 20):
        p, _, _ = path.sample((i + 1) * h)
        assert 0.04 - 1e-6 <= p[1] <= 0.07 + 1e-6
    assert np.abs(path.acc).max() <= 2.0 + 1e-6
    # velocity and acceleration are the derivatives of position, position is continuous
    for t in (np.arange(K) + 0.37) * h:        # away from the grid points (acceleration steps)
        p0, v0, a0 = path.sample(t)
        p1, v1, _ = path.sample(t + 1e-6)
        assert np.allclose((p1 - p0) / 1e-6, v0, atol=1e-4)
        assert np.allclose((v1 - v0) / 1e-6, a0, atol=1e-3)
    for i in range(1, K):                        # continuous at the grid points
        assert np.allclose(path.sample(i * h - 1e-9)[0], path.sample(i * h + 1e-9)[0], atol=1e-8)
        assert np.allclose(path.sample(i * h - 1e-9)[1], path.sample(i * h + 1e-9)[1], atol=1e-6)
    # an impossible polygon (margin larger than the strip) has no path
    assert plan_com_path(0.0, h, np.zeros(2), np.zeros(2), p_ref, polys, margin=0.03,
                         a_max=2.0, max_shift=0.1) is None


@pytest.mark.parametrize("which", ["s1", "s2", "locked"])
def test_planned_com_inside_stance_polygons_with_bounded_acceleration(robot, which):
    q = robot.q_stand.copy()
    q[2] = 0.114
    planner = LocomotionPlanner(robot)
    planner.reset(0.0, q)
    planner.set_morphology(MorphologyMap(robot, damaged(robot, which)), 0.0)
    planner.set_command(0.1)
    refs = [planner.update(t) for t in np.arange(0.0, 8.0, DT)]
    assert planner.pattern.name == "wave" and planner.plans
    cfg = planner.config
    # every plan keeps at least half the margin; the acceleration bound is relaxed at most once
    assert min(p.margin for p in planner.plans) >= 0.5 * cfg.stability_margin - 1e-9
    assert max(p.a_max for p in planner.plans) <= 2 * cfg.body_max_accel + 1e-9
    worst = np.inf
    for ref in refs:
        down = [r.position[:2] for f, r in ref.feet.items() if r.stance and planner.leg_of[f] in ref.walking_legs]
        if any(f in planner.landing for f in ref.feet) or len(down) < 3:
            continue
        worst = min(worst, margin(ref.com_position[:2], convex_hull(down)))
    assert worst > 0.5 * cfg.stability_margin - 1e-3, worst
    acc = np.array([r.base_linear_acceleration[:2] for r in refs])
    vel = np.array([r.base_linear_velocity[:2] for r in refs])
    pos = np.array([r.com_position[:2] for r in refs])
    assert np.abs(acc).max() <= 2 * cfg.body_max_accel + 1e-6
    # C1: no velocity jump beyond what the acceleration bound allows, position follows velocity
    assert np.abs(np.diff(vel, axis=0)).max() <= 2 * cfg.body_max_accel * DT + 1e-6
    assert np.abs(np.diff(pos, axis=0) - 0.5 * (vel[1:] + vel[:-1]) * DT).max() < 1e-4
    # and it walks at >= half the healthy 0.1 m/s
    n = int(2 * planner.pattern.period / DT)
    assert (pos[-1, 0] - pos[-n, 0]) / (n * DT) > 0.05


def run_scenario(name, duration, undeclared, tmp_path):
    from hybrid_dynamics.sim.runner import ScenarioRun
    from hybrid_dynamics.sim.scenario import load_scenario
    run = ScenarioRun(load_scenario(name), tmp_path / name, duration=duration, undeclared=undeclared,
                      progress=False, bag=False, plots=False)
    return run.run()


def test_s2_stays_up_for_10_s(tmp_path):
    s = run_scenario("hexapod_damage_s2", 10.0, False, tmp_path)
    assert s["completed"] and not s["fell"], s["stopped"]
    assert s["max_abs_roll_deg"] < 15 and s["max_abs_pitch_deg"] < 15
    assert s["min_base_height_m"] > 0.09          # no sinking at the body shifts
    assert s["fallbacks"] == 0 and s["infeasible"] == 0
    assert s["speed_after_damage_mps"] >= 0.0505


def test_s1_undeclared_loss_of_a_stance_leg_stays_under_15_deg(tmp_path):
    s = run_scenario("hexapod_damage_s1", 6.0, True, tmp_path)
    assert s["completed"], s["stopped"]
    assert s["max_abs_roll_deg"] < 15 and s["max_abs_pitch_deg"] < 15
    assert s["fallbacks"] == 0 and s["infeasible"] == 0


def test_locked_joint_no_qp_fallback(tmp_path):
    s = run_scenario("hexapod_locked_joint", 6.0, False, tmp_path)
    assert s["completed"], s["stopped"]
    assert s["fallbacks"] == 0 and s["infeasible"] == 0
    assert s["min_base_height_m"] > 0.1        # the held-up foot does not lift the body

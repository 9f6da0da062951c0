"""hybrid_biped standing and shifting its weight in MuJoCo under the QP controller
(scenario config/scenarios/hybrid_biped_balance.yaml, shortened): the controller sees only the
12 actuators and the IMU; the 32 passive joints come from the passive-state estimator and are
checked against MuJoCo's own passive joints, the CoM (Pinocchio on MuJoCo's configuration)
against the support polygon of MuJoCo's sole corners, the actuator forces against the
ball-screw limits. Standing still at the end, the quasi-static wrench estimate from the
actuator forces MuJoCo applied recovers the robot's weight and MuJoCo's contact forces."""
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial import ConvexHull

from hybrid_dynamics.control.balance import WeightShift
from hybrid_dynamics.estimation.wrench import WrenchEstimator
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.runtime.pipeline import Cycle, Pipeline
from hybrid_dynamics.runtime.plant_loop import PlantLoop
from hybrid_dynamics.sim.plant import ImuNoise, Plant
from hybrid_dynamics.sim.scenario import load_scenario

SHIFT = WeightShift()        # 2 s still, 6 cm over the left foot and back, right, left, right
DURATION = 20.0              # the scenario's 20 s: 2 s still at the end (~6 s of wall time)


@dataclass
class Row:
    cycle: Cycle
    com_reference: np.ndarray
    passive_valid: bool


@pytest.fixture(scope="module")
def run():
    """The runtime Pipeline (references: weight_shift) closed around the MuJoCo plant."""
    sc = load_scenario("hybrid_biped_balance")
    assert sc.robot == "hybrid_biped" and sc.control_rate == 200.0
    assert sc.references == "weight_shift" and WeightShift.from_dict(sc.balance) == SHIFT   # the graph's too
    robot = load_robot(sc.robot)
    plant = Plant(robot, noise=ImuNoise.from_dict(sc.sensors), seed=sc.seed)
    pipe = Pipeline(robot, {"references": "weight_shift", "controller": dict(sc.controller),
                            "weight_shift": dict(sc.balance)})
    assert pipe.references.shift == SHIFT
    loop = PlantLoop(plant, pipe, sc.control_rate)
    m = robot.model
    d = m.createData()
    fids = [m.getFrameId(c.frame) for c in robot.contacts]
    rows, observed = [], []

    def after(cycle):
        assert cycle.safe_mode is None, cycle.safe_mode
        rows.append(Row(cycle, pipe.control.references.com.position.copy(), pipe.state.passive.valid))
        q = plant.q()
        pin.framesForwardKinematics(m, d, q)
        com = pin.centerOfMass(m, d, q).copy()
        corners = np.vstack([d.oMf[f].translation + c.points @ d.oMf[f].rotation.T
                             for f, c in zip(fids, robot.contacts)])
        hull = ConvexHull(corners[:, :2])
        margin = -np.max(hull.equations[:, :2] @ com[:2] + hull.equations[:, 2])
        observed.append({"q": q, "v": plant.v(), "com": com, "margin": margin, "effort": plant.joint_states()[3],
                         "contact_fz": plant.total_normal_force()})

    assert loop.run(DURATION, after=after) is None
    return robot, plant, loop, rows, observed


def test_stands_and_shifts_weight_with_com_inside_the_support_polygon(run):
    robot, plant, loop, rows, obs = run
    z = np.array([o["q"][2] for o in obs])
    tilt = np.array([np.degrees(np.abs(pin.rpy.matrixToRpy(pin.Quaternion(o["q"][6], *o["q"][3:6])
                                                           .toRotationMatrix())[:2]).max()) for o in obs])
    com = np.array([o["com"] for o in obs])
    margin = np.array([o["margin"] for o in obs])
    ref = np.array([r.com_reference for r in rows])
    print(f"base height {z.min():.4f}..{z.max():.4f} m, tilt max {tilt.max():.2f} deg, CoM y "
          f"{com[:, 1].min():+.4f}..{com[:, 1].max():+.4f} m, support margin min {100 * margin.min():.2f} cm, "
          f"CoM tracking max {1e3 * np.abs(com[:, 1] - ref[:, 1]).max():.1f} mm")
    assert z.min() > 0.95 * z[0] and tilt.max() < 3.0                      # no fall
    assert margin.min() > 0.02                                            # CoM 2 cm inside, always
    # the weight went over each foot (the soles span |y| 0.045..0.155 m) and came back
    y0 = com[0, 1]
    assert com[:, 1].max() - y0 > 0.05 and y0 - com[:, 1].min() > 0.05
    assert np.abs(com[-1, 1] - y0) < 0.003
    assert np.abs(com[:, 1] - ref[:, 1]).max() < 0.005
    assert not any(r.cycle.output.fallback for r in rows)
    est = 1e3 * np.array([r.cycle.estimate_time for r in rows])
    ctl = 1e3 * np.array([r.cycle.control_time for r in rows])
    cyc = est + ctl
    print(f"cycle at {loop.rate:.0f} Hz (budget {1e3 / loop.rate:.1f} ms): estimation p50 "
          f"{np.median(est):.3f} ms, controller p50 {np.median(ctl):.3f} ms, total p50 {np.median(cyc):.3f} "
          f"p99 {np.percentile(cyc, 99):.3f} max {cyc.max():.3f} ms (printed, not asserted)")


def test_passive_estimate_matches_mujoco_passive_joints(run):
    robot, plant, loop, rows, obs = run
    kin = loop.pipeline.state.passive.est.kin
    err = np.array([np.abs(r.cycle.estimate.q[kin.qu] - o["q"][kin.qu]).max() for r, o in zip(rows, obs)])
    verr = np.array([np.abs(r.cycle.estimate.v[kin.iu] - o["v"][kin.iu]).max() for r, o in zip(rows, obs)])
    print(f"passive joints vs MuJoCo: max {err.max():.2e} rad, p50 {np.median(err):.2e} rad; "
          f"rates max {verr.max():.2e} rad/s")
    assert all(r.passive_valid for r in rows)
    assert err.max() < 1e-3


def test_actuator_forces_within_limits(run):
    robot, plant, loop, rows, obs = run
    kin = loop.pipeline.state.passive.est.kin
    F = np.array([r.cycle.output.tau_vector for r in rows])
    names = loop.pipeline.control.controller.joint_names
    assert sorted(names) == sorted(kin.actuated_joints)
    limits = kin.force_limits()[[kin.actuated_joints.index(n) for n in names]]
    print(f"actuator forces |F| max {np.abs(F).max():.0f} N (limit {limits.min():.0f} N)")
    assert np.all(np.abs(F) <= limits * (1 + 1e-9))
    # MuJoCo applied them unclipped: the plant's effort echo is the command
    effort = np.array([o["effort"] for o in obs])
    order = [plant.actuated_joints.index(n) for n in names]
    assert np.allclose(effort[:, order], F, atol=1e-9)


def test_wrench_estimate_recovers_the_weight_standing_still_in_mujoco(run):
    robot, plant, loop, rows, obs = run
    kin = loop.pipeline.state.passive.est.kin
    west = WrenchEstimator(robot, kin)
    weight = robot.total_mass() * 9.81
    totals, mujoco_fz = [], []
    for r, o in list(zip(rows, obs))[-40:]:           # the last 0.2 s, still
        assert np.abs(o["v"][:6]).max() < 1e-2
        # the estimated configuration (actuators + passive estimate + base estimate) and the
        # actuator forces MuJoCo applied (its effort echo), in kin.actuated_joints order
        tau = o["effort"][[plant.actuated_joints.index(n) for n in kin.actuated_joints]]
        est = west.estimate(r.cycle.estimate.q, tau)
        totals.append(sum(f[2] for f in est.foot_force.values()))
        mujoco_fz.append(o["contact_fz"])
    totals, mujoco_fz = np.array(totals), np.array(mujoco_fz)
    print(f"weight {weight:.2f} N; wrench estimate {totals.min():.2f}..{totals.max():.2f} N; "
          f"MuJoCo contact {mujoco_fz.min():.2f}..{mujoco_fz.max():.2f} N")
    assert np.all(np.abs(totals / weight - 1) < 0.01)
    assert np.all(np.abs(totals / mujoco_fz - 1) < 0.01)


def test_weight_shift_references_follow_the_shift_in_place():
    """The references are one object updated in place each cycle: the CoM target is where the
    robot stood plus the lateral shift, its velocity and acceleration the shift's time
    derivatives (central differences of the position target), the base level at the start's
    heading; a reference read earlier is not a copy."""
    from hybrid_dynamics.control.balance import WeightShiftReference
    robot = load_robot("hybrid_biped")
    ref = WeightShiftReference(robot, SHIFT)
    q = robot.q_stand.copy()
    yaw = 0.3
    q[3:7] = [0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)]
    first, _ = ref.update(0.5, type("Estimate", (), {"q": q})())
    com0 = pin.centerOfMass(robot.model, robot.model.createData(), q)
    h = 1e-5
    for t in (0.5, 2.7, 5.1, 9.9, 14.2, 30.0):
        pos = lambda s: ref.reference(s).com.position.copy()      # noqa: E731
        p_minus, p_plus = pos(t - h), pos(t + h)
        refs = ref.reference(t)
        assert refs is first
        y = SHIFT.offset(t - 0.5)[0]
        assert np.allclose(refs.com.position, com0 + [0.0, y, 0.0], atol=1e-15)
        assert np.allclose(refs.com.velocity, (p_plus - p_minus) / (2 * h), atol=1e-8)
        assert np.allclose(refs.com.acceleration, (p_plus - 2 * refs.com.position + p_minus) / h ** 2, atol=1e-3)
        assert np.allclose(refs.base_orientation.rotation(), pin.rpy.rpyToMatrix(0.0, 0.0, yaw), atol=1e-15)

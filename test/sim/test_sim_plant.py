"""The MuJoCo plant: state conventions against Pinocchio, sensors, limits, and damage that
really removes mass (the weight on the floor drops by the removed parts' weight)."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.estimation.base_estimator import BaseEstimator, ImuSample
from hybrid_dynamics.model.morphology import Morphology
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.sim.plant import ImuNoise, Plant
from mujoco_geometry import body_box_bottom, body_box_corner_heights

G = 9.81
KP, KD = 50.0, 0.3


@pytest.fixture(scope="module")
def robot():
    return load_robot("jethexa")


def hold(plant, q_ref, steps):
    """Joint PD at the standing angles (removed joints get nothing: the plant drops them)."""
    for _ in range(steps):
        q, v = plant.q()[7:], plant.v()[6:]
        plant.set_torques(KP * (q_ref - q) - KD * v)
        plant.step()


def leg_mass(robot, leg, first=1):
    model = robot.model
    spec = next(l for l in robot.legs if l.name == leg)
    return sum(model.inertias[j].mass for j in model.subtrees[spec.joints[first - 1]])


def test_state_round_trip_in_pinocchio_convention(robot):
    plant = Plant(robot)
    rng = np.random.default_rng(1)
    q = pin.randomConfiguration(robot.model, -np.ones(robot.nq), np.ones(robot.nq))
    q[:3] = (0.1, -0.2, 0.3)
    v = rng.normal(size=robot.nv)
    plant.set_state(q, v)
    assert np.allclose(plant.q(), q) or np.allclose(plant.q()[3:7], -q[3:7])
    assert np.allclose(plant.v(), v)
    # the floating-base kinetic energy agrees with Pinocchio's (same v convention)
    data = robot.model.createData()
    ke = pin.computeKineticEnergy(robot.model, data, q, v)
    import mujoco
    mujoco.mj_energyVel(plant.model, plant.data)
    assert plant.data.energy[1] == pytest.approx(ke, rel=1e-9)


def test_standing_weight_equals_total_weight(robot):
    plant = Plant(robot)
    hold(plant, robot.q_stand[7:], 1500)
    assert plant.total_normal_force() == pytest.approx(robot.total_mass() * G, rel=2e-3)
    assert len(plant.contact_forces()) == 6


@pytest.mark.parametrize("damage", [("leg", "leg3", 1), ("links", "leg4", 2)])
def test_removed_parts_stop_weighing_on_the_floor(robot, damage):
    plant = Plant(robot)
    hold(plant, robot.q_stand[7:], 800)
    _, leg, first = damage
    plant.remove_links(leg, first)
    hold(plant, robot.q_stand[7:], 1500)
    expected = (robot.total_mass() - leg_mass(robot, leg, first)) * G
    assert plant.total_normal_force() == pytest.approx(expected, rel=2e-3)
    assert f"{leg}_foot" not in plant.contact_forces()
    # the removed joints are inert: commanded hard, they do not move
    spec = next(l for l in robot.legs if l.name == leg)
    idx = [plant.joint_names.index(robot.model.names[j]) for j in spec.joints[first - 1:]]
    before = plant.q()[7:][idx]
    target = robot.q_stand[7:].copy()
    target[idx] += 0.5
    hold(plant, target, 300)
    assert np.allclose(plant.q()[7:][idx], before, atol=1e-3)


def test_two_legs_removed_like_paper_s1(robot):
    plant = Plant(robot)
    plant.apply_morphology(Morphology.healthy(robot).remove_leg("leg3").remove_leg("leg4"))
    hold(plant, robot.q_stand[7:], 1500)
    expected = (robot.total_mass() - 2 * leg_mass(robot, "leg3")) * G
    assert plant.total_normal_force() == pytest.approx(expected, rel=2e-3)
    assert set(plant.contact_forces()) == {f"leg{i}_foot" for i in (1, 2, 5, 6)}


def test_locked_joint_does_not_move_under_torque(robot):
    plant = Plant(robot)
    hold(plant, robot.q_stand[7:], 300)
    angle = plant.lock_joint("leg1_femur_joint")
    j = plant.joint_names.index("leg1_femur_joint")
    target = robot.q_stand[7:].copy()
    target[j] += 0.8                          # the motor pulls hard (saturated) on the locked joint
    hold(plant, target, 1000)
    assert plant.q()[7 + j] == pytest.approx(angle, abs=2e-3)


def test_torques_are_clipped_to_actuator_limits(robot):
    plant = Plant(robot)
    plant.set_torques(np.full(18, 100.0))
    _, _, _, effort = plant.joint_states()
    assert np.allclose(effort, 3.4)
    with pytest.raises(InputError):
        plant.set_torques({"no_such_joint": 1.0})


def test_imu_bias_and_noise(robot):
    bias = (0.01, -0.02, 0.03)
    plant = Plant(robot, noise=ImuNoise(gyro_std=0.005, gyro_bias=bias, accel_std=0.05), seed=3)
    hold(plant, robot.q_stand[7:], 500)
    samples = []
    for _ in range(400):
        hold(plant, robot.q_stand[7:], 1)
        samples.append(plant.imu())
    gyro = np.array([s.angular_velocity for s in samples])
    acc = np.array([s.linear_acceleration for s in samples])
    assert np.allclose(gyro.mean(axis=0), bias, atol=1.5e-3)
    assert gyro.std(axis=0) == pytest.approx(np.full(3, 0.005), rel=0.2)
    assert acc.mean(axis=0)[2] == pytest.approx(G, abs=0.02)      # specific force, standing still
    with pytest.raises(InputError):
        ImuNoise.from_dict({"gyro_sdt": 0.1})


def test_unknown_damage_targets_are_user_errors(robot):
    plant = Plant(robot)
    with pytest.raises(InputError):
        plant.remove_leg("leg9")
    with pytest.raises(InputError):
        plant.remove_links("leg1", 4)
    with pytest.raises(InputError):
        plant.lock_joint("knee")


def test_estimated_standing_height_is_mujocos():
    """The base estimator, fed the plant's encoders and IMU with every foot down, puts the
    base where MuJoCo has it: its feet's contact frames (sphere centres) sit at their radius
    above the ground (robot.yaml ``radius``), not at the ground (a 10 mm bias, with every
    landing foot then stopping 10 mm short of the floor)."""
    robot = load_robot("jethexa")
    plant = Plant(robot)
    hold(plant, robot.q_stand[7:], 1500)
    assert plant.total_normal_force() == pytest.approx(robot.total_mass() * G, rel=2e-3)   # standing
    est = BaseEstimator(robot)
    names, pos, vel, _ = plant.joint_states()
    model = robot.model
    order = [names.index(model.names[j]) for j in range(2, model.njoints)]
    imu = plant.imu()
    stance = {c.frame: True for c in robot.contacts}
    for k in range(50):
        state = est.update(k * 0.002, pos[order], vel[order],
                           ImuSample(imu.orientation, imu.angular_velocity, imu.linear_acceleration), stance)
    truth = plant.q()[2]
    assert abs(state.q[2] - truth) < 1.5e-3, (state.q[2], truth)
    assert all(c.radius == 0.01 for c in robot.contacts)


def test_body_touch_is_free_fall_speed_at_the_first_contact(robot):
    """The body alone (every leg removed) dropped from 10 cm: its first contact with the
    floor is kept with the base's speed before that contact acts, which is free fall's
    (MuJoCo's semi-implicit Euler: g t exactly; sqrt(2 g h) within one step of g dt)."""
    plant = Plant(robot)
    for leg in robot.legs:
        plant.remove_leg(leg.name)
    q = robot.q_stand.copy()
    q[2] = 0.10
    plant.set_state(q, np.zeros(robot.nv))
    while plant.body_touch is None and plant.time < 1.0:
        plant.step(5)
    touch = plant.body_touch
    assert touch is not None and touch.t > 0.1
    assert -touch.vz == pytest.approx(G * touch.t, rel=1e-9)
    plant.set_state(q, np.zeros(robot.nv))          # back at the start: the box's bottom falls to 0
    fall = body_box_bottom(plant)
    assert abs(-touch.vz - np.sqrt(2 * G * fall)) < G * plant.timestep


def test_body_touch_keeps_the_touching_edges_speed(robot):
    """The body alone, pitched 20 deg nose down and turning further at 6 rad/s as it falls:
    its front edge comes down faster than the base. The touching points' downward speed kept at the
    first contact (the contact's position on the body, MuJoCo's Jacobian at the state before
    the step) is that of the box's lowest corner by a finite difference of its height over
    the step before (MuJoCo's geom poses), and differs from the base's by the turning."""
    plant = Plant(robot)
    for leg in robot.legs:
        plant.remove_leg(leg.name)
    q = robot.q_stand.copy()
    q[2] = 0.06
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.0, np.radians(20.0), 0.0)).coeffs()
    v = np.zeros(robot.nv)
    v[4] = 6.0                        # rad/s about the base's y axis: the nose goes down
    plant.set_state(q, v)
    heights = [body_box_corner_heights(plant)]
    while plant.body_touch is None and plant.time < 1.0:
        plant.step()
        heights.append(body_box_corner_heights(plant))
    touch = plant.body_touch
    assert touch is not None
    before, after = heights[-2], heights[-1]
    k = int(np.argmin(after))
    corner_speed = (before[k] - after[k]) / plant.timestep
    assert touch.point_speed == pytest.approx(corner_speed, abs=0.02), (touch, corner_speed)
    assert touch.point_speed - (-touch.vz) > 0.3, touch


def test_a_body_propped_on_its_edge_touches_one_standing_does_not(robot):
    """Standing on six feet nothing but the feet touches the floor. With the three legs of
    one side removed the body tips onto its box's edge and rests there, propped on the other
    side's feet, a few cm up (the base above a quarter of its standing height, the height
    rule the outcome used to go by): the body touched the floor, and its box's lowest corner
    (from MuJoCo's geom pose) is on the floor."""
    plant = Plant(robot)
    plant.settle(robot.q_stand, 1.0)
    stand_height = plant.q()[2]
    assert plant.body_touch is None and body_box_bottom(plant) > 0.05
    for leg in ("leg1", "leg3", "leg5"):
        plant.remove_leg(leg)
    plant.settle(robot.q_stand, 1.5)
    rpy = np.degrees(pin.rpy.matrixToRpy(pin.Quaternion(plant.q()[6], *plant.q()[3:6]).toRotationMatrix()))
    assert plant.q()[2] > 0.25 * stand_height and 10.0 < abs(rpy[0]) < 30.0
    assert abs(body_box_bottom(plant)) < 2e-3
    assert plant.body_touch is not None and plant.body_on_floor()

"""The fall monitor: the IMU's vertical specific force against MuJoCo's own base acceleration
(finite differences of its base velocity, ground truth), on a standing robot that then loses
every leg and falls freely; it says "falling" only then."""
import numpy as np
import pytest

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.estimation.fall_monitor import GRAVITY, FallMonitor, FallMonitorConfig
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.sim.plant import Plant

RELEASE = 1.0       # s: every leg lost
SETTLED = 0.5       # s: the plant, started just above the floor, has settled on its feet


def test_a_body_that_loses_its_legs_is_falling_a_standing_one_is_not():
    robot = load_robot("jethexa")
    plant = Plant(robot)
    monitor = FallMonitor()
    rows = []                     # (t, monitor's f_z, MuJoCo's dv_z/dt + g, onset)
    vz_prev = None
    while plant.time < RELEASE + 0.08:
        t = plant.time
        if abs(t - RELEASE) < 0.5 * plant.timestep:
            for leg in robot.legs:
                plant.remove_leg(leg.name)
        q, v = plant.q(), plant.v()
        plant.set_torques(50.0 * (robot.q_stand[7:] - q[7:]) - 0.3 * v[6:])
        plant.step()
        vz = plant.ground_truth().linear_velocity[2]
        if plant.time < SETTLED:
            vz_prev = vz
            continue
        since = monitor.update(plant.time, plant.imu())
        if vz_prev is not None:
            rows.append((plant.time, monitor.specific_force, (vz - vz_prev) / plant.timestep + GRAVITY,
                         np.nan if since is None else since))
        vz_prev = vz
    rows = np.array(rows)
    standing = rows[:, 0] < RELEASE
    falling = rows[:, 0] > RELEASE + 0.005
    # the specific force is the base's vertical acceleration plus g (ground truth), standing and falling
    assert np.abs(rows[standing | falling, 1] - rows[standing | falling, 2]).max() < 0.05
    assert np.abs(rows[standing, 1] - GRAVITY).max() < 0.5 and np.abs(rows[falling, 1]).max() < 0.5
    # standing: never falling; falling: from the second sample after the release, onset at the first
    assert np.isnan(rows[rows[:, 0] <= RELEASE + 1e-9, 3]).all()
    fell = rows[~np.isnan(rows[:, 3])]
    assert len(fell) and fell[0, 0] <= RELEASE + 2.5 * plant.timestep
    assert fell[0, 3] == pytest.approx(RELEASE + plant.timestep, abs=0.5 * plant.timestep)
    assert monitor.lowest < 0.5 and monitor.first == pytest.approx(fell[0, 0])


def test_the_alert_lasts_its_hold_after_the_last_low_sample():
    class Sample:
        orientation = np.array([0.0, 0.0, 0.0, 1.0])

        def __init__(self, f_z):
            self.linear_acceleration = np.array([0.0, 0.0, f_z])

    monitor = FallMonitor({"hold": 0.1})
    assert monitor.update(0.000, Sample(3.0)) is None           # one sample is not a fall
    assert monitor.update(0.005, Sample(3.0)) == 0.0            # two: falling since the first
    assert monitor.update(0.050, Sample(GRAVITY)) == 0.0
    assert monitor.update(0.104, Sample(GRAVITY)) == 0.0
    assert monitor.update(0.106, Sample(GRAVITY)) is None       # 0.1 s after the last low sample
    assert monitor.update(0.110, Sample(np.nan)) is None        # a NaN sample changes nothing


def test_config_rejects_unknown_settings():
    with pytest.raises(InputError):
        FallMonitorConfig.from_dict({"drop_fracton": 0.5})

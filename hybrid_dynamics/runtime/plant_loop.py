"""A :class:`~hybrid_dynamics.runtime.pipeline.Pipeline` closed around a plant in one process,
as an effort interface does: every control period the actuated joint encoders and the IMU go
in, the command comes out and is held while the plant steps at its own timestep.

The plant is anything with ``sim.plant.Plant``'s sensor interface (``joint_states()``,
``imu()``, ``set_torques(dict)``, ``step(n)``, ``time``, ``timestep``); nothing here imports
MuJoCo. The library scenario loop (sim/runner.py) and the biped balance test run this loop.
"""
from __future__ import annotations

from typing import Callable, Optional

from .inputs import imu_sample, joint_state_sample, stamped
from .pipeline import Cycle, Pipeline


class PlantLoop:
    """``pipeline`` driving ``plant`` at ``rate`` Hz (rounded to a whole number of plant steps)."""

    def __init__(self, plant, pipeline: Pipeline, rate: float):
        self.plant = plant
        self.pipeline = pipeline
        self.decimation = max(1, int(round(1.0 / (rate * plant.timestep))))
        self.rate = 1.0 / (self.decimation * plant.timestep)
        self.sensors = None         # (names, positions, velocities, efforts, imu) of the last cycle

    def cycle(self) -> Cycle:
        """Sensors -> pipeline -> torques at the plant's current time (the plant does not move)."""
        plant, pipe = self.plant, self.pipeline
        t = stamped(plant.time)
        names, qj, vj, effort = plant.joint_states()
        imu = plant.imu()
        self.sensors = (names, qj, vj, effort, imu)
        cycle = pipe.step(t, joint_state_sample(t, names, qj, vj, effort), imu_sample(t, imu), use_stamps=True)
        plant.set_torques(dict(zip(pipe.control.joints, cycle.command.tolist())))
        return cycle

    def run(self, duration: float, before: Optional[Callable[[float], None]] = None,
            after: Optional[Callable[[Cycle], Optional[str]]] = None) -> Optional[str]:
        """Cycles for ``duration`` s of plant time. ``before(t)`` runs ahead of each cycle (a
        damage happening to the plant; ``t`` the cycle's time as its messages' stamps carry it,
        whole nanoseconds, as in the graph), ``after(cycle)`` once its torques are set; a string
        returned by ``after`` stops the loop and is returned (why it stopped)."""
        plant = self.plant
        end = plant.time + duration
        while plant.time < end - 1e-9:
            if before is not None:
                before(stamped(plant.time))
            cycle = self.cycle()
            stop = after(cycle) if after is not None else None
            plant.step(self.decimation)
            if stop:
                return stop
        return None

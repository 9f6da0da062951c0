"""A falling body, from the IMU alone: the accelerometer's vertical specific force.

An accelerometer at rest, or carried by legs that hold the body up, reads the specific force
``f = a - g``: its world-vertical component ``f_z = a_z + 9.81`` stays near ``g`` while the
body is carried (a tripod walk of the JetHexa: 9.46-10.14 m/s^2 with the campaign's sensor
noise). A body that loses the legs carrying it falls: ``f_z`` drops towards 0 (free fall).
Legs lost in stance while the other tripod swings (the campaign's phase 0-1 pair losses):
``f_z`` drops to 7.3 m/s^2 in the first 1 ms step after the loss and to 6.3, 5.4, 4.6 over
the next 10, 20, 30 ms, while MuJoCo's base sinks at up to 0.37 m/s. The base estimate does
not see it in that time: its leg kinematics still count the lost stance foot, so its vertical
speed stays within -0.03..+0.05 m/s (docs/campaign.md).

:class:`FallMonitor` says "falling" once ``f_z`` has stayed below ``drop_fraction * g`` for
``samples`` consecutive IMU samples, and keeps saying it for ``hold`` seconds after the last
such sample; :attr:`FallMonitor.since` is when that run of samples began (the fall's onset). It uses the IMU's orientation (the filter's attitude, as a ``sensor_msgs/Imu``
carries it) to take the vertical component; a tilt error of ``d`` radians moves ``f_z`` by
``g (1 - cos d)``: 0.05 m/s^2 at 6 deg, far below the margin. What the damage detector does
with it: estimation/damage_detector.py (its ``falling`` rules).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

import numpy as np
import pinocchio as pin

from ..errors import reject_unknown_settings
from .base_estimator import ImuSample

GRAVITY = 9.81


@dataclass
class FallMonitorConfig:
    drop_fraction: float = 0.75     # falling: vertical specific force below this fraction of g ...
    samples: int = 2                # ... for this many consecutive IMU samples
    hold: float = 0.15              # s the alert lasts after the last such sample

    @classmethod
    def from_dict(cls, data: Optional[Mapping] = None) -> "FallMonitorConfig":
        data = dict(data or {})
        reject_unknown_settings(cls, data, "fall monitor", "fall_monitor")
        return cls(**{k: (int(v) if k == "samples" else float(v)) for k, v in data.items()})


class FallMonitor:
    """IMU samples in, "is the body falling" out (module docstring)."""

    def __init__(self, config: Optional[FallMonitorConfig | Mapping] = None):
        self.config = config if isinstance(config, FallMonitorConfig) else FallMonitorConfig.from_dict(config)
        self.below = 0                  # consecutive samples below the threshold
        self.below_since = np.inf       # the first of them
        self.until = -np.inf            # falling until then
        self.since: Optional[float] = None   # onset of the fall going on (None: not falling)
        self.specific_force = GRAVITY   # of the last sample, world vertical (m/s^2)
        self.lowest = np.inf            # the lowest of every sample so far
        self.first: Optional[float] = None   # when it first said "falling"

    def update(self, t: float, imu: ImuSample) -> Optional[float]:
        """One IMU sample at ``t``; returns the onset of the fall going on (None: not falling)."""
        x, y, z, w = np.asarray(imu.orientation, dtype=float)
        R = pin.Quaternion(w, x, y, z).normalized().toRotationMatrix()
        f_z = float(R[2] @ np.asarray(imu.linear_acceleration, dtype=float))
        if np.isfinite(f_z):
            self.specific_force = f_z
            self.lowest = min(self.lowest, f_z)
            low = f_z < self.config.drop_fraction * GRAVITY
            self.below = self.below + 1 if low else 0
            self.below_since = (t if self.below == 1 else self.below_since) if low else np.inf
            if self.below >= self.config.samples:
                if t > self.until:
                    self.since = self.below_since
                self.until = t + self.config.hold
                if self.first is None:
                    self.first = t
        if t > self.until:
            self.since = None
        return self.since

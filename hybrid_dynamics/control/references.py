"""What the whole-body controller is asked to do in one cycle.

:class:`References` is the one object the locomotion layer (gait, swing and body planners)
hands to :meth:`WholeBodyController.update`. Every field is optional: a field left ``None``
switches its task off for that cycle (its weight is then irrelevant), so a caller sets only
what it plans. All quantities are in the world frame (the odometry frame), SI units.

=====================  ==================================================================
field                  meaning (task module that uses it)
=====================  ==================================================================
``com``                CoM position / velocity / acceleration target (tasks/com.py)
``base_position``      base_link origin target (tasks/base_pose.py)
``base_orientation``   base_link orientation: quaternion x y z w, with angular velocity
                       and acceleration in the world frame (tasks/base_pose.py)
``swing_feet``         contact frame -> :class:`Target` for contacts *not* in stance
                       (tasks/swing_foot.py); a stance contact's target is ignored
``posture``            joint name -> angle; joints not named keep the robot's standing
                       pose (tasks/posture.py). ``None``: the standing pose
``momentum``           desired centroidal momentum (6: linear, angular about the CoM);
                       the task drives the momentum rate towards ``-kd (h - h_ref)``
                       (tasks/momentum.py)
``forces``             contact frame -> desired world force per contact point (3,) for the
                       force regularisation (tasks/force_regularization.py); contacts not
                       named default to an equal share of the robot's weight
=====================  ==================================================================

Feedback laws (gains from the YAML configuration): for a position-like target
``a_des = a_ref + kp (p_ref - p) + kd (v_ref - v)``; for an orientation
``a_des = a_ref + kp log(R_ref R^T) + kd (w_ref - w)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np


def _vec(x, n=3) -> np.ndarray:
    a = np.zeros(n) if x is None else np.asarray(x, dtype=float).reshape(n)
    return a


_ROWS = {"position": 0, "velocity": 1, "acceleration": 2}


@dataclass
class Target:
    """A point target: position with feed-forward velocity and acceleration (world frame).
    The three are the rows of one float (3, 3) array, :attr:`stack` (a value set is copied
    into its row), so that the compiled cycle gathers a target in one copy, or reads it as one
    argument (control/assembly.py, tasks/swing_foot.py)."""
    position: np.ndarray
    velocity: np.ndarray = None
    acceleration: np.ndarray = None

    def __setattr__(self, name, value):
        # a float (3,) row of the stack whenever set: the compiled cycle reads it unchecked
        row = _ROWS.get(name)
        if row is None:
            return object.__setattr__(self, name, value)
        stack = self.__dict__.get("stack")
        if stack is None:
            stack = self.__dict__["stack"] = np.zeros((3, 3))
        stack[row] = _vec(value)
        self.__dict__[name] = stack[row]


_RATES = ("angular_velocity", "angular_acceleration")


@dataclass
class OrientationTarget:
    """An orientation target: quaternion (x, y, z, w) with world angular velocity and
    acceleration feed-forward."""
    quaternion: np.ndarray
    angular_velocity: np.ndarray = None
    angular_acceleration: np.ndarray = None

    def __post_init__(self):
        qt = np.asarray(self.quaternion, dtype=float).reshape(4)
        self.quaternion = qt / np.linalg.norm(qt)
        self._R = self._matrix()
        self._R.setflags(write=False)       # read-only: the compiled cycle's type for it (control/assembly.py)

    def __setattr__(self, name, value):
        # the rates: a float (3,) array whenever set, the compiled cycle reads them unchecked
        # (control/assembly.py)
        object.__setattr__(self, name, _vec(value) if name in _RATES else value)

    def rotation(self) -> np.ndarray:
        """The target rotation matrix (computed once; set a new target to change it)."""
        return self._R

    def _matrix(self) -> np.ndarray:
        x, y, z, w = self.quaternion
        return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                         [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                         [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


@dataclass
class References:
    """Task references of one control cycle (see the module docstring)."""
    com: Optional[Target] = None
    base_position: Optional[Target] = None
    base_orientation: Optional[OrientationTarget] = None
    swing_feet: Dict[str, Target] = field(default_factory=dict)
    posture: Optional[Dict[str, float]] = None
    momentum: Optional[np.ndarray] = None
    forces: Dict[str, np.ndarray] = field(default_factory=dict)

    def presence(self) -> tuple:
        """Which fields are set (a ``swing_feet`` or ``forces`` dictionary: whether it names
        any). A task's ``active`` reads the references only through this (tasks/base.py), so the
        formulation finds the cycle's active tasks, and its plan, with one look-up of it."""
        return (self.com is not None, self.base_position is not None, self.base_orientation is not None,
                bool(self.swing_feet), self.posture is not None, self.momentum is not None, bool(self.forces))

    @classmethod
    def hold(cls, com=None, orientation=(0, 0, 0, 1), base_position=None) -> "References":
        """Stand still: CoM (or base) held where given, level orientation, standing posture."""
        return cls(com=None if com is None else Target(com),
                   base_position=None if base_position is None else Target(base_position),
                   base_orientation=OrientationTarget(orientation))

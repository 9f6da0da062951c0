"""CoM and base-orientation tracking by the whole-body QP in its two centroidal formulations.

The same scenario for both (``centroidal_coordinates: standard`` and ``decoupled``, see
control/config.py and docs/decoupled.md): the robot stands on every contact and follows

    c_ref(t) = c_0 + a sin(2 pi t / T),       R_ref(t) = R_0 exp(theta(t) n),  theta = A sin(2 pi t / T)

with their exact velocity and acceleration as feed-forward (world angular velocity
``R_0 n theta_dot``), from rest. The plant is MuJoCo (:class:`~.plant.Plant`) for a robot with an
MJCF (jethexa) and Pinocchio's rigid-contact dynamics (:class:`~.rigid_contact_plant.
RigidContactPlant`) otherwise (TALOS); the controller reads the plant's true state and runs once
per plant step (1 kHz). Figures: RMS of ``|c - c_ref|`` and of ``|log(R_ref R^T)|`` over the
run, and the per-cycle cost of the two controllers timed alternately on the same states and
references (the standard run's), p50 and their ratio.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Dict, List

import matplotlib.pyplot as plt
import numpy as np
import pinocchio as pin

from ..control.controller import WholeBodyController
from ..control.references import OrientationTarget, References, Target
from ..dynamics.lie import exp_so3, rot_to_quat
from .plant import Plant
from .rigid_contact_plant import RigidContactPlant

FORMULATIONS = ("standard", "decoupled")
# the runs compared: the two formulations with their defaults, and the decoupled one with its
# angular x-rows on (locked angular velocity regulated, docs/decoupled.md)
VARIANTS = {"standard": ("standard", {}), "decoupled": ("decoupled", {}),
            "decoupled_angular": ("decoupled", {"tasks": {"decoupled_centroidal": {"angular_weight": 0.1}}})}


@dataclass
class Sway:
    """The reference motion (module docstring)."""
    com_amplitude: np.ndarray           # a (m, world)
    axis: np.ndarray                    # n (world, in the start orientation's frame)
    angle_amplitude: float              # A (rad)
    period: float                       # T (s)

    def references(self, t: float, c0: np.ndarray, R0: np.ndarray) -> References:
        w = 2 * np.pi / self.period
        s, c = np.sin(w * t), np.cos(w * t)
        a = np.asarray(self.com_amplitude, float)
        n = np.asarray(self.axis, float) / np.linalg.norm(self.axis)
        th = self.angle_amplitude
        R = R0 @ exp_so3(n * th * s)
        return References(com=Target(c0 + a * s, a * w * c, -a * w * w * s),
                          base_orientation=OrientationTarget(rot_to_quat(R), R0 @ n * th * w * c,
                                                             -R0 @ n * th * w * w * s))


SWAYS = {
    "jethexa": Sway(np.array([0.01, 0.015, 0.01]), np.array([1.0, 1.0, 0.5]), 0.1, 1.0),
    "talos": Sway(np.array([0.0, 0.04, 0.02]), np.array([1.0, 1.0, 0.5]), 0.1, 1.5),
}

DEFAULT_SWAY = Sway(np.array([0.0, 0.01, 0.005]), np.array([1.0, 1.0, 0.5]), 0.05, 1.0)


@dataclass
class Track:
    """One run: time, CoM and its reference, orientation error, cycle records."""
    formulation: str
    t: List[float] = field(default_factory=list)
    com: List[np.ndarray] = field(default_factory=list)
    com_ref: List[np.ndarray] = field(default_factory=list)
    orientation_error: List[float] = field(default_factory=list)
    states: List[tuple] = field(default_factory=list)          # (q, v, references) per cycle
    fallbacks: int = 0

    def rms(self) -> Dict[str, float]:
        e = np.linalg.norm(np.array(self.com) - np.array(self.com_ref), axis=1)
        return {"com_rms_m": float(np.sqrt(np.mean(e ** 2))),
                "orientation_rms_rad": float(np.sqrt(np.mean(np.square(self.orientation_error)))),
                "com_max_m": float(e.max()), "orientation_max_rad": float(np.max(self.orientation_error)),
                "fallbacks": self.fallbacks, "cycles": len(self.t)}


def make_plant(robot):
    """MuJoCo when the robot has an MJCF (feet settled on the floor), else the rigid-contact plant."""
    if robot.mjcf is None:
        return RigidContactPlant(robot)
    plant = Plant(robot)
    plant.settle(robot.q_stand)
    return plant


def run(robot, formulation: str, duration: float, sway: Sway, solver: str = "proxsuite",
        overrides: dict = None) -> Track:
    """Track ``sway`` for ``duration`` s with the controller in ``formulation`` (``overrides``:
    more controller settings)."""
    plant = make_plant(robot)
    ctrl = WholeBodyController(robot, {"centroidal_coordinates": formulation, "solver": solver, **(overrides or {})})
    data = robot.model.createData()
    stance = {c.frame: True for c in robot.contacts}
    q, v = plant.q(), plant.v()
    c0 = pin.centerOfMass(robot.model, data, q).copy()
    R0 = pin.Quaternion(q[6], *q[3:6]).normalized().toRotationMatrix()
    track = Track(formulation)
    dt = plant.timestep
    for k in range(int(round(duration / dt))):
        t = k * dt
        refs = sway.references(t, c0, R0)
        out = ctrl.update(q, v, stance, refs)
        track.fallbacks += int(out.fallback)
        plant.set_torques(out.tau_vector)
        plant.step()
        track.states.append((q, v, refs))
        q, v = plant.q(), plant.v()
        track.t.append(t + dt)
        track.com.append(pin.centerOfMass(robot.model, data, q).copy())
        after = sway.references(t + dt, c0, R0)
        track.com_ref.append(after.com.position)
        R = pin.Quaternion(q[6], *q[3:6]).normalized().toRotationMatrix()
        track.orientation_error.append(float(np.linalg.norm(pin.log3(after.base_orientation.rotation() @ R.T))))
    return track


def cost_ratio(robot, states, solver: str = "proxsuite", samples: int = 500) -> Dict[str, float]:
    """p50 per-cycle time (us) of both formulations on the same (q, v, references), timed
    alternately in this process, and decoupled / standard."""
    ctrls = {f: WholeBodyController(robot, {"centroidal_coordinates": f, "solver": solver}) for f in FORMULATIONS}
    stance = {c.frame: True for c in robot.contacts}
    picks = np.linspace(0, len(states) - 1, min(samples, len(states))).astype(int)
    times = {f: [] for f in FORMULATIONS}
    for i in picks:
        q, v, refs = states[i]
        for f, ctrl in ctrls.items():
            t0 = time.perf_counter()
            ctrl.update(q, v, stance, refs)
            times[f].append(time.perf_counter() - t0)
    p50 = {f: float(np.median(ts[len(ts) // 10:])) * 1e6 for f, ts in times.items()}   # first 10 %: warm-up
    return {"standard_p50_us": p50["standard"], "decoupled_p50_us": p50["decoupled"],
            "ratio_p50": p50["decoupled"] / p50["standard"], "samples": len(picks)}


def compare(robot, duration: float, sway: Sway = None, solver: str = "proxsuite") -> dict:
    """Both formulations on the same scenario: tracks, RMS errors, cost ratio."""
    sway = SWAYS.get(robot.name, DEFAULT_SWAY) if sway is None else sway
    tracks = {name: run(robot, f, duration, sway, solver, overrides) for name, (f, overrides) in VARIANTS.items()}
    plant = "mujoco" if robot.mjcf is not None else "pinocchio rigid contacts"
    return {"robot": robot.name, "plant": plant, "duration_s": duration, "solver": solver,
            "sway": {"com_amplitude_m": sway.com_amplitude.tolist(), "axis": sway.axis.tolist(),
                     "angle_amplitude_rad": sway.angle_amplitude, "period_s": sway.period},
            "rms": {f: tr.rms() for f, tr in tracks.items()},
            "cost": cost_ratio(robot, tracks["standard"].states, solver),
            "tracks": tracks}


def plot(result: dict, path) -> None:
    """CoM (reference and both formulations, per axis) and orientation error on one figure."""
    tracks = result["tracks"]
    fig, axes = plt.subplots(4, 1, figsize=(8, 9), sharex=True)
    std = tracks["standard"]
    ref = np.array(std.com_ref)
    styles = {"standard": dict(color="tab:blue"), "decoupled": dict(color="tab:orange", ls="--"),
              "decoupled_angular": dict(color="tab:green", ls=":")}
    for k, ax in enumerate(axes[:3]):
        ax.plot(std.t, ref[:, k], color="k", lw=1, label="reference")
        for f, tr in tracks.items():
            ax.plot(tr.t, np.array(tr.com)[:, k], label=f, **styles[f])
        ax.set_ylabel(f"CoM {'xyz'[k]} (m)")
    axes[0].legend(fontsize=8)
    for f, tr in tracks.items():
        rms = result["rms"][f]["orientation_rms_rad"]
        axes[3].plot(tr.t, np.degrees(tr.orientation_error), label=f"{f} (RMS {np.degrees(rms):.2f} deg)", **styles[f])
    axes[3].set_ylabel("|log(R_ref R^T)| (deg)")
    axes[3].set_xlabel("t (s)")
    axes[3].legend(fontsize=8)
    axes[0].set_title(f"{result['robot']}: CoM and base-orientation sway ({result['plant']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

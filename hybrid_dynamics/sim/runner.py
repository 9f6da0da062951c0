"""Run a scenario in one process, headless, with a progress line: the MuJoCo plant driven by
the control :class:`~hybrid_dynamics.runtime.pipeline.Pipeline` (runtime/plant_loop.py), with
the damage detector and the morphology manager beside it.

One control cycle (``control_rate``, 200 Hz by default; the plant steps at its MJCF timestep,
1 kHz, holding the torques in between, as an effort interface does):

  damage happens to the plant at ``damage.at``      -> plant.remove_links / lock_joint
  declared damage: the morphology manager is told   -> Pipeline.set_morphology, detector
  sensors (actuated joint encoders, IMU)            -> Pipeline.step: estimate
  damage detector (momentum observer, per leg)      -> a detection is a morphology change
  references (gait at /cmd_vel, or weight shift)    -> Pipeline.step: references
  QP inverse dynamics with friction cones           -> Pipeline.step: command
  /effort_controller/commands                       -> plant.set_torques()

The controller sees the *estimated* state only; ground truth goes to the bag and the plots.
Everything is written to ``out``: ``run.mcap`` bag (a rosbag2 folder ``bag/``), PNG plots and
``summary.json``, also when the run stops early (the summary says why).
"""
from __future__ import annotations

import json
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Callable, Optional, Tuple

import numpy as np
import pinocchio as pin

from ..errors import InputError
from ..estimation.damage_detector import DamageDetectorConfig
from ..model.damage_events import apply_event
from ..model.morphology import Morphology
from ..runtime.detection import CycleDetector
from ..runtime.pipeline import Pipeline
from ..runtime.plant_loop import PlantLoop
from .log import Log
from .plant import ImuNoise, Plant
from .bagfile import LIBRARY_TOPICS, BagWriter
from .recording import closed_chain_figures
from .report import write_plots
from .scenario import Scenario, prepare_run

SETTLE_S = 0.3                  # s of joint PD on the standing pose before control starts
FALL_TILT_DEG = 45.0
FALL_HEIGHT_FRACTION = 0.4      # of the standing height


class ScenarioRun:
    def __init__(self, scenario: Scenario, out: Path, *, duration: Optional[float] = None,
                 undeclared: bool = False, progress: bool = True, bag: bool = True, plots: bool = True,
                 wall_limit: Optional[float] = None, low_fraction: float = FALL_HEIGHT_FRACTION):
        # wall_limit: s of wall time before the run stops as timed out (campaigns);
        # low_fraction: the run stops when the base is lower than this fraction of its standing
        # height and the body has touched the floor (a campaign lowers it to see how the body lands)
        self.wall_limit = wall_limit
        self.low_fraction = low_fraction
        self.sc = scenario
        self.out = Path(out)
        self.duration, self.declared, self.robot = prepare_run(scenario, duration, undeclared)
        self.progress = progress
        self.want_bag = bag
        self.want_plots = plots
        self.log = Log()

    # ------------------------------------------------------------------ set-up
    def _build(self):
        sc, robot = self.sc, self.robot
        if sc.references not in ("gait", "weight_shift"):
            raise InputError(f"--library runs references gait or weight_shift, not '{sc.references}'",
                             file=str(sc.path), field="references")
        if sc.references == "weight_shift" and robot.loops is None:
            raise InputError("references: weight_shift is the closed-chain balance: the robot has no loops",
                             file=str(sc.path), field="references")
        self.plant = Plant(robot, noise=ImuNoise.from_dict(sc.sensors), seed=sc.seed)
        self.pipeline = Pipeline(robot, {"references": sc.references, "controller": dict(sc.controller),
                                         "estimator": dict(sc.estimator), "locomotion": dict(sc.locomotion),
                                         "weight_shift": dict(sc.balance)})
        self.detection = None
        if sc.references == "gait":
            self.detection = CycleDetector(robot, self.pipeline, sc.detector, sc.fall_monitor)
            self.detection.handlers.append(self._detected)
        self.loop = PlantLoop(self.plant, self.pipeline, sc.control_rate)
        self.morphology = Morphology.healthy(robot)
        self.frames = [c.frame for c in robot.contacts]
        self.log.forces = {f: [] for f in self.frames}

    def _set_morphology(self, morph: Morphology, t: float, source: str) -> None:
        """The morphology manager: every consumer reassembles before its next cycle."""
        if morph == self.morphology:
            return
        self.morphology = morph
        self.pipeline.set_morphology(morph, t)
        if self.detection is not None:
            self.detection.set_morphology(morph, t)
        self.log.events.append({"t": round(t, 4), "kind": "morphology", "source": source,
                                "morphology": morph.describe()})
        if self.bag is not None:
            self.bag.string("/morphology_manager/morphology", t, morph.describe())

    def _damage_plant(self, t: float) -> Morphology:
        """The damage happens to the robot (the plant); returns the true morphology."""
        plant = self.plant
        morph = self.morphology
        for event in self.sc.damage_events:
            morph = apply_event(morph, event, current_angle=lambda j: float(plant.q()[7 + plant.joint_names.index(j)]))
        plant.apply_morphology(morph)
        self.log.events.append({"t": round(t, 4), "kind": "damage", "morphology": morph.describe(),
                                "declared": self.declared})
        return morph

    def _detected(self, t: float, detections, morph: Morphology, rejected) -> None:
        """The damage detector in the cycle (runtime/detection.py) found legs: undeclared, a
        morphology change before this cycle's command."""
        if self.detection_t is None:
            self.detection_t = t
        for detection in detections:
            self.log.events.append({"t": round(t, 4), "kind": "detection", "what": detection.describe(),
                                    "onset": round(detection.onset, 4)})
        for text in rejected:
            self.log.events.append({"t": round(t, 4), "kind": "rejected", "what": text})
        if not self.declared:
            self._set_morphology(morph, t, "detected")

    # ------------------------------------------------------------------ the run
    def run(self) -> dict:
        self.out.mkdir(parents=True, exist_ok=True)
        self.bag = None
        reason, error = "completed", None
        wall0 = time.perf_counter()
        self.true_morphology = None
        self.t_damage = None
        self.detection_t = None
        self.body_touch = None
        try:
            reason, error = guarded(self._build_and_loop)
        finally:
            if self.bag is not None:
                try:
                    self.bag.close()
                except Exception as exc:
                    reason += f"; bag not closed cleanly: {exc}"
        wall = time.perf_counter() - wall0
        if self.progress:
            print(file=sys.stderr)
        return finish(self, self.out, reason, wall, error, self.want_plots)

    def _build_and_loop(self) -> str:
        self._build()
        if self.want_bag:
            bag_dir = self.out / "bag"
            if bag_dir.exists():
                shutil.rmtree(bag_dir)
            self.bag = BagWriter(bag_dir, LIBRARY_TOPICS)
        return self._loop()

    @property
    def detector(self):
        return None if self.detection is None else self.detection.detector

    @property
    def fall_monitor(self):
        return None if self.detection is None else self.detection.fall_monitor

    @property
    def threshold(self) -> float:
        return DamageDetectorConfig.from_dict(self.sc.detector).threshold

    @property
    def final_morphology(self) -> str:
        return self.morphology.describe()

    def _loop(self) -> str:
        """The gait settles on the standing pose first (joint PD, every foot down when control
        starts) and plans its footholds where the estimate puts the feet; a closed chain starts unsettled
        (the graph does the same). A fall stops the run."""
        sc, plant, robot = self.sc, self.plant, self.robot
        balance = sc.references == "weight_shift"
        if not balance:
            plant.settle(robot.q_stand, SETTLE_S)
            cmd = sc.cmd_vel
            # the gait starts in the first cycle, where the *estimate* puts the robot, as in
            # the controller node (started here from MuJoCo's configuration, the library loop's
            # first command differed from the graph's by 6e-4 N m)
            self.pipeline.set_command(cmd["linear_x"], cmd["linear_y"], cmd["angular_z"])
        t_start = plant.time
        self.stand_height = plant.q()[2]
        damage_time = None if sc.damage_at is None else t_start + sc.damage_at
        rows = {"t": [], "q": [], "q_est": [], "F": []}
        progress = {"printed": -1.0, "wall0": time.perf_counter()}

        def damage(t: float) -> None:
            if damage_time is not None and self.t_damage is None and t >= damage_time - 1e-9:
                self.t_damage = t
                self.true_morphology = self._damage_plant(t)
                if self.bag is not None:
                    self.bag.string("/morphology_manager/damage", t, json.dumps(sc.damage_events))
                if self.declared:
                    self._set_morphology(self.true_morphology, t, "declared")

        def after(cycle) -> Optional[str]:
            t = plant.time
            self._record(t, cycle)
            if balance and cycle.estimate is not None:
                rows["t"].append(t)
                rows["q"].append(plant.q())
                rows["q_est"].append(cycle.estimate.q.copy())
                rows["F"].append(cycle.command.tolist())
            lg = self.log
            if max(abs(np.degrees(lg.rpy[-1][0])), abs(np.degrees(lg.rpy[-1][1]))) > FALL_TILT_DEG:
                return f"fell: tilt over {FALL_TILT_DEG:.0f} deg at t = {t - t_start:.2f} s"
            # low, and lying on the floor (stopped before, its landing would go unmeasured)
            if lg.pos[-1][2] < self.low_fraction * self.stand_height and (
                    plant.body_touch is not None or not plant.body_can_touch):
                return f"fell: base height {lg.pos[-1][2]:.3f} m at t = {t - t_start:.2f} s"
            if self.wall_limit is not None and time.perf_counter() - progress["wall0"] > self.wall_limit:
                return f"timeout: {self.wall_limit:.0f} s of wall time at t = {t - t_start:.2f} s"
            if self.progress and t - progress["printed"] >= 0.5:
                progress["printed"] = t
                rtf = (t - t_start) / max(time.perf_counter() - progress["wall0"], 1e-9)
                axis = 1 if balance else 0
                progress_line(sc.name, t - t_start, self.duration, lg.pos[-1][axis] - lg.pos[0][axis], rtf,
                              self.morphology.describe())
            return None

        reason = self.loop.run(self.duration, before=damage, after=after) or "completed"
        self.body_touch = plant.body_touch
        if rows["t"]:
            metrics, self.balance_series = closed_chain_figures(robot, rows["t"], rows["q"], rows["q_est"], rows["F"])
            self.extra_summary = metrics
        return reason

    def _record(self, t: float, cycle) -> None:
        lg, plant, pipe = self.log, self.plant, self.pipeline
        state, out = pipe.state.last, cycle.output
        gt = plant.ground_truth()
        R = pin.Quaternion(gt.orientation[3], *gt.orientation[:3]).toRotationMatrix()
        lg.t.append(t)
        lg.pos.append(gt.position)
        lg.rpy.append(pin.rpy.matrixToRpy(R))
        lg.est_pos.append(state.q[:3].copy() if state is not None else np.full(3, np.nan))
        lg.solve_ms.append(out.solve_time * 1e3 if out is not None else np.nan)
        lg.cycle_ms.append(out.cycle_time * 1e3 if out is not None else np.nan)
        lg.fallback.append(out is None or bool(out.fallback))
        lg.infeasible.append(out is not None and bool(out.infeasible))
        det = self.detector
        lg.statistic.append(det.statistic if det is not None and det.testing else np.nan)
        lg.legs_alive.append(sum(1 for _, k in (self.true_morphology or self.morphology).links_kept if k > 0))
        forces = plant.contact_forces()
        for f in self.frames:
            lg.forces[f].append(np.asarray(forces.get(f, np.zeros(3)), float))
        bag = self.bag
        if bag is not None:
            # the samples the cycle used: reading the sensors again would draw their noise
            # again, and a run with a bag would differ from one without
            names, qj, vj, effort, imu = self.loop.sensors
            bag.clock(t)
            bag.joint_states(t, names, qj, vj, effort)
            bag.imu(t, self.robot.imu_frame or "imu_link", imu.orientation, imu.angular_velocity, imu.linear_acceleration)
            bag.odometry("/sim/ground_truth/odometry", t, gt.position, gt.orientation, gt.linear_velocity, gt.angular_velocity)
            if state is not None:
                Rs = pin.Quaternion(state.q[6], *state.q[3:6]).toRotationMatrix()
                bag.odometry("/state_estimator/odometry", t, state.q[:3], state.q[3:7], Rs @ state.v[:3], state.v[3:6])
            bag.array("/effort_controller/commands", t, cycle.command)
            if out is not None:
                bag.array("/whole_body_controller/contact_forces", t,
                          np.concatenate([out.contact_forces.get(f, np.zeros(3)) for f in self.frames]))
            c = self.sc.cmd_vel
            bag.twist(t, c["linear_x"], c["linear_y"], c["angular_z"])


# ---------------------------------------------------------------------- shared by both runners
def guarded(run: Callable[[], str]) -> Tuple[str, Optional[str]]:
    """(why a run stopped, the traceback of a crash or None): ``run()``'s own reason, or a
    Ctrl-C, or a crash part-way (what was recorded is kept and the reason says why)."""
    try:
        return run(), None
    except KeyboardInterrupt:
        return "interrupted (Ctrl-C)", None
    except Exception as exc:
        return f"error: {type(exc).__name__}: {exc}", traceback.format_exc()


def progress_line(name: str, t: float, duration: float, x: float, rtf: float, morphology: str) -> None:
    print(f"\r[{name}] t = {t:5.1f}/{duration:.1f} s  x = {x:+.2f} m  RTF {rtf:4.1f}  {morphology[:60]:<60}",
          end="", file=sys.stderr, flush=True)


def finish(run, out: Path, reason: str, wall: float, error: Optional[str] = None, plots: bool = True) -> dict:
    """summary.json (and the plots) of a run; ``run`` has the attributes of :class:`ScenarioRun`
    that :func:`summarize` and report.write_plots read (the graph runner's record has them too)."""
    summary = summarize(run, reason, wall)
    if error:
        summary["traceback"] = error
    if plots and run.log.t:
        try:
            summary["plots"] = write_plots(run, out)
        except Exception as exc:
            summary["plots_error"] = f"{type(exc).__name__}: {exc}"
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def summarize(run, reason: str, wall: float) -> dict:
    """The summary of a run (``run``: a ScenarioRun or the graph runner's record)."""
    lg, sc = run.log, run.sc
    summary = {"scenario": sc.name, "robot": sc.robot, "description": sc.description,
               "stopped": reason, "completed": reason == "completed",
               "damage_declared": run.declared if sc.damage_at is not None else None,
               "controller": "WholeBodyController (QP)", "control_rate_hz": sc.control_rate,
               "runner": getattr(run, "runner", "library")}
    if not lg.t:
        summary.update({"simulated_s": 0.0, "fell": None})
        return summary
    t = np.array(lg.t) - lg.t[0]
    pos = np.array(lg.pos)
    rpy = np.degrees(np.array(lg.rpy))
    sim_time = float(t[-1] + (t[1] - t[0] if len(t) > 1 else 0.0))
    td = None if run.t_damage is None else run.t_damage - lg.t[0]
    i_d = len(t) - 1 if td is None else int(np.searchsorted(t, td))
    dist_before = float(pos[i_d, 0] - pos[0, 0])
    dist_after = float(pos[-1, 0] - pos[i_d, 0]) if td is not None else 0.0
    fell = reason.startswith("fell")
    touch = getattr(run, "body_touch", None)       # the graph runner's record has no MuJoCo contacts
    summary.update({
        "simulated_s": round(sim_time, 3),
        "distance_before_damage_m": round(dist_before, 4),
        "distance_after_damage_m": round(dist_after, 4),
        "speed_before_damage_mps": round(_speed(t, pos, 1.0, td if td is not None else t[-1]), 4),
        "speed_after_damage_mps": round(_speed(t, pos, td + 1.0, t[-1]), 4) if td is not None else None,
        "lateral_drift_m": round(float(pos[-1, 1] - pos[0, 1]), 4),
        "max_abs_roll_deg": round(float(np.abs(rpy[:, 0]).max()), 3),
        "max_abs_pitch_deg": round(float(np.abs(rpy[:, 1]).max()), 3),
        "min_base_height_m": round(float(pos[:, 2].min()), 4),
        "final_base_height_m": round(float(pos[-1, 2]), 4),
        "fell": fell,
        "qp_p50_ms": round(float(np.percentile(lg.solve_ms, 50)), 4),
        "qp_p99_ms": round(float(np.percentile(lg.solve_ms, 99)), 4),
        "control_cycle_p99_ms": round(float(np.percentile(lg.cycle_ms, 99)), 4),
        "fallbacks": int(np.sum(lg.fallback)),
        "infeasible": int(np.sum(lg.infeasible)),
        "damage_at_s": None if td is None else round(td, 4),
        "body_touch_s": None if touch is None else round(touch.t - lg.t[0], 4),
        "body_touch_speed_mps": None if touch is None else round(-touch.vz, 4),
        "body_touch_point_speed_mps": None if touch is None else round(touch.point_speed, 4),
        "detection_latency_s": None,
        "detections": [e for e in lg.events if e["kind"] == "detection"],
        "false_detections": 0,
        "real_time_factor": round(sim_time / max(wall, 1e-9), 3),
        "wall_s": round(wall, 3),
        "morphology_timeline": lg.events,
    })
    first = run.detection_t
    if first is not None:
        if td is None or first < run.t_damage:
            summary["false_detections"] = sum(1 for e in lg.events if e["kind"] == "detection"
                                              and (td is None or e["t"] < run.t_damage))
        else:
            summary["detection_latency_s"] = round(first - run.t_damage, 4)
    summary["final_morphology"] = run.final_morphology
    summary.update(getattr(run, "extra_summary", {}))
    return summary


def _speed(t: np.ndarray, pos: np.ndarray, t0: float, t1: float) -> float:
    i0, i1 = int(np.searchsorted(t, t0)), int(np.searchsorted(t, t1)) - 1
    if i1 <= i0 or i0 >= len(t):
        return 0.0
    return float((pos[i1, 0] - pos[i0, 0]) / (t[i1] - t[i0]))

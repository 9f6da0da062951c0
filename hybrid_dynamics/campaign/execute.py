"""Run a campaign's grid on a Dask distributed cluster and keep its results table.

**Engine.** Dask distributed (pinned in constraints.txt): ``LocalCluster`` starts one worker
process per core on this machine with nothing to install beyond the wheel, and the same code
talks to a multi-machine cluster given its scheduler's address (``dask scheduler`` on one
machine, ``dask worker ADDRESS`` on each of the others). Ray would do the same job, but it
brings a raylet and an object store per node (hundreds of MB of memory) for tasks that
exchange a few numbers; Dask is pure Python and starts in about a second. See docs/campaign.md.

**One task per run** (:func:`run_one`): the library scenario loop (``sim.runner.ScenarioRun``,
the loop of ``demo --library``) with the run's fault, damage time, speed, seed and declared
flag; independent of every other run and deterministic per seed (MuJoCo and the sensor noise
are seeded, nothing reads the wall clock but the timeout). A run that raises is recorded as
``crashed`` with the exception; a run whose worker process dies is recorded as ``crashed``
(the scheduler is told to give up on a task at its first worker death,
``distributed.scheduler.allowed-failures: 0``, and a worker holds no queued run that would die
with it, ``worker-saturation: 1.0``, on a local cluster); a run that exceeds its
wall-time limit stops and is recorded as ``timeout``. The campaign goes on in every case.

**Table** (CSV, ``results.csv`` in ``--out``, one row per run, appended as runs finish): a
restarted campaign reads it and submits only the runs whose ``run_id`` is not in it.
"""
from __future__ import annotations

import csv
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import dask
import numpy as np
from distributed import Client, LocalCluster, as_completed

from ..control.locomotion import LocomotionConfig
from ..control.static_feasibility import static_feasibility
from ..model.damage_events import apply_event
from ..model.morphology import Morphology
from ..model.robot import load_robot
from ..sim.report import write_plots
from ..sim.runner import ScenarioRun
from ..sim.scenario import Scenario
from .outcome import OUTCOMES, classify
from .spec import CampaignSpec, Fault, RunSpec, expand

COLUMNS = ("run_id", "fault", "kind", "speed_mps", "phase", "damage_at_s", "declared", "seed",
           "feasible", "feasibility_margin_m", "outcome", "stopped", "speed_after_mps", "max_roll_deg",
           "max_pitch_deg", "min_height_m", "touchdown_speed_mps", "detection_latency_s", "qp_failures",
           "wall_s", "plots", "max_tilt_deg", "touch_point_speed_mps")
# (the last two after the others: a campaign restarted on a table written before them still reads its run ids)
TABLE = "results.csv"
# a run stops once its base is this low (fraction of the standing height): the JetHexa's body
# rests on the ground at 0.15 (its half height); lying there the simulation only gets slower
REST_FRACTION = 0.2


def slug(run_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.+" else "_" for c in run_id)


def scenario_of(spec: CampaignSpec, run: RunSpec) -> Scenario:
    """The scenario of one run (the same dataclass ``demo`` loads from YAML)."""
    extra = dict(spec.scenario)
    sc = Scenario(name=slug(run.run_id), path=None, robot=spec.robot,
                  description=f"campaign {spec.name}: {run.run_id}",
                  duration=run.damage_at + spec.after,
                  cmd_vel={"linear_x": run.speed, "linear_y": 0.0, "angular_z": 0.0},
                  damage_at=run.damage_at, damage_events=run.fault.event_list(), declared=run.declared,
                  seed=run.seed)
    for key in ("sensors", "controller", "locomotion", "detector"):
        setattr(sc, key, dict(extra.get(key, {})))
    if "control_rate" in extra:
        sc.control_rate = float(extra["control_rate"])
    return sc


def run_one(spec: CampaignSpec, run: RunSpec, out: str) -> dict:
    """One run on a worker: the scenario loop, then its row of the table (plots of the runs
    that came down or fell under ``out/runs/<run>/``)."""
    if run.inject_crash:
        os._exit(70)        # the worker process dies, as on a segfault (campaign spec: inject_crash)
    wall0 = time.perf_counter()
    row = base_row(run)
    run_dir = Path(out) / "runs" / slug(run.run_id)
    try:
        sim = ScenarioRun(scenario_of(spec, run), run_dir, progress=False, bag=False, plots=False,
                          wall_limit=spec.wall_limit, low_fraction=REST_FRACTION)
        summary = sim.run()
        row.update(measure(sim, summary, run))
        if row["outcome"] in ("fell", "safe landing", "timeout") and sim.log.t:
            row["plots"] = f"runs/{slug(run.run_id)}" if write_plots(sim, run_dir) else ""
    except Exception as exc:          # recorded, never raised: the campaign goes on
        row.update({"outcome": "crashed", "stopped": f"error: {type(exc).__name__}: {exc}"[:300]})
        traceback.print_exc()
    row["wall_s"] = round(time.perf_counter() - wall0, 3)
    return row


def base_row(run: RunSpec) -> dict:
    row = {c: "" for c in COLUMNS}
    row.update({"run_id": run.run_id, "fault": run.fault.id, "kind": run.fault.kind, "speed_mps": run.speed,
                "phase": run.phase, "damage_at_s": run.damage_at, "declared": run.declared, "seed": run.seed})
    return row


def measure(sim: ScenarioRun, summary: dict, run: RunSpec) -> dict:
    """The figures of the table from a finished run."""
    stopped = summary.get("stopped", "")
    if summary.get("traceback"):
        return {"outcome": "crashed", "stopped": stopped[:300]}
    lg = sim.log
    if not lg.t:
        return {"outcome": "crashed", "stopped": stopped[:300]}
    t = np.array(lg.t) - lg.t[0]
    pos = np.array(lg.pos)
    rpy = np.degrees(np.array(lg.rpy))
    td = None if sim.t_damage is None else sim.t_damage - lg.t[0]
    verdict = classify(stopped, t, rpy, td, summary.get("body_touch_speed_mps"), run.speed,
                       summary.get("speed_after_damage_mps"), summary.get("body_touch_point_speed_mps"))
    after = t >= (td if td is not None else 0.0)
    return {"outcome": verdict["outcome"], "stopped": stopped[:300],
            "speed_after_mps": summary.get("speed_after_damage_mps"),
            "max_roll_deg": round(float(np.abs(rpy[after, 0]).max()), 2),
            "max_pitch_deg": round(float(np.abs(rpy[after, 1]).max()), 2),
            "min_height_m": round(float(pos[after, 2].min()), 4),
            "max_tilt_deg": verdict.get("max_tilt_deg"),
            "touchdown_speed_mps": verdict.get("touchdown_speed_mps"),
            "touch_point_speed_mps": verdict.get("touch_point_speed_mps"),
            "detection_latency_s": summary.get("detection_latency_s"),
            "qp_failures": int(summary.get("fallbacks", 0)) + int(summary.get("infeasible", 0))}


# ---------------------------------------------------------------------------- the table
def read_table(path: Path) -> List[dict]:
    if not path.is_file():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def append_row(path: Path, row: dict) -> None:
    new = not path.is_file()
    with path.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow({c: row.get(c, "") for c in COLUMNS})
        fh.flush()
        os.fsync(fh.fileno())


def morphology_of(robot, events) -> Morphology:
    """The morphology a fault's damage events leave (a joint locked where it stands)."""
    morph = Morphology.healthy(robot)
    for event in events:
        morph = apply_event(morph, event, current_angle=lambda j: float(robot.q_stand[robot.model.joints[
            robot.model.getJointId(j)].idx_q]))
    return morph


def feasibility_row(robot_name: str, events: List[dict]) -> dict:
    """Static feasibility (control.static_feasibility) of one fault, as columns of the table."""
    robot = load_robot(robot_name)
    res = static_feasibility(robot, morphology_of(robot, events))
    return {"feasible": res.feasible, "feasibility_margin_m": round(res.margin, 4)}


# ---------------------------------------------------------------------------- the campaign
@dataclass
class CampaignResult:
    table: Path
    rows: List[dict]            # every row of the table (earlier runs included)
    ran: int                    # runs executed by this call
    skipped: int                # runs found in the table already
    wall_s: float
    workers: int


def run_campaign(spec: CampaignSpec, out: Path, *, workers: Optional[int] = None, cluster: Optional[str] = None,
                 progress: bool = True) -> CampaignResult:
    """Every run of ``spec`` not yet in ``out/results.csv``, on a local cluster of ``workers``
    processes (default: every core) or on the Dask scheduler at ``cluster``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    robot = load_robot(spec.robot)
    period = LocomotionConfig.from_dict(spec.scenario.get("locomotion")).tripod_period
    runs = expand(spec, robot, period)
    table = out / TABLE
    earlier = read_table(table)
    done = {row["run_id"] for row in earlier}
    known = {row["fault"]: {"feasible": row["feasible"] == "True", "feasibility_margin_m": row["feasibility_margin_m"]}
             for row in earlier if row["feasible"] in ("True", "False")}
    todo = [r for r in runs if r.run_id not in done]
    wall0 = time.perf_counter()
    n_workers = 0
    if todo:
        # worker-saturation 1.0: a worker holds only the run it executes (with the default 1.1
        # it queues a second one, which dies with it when the first kills the process)
        with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                              "distributed.scheduler.worker-saturation": 1.0,
                              "distributed.worker.daemon": False}):
            local = None
            if cluster:
                client = Client(cluster)
            else:
                local = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                     processes=True, dashboard_address=None, memory_limit=0,
                                     silence_logs=40)
                client = Client(local)
            try:
                n_workers = len(client.scheduler_info()["workers"])
                # once per fault, gathered before any run starts: a result left on a worker is lost
                # (and, at allowed-failures 0, recorded as an error) when a run kills that worker;
                # a restart reuses what its table holds
                faults = {r.fault.id: r.fault for r in todo if r.fault.id not in known}
                known.update(gather_feasibility(client, spec.robot, faults))
                futures = {client.submit(run_one, spec, run, str(out), pure=False, key=f"run-{slug(run.run_id)}"): run
                           for run in todo}
                bar = Progress(len(todo), len(done)) if progress else None
                for future in as_completed(futures):
                    run = futures[future]
                    try:
                        row = future.result()
                    except Exception as exc:       # the worker died (KilledWorker) or the task was lost
                        row = base_row(run)
                        row.update({"outcome": "crashed", "stopped": f"worker died ({type(exc).__name__})"})
                    row.update(known[run.fault.id])
                    append_row(table, row)
                    if bar is not None:
                        bar.update(row["outcome"])
                if bar is not None:
                    bar.close()
            finally:
                client.close()
                if local is not None:
                    local.close()
    return CampaignResult(table, read_table(table), len(todo), len(runs) - len(todo),
                          time.perf_counter() - wall0, n_workers)


def gather_feasibility(client: Client, robot_name: str, faults: Dict[str, Fault]) -> Dict[str, dict]:
    """:func:`feasibility_row` of every fault, computed on the cluster and brought back here;
    a fault whose computation raised gets ``feasible: "error: <exception>"``."""
    futures = {fid: client.submit(feasibility_row, robot_name, fault.event_list(), pure=False,
                                  key=f"feasibility-{slug(fid)}")
               for fid, fault in faults.items()}
    rows = {}
    for fid, future in futures.items():
        try:
            rows[fid] = future.result()
        except Exception as exc:
            rows[fid] = {"feasible": f"error: {type(exc).__name__}", "feasibility_margin_m": ""}
    return rows


class Progress:
    """A progress bar over runs on stderr: done / total, outcomes so far, elapsed and ETA."""

    def __init__(self, total: int, skipped: int):
        self.total, self.skipped, self.done = total, skipped, 0
        self.counts = {o: 0 for o in OUTCOMES}
        self.t0 = time.perf_counter()
        self.draw()

    def update(self, outcome: str) -> None:
        self.done += 1
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        self.draw()

    def draw(self) -> None:
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        elapsed = time.perf_counter() - self.t0
        eta = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        counts = " ".join(f"{k} {v}" for k, v in self.counts.items() if v)
        print(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} runs"
              f"{f' (+{self.skipped} done before)' if self.skipped else ''}  {counts}  "
              f"{elapsed:.0f} s, ETA {eta:.0f} s ", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        print(file=sys.stderr)

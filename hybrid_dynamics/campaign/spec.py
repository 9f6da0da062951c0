"""Campaign specs, ``config/campaigns/<name>.yaml``: which faults, when, how fast, how often.

::

    description: "every single and double leg loss, each joint locked"
    robot: jethexa
    speeds: [0.1]                 # m/s forward (cmd_vel linear_x)
    faults: [leg, leg_pair, locked_joint]    # kinds, see FAULT_KINDS
    damage_at: 3.0                # s after the gait starts: the first damage time
    phases: 3                     # damage times spread over one gait period from damage_at
    after: 2.5                    # s simulated after the damage
    declared: [true, false]       # false: the damage is hidden, the detector must find it
    seeds: [0]                    # sensor-noise seeds (sim.plant.Plant(seed=...))
    wall_limit: 120.0             # s of wall time per run before it counts as timed out
    scenario: {...}               # scenario fields shared by every run (sensors, controller,
                                  # locomotion, detector, control_rate; sim/scenario.py)
    inject_crash: [leg1]          # fault ids whose runs kill their worker process on purpose
                                  # (to check that a crash is recorded and the campaign goes on)

Fault kinds (:data:`FAULT_KINDS`), each expanded over the robot's legs and joints:
``leg`` every single leg lost, ``leg_pair`` every pair, ``tripod`` every triple, ``leg_quad``
every four (two feet left: statically infeasible, the sit-down), ``link``
links ``k..`` lost at each index ``k >= 2`` of each leg (``k = 1`` is the leg), and
``locked_joint`` each joint locked at the angle it has when the damage happens.

The grid is the product faults x speeds x phases x declared x seeds, one :class:`RunSpec` per
cell, each with a stable ``run_id`` (the restart key of the results table).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Tuple

from ..errors import InputError
from ..model.robot import load_robot
from ..model.yamlio import load_mapping, named_file
from ..paths import config_dir

FIELDS = {"description", "robot", "speeds", "faults", "damage_at", "phases", "after", "declared",
          "seeds", "wall_limit", "scenario", "inject_crash"}
FAULT_KINDS = ("leg", "leg_pair", "tripod", "leg_quad", "link", "locked_joint")
LEGS_LOST = {"leg_pair": 2, "tripod": 3, "leg_quad": 4}     # legs lost together per kind
SCENARIO_FIELDS = {"sensors", "controller", "locomotion", "detector", "control_rate"}


@dataclass(frozen=True)
class Fault:
    """One fault: its id (``leg1+leg2``, ``leg3/links2``, ``leg1_femur_joint@lock``), its kind
    and the damage events of the ``morphology_manager/damage`` schema (model/damage_events.py)."""
    id: str
    kind: str
    events: Tuple[Tuple[Tuple[str, Any], ...], ...]

    def event_list(self) -> List[dict]:
        return [{k: (dict(v) if isinstance(v, tuple) else v) for k, v in e} for e in self.events]


@dataclass(frozen=True)
class RunSpec:
    """One run of the grid; ``damage_at`` in s after the gait starts."""
    fault: Fault
    speed: float
    phase: int
    damage_at: float
    declared: bool
    seed: int
    inject_crash: bool = False

    @property
    def run_id(self) -> str:
        return (f"{self.fault.id}|v{self.speed:.3f}|ph{self.phase}|"
                f"{'declared' if self.declared else 'undeclared'}|s{self.seed}")


@dataclass
class CampaignSpec:
    name: str
    path: Path
    robot: str = "jethexa"
    description: str = ""
    speeds: List[float] = field(default_factory=lambda: [0.1])
    faults: List[str] = field(default_factory=lambda: ["leg", "leg_pair"])
    damage_at: float = 3.0
    phases: int = 3
    after: float = 2.5
    declared: List[bool] = field(default_factory=lambda: [True])
    seeds: List[int] = field(default_factory=lambda: [0])
    wall_limit: float = 300.0
    scenario: Dict[str, Any] = field(default_factory=dict)
    inject_crash: List[str] = field(default_factory=list)


def campaigns_dir() -> Path:
    return config_dir() / "campaigns"


def load_campaign(name_or_path: str) -> CampaignSpec:
    """A campaign spec by name (``config/campaigns/<name>.yaml``) or by path; every field checked."""
    path = named_file(name_or_path, campaigns_dir(), "campaign")
    doc = load_mapping(path, FIELDS, "robot, speeds, faults")
    data = doc.data
    spec = CampaignSpec(name=path.stem, path=path)

    def number(value, *where, positive=False, integer=False):
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise doc.error(f"expected {'an integer' if integer else 'a number'}, got {value!r}", *where)
        if positive and not value > 0:
            raise doc.error(f"must be positive, got {value}", *where)
        return value if integer else float(value)

    def listed(key):
        value = data[key]
        if not isinstance(value, list) or not value:
            raise doc.error("expected a non-empty list", key)
        return value

    spec.robot = str(data.get("robot", spec.robot))
    spec.description = str(data.get("description", ""))
    if "speeds" in data:
        spec.speeds = [number(v, "speeds", i) for i, v in enumerate(listed("speeds"))]
    if "faults" in data:
        spec.faults = []
        for i, kind in enumerate(listed("faults")):
            if kind not in FAULT_KINDS:
                raise doc.error(f"unknown fault kind {kind!r} (expected {', '.join(FAULT_KINDS)})", "faults", i)
            spec.faults.append(kind)
    if "declared" in data:
        spec.declared = []
        for i, v in enumerate(listed("declared")):
            if not isinstance(v, bool):
                raise doc.error(f"expected true or false, got {v!r}", "declared", i)
            spec.declared.append(v)
    if "seeds" in data:
        spec.seeds = [number(v, "seeds", i, integer=True) for i, v in enumerate(listed("seeds"))]
    for key in ("damage_at", "after", "wall_limit"):
        if key in data:
            setattr(spec, key, number(data[key], key, positive=True))
    if "phases" in data:
        spec.phases = number(data["phases"], "phases", positive=True, integer=True)
    scenario = data.get("scenario") or {}
    if not isinstance(scenario, dict):
        raise doc.error("expected a mapping", "scenario")
    for key in scenario:
        if key not in SCENARIO_FIELDS:
            raise doc.error(f"unknown field (expected one of {', '.join(sorted(SCENARIO_FIELDS))})", "scenario", key)
    spec.scenario = dict(scenario)
    if "inject_crash" in data:
        spec.inject_crash = [str(v) for v in listed("inject_crash")]
    try:
        robot = load_robot(spec.robot)
    except InputError as exc:
        raise doc.error(exc.detail, "robot") from None
    known = {f.id for f in faults_of(robot, spec.faults)}
    for i, fid in enumerate(spec.inject_crash):
        if fid not in known:
            raise doc.error(f"no fault {fid!r} in this campaign", "inject_crash", i)
    return spec


def _event(key: str, value) -> Tuple[Tuple[str, Any], ...]:
    if isinstance(value, dict):
        value = tuple(sorted(value.items()))
    return ((key, value),)


def faults_of(robot, kinds) -> List[Fault]:
    """Every fault of the given kinds for ``robot`` (legs with a contact, in the robot's order)."""
    legs = [leg for leg in robot.legs if leg.contact_frame is not None]
    names = [leg.name for leg in legs]
    faults: List[Fault] = []
    for kind in kinds:
        if kind == "leg":
            faults += [Fault(n, kind, (_event("remove_leg", n),)) for n in names]
        elif kind in LEGS_LOST:
            for combo in itertools.combinations(names, LEGS_LOST[kind]):
                faults.append(Fault("+".join(combo), kind, tuple(_event("remove_leg", n) for n in combo)))
        elif kind == "link":
            for leg in legs:
                for first in range(2, len(leg.joints) + 1):
                    faults.append(Fault(f"{leg.name}/links{first}", kind,
                                        (_event("remove_links", {"leg": leg.name, "first": first}),)))
        elif kind == "locked_joint":
            for leg in legs:
                for j in leg.joints:
                    joint = robot.model.names[j]
                    faults.append(Fault(f"{joint}@lock", kind, (_event("lock_joint", {"joint": joint}),)))
    return faults


def expand(spec: CampaignSpec, robot, gait_period: float) -> List[RunSpec]:
    """The grid: faults x speeds x damage phases x declared x seeds. Phase ``k`` of ``n``
    damages the robot at ``damage_at + k T / n`` (``T``: the healthy gait's period)."""
    runs = []
    for fault, speed, k, declared, seed in itertools.product(
            faults_of(robot, spec.faults), spec.speeds, range(spec.phases), spec.declared, spec.seeds):
        at = spec.damage_at + k * gait_period / spec.phases
        runs.append(RunSpec(fault, speed, k, round(at, 4), declared, seed, fault.id in spec.inject_crash))
    return runs

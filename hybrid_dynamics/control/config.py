"""Controller configuration: weights, gains and limits, from ``config/controller/<robot>.yaml``.

:func:`controller_config` merges, in order, :data:`DEFAULTS`, the robot's YAML file (if there
is one) and the caller's overrides (a nested dict), and checks every key against the
defaults, so a typo is an :class:`~hybrid_dynamics.errors.InputError` naming the file, line
and field instead of a silently ignored weight.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Dict, Optional

from ..errors import InputError
from ..model.yamlio import load_yaml
from ..paths import config_dir

# Every key the controller reads, with its default. Units: weights are dimensionless
# multipliers of squared accelerations (m/s^2, rad/s^2) or forces (N); gains in 1/s^2 (kp)
# and 1/s (kd); forces in N; times in s.
DEFAULTS: Dict[str, Any] = {
    "solver": "goldfarb_idnani",      # goldfarb_idnani, daqp (dense active set) | proxsuite (dense) | osqp (sparse)
    "dt": 0.001,                      # control period: joint limits -> acceleration bounds
    "regularization": 1e-6,           # weight on ||dv||^2 (keeps the Hessian definite)
    # How the CoM and base-orientation references enter the QP: "standard" (tasks com and
    # base_orientation) or "decoupled" ([Feurstein 2021, Eq. (3.80)]: tasks
    # decoupled_centroidal on the torque-free x-rows and internal_impedance in J^int
    # coordinates instead; docs/decoupled.md, "Use in control").
    "centroidal_coordinates": "standard",
    # ProxQP's work per solve is at most max_iter outer x (max_iter_in + 1) inner iterations
    # (10-30 us each here): 31 000, a few tenths of a second on a QP that is infeasible or
    # ill-conditioned after an undetected fault, after which the cycle falls back. Its former
    # 1000 x 1500 let one solve run for minutes (the controller sent nothing and ignored
    # SIGINT). Solved QPs need up to ~850 outer iterations (hybrid_biped) and 220 inner per
    # outer (hexapod S2), which the capped inner loop turns into more outer iterations.
    # eps_infeasible: ProxQP's infeasibility tolerance (its default 1e-4 misfires).
    "solver_settings": {"eps_abs": 1e-7, "max_iter": 1000, "max_iter_in": 30, "eps_infeasible": 1e-8},
    "contacts": {
        "normal": [0.0, 0.0, 1.0],    # world contact normal (flat ground)
        "friction": None,             # None: the robot manifest's friction coefficient
        "cone_facets": 4,             # N of the N-facet friction pyramid (>= 3)
        "cone_approximation": "inner",   # inner (inside the true cone) | outer
        "min_normal_force": 0.0,      # per contact point, N
        "max_normal_force": 1000.0,   # per contact point, N
        "kd": 0.0,                    # contact acceleration = -kd * contact velocity
        "per_contact": {},            # frame -> {normal, friction, min/max_normal_force}
    },
    "limits": {
        "torque": True,               # |tau| <= effort limit (URDF), scaled by torque_scale
        "torque_scale": 1.0,
        "joints": True,               # position and velocity limits -> acceleration bounds
        "position_horizon": 0.05,     # s: q + v T + a T^2 / 2 stays inside the limits
        "velocity_horizon": 0.02,     # s: v + a T_v stays inside the velocity limits
        "max_joint_acceleration": 500.0,   # rad/s^2, also the bound when a limit is absent
        "slack_weight": 1.0e4,        # weight of the slack that softens infeasible bounds
    },
    "tasks": {
        "com": {"weight": 100.0, "kp": 100.0, "kd": 20.0},
        "base_position": {"weight": 100.0, "kp": 100.0, "kd": 20.0},
        "base_orientation": {"weight": 100.0, "kp": 100.0, "kd": 20.0},
        "swing_foot": {"weight": 100.0, "kp": 400.0, "kd": 40.0},
        "posture": {"weight": 1.0, "kp": 25.0, "kd": 10.0},
        "momentum": {"weight": 0.0, "kd": 10.0},
        # decoupled only (docs/decoupled.md): the x-rows, weight/kp/kd on the CoM rows and
        # angular_* on the locked angular velocity (feed-forward and damping by default)
        "decoupled_centroidal": {"weight": 100.0, "kp": 100.0, "kd": 20.0,
                                 "angular_weight": 0.0, "kp_angular": 0.0, "kd_angular": 20.0},
        # decoupled only: frames ("base" = the root body) whose internal motion gets a spring
        # (kp, towards the base-orientation reference and the standing pose relative to the
        # CoM) and a damper (kd); rows angular, linear or all
        "internal_impedance": {"weight": 100.0, "kp": 100.0, "kd": 20.0, "frames": ["base"],
                               "rows": "angular"},
        "force_regularization": {"weight": 1.0e-4, "axis_weights": [1.0, 1.0, 1.0],
                                 "surface_wrench_weights": None, "hessian_regularization": 0.0},
    },
    "fallback": {"joint_damping": 0.1},   # N m s/rad in gravity compensation + damping
    # robots with soft modules (manifest soft_modules:): their deformation modes in the QP as
    # variables with their dynamics rows (dynamic), or taken at static equilibrium, a_s = 0,
    # rows left out (quasi_static: stiff modes); control/soft_model_update.py. horizon (s,
    # dynamic only): their visco-elastic force is the one predicted that far ahead, the period
    # the command is held (None: dt; 0: the force at the current state). machine_code: the
    # pads' CasADi functions compiled with the C compiler (soft/compiled.py; cached on disk)
    "soft": {"condensation": "dynamic", "horizon": None, "machine_code": False},
}


def _merge(base: dict, extra: dict, where: str, doc=None, path=()) -> dict:
    for key, value in extra.items():
        free = path[-1:] == ("per_contact",)
        if key not in base and not free:
            known = ", ".join(sorted(base)) or "none"
            msg = f"unknown key '{key}' in {where} (known: {known})"
            if doc is not None:
                raise doc.error(msg, *path, key)
            raise InputError(msg, field=".".join(map(str, path + (key,))))
        if isinstance(base.get(key), dict) and isinstance(value, dict) and not free:
            _merge(base[key], value, where, doc, path + (key,))
        else:
            base[key] = value
    return base


def controller_config(robot_name: Optional[str] = None, overrides: Optional[dict] = None,
                      path: Optional[Path] = None) -> Dict[str, Any]:
    """The configuration for ``robot_name`` (its YAML if present), with ``overrides`` on top."""
    config = copy.deepcopy(DEFAULTS)
    doc = None
    if path is None and robot_name is not None:
        candidate = config_dir() / "controller" / f"{robot_name}.yaml"
        path = candidate if candidate.is_file() else None
    if path is not None:
        doc = load_yaml(path)
        if doc.data is not None:
            if not isinstance(doc.data, dict):
                raise doc.error("expected a mapping of controller settings")
            _merge(config, doc.data, str(path), doc)
    if overrides:
        _merge(config, copy.deepcopy(overrides), "controller overrides")
    if config["solver"] not in ("osqp", "proxsuite", "daqp", "goldfarb_idnani"):
        raise InputError(f"solver '{config['solver']}' is not proxsuite, daqp, goldfarb_idnani or osqp",
                         field="solver")
    if config["contacts"]["cone_approximation"] not in ("inner", "outer"):
        raise InputError("cone_approximation must be inner or outer", field="contacts.cone_approximation")
    if config["soft"]["condensation"] not in ("dynamic", "quasi_static"):
        raise InputError("soft.condensation must be dynamic or quasi_static", field="soft.condensation")
    horizon = config["soft"]["horizon"]
    if horizon is not None and not (isinstance(horizon, (int, float)) and 0.0 <= horizon < float("inf")):
        raise InputError(f"soft.horizon must be a duration >= 0 in seconds (or null: dt), got {horizon!r}",
                         field="soft.horizon")
    if int(config["contacts"]["cone_facets"]) < 3:
        raise InputError("cone_facets must be at least 3", field="contacts.cone_facets")
    try:
        _check_decoupled(config)
    except InputError as err:                  # a value from the robot's file: say where it is
        keys = tuple(err.field.split("."))
        if doc is None or doc.line(*keys) is None or (overrides and _has(overrides, keys)):
            raise
        raise doc.error(err.detail, *keys) from None
    return config


def _has(tree: dict, keys: tuple) -> bool:
    for key in keys:
        if not isinstance(tree, dict) or key not in tree:
            return False
        tree = tree[key]
    return True


CENTROIDAL_COORDINATES = ("standard", "decoupled")
INTERNAL_ROWS = ("angular", "linear", "all")


def _check_decoupled(config: dict) -> None:
    """The keys of the decoupled formulation: choices known, gains finite and non-negative."""
    if config["centroidal_coordinates"] not in CENTROIDAL_COORDINATES:
        raise InputError(f"centroidal_coordinates '{config['centroidal_coordinates']}' is not one of "
                         f"{', '.join(CENTROIDAL_COORDINATES)}", field="centroidal_coordinates")
    tasks = config["tasks"]
    for task, keys in (("decoupled_centroidal", ("weight", "kp", "kd", "angular_weight", "kp_angular",
                                                 "kd_angular")),
                       ("internal_impedance", ("weight", "kp", "kd"))):
        for key in keys:
            value = tasks[task][key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 \
                    or value == float("inf"):
                raise InputError(f"tasks.{task}.{key} is {value!r}: give a finite number >= 0",
                                 field=f"tasks.{task}.{key}")
    internal = tasks["internal_impedance"]
    if internal["rows"] not in INTERNAL_ROWS:
        raise InputError(f"tasks.internal_impedance.rows '{internal['rows']}' is not one of "
                         f"{', '.join(INTERNAL_ROWS)}", field="tasks.internal_impedance.rows")
    frames = internal["frames"]
    if not isinstance(frames, list) or not all(isinstance(f, str) and f for f in frames):
        raise InputError(f"tasks.internal_impedance.frames is {frames!r}: give a list of frame names "
                         "('base' for the root body)", field="tasks.internal_impedance.frames")

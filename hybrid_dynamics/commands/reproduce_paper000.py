"""``hybrid-dynamics reproduce paper000``: Farghdani et al.'s (2025) 5 s JetHexa simulation (S2 by default),
driven by the modular model with Table III contact and Table IV tripod gait, timed against
the paper's "5 s in 1.93 s" (real-time factor 0.386). Choices: dynamics/paper000_sim.py."""
from __future__ import annotations

import json

from ..dynamics.paper000_sim import simulate
from ..dynamics.validation import MORPHOLOGIES, named_morphology
from ..errors import InputError
from ..model.robot import load_robot

COMMAND = ("reproduce", "paper000")
HELP = "Farghdani et al.'s (2025) 5 s hexapod simulation (S2) with the modular model: real-time factor vs the paper's"
PAPER_WALL, PAPER_DURATION = 1.93, 5.0


def add_arguments(parser) -> None:
    parser.add_argument("--robot", default="jethexa", help="a hexapod with coxa-femur-tibia legs (default jethexa)")
    parser.add_argument("--morphology", default="s2", help=", ".join(MORPHOLOGIES) + ", or a YAML file")
    parser.add_argument("--duration", type=float, default=5.0, help="simulated seconds (default 5)")
    parser.add_argument("--dt", type=float, default=1e-3, help="time step in seconds (default 0.001)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    if not 0 < args.dt <= 0.005:
        raise InputError("--dt must be in (0, 0.005] s", field="dt")
    if not 0 < args.duration <= 60:
        raise InputError("--duration must be in (0, 60] s", field="duration")
    robot = load_robot(args.robot)
    if any(len(leg.joints) != 3 for leg in robot.legs):
        raise InputError(f"{robot.name} does not have 3-joint legs: the [Farghdani 2025] gait needs them")
    morphology = named_morphology(robot, args.morphology)
    res = simulate(robot, morphology, duration=args.duration, dt=args.dt)
    report = {"robot": robot.name, "morphology": args.morphology, "description": res.morphology,
              "simulated_s": res.duration, "dt_s": res.dt, "steps": res.steps,
              "wall_s": round(res.wall_time, 3), "real_time_factor": round(res.real_time_factor, 3),
              "paper": {"simulated_s": PAPER_DURATION, "wall_s": PAPER_WALL,
                        "real_time_factor": round(PAPER_WALL / PAPER_DURATION, 3)},
              "speed_vs_paper": round((PAPER_WALL / PAPER_DURATION) / res.real_time_factor, 2),
              "base_start": [round(float(x), 4) for x in res.base_start],
              "base_end": [round(float(x), 4) for x in res.base_end],
              "mean_forward_speed_mps": round(res.mean_forward_speed, 4),
              "min_base_height_m": round(res.min_height, 4), "max_tilt_deg": round(res.max_tilt_deg, 2),
              "upright": res.max_tilt_deg < 45.0}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{robot.name} [{res.morphology}]: {res.duration:g} s simulated in {res.wall_time:.2f} s "
          f"(real-time factor {res.real_time_factor:.3f}; [Farghdani 2025]: {PAPER_DURATION:g} s in {PAPER_WALL} s, "
          f"{PAPER_WALL / PAPER_DURATION:.3f}), dt {res.dt * 1e3:g} ms, {res.steps} steps")
    print(f"  base {report['base_start']} -> {report['base_end']}, forward {res.mean_forward_speed:.3f} m/s, "
          f"lowest {res.min_height:.3f} m, largest tilt {res.max_tilt_deg:.1f} deg")
    return 0

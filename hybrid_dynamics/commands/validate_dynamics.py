"""``hybrid-dynamics validate dynamics --robot R [--morphology NAME] [--json]``.

Every quantity of every modular engine ([Farghdani 2025] direct and fast, [Shah 2012] DeNOC) against
Pinocchio on random states; damaged references are parsed from URDFs with the parts removed
or the joints fixed (hybrid_dynamics/dynamics/reference.py), never from the engines.
"""
from __future__ import annotations

import json

from ..dynamics.validation import ENGINES, MORPHOLOGIES, named_morphology, validate
from ..errors import InputError
from ..model.robot import load_robot

COMMAND = ("validate", "dynamics")
HELP = "largest relative error of M, C v + N, N, FD, ID and tip Jacobians of both formulations against Pinocchio"
TOLERANCE = 1e-9


def add_arguments(parser) -> None:
    parser.add_argument("--robot", required=True, help="a built-in robot, or a .urdf / robot.yaml path")
    parser.add_argument("--morphology", default="healthy",
                        help=f"{', '.join(MORPHOLOGIES)}, or a YAML file (remove_legs, remove_links, lock)")
    parser.add_argument("--samples", type=int, default=20, help="random states (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of " + ", ".join(ENGINES))
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    if args.samples < 1:
        raise InputError("--samples must be at least 1", field="samples")
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    for e in engines:
        if e not in ENGINES:
            raise InputError(f"unknown engine '{e}' ({', '.join(ENGINES)})", field="engines")
    robot = load_robot(args.robot)
    morphology = named_morphology(robot, args.morphology)
    errors = validate(robot, morphology, samples=args.samples, seed=args.seed, engines=engines)
    worst = max(errors.values())
    passed = worst <= TOLERANCE
    if args.json:
        print(json.dumps({"robot": robot.name, "morphology": args.morphology,
                          "description": morphology.describe(), "samples": args.samples,
                          "max_rel_error": {k: float(f"{v:.3e}") for k, v in sorted(errors.items())},
                          "tolerance": TOLERANCE, "passed": passed}, indent=2))
    else:
        print(f"{robot.name} [{args.morphology}: {morphology.describe()}], {args.samples} random states")
        for key, value in sorted(errors.items()):
            print(f"  {key:22s} {value:.2e}")
        print(f"worst {worst:.2e}: {'PASS' if passed else 'FAIL'} (tolerance {TOLERANCE:g})")
    return 0 if passed else 1

"""``hybrid-dynamics validate soft [--json]``.

The soft-module recursions of [Pustina 2024] against references that are not this code:
Pinocchio (rnea, crba, nonLinearEffects, computeGeneralizedGravity) for a rigid chain (UR10)
and a floating-base tree (Solo12); the Euler-Lagrange model differentiated from the energies
for every stock body and random mixed chains and trees; the toy example's re-derived closed
forms; M symmetric positive definite.
"""
from __future__ import annotations

import json

import numpy as np

from ..errors import InputError
from ..soft.validation import (PINOCCHIO_ROBOTS, STOCK_KINDS, lagrange_errors, pinocchio_errors,
                               random_tree, toy_closed_forms, toy_tree)

COMMAND = ("validate", "soft")
HELP = "soft-module recursions against Pinocchio (rigid), Euler-Lagrange by AD (soft) and the toy closed forms"
TOLERANCE = {"pinocchio_abs": 1e-9, "lagrange_rel": 1e-9, "toy_abs": 1e-6}


def add_arguments(parser) -> None:
    parser.add_argument("--kinds", default=",".join(STOCK_KINDS), help="stock bodies checked against EL (default all)")
    parser.add_argument("--mixed", type=int, default=3, help="random mixed chains/trees of 1-8 bodies (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    if args.mixed < 0:
        raise InputError("--mixed must be >= 0", field="mixed")
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in STOCK_KINDS]
    if unknown or not kinds:
        raise InputError(f"unknown body kind(s) {unknown}; known: {', '.join(STOCK_KINDS)}", field="kinds")
    report = {"pinocchio": {name: pinocchio_errors(name, seed=args.seed) for name in PINOCCHIO_ROBOTS}}
    rng = np.random.default_rng(args.seed)
    lag = {kind: lagrange_errors(random_tree(["rigid", kind], rng), rng) for kind in kinds}
    for k in range(args.mixed):
        kinds = list(rng.choice(STOCK_KINDS, size=int(rng.integers(1, 9))))
        lag[f"mixed{k}:{'+'.join(kinds)}"] = lagrange_errors(random_tree(kinds, rng, branch=bool(k % 2)), rng)
    report["lagrange"] = lag
    (F, T, P), = toy_tree().body_loads([0.7], [0.3], [-1.2])
    ref = toy_closed_forms(0.7, 0.3, -1.2)
    report["toy"] = {"Fx": abs(F[0] - ref["Fx"]), "Fz": abs(F[2] - ref["Fz"]), "Ty": abs(T[1] - ref["Ty"]),
                     "pi": abs(P[0] - ref["pi"])}
    worst_pin = max(max(e.values()) for e in report["pinocchio"].values())
    worst_lag = max(max(e["id"], e["mass_matrix"], e["mid"]) for e in lag.values())
    spd = min(e["min_eig_M"] for e in lag.values()) > 0
    worst_toy = max(report["toy"].values())
    passed = worst_pin <= TOLERANCE["pinocchio_abs"] and worst_lag <= TOLERANCE["lagrange_rel"] \
        and worst_toy <= TOLERANCE["toy_abs"] and spd
    summary = {"pinocchio_max_abs": worst_pin, "lagrange_max_rel": worst_lag, "toy_max_abs": worst_toy,
               "mass_matrix_spd": spd, "tolerance": TOLERANCE, "passed": passed}
    if args.json:
        print(json.dumps({**report, "summary": summary}, indent=2, default=float))
    else:
        for name, e in report["pinocchio"].items():
            print(f"{name:8s} vs Pinocchio: " + ", ".join(f"{k} {v:.1e}" for k, v in e.items()))
        for name, e in lag.items():
            print(f"{name:40s} vs EL: ID {e['id']:.1e}  M {e['mass_matrix']:.1e}  MID {e['mid']:.1e}")
        print(f"toy closed forms: worst {worst_toy:.1e}")
        print(f"{'PASS' if passed else 'FAIL'}: Pinocchio {worst_pin:.1e}, EL {worst_lag:.1e}, M SPD {spd}")
    return 0 if passed else 1

"""``hybrid-dynamics validate closed-loop --robot R [--json]``: self-checks of closed linkages."""
from __future__ import annotations

import json

from ..analysis.closed_loop_checks import run_checks
from ..model.robot import load_robot

COMMAND = ("validate", "closed-loop")
HELP = ("check a robot's closed linkages: load-time determinacy, cold-start closure, J_m and drift "
        "against finite differences, ID forms against each other, wrench and estimator")


def add_arguments(parser) -> None:
    parser.add_argument("--robot", default="hybrid_biped", help="built-in name or path (default hybrid_biped)")
    parser.add_argument("--base", choices=("fixed", "floating"), help="override the description's base")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    report = run_checks(load_robot(args.robot, base=args.base))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['robot']}: {report['actuated']} actuated, {report['passive']} passive, "
              f"{report['loops']} loops ({report['rows']} rows)")
        for c in report["checks"]:
            print(f"  {'ok  ' if c['passed'] else 'FAIL'} {c['name']}: {c['value']:.3g} (<= {c['tolerance']:g})"
                  + (f": {c['message']}" if c.get("message") else ""))
    return 0 if report["passed"] else 1

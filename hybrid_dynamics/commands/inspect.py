"""``hybrid-dynamics inspect ROBOT [--json]``: what the package finds in a robot description."""
from __future__ import annotations

import json

from ..model.robot import load_robot

COMMAND = ("inspect",)
HELP = "show a robot's size, mass, legs, modules, contacts, closed loops and actuators"


def add_arguments(parser) -> None:
    parser.add_argument("robot", help="a built-in robot name, or a path to a .urdf or robot.yaml")
    parser.add_argument("--base", choices=("fixed", "floating"),
                        help="override the description's base (a URDF path gets a free flyer by default)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    summary = load_robot(args.robot, base=args.base).summary()
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{summary['name']}: nq={summary['nq']} nv={summary['nv']} mass={summary['total_mass_kg']:.3f} kg, "
          f"{summary['base']} base")
    print(f"  urdf: {summary['urdf']}")
    print(f"  legs ({len(summary['legs'])}):")
    for leg in summary["legs"]:
        print(f"    {leg['name']}: {', '.join(leg['joints'])} -> {leg['contact_frame']}")
    print(f"  modules ({len(summary['modules'])}): " +
          "; ".join(f"{m['index']}<-{m['parent']} [{len(m['joints'])}]" for m in summary["modules"]))
    print("  contacts: " + ", ".join(f"{c['frame']} ({c['type']})" for c in summary["contacts"]))
    loops = summary["closed_loops"]
    print(f"  closed loops: {len(loops)}" + (f" ({sum(l['rows'] for l in loops)} constraint rows)" if loops else ""))
    checks = summary["loop_checks"]
    if checks:
        print(f"    rank {checks['rank']} for {checks['passive']} passive DoF; free internal motions "
              f"{checks['free_internal']}" + (f" ({', '.join(checks['free_joints'])}: least norm)"
                                              if checks.get("free_joints") else ""))
        print(f"    reference pose: {checks['reference']}")
    print(f"  actuators: {len(summary['actuators'])}; passive joints: {len(summary['passive_joints'])}")
    return 0

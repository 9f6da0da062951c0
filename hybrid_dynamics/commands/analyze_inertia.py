"""``hybrid-dynamics analyze inertia``: chi (Cartesian inertia) and gamma (CAMM) of a serial
robot against a closed-chain one ([Mingo Hoffman 2024] Table III), with a PNG plot."""
from __future__ import annotations

import json
from pathlib import Path

from ..analysis.inertia import compare, plot_comparison
from ..model.robot import load_robot

COMMAND = ("analyze", "inertia")
HELP = ("equivalent Cartesian inertia at the foot and centroidal angular momentum matrix, "
        "projected for closed chains: chi and gamma of --serial against --robot (Table III)")


def add_arguments(parser) -> None:
    parser.add_argument("--robot", default="hybrid_biped", help="closed-chain robot (default hybrid_biped)")
    parser.add_argument("--serial", default="talos", help="serial reference (default talos)")
    parser.add_argument("--out", default="analysis_output", help="folder for inertia.png")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    result = compare(load_robot(args.serial), load_robot(args.robot))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot_comparison(result, out / "inertia.png")
    result["plot"] = str(out / "inertia.png")
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    chi, g = result["chi"], result["gamma_both_legs_serial_coordinates"]
    print(f"{result['serial']} / {result['closed']} (paper: TALOS / Kangaroo)")
    print("  chi linear  x y z: " + " ".join(f"{chi[k]:.2f}" for k in ("lin_x", "lin_y", "lin_z")) + "   (3.6 4.1 4.6)")
    print("  chi angular x y z: " + " ".join(f"{chi[k]:.2f}" for k in ("ang_x", "ang_y", "ang_z")) + "   (11.4 4.9 3.6)")
    print("  gamma CAMM  x y z: " + " ".join(f"{g[k]:.2f}" for k in "xyz") + "   (2.6 2.7 2.0)")
    print(f"  conventions: see hybrid_dynamics/analysis/inertia.py; plot {result['plot']}")
    return 0

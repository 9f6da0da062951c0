"""``hybrid-dynamics bench decoupled [--robot talos] [--json]``, and
``hybrid-dynamics bench decoupled --control [--robots jethexa talos] [--duration S] [--out DIR]``.

Per-call p50/p99 (microseconds) of the decoupled dynamics [Feurstein 2021, Sec. 3.3] on a
free-flyer robot (TALOS by default): M (crba), the exact Hamel C (RNEA derivatives and
computeCoriolisMatrix), the decoupling transform T, Tdot in the momentum form, the transformed
M_T, C_T, G_T, and their sum, next to Pinocchio's crba + rnea + ccrba timed in the same run on the
same states; the ratio of the two is the figure to read (absolute times depend on the load).

``--control``: the whole-body QP with its centroidal tasks in decoupled coordinates against the
standard formulation on the same CoM and base-orientation sway
(:mod:`hybrid_dynamics.sim.centroidal_tracking`): RMS errors and the per-cycle cost ratio as
JSON (printed, and ``control.json`` in ``--out``), both curves on one plot per robot
(``tracking_<robot>.png``).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pinocchio as pin

from ..dynamics.decoupling import DecoupledDynamics, decoupling_inverse, transform_equations
from ..model.robot import load_robot
from ..sim.centroidal_tracking import compare, plot
from .bench_dynamics import _stats, _time

COMMAND = ("bench", "decoupled")
HELP = ("time the decoupled dynamics (M, Hamel C, transform) against crba + rnea + ccrba; --control: "
        "the QP's decoupled centroidal tasks against the standard ones (tracking and cost)")


def add_arguments(parser) -> None:
    parser.add_argument("--robot", default="talos", help="a built-in robot, or a .urdf / robot.yaml path")
    parser.add_argument("--samples", type=int, default=200, help="evaluations per figure (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--control", action="store_true",
                        help="compare the QP's decoupled and standard centroidal tasks on a CoM and "
                             "base-orientation sway (RMS errors, cost ratio, plots)")
    parser.add_argument("--robots", nargs="+", default=["jethexa", "talos"], help="--control: robots")
    parser.add_argument("--duration", type=float, default=3.0, help="--control: seconds per run (default 3)")
    parser.add_argument("--out", default=None, help="--control: folder for control.json and the plots")


def bench(robot, samples: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    model = robot.model
    dd = DecoupledDynamics(model)
    e = dd.hamel
    states = []
    for _ in range(samples):
        q = robot.q_stand.copy()
        q[7:] += 0.2 * rng.normal(size=model.nq - 7)
        states.append((q, rng.normal(size=model.nv)))
    data = model.createData()
    zero = np.zeros(model.nv)

    def reference(q, v):
        pin.crba(model, data, q)
        pin.rnea(model, data, q, v, zero)
        pin.ccrba(model, data, q, v)

    def mass(q, v):
        e.mass_matrix(q)

    def coriolis(q, v):
        e.hamel_coriolis(q, v)

    M_Md = [(e.mass_matrix(q), e.mass_matrix_derivative(q, v)) for q, v in states]
    with_mats = [(q, v, M, Md) for (q, v), (M, Md) in zip(states, M_Md)]
    transforms = [dd.transform(*s) for s in with_mats]
    C_list = [e.hamel_coriolis(q, v, M, Md) for q, v, M, Md in with_mats]
    transformed = [(M, C, T, Td, None, decoupling_inverse(T, 6)) for (M, _), C, (T, Td) in zip(M_Md, C_list, transforms)]
    out = {"robot": robot.name, "nv": model.nv, "samples": samples, "us": {
        "pinocchio_crba_rnea_ccrba": _stats(_time(reference, states)),
        "M": _stats(_time(mass, states)),
        "hamel_C": _stats(_time(coriolis, states)),
        "transform_T_Tdot": _stats(_time(dd.transform, with_mats)),
        "transformed_M_C": _stats(_time(transform_equations, transformed)),
        "decoupled_total": _stats(_time(lambda q, v: dd.equations(q, v), states)),
    }}
    ref = out["us"]["pinocchio_crba_rnea_ccrba"]["p50"]
    out["ratio_to_pinocchio_p50"] = {k: round(s["p50"] / ref, 2) for k, s in out["us"].items()}
    return out


def control(args) -> int:
    out_dir = None if args.out is None else Path(args.out)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.robots:
        result = compare(load_robot(name), args.duration)
        if out_dir is not None:
            plot(result, out_dir / f"tracking_{name}.png")
        results.append({k: v for k, v in result.items() if k != "tracks"})
    text = json.dumps(results, indent=1)
    if out_dir is not None:
        (out_dir / "control.json").write_text(text + "\n")
    print(text)
    return 0


def run(args) -> int:
    if args.control:
        return control(args)
    out = bench(load_robot(args.robot), args.samples, args.seed)
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{out['robot']} (nv = {out['nv']}), {out['samples']} states, p50 / p99 in us and p50 ratio "
          f"to crba + rnea + ccrba timed in the same run:")
    for k, s in out["us"].items():
        print(f"  {k:28s} {s['p50']:10.1f} {s['p99']:10.1f}   x{out['ratio_to_pinocchio_p50'][k]}")
    return 0

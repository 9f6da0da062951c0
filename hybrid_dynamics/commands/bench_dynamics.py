"""``hybrid-dynamics bench dynamics --robot R [--json]``.

Per-evaluation p50/p99 (microseconds) of M, h = C v + N, forward and inverse dynamics for
each modular engine and for Pinocchio (crba, rnea(q, v, 0), aba, rnea(q, v, a)) in the same
run, their ratios, M + h of the fast form against crba + rnea, Shah et al.'s (2012) Table 2 ratio
(recursive O(n) FD against the O(n^3) GIM + Cholesky path), and the latency of a morphology
change (reassembly, index maps, state transfer) next to the time Pinocchio needs to build
the damaged model from its URDF: once with the structure seen before (the engines keep one
per set of existence numbers and locked joints) and once for a structure never seen (every
kept structure forgotten before each change; what stays is what loading the robot
precomputed per base-attached subtree: its structure under each existence state of its legs,
and under one lock, which a new morphology concatenates).
"""
from __future__ import annotations

import json
import time

import numpy as np
import pinocchio as pin

from ..dynamics.reference import damaged_urdf
from ..dynamics.validation import ENGINES, MORPHOLOGIES, named_morphology, random_state
from ..errors import InputError
from ..model.morphology import Morphology
from ..model.robot import load_robot

COMMAND = ("bench", "dynamics")
HELP = "time the modular engines against Pinocchio, and a morphology change against a URDF rebuild"


def add_arguments(parser) -> None:
    parser.add_argument("--robot", required=True, help="a built-in robot, or a .urdf / robot.yaml path")
    parser.add_argument("--morphology", default=None,
                        help="the damage of the reassembly benchmark (default s2 with 5+ legs, else mixed): "
                             + ", ".join(MORPHOLOGIES) + ", or a YAML file")
    parser.add_argument("--samples", type=int, default=200, help="evaluations per figure (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON")


def _stats(times):
    t = np.asarray(times) * 1e6
    return {"p50": round(float(np.percentile(t, 50)), 2), "p99": round(float(np.percentile(t, 99)), 2)}


def _time(fn, states, repeat=1):
    out = []
    clock = time.perf_counter
    for s in states:
        for _ in range(repeat):
            t0 = clock()
            fn(*s)
            out.append(clock() - t0)
    return out


def bench_evaluations(robot, samples: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    engines = {name: cls(robot) for name, cls in ENGINES.items()}
    first = engines["hamel_fast"]
    states = [random_state(robot, first, rng) for _ in range(samples)]
    model = robot.model
    data = model.createData()
    zero = np.zeros(model.nv)
    pin_fns = {"M": lambda q, v, a, tau, F: pin.crba(model, data, q),
               "h": lambda q, v, a, tau, F: pin.rnea(model, data, q, v, zero),
               "fd": lambda q, v, a, tau, F: pin.aba(model, data, q, v, tau),
               "id": lambda q, v, a, tau, F: pin.rnea(model, data, q, v, a),
               "M+h": lambda q, v, a, tau, F: (pin.crba(model, data, q), pin.rnea(model, data, q, v, zero))}
    results = {"pinocchio": {k: _stats(_time(f, states)) for k, f in pin_fns.items()}}
    for name, e in engines.items():
        fns = {"M": lambda q, v, a, tau, F, e=e: e.mass_matrix(q),
               "h": lambda q, v, a, tau, F, e=e: e.nle(q, v),
               "fd": lambda q, v, a, tau, F, e=e: e.forward_dynamics(q, v, tau),
               "id": lambda q, v, a, tau, F, e=e: e.inverse_dynamics(q, v, a)}
        if name == "hamel_fast":
            fns["M+h"] = lambda q, v, a, tau, F, e=e: e.mass_and_nle(q, v)
        if name == "denoc":
            fns["fd_dense"] = lambda q, v, a, tau, F, e=e: e.forward_dynamics_dense(q, v, tau)
        n = samples if name != "hamel" else max(20, samples // 4)     # the direct form is slow
        results[name] = {k: _stats(_time(f, states[:n])) for k, f in fns.items()}
    ratios = {name: {k: round(results[name][k]["p50"] / results["pinocchio"][k]["p50"], 2)
                     for k in ("M", "h", "fd", "id", "M+h") if k in results[name]}
              for name in engines}
    return results, ratios


def bench_reassembly(robot, morphology: Morphology, samples: int, seed: int = 0):
    """Alternate healthy <-> damaged with the state carried across, versus a URDF rebuild."""
    rng = np.random.default_rng(seed)
    healthy = Morphology.healthy(robot)
    xml = damaged_urdf(robot, morphology)
    out = {"morphology": morphology.describe(), "engines": {}, "first_change": {}}
    for name, cls in ENGINES.items():
        e = cls(robot)
        q, v = random_state(robot, e, rng)[:2]
        moved = e.set_morphology(morphology, q, v)
        qd, vd = moved.q, moved.v
        e.set_morphology(healthy, qd, vd)
        times = []
        clock = time.perf_counter
        for _ in range(samples):
            t0 = clock()
            r = e.set_morphology(morphology, q, v)
            t1 = clock()
            e.set_morphology(healthy, r.q, r.v)
            t2 = clock()
            times += [t1 - t0, t2 - t1]
        out["engines"][name] = _stats(times)
        # a structure never seen before (every per-robot structure forgotten first)
        first = []
        for _ in range(samples // 2):
            e.set_morphology(healthy)
            e.data.clear_structures()
            t0 = clock()
            e.set_morphology(morphology, q, v)
            first.append(clock() - t0)
        out["first_change"][name] = _stats(first)
    parse = _time(lambda: pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()), [()] * max(20, samples // 10))
    edit = _time(lambda: pin.buildModelFromXML(damaged_urdf(robot, morphology), pin.JointModelFreeFlyer()),
                 [()] * max(10, samples // 20))
    out["pinocchio_build_from_urdf"] = _stats(parse)
    out["pinocchio_edit_urdf_and_build"] = _stats(edit)
    out["speedup_vs_build"] = {name: round(out["pinocchio_build_from_urdf"]["p50"] / s["p50"], 1)
                               for name, s in out["engines"].items()}
    out["first_change_speedup_vs_build"] = {name: round(out["pinocchio_build_from_urdf"]["p50"] / s["p50"], 1)
                                            for name, s in out["first_change"].items()}
    return out


def run(args) -> int:
    if args.samples < 10:
        raise InputError("--samples must be at least 10", field="samples")
    robot = load_robot(args.robot)
    name = args.morphology or ("s2" if len(robot.legs) >= 5 else "mixed")
    morphology = named_morphology(robot, name)
    results, ratios = bench_evaluations(robot, args.samples, args.seed)
    reassembly = bench_reassembly(robot, morphology, max(200, args.samples), args.seed)
    d = results["denoc"]
    table2 = {"recursive_fd_p50_us": d["fd"]["p50"], "dense_fd_p50_us": d["fd_dense"]["p50"],
              "improvement_percent": round(100 * (1 - d["fd"]["p50"] / d["fd_dense"]["p50"]), 1),
              "paper_percent": "16-35"}
    report = {"robot": robot.name, "nv": robot.nv, "samples": args.samples, "unit": "us",
              "timings": results, "ratio_to_pinocchio_p50": ratios,
              "fast_M_plus_h_vs_crba_plus_rnea": ratios["hamel_fast"]["M+h"],
              "fast_vs_direct_p50": {k: round(results["hamel"][k]["p50"] / results["hamel_fast"][k]["p50"], 1)
                                     for k in ("M", "h", "fd", "id")},
              "table2_denoc": table2, "reassembly": reassembly}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{robot.name} (nv={robot.nv}), {args.samples} random states, p50 / p99 in microseconds")
    print(f"  {'':12s}" + "".join(f"{k:>20s}" for k in ("M", "h", "fd", "id")))
    for engine, row in results.items():
        print(f"  {engine:12s}" + "".join(f"{row[k]['p50']:>11.1f} / {row[k]['p99']:<7.1f}" for k in ("M", "h", "fd", "id")))
    for engine, row in ratios.items():
        print(f"  ratio {engine:>10s} / pinocchio (p50): " + ", ".join(f"{k} {v}x" for k, v in row.items()))
    print(f"  [Shah 2012] Table 2 (ours): recursive O(n) FD {table2['recursive_fd_p50_us']} us vs O(n^3) "
          f"{table2['dense_fd_p50_us']} us: {table2['improvement_percent']} % faster (paper: 16-35 %)")
    print(f"  morphology change to [{reassembly['morphology']}] (reassembly + index maps + state transfer):")
    for engine, s in reassembly["engines"].items():
        f = reassembly["first_change"][engine]
        print(f"    {engine:12s} p50 {s['p50']:.1f} us, p99 {s['p99']:.1f} us, "
              f"{reassembly['speedup_vs_build'][engine]}x faster than building from the URDF; "
              f"first time this structure is seen p50 {f['p50']:.1f} us, p99 {f['p99']:.1f} us "
              f"({reassembly['first_change_speedup_vs_build'][engine]}x)")
    b = reassembly["pinocchio_build_from_urdf"]
    print(f"    pinocchio buildModelFromXML(damaged URDF) p50 {b['p50']:.1f} us "
          f"(edit + build {reassembly['pinocchio_edit_urdf_and_build']['p50']:.1f} us)")
    return 0

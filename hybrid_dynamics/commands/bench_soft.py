"""``hybrid-dynamics bench soft [--json]``.

Per-call median time of ID and MID of planar constant-curvature chains of N bodies (the
workload of [Pustina 2024, Sec. 7.3]), the fitted exponent of time against N (1 = linear)
and the ratio to the Euler-Lagrange reference timed in the same run where it is built
(N <= 6). Then a chain of modal (Ritz) links evaluated from their precomputed inertia
invariants against the same chain through the generic per-point sums (MID and ID per call,
build time, ratio in the same run). Then the soft-footed robot's whole-body cycle (``--robot``, default jethexa_soft:
model update with the pads' MID and contact points, QP build, solve, torque mapping) p50/p99
over ``--cycles`` standing states with random velocities, against the same robot with rigid
feet (the manifest's URDF and contacts without its soft_modules, same controller settings,
same states) timed in the same run. Figures measured on a shared machine are noisy; the ratios
are what to compare.
"""
from __future__ import annotations

import copy
import json
import time

import numpy as np
import pinocchio as pin

from ..control.controller import WholeBodyController
from ..control.references import References
from ..errors import InputError
from ..model.robot import load_robot
from ..soft.bodies import ModalBody
from ..soft.joints import revolute
from ..soft.module import Module
from ..soft.paper002 import EL_MAX_BODIES, body_counts, fitted_exponent, median_time, timing_row
from ..soft.tree import SoftTree

COMMAND = ("bench", "soft")
HELP = "time ID/MID of planar CC chains against N (fitted exponent) and against the Euler-Lagrange model"


def add_arguments(parser) -> None:
    parser.add_argument("--bodies", default="1,2,4,8,12,16,20", help="chain sizes (default 1,2,4,8,12,16,20)")
    parser.add_argument("--samples", type=int, default=50, help="calls per figure (default 50)")
    parser.add_argument("--robot", default="jethexa_soft", help="robot with soft_modules (default jethexa_soft); "
                        "'none' skips the whole-body figure")
    parser.add_argument("--cycles", type=int, default=2000, help="whole-body cycles per robot (default 2000)")
    parser.add_argument("--condensation", choices=("dynamic", "quasi_static"), default=None,
                        help="soft.condensation (default: the robot's controller config)")
    parser.add_argument("--interpreted", action="store_true",
                        help="CasADi's virtual machine instead of compiled machine code for the pads")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _percentiles(times) -> dict:
    t = 1e3 * np.asarray(times)
    return {"p50_ms": float(np.percentile(t, 50)), "p99_ms": float(np.percentile(t, 99)), "max_ms": float(t.max())}


def modal_chain(links: int, modes: int, invariants: bool) -> SoftTree:
    """``links`` modal links (0.3 m, radius 0.02 m, 1200 kg/m^3, ``modes`` shapes per bending
    direction) on revolute joints about alternating axes."""
    return SoftTree([Module(f"link{i}", revolute([0, 1, 0] if i % 2 == 0 else [1, 0, 0]),
                            ModalBody(0.3, 0.02, 1200.0, modes, youngs_modulus=2e6, damping_time=0.02,
                                      invariants=invariants), None if i == 0 else f"link{i - 1}")
                     for i in range(links)])


def modal_invariants(samples: int, links: int = 3, modes: int = 3) -> dict:
    """Per-call medians of MID and ID of a modal chain from its invariants and through the
    per-point sums, at the same random states, and their ratios (same run)."""
    out = {"links": links, "modes_per_direction": modes}
    for key, invariants in (("invariants", True), ("per_point", False)):
        rng = np.random.default_rng(1)
        t0 = time.perf_counter()
        tree = modal_chain(links, modes, invariants)
        out[f"{key}_build_s"] = time.perf_counter() - t0
        states = [(0.05 * rng.standard_normal(tree.nq), rng.standard_normal(tree.nv), rng.standard_normal(tree.nv))
                  for _ in range(samples)]
        out[f"{key}_mid_us"] = 1e6 * median_time(tree.mid, [s[:2] for s in states])
        out[f"{key}_id_us"] = 1e6 * median_time(tree.inverse_dynamics, states)
    out["coordinates"] = tree.nv
    out["mid_speedup"] = out["per_point_mid_us"] / out["invariants_mid_us"]
    out["id_speedup"] = out["per_point_id_us"] / out["invariants_id_us"]
    return out


def whole_body_cycle(name: str, cycles: int, condensation=None, interpreted: bool = False) -> dict:
    """p50/p99 of the whole-body cycle of ``name`` (soft feet) and of the same robot with
    rigid feet, on the same standing states (pads at rest, random velocities)."""
    soft = load_robot(name)
    if not soft.soft_modules:
        raise InputError(f"robot '{name}' has no soft_modules", field="robot")
    rigid = copy.copy(soft)
    rigid.soft_modules = []
    overrides = {"soft": {"machine_code": not interpreted}}
    if condensation:
        overrides["soft"]["condensation"] = condensation
    ctrl_soft = WholeBodyController(soft, overrides)
    ctrl_rigid = WholeBodyController(rigid, {k: v for k, v in ctrl_soft.config.items() if k != "soft"})
    leaves = ctrl_soft.leaves
    q = leaves.neutral(soft.q_stand.copy())
    q[2] -= leaves.contact_points(q, np.zeros(leaves.nv))[0][:, 2].min()
    com = pin.centerOfMass(soft.model, soft.model.createData(), q[:soft.nq]).copy()
    refs = References.hold(com=com)
    stance = {c.frame: True for c in soft.contacts}
    rng = np.random.default_rng(0)
    times = {"soft": [], "rigid": []}
    fallbacks = {"soft": 0, "rigid": 0}
    for _ in range(cycles):
        v = 0.05 * rng.standard_normal(leaves.nv)
        for key, ctrl, qk, vk in (("soft", ctrl_soft, q, v), ("rigid", ctrl_rigid, q[:soft.nq], v[:soft.nv])):
            t0 = time.perf_counter()
            out = ctrl.update(qk, vk, stance, refs)
            times[key].append(time.perf_counter() - t0)
            fallbacks[key] += out.fallback
    result = {"robot": name, "cycles": cycles, "condensation": ctrl_soft.config["soft"]["condensation"],
              "machine_code": leaves.compiled, "soft_coordinates": leaves.ns,
              "soft": _percentiles(times["soft"]), "rigid": _percentiles(times["rigid"]), "fallbacks": fallbacks}
    result["ratio_p50"] = result["soft"]["p50_ms"] / result["rigid"]["p50_ms"]
    result["ratio_p99"] = result["soft"]["p99_ms"] / result["rigid"]["p99_ms"]
    return result


def run(args) -> int:
    ns = body_counts(args.bodies)
    if not ns or ns[0] < 1 or args.samples < 1 or args.cycles < 1:
        raise InputError("--bodies must be positive, --samples and --cycles at least 1", field="bodies")
    rows = [timing_row(n, args.samples, with_el=n <= EL_MAX_BODIES) for n in ns]
    for r in rows:
        if "el_us" in r:
            r["el_over_id"] = r["el_us"] / r["id_us"]
    result = {"rows": rows}
    if len(ns) >= 2:
        result["id_exponent"] = fitted_exponent(ns, [r["id_us"] for r in rows])
        result["mid_exponent"] = fitted_exponent(ns, [r["mid_us"] for r in rows])
    result["modal"] = modal_invariants(args.samples)
    if args.robot != "none":
        result["whole_body"] = whole_body_cycle(args.robot, args.cycles, args.condensation, args.interpreted)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for r in rows:
            el = f"  EL {r['el_us']:9.1f} us (EL/ID {r['el_over_id']:.2f})" if "el_us" in r else ""
            print(f"N={r['bodies']:2d}  ID {r['id_us']:9.1f} us  MID {r['mid_us']:9.1f} us  build {r['build_s']:.2f} s{el}")
        if "id_exponent" in result:
            print(f"fitted exponent of time vs N: ID {result['id_exponent']:.2f}, MID {result['mid_exponent']:.2f}")
        md = result["modal"]
        print(f"modal chain ({md['links']} links, {md['modes_per_direction']} modes per direction, "
              f"{md['coordinates']} coordinates): MID {md['invariants_mid_us']:.1f} us from invariants, "
              f"{md['per_point_mid_us']:.1f} us per point ({md['mid_speedup']:.1f}x); ID {md['invariants_id_us']:.1f} "
              f"vs {md['per_point_id_us']:.1f} us ({md['id_speedup']:.1f}x); build {md['invariants_build_s']:.2f} "
              f"vs {md['per_point_build_s']:.2f} s")
        wb = result.get("whole_body")
        if wb:
            print(f"{wb['robot']} whole-body cycle ({wb['condensation']}, machine code {wb['machine_code']}, "
                  f"{wb['cycles']} cycles): soft feet p50 {wb['soft']['p50_ms']:.3f} ms p99 {wb['soft']['p99_ms']:.3f} ms; "
                  f"rigid feet p50 {wb['rigid']['p50_ms']:.3f} ms p99 {wb['rigid']['p99_ms']:.3f} ms; "
                  f"ratio p50 {wb['ratio_p50']:.2f}, p99 {wb['ratio_p99']:.2f}")
    return 0

"""``hybrid-dynamics reproduce paper002 --out DIR [--sims 1,2,3] [--json]``: Simulations 1-3 of
[Pustina 2024, Sec. 7].

Simulation 1 (``--sims 1``): the trimmed helicoid (three LVP bodies, nine tendons): the
regulated equilibria of the sampled tip circles by Newton (their statics residual and tip
error), the periodic C^2 reference of the tendon coordinates, and PFBL tracking from the
straight pose with K_P = 10, K_D = 1 over ``--sim1-duration`` s (default the paper's 5.5 s,
integrated by CVODES), the slowest mode of the zero dynamics at each equilibrium and the
rightmost eigenvalue of the closed loop's Jacobian at the end: the
tracking error of the nine tendon coordinates beside the exact solution of
``e'' + K_D e' + K_P e = 0``, and the tips' distance to their circles, in ``paper002_sim1.png``
and ``.json``. The choices, including the two values of the paper that cannot be used (Table
4's stretch mode, the start) and the horizon, are stated in hybrid_dynamics/soft/helicoid.py.

Simulation 2 (``--sims 2``): the hybrid arm (UR10 + tendon-driven rod + LVP gripper) through
its three phases (arm cubic by joint-space PFBL, rod regulated to q_f, 2 MPa in the gripper):
joints against their references, the rod's coordinates against q_f, tensions and the chamber's
volume in ``paper002_sim2.png`` and ``.json``; the choices (gains of phase (ii), the arm, the
gripper's size) are stated in hybrid_dynamics/soft/hybrid_arm.py.

Simulation 3 (``--sims 3``): planar chains of N constant-curvature bodies: build time and per-call median of M qdd =
IID(q, 0, qdd), c = IID(q, qd, 0) and MID against N on a log plot, beside the Euler-Lagrange
model (built up to N = 6, as in the paper), and the relative difference of ID and EL over 100
random samples (q in [-pi, pi], qd in [-10, 10], qdd in [-100, 100]). The choices the paper
leaves out are stated in hybrid_dynamics/soft/paper002.py.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from ..errors import InputError
from ..soft import helicoid, hybrid_arm
from ..soft.paper002 import EL_MAX_BODIES, accuracy, body_counts, fitted_exponent, timing_row

COMMAND = ("reproduce", "paper002")
HELP = ("Pustina et al. (2024) Simulations 1 (trimmed helicoid, PFBL), 2 (UR10 + rod + gripper) and 3 (recursive "
        "ID against Euler-Lagrange on planar CC chains), plots to --out")
SIMS = ("1", "2", "3")


def add_arguments(parser) -> None:
    parser.add_argument("--out", default="paper002_output", help="directory for the plots (default paper002_output)")
    parser.add_argument("--bodies", default="1,2,3,4,5,6,8,10,12,14,16,18,20", help="chain sizes")
    parser.add_argument("--samples", type=int, default=20, help="timed calls per figure (default 20)")
    parser.add_argument("--accuracy-samples", type=int, default=100, help="random states per N for Fig. 11d")
    parser.add_argument("--sims", default="1,3", help="which simulations, comma-separated (default 1,3; 2 takes long)")
    parser.add_argument("--sim1-duration", type=float, default=helicoid.HORIZON,
                        help=f"Simulation 1 tracking horizon, s (default {helicoid.HORIZON}, the paper's)")
    parser.add_argument("--sim1-equilibria", type=int, default=helicoid.SAMPLES,
                        help=f"Simulation 1 equilibria sampled over one period (default {helicoid.SAMPLES})")
    parser.add_argument("--sim2-chamber", choices=("volume", "surfaces"), default="volume",
                        help="Simulation 2's pressure: through the chamber's dV/dq (default), or its top on the "
                             "stretch and its lateral wall on the source (soft/actuation.py)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _plot(rows, acc, out: Path):
    matplotlib.use("Agg")
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    ns = [r["bodies"] for r in rows]
    el = [r for r in rows if "el_us" in r]
    axes[0].semilogy(ns, [r["build_s"] for r in rows], "o-", label="recursive (ours)")
    axes[0].semilogy([r["bodies"] for r in el], [r["el_build_s"] for r in el], "s--", label="Euler-Lagrange")
    axes[0].set_title("(a) model build time [s]")
    for ax, key, title in ((axes[1], "iid_Mqdd_us", "(b) M qdd [us]"), (axes[2], "iid_c_us", "(c) c(q, qd) [us]")):
        ax.loglog(ns, [r[key] for r in rows], "o-", label="IID (ours)")
        ax.loglog(ns, [r["mid_us"] for r in rows], "^:", label="MID: M and h (ours)")
        ax.loglog([r["bodies"] for r in el], [r["el_us"] for r in el], "s--", label="Euler-Lagrange (M, Q)")
        ax.set_title(title)
    axes[3].errorbar([a["bodies"] for a in acc], [a["mean_rel_error"] for a in acc],
                     yerr=[a["std_rel_error"] for a in acc], fmt="o-")
    axes[3].set_yscale("log")
    axes[3].set_title("(d) |ID - EL| / |EL| (mean, std)")
    for ax in axes:
        ax.set_xlabel("bodies N")
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend()
    axes[0].legend()
    fig.tight_layout()
    path = out / "paper002_sim3.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def sim1(duration: float, equilibria: int, out: Path) -> dict:
    """Simulation 1: equilibria, reference, tracking; its figures and plot."""
    model = helicoid.Helicoid.build()
    start = time.perf_counter()
    ref = helicoid.reference(model, equilibria)
    reference_s = time.perf_counter() - start
    zero = np.zeros(model.tree.nv)
    statics = [np.abs(model.tree.inverse_dynamics(q, zero, zero) - model.actuation.force(q, u)).max()
               for q, u in zip(ref["q"], ref["u"])]
    tip_errors = [np.abs(model.tips(q, zero)[0] - helicoid.tip_reference(t)).max() for q, t in zip(ref["q"], ref["times"])]
    zero_dynamics = [helicoid.zero_dynamics_eigenvalues(model, q, u).real.max() for q, u in zip(ref["q"], ref["u"])]
    start = time.perf_counter()
    res = helicoid.track(model, ref["spline"], duration, samples=max(int(duration * 20) + 1, 3))
    track_s = time.perf_counter() - start
    eig = helicoid.closed_loop_eigenvalues(model, ref["spline"], res["t"][-1], res["q"][-1], res["v"][-1])
    rightmost = eig[np.argmax(eig.real)]
    e = res["y"] - res["y_ref"]
    predicted = helicoid.error_prediction(res["t"], e[0], res["yd"][0] - res["yd_ref"][0])
    tips = np.linalg.norm((res["tips"] - res["tips_ref"]).reshape(len(res["t"]), 3, 3), axis=2)
    matplotlib.use("Agg")
    fig, axes = plt.subplots(1, 3, figsize=(16, 4))
    for k in range(e.shape[1]):
        line, = axes[0].plot(res["t"], 1e3 * e[:, k], label=f"tendon {k // 3 + 1}.{k % 3 + 1}")
        axes[0].plot(res["t"], 1e3 * predicted[:, k], ":", color=line.get_color())
    axes[0].set_title("(a) y - y_d [mm] (dotted: e'' + K_D e' + K_P e = 0)")
    axes[1].semilogy(res["t"], np.linalg.norm(e, axis=1), label="|y - y_d|")
    axes[1].semilogy(res["t"], np.linalg.norm(e - predicted, axis=1) + 1e-16, label="|e - e_exact|")
    axes[1].set_title("(b) tracking error norm [m]")
    for i in range(3):
        axes[2].plot(res["t"], 1e3 * tips[:, i], label=f"tip {i + 1}")
    axes[2].set_title("(c) |t_i - t_id| [mm]")
    for ax in axes:
        ax.set_xlabel("t [s]")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / "paper002_sim1.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"build_s": model.build_seconds, "reference_s": reference_s, "track_s": track_s,
            "equilibria": len(ref["times"]), "max_statics_residual_N": float(max(statics)),
            "max_equilibrium_tip_error_m": float(max(tip_errors)),
            "tensions_N": {"min": float(ref["u"].min()), "max": float(ref["u"].max())},
            "zero_dynamics_slowest_1_s": {"min": float(min(zero_dynamics)), "max": float(max(zero_dynamics))},
            "duration_s": duration, "error_norm_start_m": float(np.linalg.norm(e[0])),
            "error_norm_end_m": float(np.linalg.norm(e[-1])),
            "max_deviation_from_exact_error_m": float(np.abs(e - predicted).max()),
            "tip_error_end_mm": (1e3 * tips[-1]).tolist(),
            "closed_loop_rightmost_eigenvalue_end": [rightmost.real, rightmost.imag],
            "max_abs_coordinate_end": float(np.abs(res["q"][-1]).max()), "plot": str(path),
            "choices": [" ".join(item.split()) for item in helicoid.__doc__.split("\n- ")[1:]]}


def sim2(out: Path, reading: str = "volume") -> dict:
    """Simulation 2: the three phases; its figures and plot."""
    start = time.perf_counter()
    r = hybrid_arm.run(reading=reading)
    run_s = time.perf_counter() - start
    t, q, u = r["t"], np.array(r["q"]), r["u"]
    rod = q[:, 6:9]
    matplotlib.use("Agg")
    fig, axes = plt.subplots(1, 4, figsize=(20, 4))
    for k in range(6):
        line, = axes[0].plot(t, q[:, k], label=f"joint {k + 1}")
        axes[0].plot(t, r["arm_ref"][:, k], ":", color=line.get_color())
    axes[0].set_title("(a) arm joints [rad] (dotted: cubic reference)")
    for k, name in enumerate(("bend x [rad]", "bend y [rad]", "elongation [m]")):
        line, = axes[1].plot(t, rod[:, k], label=name)
        axes[1].axhline(hybrid_arm.ROD_FINAL[k], ls=":", color=line.get_color())
    axes[1].set_title("(b) rod coordinates (dotted: q_f)")
    axes[2].plot(t, u[:, 6:9], label=["tendon 1", "tendon 2", "tendon 3"])
    axes[2].set_title("(c) tendon tensions [N]")
    axes[3].plot(t, 1e6 * r["volume"])
    axes[3].set_title("(d) chamber volume change [cm^3]")
    for ax in axes:
        ax.set_xlabel("t [s]")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    axes[2].legend(fontsize=7)
    for ax in axes:
        for end in hybrid_arm.PHASES[:2]:
            ax.axvline(end, color="grey", lw=0.5)
    fig.tight_layout()
    path = out / "paper002_sim2.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"run_s": run_s, "arm_max_error_rad": float(np.abs(q[:, :6] - r["arm_ref"]).max()),
            "rod_end": rod[-1].tolist(), "rod_error_end": float(np.abs(rod[-1] - hybrid_arm.ROD_FINAL).max()),
            "max_tension_N": float(np.abs(u[:, 6:9]).max()), "volume_change_end_m3": float(r["volume"][-1]),
            "gripper_end": q[-1, 9:].tolist(), "chamber_reading": reading, "plot": str(path),
            "choices": [" ".join(item.split()) for item in hybrid_arm.__doc__.split("\n- ")[1:]]}


def _print_sim2(r: dict) -> None:
    print(f"Sim 2: {r['run_s']:.0f} s; arm max |q - q_ref| {r['arm_max_error_rad']:.1e} rad; rod at 6 s "
          f"{[round(x, 4) for x in r['rod_end']]} (max error to q_f {r['rod_error_end']:.1e}); max tension "
          f"{r['max_tension_N']:.1f} N; chamber ({r['chamber_reading']}) volume change {r['volume_change_end_m3']:.2e} "
          f"m^3, gripper stretch {1e6 * r['gripper_end'][0]:.1f} um; plot: {r['plot']}")


def _print_sim1(r: dict) -> None:
    print(f"Sim 1: build {r['build_s']:.1f} s, {r['equilibria']} equilibria in {r['reference_s']:.1f} s "
          f"(statics residual {r['max_statics_residual_N']:.1e} N, tip error {r['max_equilibrium_tip_error_m']:.1e} m, "
          f"tensions {r['tensions_N']['min']:.1f}..{r['tensions_N']['max']:.1f} N, zero dynamics' slowest mode "
          f"{r['zero_dynamics_slowest_1_s']['max']:.1f}..{r['zero_dynamics_slowest_1_s']['min']:.1f} 1/s); "
          f"tracking {r['duration_s']} s "
          f"in {r['track_s']:.0f} s: |y - y_d| {r['error_norm_start_m']:.2e} -> {r['error_norm_end_m']:.2e} m, "
          f"max |e - e_exact| {r['max_deviation_from_exact_error_m']:.1e} m; closed loop's rightmost eigenvalue "
          f"at the end {r['closed_loop_rightmost_eigenvalue_end'][0]:.2f} "
          f"{r['closed_loop_rightmost_eigenvalue_end'][1]:+.2f}i 1/s, max |q| {r['max_abs_coordinate_end']:.2f}; "
          f"plot: {r['plot']}")


def _print_sim3(r: dict) -> None:
    for row in r["rows"]:
        print(f"N={row['bodies']:2d} IID(M qdd) {row['iid_Mqdd_us']:8.1f} us  c {row['iid_c_us']:8.1f} us  "
              f"MID {row['mid_us']:8.1f} us" + (f"  EL {row['el_us']:8.1f} us" if "el_us" in row else ""))
    for a in r["accuracy"]:
        print(f"N={a['bodies']:2d} |ID - EL|/|EL| mean {a['mean_rel_error']:.1e} std {a['std_rel_error']:.1e}")
    print(f"plot: {r['plot']}")


def sim3(args, out: Path) -> dict:
    ns = body_counts(args.bodies)
    rows = [timing_row(n, args.samples, with_el=n <= EL_MAX_BODIES) for n in ns]
    acc = [accuracy(n, args.accuracy_samples) for n in ns if n <= EL_MAX_BODIES]
    result = {"rows": rows, "accuracy": acc, "plot": _plot(rows, acc, out)}
    if len(ns) >= 2:
        result["iid_exponent"] = fitted_exponent(ns, [r["iid_Mqdd_us"] for r in rows])
    return result


def run(args) -> int:
    sims = [s.strip() for s in args.sims.split(",") if s.strip()]
    if not sims or any(s not in SIMS for s in sims):
        raise InputError(f"--sims must list some of {', '.join(SIMS)} (got {args.sims!r})", field="sims")
    if args.sim1_duration <= 0 or args.sim1_equilibria < 3:
        raise InputError("--sim1-duration must be positive and --sim1-equilibria at least 3", field="sim1")
    ns = body_counts(args.bodies)
    if not ns or ns[0] < 1 or args.samples < 1 or args.accuracy_samples < 1:
        raise InputError("--bodies must be positive, --samples and --accuracy-samples at least 1", field="bodies")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name, simulate, show in (("1", lambda: sim1(args.sim1_duration, args.sim1_equilibria, out), _print_sim1),
                                 ("2", lambda: sim2(out, args.sim2_chamber), _print_sim2), ("3", lambda: sim3(args, out), _print_sim3)):
        if name in sims:
            results[f"sim{name}"] = simulate()
            (out / f"paper002_sim{name}.json").write_text(json.dumps(results[f"sim{name}"], indent=2))
            if not args.json:
                show(results[f"sim{name}"])
    if args.json:
        print(json.dumps(results, indent=2))
    return 0

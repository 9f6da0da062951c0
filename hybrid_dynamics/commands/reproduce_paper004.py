"""``hybrid-dynamics reproduce paper004 [--out DIR] [--experiments A,B] [--duration S] [--json]``.

Runs [Feurstein 2021]'s hopper experiments (prismatic I-III, revolute I-VI; definitions and the
choices the thesis leaves open in ``hopper/experiments.py``) and the Fig. 4.7 sweep over the
knee angle, and writes per experiment a plot (base height, r_cf, alpha, energy terms, h_c,
cumulative work per port), the sweep plot, ``summary.json`` (hop counts, apexes, energies,
flight rotations, drift, what the thesis reports) and ``energy_balance.md`` (Exp VI's sheet in
the thesis's terms, and the numerical residual of every run); then Exps II (prismatic) and IV
(revolute) again in the MuJoCo plant (``sim.hopper_plant``), with their touchdown times.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from ..errors import InputError
from ..hopper import experiments as ex
from ..sim.hopper_plant import MujocoHopper

COMMAND = ("reproduce", "paper004")
HELP = "Feurstein (2021): the planar hopper's Exps I-VI, the Fig. 4.7 sweep and the energy balance"
SWEEP_DEG = tuple(range(70, 151, 8))
MUJOCO_EXPERIMENTS = ("prismatic_II", "revolute_IV")


def add_arguments(parser) -> None:
    parser.add_argument("--out", default="paper004_output", help="output directory (default paper004_output)")
    parser.add_argument("--experiments", default=",".join(ex.EXPERIMENTS),
                        help="comma-separated subset of " + ", ".join(ex.EXPERIMENTS))
    parser.add_argument("--duration", type=float, default=None, help="override every experiment's duration (s)")
    parser.add_argument("--no-sweep", action="store_true", help="skip the Fig. 4.7 sweep")
    parser.add_argument("--mujoco-duration", type=float, default=3.0,
                        help="seconds of Exps II (prismatic) and IV (revolute) in the MuJoCo plant (0: skip)")
    parser.add_argument("--lift-height", type=float, default=ex.LIFT_HEIGHT,
                        help="m: stance ends when the foot is this far above the floor (default 1e-3; "
                             "the revolute Exps II-VI depend on it, docs/decoupled.md)")
    parser.add_argument("--floor-anchor", choices=("touchdown", "origin"), default="touchdown",
                        help="anchor of the floor's horizontal spring in the Fig. 4.7 sweep (default touchdown)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def _plot(name, log, path: Path) -> None:
    matplotlib.use("Agg")
    s, t = log.series, log.t
    fig, ax = plt.subplots(5, 1, figsize=(9, 12), sharex=True)
    ax[0].plot(t, log.x[:, 1], label="base y")
    ax[0].plot(t, s["com_y"], label="CoM y")
    ax[0].plot(t, s["foot_y"], label="foot y")
    ax[0].set_ylabel("m")
    ax[1].plot(t, s["r"], label="r_cf")
    ax[1].set_ylabel("m")
    a2 = ax[1].twinx()
    a2.plot(t, np.degrees(s["alpha"]), "C1", label="alpha (deg)")
    a2.set_ylabel("deg")
    a2.legend(loc="lower right", fontsize=7)
    for k in ("energy", "kinetic", "gravity", "spring"):
        ax[2].plot(t, s[k], label=k)
    ax[2].set_ylabel("J")
    ax[3].plot(t, s["h_x"], label="h_c x")
    ax[3].plot(t, s["h_y"], label="h_c y")
    ax[3].plot(t, 100 * s["h_angular"], label="100 x h_c angular")
    for k in ("floor", "joint", "base", "radial_damper", "pump", "polar"):
        ax[4].plot(t, log.work(k), label=f"W {k}")
    ax[4].set_ylabel("J")
    ax[4].set_xlabel("t (s)")
    for a in ax:
        a.legend(loc="upper right", fontsize=7)
        a.grid(alpha=0.3)
    ax[0].set_title(name)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _plot_sweep(rows, path: Path) -> None:
    matplotlib.use("Agg")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([math.degrees(r["q1"]) for r in rows], [r["h_angular"] for r in rows], "o-")
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xlabel("q1 (deg)")
    ax.set_ylabel("h_c angular at first lift-off (kg m^2/s)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _balance_table(sheets: dict) -> str:
    keys = ["in_base_torque", "in_joint_without_damper", "out_touchdown", "out_radial_damping",
            "out_floor_after_touchdown", "stored_mechanical", "stored_spring", "residual"]
    lines = ["# Energy balance per experiment (J; residual = inflows - outflows - change of E_mech)", "",
             "| experiment | touchdowns | " + " | ".join(keys) + " |", "|---" * (len(keys) + 2) + "|"]
    for name, s in sheets.items():
        lines.append(f"| {name} | {s['touchdowns']} | " + " | ".join(f"{s[k]:.6g}" for k in keys) + " |")
    lines += ["", "Thesis, Exp VI over 20 s: inflows base torque 7.15 + joint 4.65 = 11.8 J; outflows "
              "touchdown 2.9 + radial damping 5.9 + floor after touchdown 3.0 J; about 7 % of E0 lost per hop."]
    return "\n".join(lines) + "\n"


def _mujoco_comparison(name: str, duration: float) -> dict:
    """The same experiment in the MuJoCo plant and in ``hopper.simulate``: touchdown times."""
    exp = ex.EXPERIMENTS[name]
    hopper, sim = ex.make_sim(exp)
    x0, v0 = np.array(exp.x0), np.array(exp.v0)
    mj = MujocoHopper(hopper, sim.controller).run(x0, v0, duration)
    ours = [e.t for e in sim.run(x0, v0, duration).events if e.kind == "touchdown"]
    n = min(len(ours), len(mj.touchdowns))
    return {"mujoco_touchdowns": len(mj.touchdowns), "ours_touchdowns": len(ours), "mujoco_fallen": mj.fallen,
            "mujoco_touchdown_times": [round(t, 4) for t in mj.touchdowns],
            "max_touchdown_dt": float(np.abs(np.subtract(ours[:n], mj.touchdowns[:n])).max(initial=0.0))}


def run(args) -> int:
    names = [n.strip() for n in args.experiments.split(",") if n.strip()]
    unknown = [n for n in names if n not in ex.EXPERIMENTS]
    if unknown:
        raise InputError(f"unknown experiment(s) {unknown}: choose from {', '.join(ex.EXPERIMENTS)}",
                         field="--experiments")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary, sheets = {}, {}
    for name in names:
        log = ex.run(name, duration=args.duration, lift_height=args.lift_height)
        summary[name] = dict(ex.hop_summary(log), reported=ex.EXPERIMENTS[name].reported)
        sheets[name] = ex.energy_balance(log)
        _plot(name, log, out / f"{name}.png")
        if not args.json:
            s = summary[name]
            print(f"{name}: {s['touchdowns']} touchdowns, {s['liftoffs']} lift-offs in {s['duration']:.2f} s"
                  f"{' (fell)' if s['fallen'] else ''}, drift {s['drift_velocity']} m/s, balance residual "
                  f"{s['balance_residual']:.2e} J; thesis: {s['reported']}")
    if not args.no_sweep:
        rows = ex.sweep_fig_4_7([math.radians(d) for d in SWEEP_DEG], floor_anchor=args.floor_anchor)
        summary["fig_4_7"] = rows
        _plot_sweep(rows, out / "fig_4_7_sweep.png")
        if not args.json:
            best = min((r for r in rows if r["lifted"]), key=lambda r: abs(r["h_angular"]))
            print(f"Fig. 4.7 sweep: smallest |h_c angular| at lift-off at q1 = {math.degrees(best['q1']):.0f} deg "
                  f"({best['h_angular']:.2e}); thesis: 102 deg")
    if args.mujoco_duration > 0:
        summary["mujoco"] = {name: _mujoco_comparison(name, args.mujoco_duration) for name in MUJOCO_EXPERIMENTS}
        if not args.json:
            for name, c in summary["mujoco"].items():
                print(f"MuJoCo plant, {name}, {args.mujoco_duration} s: {c['mujoco_touchdowns']} touchdowns "
                      f"(ours {c['ours_touchdowns']}), largest touchdown-time difference {c['max_touchdown_dt']:.4f} s")
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    (out / "energy_balance.md").write_text(_balance_table(sheets))
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"wrote {out}/ (plots, summary.json, energy_balance.md)")
    return 0

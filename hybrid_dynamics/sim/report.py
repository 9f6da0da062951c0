"""PNG plots of a scenario run (matplotlib, Agg backend): base path from ground truth, roll and
pitch, contact forces against their friction-cone limits, QP solve-time histogram, and the
morphology timeline (legs on the robot, detector statistic, events)."""
from __future__ import annotations

from pathlib import Path
from typing import List

import matplotlib
import matplotlib.pyplot as plt
import numpy as np


def write_plots(run, out: Path) -> List[str]:
    matplotlib.use("Agg")

    lg = run.log
    out = Path(out)
    t = np.array(lg.t) - lg.t[0]
    pos = np.array(lg.pos)
    est = np.array(lg.est_pos)
    rpy = np.degrees(np.array(lg.rpy))
    td = None if run.t_damage is None else run.t_damage - lg.t[0]
    title = f"{run.sc.name}: {run.sc.description}"
    written = []

    def mark(ax):
        if td is not None:
            ax.axvline(td, color="r", ls="--", lw=1, label="damage")
        for e in lg.events:
            if e["kind"] == "detection":
                ax.axvline(e["t"] - lg.t[0], color="m", ls=":", lw=1)

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(name)

    # base path
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(pos[:, 0], pos[:, 1], label="ground truth")
    ax.plot(est[:, 0], est[:, 1], "--", lw=1, label="estimate")
    if td is not None:
        i = int(np.searchsorted(t, td))
        ax.plot(pos[i, 0], pos[i, 1], "rx", ms=10, label="damage")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend()
    ax.set_title(title, fontsize=9)
    save(fig, "base_path.png")

    # roll and pitch
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(t, rpy[:, 0], label="roll")
    ax.plot(t, rpy[:, 1], label="pitch")
    ax.axhline(15, color="k", ls=":", lw=0.8)
    ax.axhline(-15, color="k", ls=":", lw=0.8)
    mark(ax)
    ax.set_xlabel("t (s)")
    ax.set_ylabel("deg")
    ax.legend()
    ax.set_title("roll and pitch (ground truth); dotted: the 15 deg target", fontsize=9)
    save(fig, "roll_pitch.png")

    # contact forces vs friction cone
    mu = run.robot.friction
    frames = list(lg.forces)
    fig, axes = plt.subplots(len(frames), 1, figsize=(8, 1.4 * len(frames) + 1), sharex=True)
    for ax, f in zip(np.atleast_1d(axes), frames):
        F = np.array(lg.forces[f])
        ax.plot(t, F[:, 2], lw=0.8, label="normal")
        ax.plot(t, np.linalg.norm(F[:, :2], axis=1), lw=0.8, label="tangential")
        ax.plot(t, mu * F[:, 2], "k:", lw=0.8, label=f"cone limit mu={mu}")
        ax.set_ylabel(f"{f}\n(N)", fontsize=8)
        mark(ax)
    np.atleast_1d(axes)[0].legend(fontsize=7, ncol=3, loc="upper right")
    np.atleast_1d(axes)[-1].set_xlabel("t (s)")
    fig.suptitle("contact forces (MuJoCo) against their friction-cone limits", fontsize=9)
    save(fig, "contact_forces.png")

    # QP solve time
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ms = np.array(lg.solve_ms)
    ax.hist(ms, bins=60)
    ax.axvline(np.percentile(ms, 99), color="r", ls="--", label=f"p99 {np.percentile(ms, 99):.3f} ms")
    ax.set_xlabel("QP solve time (ms)")
    ax.set_ylabel("cycles")
    ax.legend()
    save(fig, "qp_solve_time.png")

    # morphology timeline
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 4.5), sharex=True)
    a1.step(t, lg.legs_alive, where="post")
    a1.set_ylabel("legs on the robot")
    a1.set_ylim(0, max(lg.legs_alive) + 1)
    for e in lg.events:
        a1.annotate(f"{e['kind']}: {e.get('morphology', e.get('what', ''))}"[:70], (e["t"] - lg.t[0], 0.3),
                    rotation=90, fontsize=6, va="bottom")
    mark(a1)
    a2.semilogy(t, np.maximum(lg.statistic, 1e-3))
    a2.axhline(run.threshold, color="k", ls=":", label="threshold")
    mark(a2)
    a2.set_ylabel("detector |e| (N)")
    a2.set_xlabel("t (s)")
    a2.legend()
    fig.suptitle("morphology timeline (red: damage, magenta: detection)", fontsize=9)
    save(fig, "morphology_timeline.png")

    # closed chains: CoM against the support polygon, passive-joint estimate, actuator forces
    bs = getattr(run, "balance_series", None)
    if bs is not None and len(bs["t_com"]):
        fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
        tc = bs["t_com"] - lg.t[0]
        a1.plot(tc, 100 * bs["com_y"], label="CoM y (cm)")
        a1.plot(tc, 100 * bs["com_margin"], label="CoM margin to the support polygon (cm)")
        a1.axhline(0, color="k", lw=0.8)
        a1.legend(fontsize=7)
        a1.set_ylabel("cm")
        if len(bs["t_err"]):
            a2.semilogy(bs["t_err"] - lg.t[0], np.maximum(bs["passive_error"], 1e-9))
        a2.axhline(1e-3, color="k", ls=":", label="1e-3 rad")
        a2.set_ylabel("passive estimate\nerror max (rad)")
        a2.legend(fontsize=7)
        F = bs["actuator_forces"]
        if len(F):
            tf = np.linspace(tc[0], tc[-1], len(F))           # one per control cycle
            for k, name in enumerate(bs["actuators"]):
                a3.plot(tf, F[:, k], lw=0.7, label=name)
            a3.axhline(bs["actuator_limits"].min(), color="k", ls=":")
            a3.axhline(-bs["actuator_limits"].min(), color="k", ls=":")
            a3.legend(fontsize=5, ncol=4)
        a3.set_ylabel("actuator force (N)")
        a3.set_xlabel("t (s)")
        fig.suptitle(f"{run.sc.name}: CoM (MuJoCo), passive joints (estimate vs MuJoCo), actuator forces",
                     fontsize=9)
        save(fig, "balance.png")
    return written

"""PNG plots of a scenario run (matplotlib, Agg backend), one function per figure: base path
from ground truth, roll and pitch, contact forces against their friction-cone limits, QP
solve-time histogram, the morphology timeline (legs on the robot, detector statistic, events)
and, for a closed-chain balance, CoM, passive-joint estimate and actuator forces."""
from __future__ import annotations

from pathlib import Path
from typing import List

import matplotlib
import matplotlib.pyplot as plt
import numpy as np


class _Figures:
    """What the figures of one run share: its log, time axis, damage time, output folder."""

    def __init__(self, run, out: Path):
        self.run = run
        self.lg = run.log
        self.out = Path(out)
        self.t = np.array(self.lg.t) - self.lg.t[0]
        self.td = None if run.t_damage is None else run.t_damage - self.lg.t[0]
        self.written: List[str] = []

    def mark(self, ax) -> None:
        """The damage (red, dashed) and the detections (magenta, dotted)."""
        if self.td is not None:
            ax.axvline(self.td, color="r", ls="--", lw=1, label="damage")
        for e in self.lg.events:
            if e["kind"] == "detection":
                ax.axvline(e["t"] - self.lg.t[0], color="m", ls=":", lw=1)

    @staticmethod
    def axes(ax, xlabel: str, ylabel: str, **legend) -> None:
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(**legend)

    def save(self, fig, name: str) -> None:
        fig.tight_layout()
        fig.savefig(self.out / name, dpi=110)
        plt.close(fig)
        self.written.append(name)


def base_path(f: _Figures) -> None:
    pos, est = np.array(f.lg.pos), np.array(f.lg.est_pos)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(pos[:, 0], pos[:, 1], label="ground truth")
    ax.plot(est[:, 0], est[:, 1], "--", lw=1, label="estimate")
    if f.td is not None:
        i = int(np.searchsorted(f.t, f.td))
        ax.plot(pos[i, 0], pos[i, 1], "rx", ms=10, label="damage")
    ax.set_aspect("equal", adjustable="datalim")
    f.axes(ax, "x (m)", "y (m)")
    ax.set_title(f"{f.run.sc.name}: {f.run.sc.description}", fontsize=9)
    f.save(fig, "base_path.png")


def roll_pitch(f: _Figures) -> None:
    rpy = np.degrees(np.array(f.lg.rpy))
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(f.t, rpy[:, 0], label="roll")
    ax.plot(f.t, rpy[:, 1], label="pitch")
    ax.axhline(15, color="k", ls=":", lw=0.8)
    ax.axhline(-15, color="k", ls=":", lw=0.8)
    f.mark(ax)
    f.axes(ax, "t (s)", "deg")
    ax.set_title("roll and pitch (ground truth); dotted: the 15 deg target", fontsize=9)
    f.save(fig, "roll_pitch.png")


def contact_forces(f: _Figures) -> None:
    mu = f.run.robot.friction
    frames = list(f.lg.forces)
    fig, axes = plt.subplots(len(frames), 1, figsize=(8, 1.4 * len(frames) + 1), sharex=True)
    axes = np.atleast_1d(axes)
    for ax, frame in zip(axes, frames):
        F = np.array(f.lg.forces[frame])
        ax.plot(f.t, F[:, 2], lw=0.8, label="normal")
        ax.plot(f.t, np.linalg.norm(F[:, :2], axis=1), lw=0.8, label="tangential")
        ax.plot(f.t, mu * F[:, 2], "k:", lw=0.8, label=f"cone limit mu={mu}")
        ax.set_ylabel(f"{frame}\n(N)", fontsize=8)
        f.mark(ax)
    axes[0].legend(fontsize=7, ncol=3, loc="upper right")
    axes[-1].set_xlabel("t (s)")
    fig.suptitle("contact forces (MuJoCo) against their friction-cone limits", fontsize=9)
    f.save(fig, "contact_forces.png")


def qp_solve_time(f: _Figures) -> None:
    ms = np.array(f.lg.solve_ms)
    ms = ms[np.isfinite(ms)]                 # a safe-mode cycle solves no QP
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(ms, bins=60)
    ax.axvline(np.percentile(ms, 99), color="r", ls="--", label=f"p99 {np.percentile(ms, 99):.3f} ms")
    f.axes(ax, "QP solve time (ms)", "cycles")
    f.save(fig, "qp_solve_time.png")


def morphology_timeline(f: _Figures) -> None:
    lg = f.lg
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 4.5), sharex=True)
    a1.step(f.t, lg.legs_alive, where="post")
    a1.set_ylabel("legs on the robot")
    a1.set_ylim(0, max(lg.legs_alive) + 1)
    for e in lg.events:
        a1.annotate(f"{e['kind']}: {e.get('morphology', e.get('what', ''))}"[:70], (e["t"] - lg.t[0], 0.3),
                    rotation=90, fontsize=6, va="bottom")
    f.mark(a1)
    a2.semilogy(f.t, np.maximum(lg.statistic, 1e-3))
    a2.axhline(f.run.threshold, color="k", ls=":", label="threshold")
    f.mark(a2)
    f.axes(a2, "t (s)", "detector |e| (N)")
    fig.suptitle("morphology timeline (red: damage, magenta: detection)", fontsize=9)
    f.save(fig, "morphology_timeline.png")


def balance(f: _Figures) -> None:
    """Closed chains: CoM against the support polygon, passive-joint estimate, actuator forces."""
    bs = f.run.balance_series
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    tc = bs["t_com"] - f.lg.t[0]
    a1.plot(tc, 100 * bs["com_y"], label="CoM y (cm)")
    a1.plot(tc, 100 * bs["com_margin"], label="CoM margin to the support polygon (cm)")
    a1.axhline(0, color="k", lw=0.8)
    a1.legend(fontsize=7)
    a1.set_ylabel("cm")
    if len(bs["t_err"]):
        a2.semilogy(bs["t_err"] - f.lg.t[0], np.maximum(bs["passive_error"], 1e-9))
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
    fig.suptitle(f"{f.run.sc.name}: CoM (MuJoCo), passive joints (estimate vs MuJoCo), actuator forces", fontsize=9)
    f.save(fig, "balance.png")


FIGURES = (base_path, roll_pitch, contact_forces, qp_solve_time, morphology_timeline)


def write_plots(run, out: Path) -> List[str]:
    """Every figure of ``run`` into ``out``; the names written."""
    matplotlib.use("Agg")
    figures = _Figures(run, out)
    for figure in FIGURES:
        figure(figures)
    series = getattr(run, "balance_series", None)
    if series is not None and len(series["t_com"]):
        balance(figures)
    return figures.written

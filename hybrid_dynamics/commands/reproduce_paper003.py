"""``hybrid-dynamics reproduce paper003``: Shah et al.'s (2012) Table 2 comparison with our engines.

For the planar biped and the spatial quadruped: the time of one q_ddot by the recursive O(n)
forward dynamics (section 2.6) against the O(n^3) path (composite-module GIM + h, then a
Cholesky solve), and the time of a 1 s simulation with each, under feed-forward
(tau = ID(q, v, q_ddot_d) + Kp e + Kd e_dot) and computed-torque (tau = ID(q, v, alpha),
alpha = q_ddot_d + Kp e + Kd e_dot) control, k_p = 49, k_d = 14 as in the paper; ID is the
floating-base recursive inverse dynamics of section 2.5.

Not reproduced: the IPM walking trajectories and the paper's ground model. Here the joints
track theta_stand + 0.2 sin(2 pi t) in flight, semi-implicit Euler at dt = 1 ms; under
feed-forward the PD damping is taken at the end of the step (an armature dt K_D), standing
in for the paper's stiff solver. The paper's absolute times (MATLAB, E8400) are not
comparable; the ratios are.
"""
from __future__ import annotations

import json
import math
import time

import numpy as np

from ..dynamics.denoc import DeNOC
from ..dynamics.lie import integrate
from ..dynamics.validation import random_state
from ..errors import InputError
from ..model.robot import load_robot

COMMAND = ("reproduce", "paper003")
HELP = "Shah et al.'s (2012) Table 2: recursive O(n) against O(n^3) forward dynamics, per robot"
KP, KD = 49.0, 14.0
PAPER = {"paper003_biped": {"qdd": 16.67, "feed-forward": 14.31, "computed-torque": 23.29},
         "paper003_quadruped": {"qdd": 22.10, "feed-forward": 35.44, "computed-torque": 27.30}}


def add_arguments(parser) -> None:
    parser.add_argument("--robots", default="paper003_biped,paper003_quadruped")
    parser.add_argument("--samples", type=int, default=200, help="q_ddot evaluations per algorithm")
    parser.add_argument("--duration", type=float, default=1.0, help="simulated seconds (default 1)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _p50(fn, states):
    out = []
    for s in states:
        t0 = time.perf_counter()
        fn(*s)
        out.append(time.perf_counter() - t0)
    return float(np.percentile(out, 50))


def simulate(engine: DeNOC, robot, control: str, dense: bool, duration: float, dt: float = 1e-3):
    q = robot.q_stand.copy()
    q[:7] = (0, 0, 1.0, 0, 0, 0, 1)
    v = np.zeros(engine.nv)
    th0 = q[7:].copy()
    fd = engine.forward_dynamics_dense if dense else engine.forward_dynamics
    # feed-forward: the PD's -K_D theta_dot is taken at the end of the step (linearly implicit,
    # armature dt K_D); the paper integrates with a stiff solver (ode15s-like)
    arm = dt * KD if control == "feed-forward" else None
    t0 = time.perf_counter()
    for k in range(int(round(duration / dt))):
        t = k * dt
        w = 2 * math.pi
        qd, vd, ad = th0 + 0.2 * math.sin(w * t), 0.2 * w * math.cos(w * t), -0.2 * w * w * math.sin(w * t)
        e, edot = qd - q[7:], vd - v[6:]
        if control == "feed-forward":
            _, tau = engine.floating_inverse_dynamics(q, v, np.full(engine.nv - 6, ad))
            tau = tau + KP * e + KD * vd
        else:
            _, tau = engine.floating_inverse_dynamics(q, v, ad + KP * e + KD * edot)
        if arm is not None:
            tau = tau - KD * v[6:]
        v = v + dt * fd(q, v, np.concatenate([np.zeros(6), tau]), armature=arm)
        q = integrate(q, v, dt)
    return time.perf_counter() - t0, float(np.abs(q[7:] - (th0 + 0.2 * math.sin(2 * math.pi * duration))).max())


def run(args) -> int:
    if args.samples < 10:
        raise InputError("--samples must be at least 10", field="samples")
    rows = []
    for name in [r.strip() for r in args.robots.split(",") if r.strip()]:
        robot = load_robot(name)
        engine = DeNOC(robot)
        rng = np.random.default_rng(0)
        states = [random_state(robot, engine, rng) for _ in range(args.samples)]
        t_on = _p50(lambda q, v, a, tau, F: engine.forward_dynamics(q, v, tau), states)
        t_on3 = _p50(lambda q, v, a, tau, F: engine.forward_dynamics_dense(q, v, tau), states)
        row = {"robot": name, "n": engine.nv - 6, "modules": len(engine.modules),
               "qdd_us": {"O(n^3)": round(t_on3 * 1e6, 1), "O(n)": round(t_on * 1e6, 1),
                          "improvement_percent": round(100 * (1 - t_on / t_on3), 1)},
               "simulation_1s": {}, "paper_percent": PAPER.get(name)}
        for control in ("feed-forward", "computed-torque"):
            wall3, err3 = simulate(engine, robot, control, True, args.duration)
            wall1, err1 = simulate(engine, robot, control, False, args.duration)
            row["simulation_1s"][control] = {"O(n^3)_s": round(wall3, 3), "O(n)_s": round(wall1, 3),
                                             "improvement_percent": round(100 * (1 - wall1 / wall3), 1),
                                             "final_tracking_error_rad": round(max(err1, err3), 5)}
        rows.append(row)
    if args.json:
        print(json.dumps({"table2": rows, "paper_range_percent": "16-35"}, indent=2))
        return 0
    print("[Shah 2012] Table 2 with our engines (improvement of the O(n) recursion over O(n^3); paper: 16-35 %)")
    for row in rows:
        qd = row["qdd_us"]
        paper = row["paper_percent"] or {}
        print(f"  {row['robot']} (n = {row['n']}, {row['modules']} modules): q_ddot O(n^3) {qd['O(n^3)']} us, "
              f"O(n) {qd['O(n)']} us: {qd['improvement_percent']} % (paper {paper.get('qdd', '-')} %)")
        for control, s in row["simulation_1s"].items():
            print(f"    1 s simulation, {control}: O(n^3) {s['O(n^3)_s']} s, O(n) {s['O(n)_s']} s: "
                  f"{s['improvement_percent']} % (paper {paper.get(control, '-')} %)")
    return 0

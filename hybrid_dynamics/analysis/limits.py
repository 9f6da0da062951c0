"""Joint-limit polygons of 2-DoF parallel sub-mechanisms by the limit-exploration QP of
[Mingo Hoffman 2024] ([Mingo Hoffman 2024, Eq. (30)]).

From a start pose, for each direction phi in the (roll, pitch) plane of a sub-mechanism, the
serial-equivalent velocity (cos phi, sin phi) is mapped to actuator velocities
theta_dot_a,d = (P J_m)^-1 q_dot_d and the QP

    min ||theta_dot_a - theta_dot_a,d||^2   s.t.  (theta_min - theta)/dt <= G theta_dot_a <= (theta_max - theta)/dt

(every joint of the leg, passive and actuated; J_l theta_dot = 0 is built into G) is
integrated, re-closing the loops each step, until a limit becomes active (the QP's answer
leaves the desired velocity): the end points, one per direction, trace the boundary of the
true (nonlinear) limit set seen from the start pose (legs straight), against the box of the
serial joints' own limits. Sliding along the boundary is stopped on purpose: it would pile
the end points up in the corners.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import osqp
from scipy import sparse

from ..dynamics.closed_chain import LoopClosureKinematics


def _qp_box(H_rows: np.ndarray, target: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    n = target.size
    solver = osqp.OSQP()
    A = np.vstack([H_rows, np.eye(n)])
    big = 1e3
    solver.setup(sparse.csc_matrix(2 * np.eye(n)), -2 * target, sparse.csc_matrix(A),
                 np.concatenate([lo, -big * np.ones(n)]), np.concatenate([hi, big * np.ones(n)]),
                 verbose=False, eps_abs=1e-10, eps_rel=1e-10, polishing=False)
    res = solver.solve()
    return res.x if res.info.status in ("solved", "solved inaccurate") else np.zeros(n)


def limit_polygon(robot, joints: Tuple[str, str], directions: int = 24, dt: float = 0.01,
                  steps: int = 200, speed: float = 1.0) -> Dict[str, object]:
    """End points reached in each direction of the (joints[0], joints[1]) plane."""
    kin = LoopClosureKinematics(robot)
    m = robot.model
    vcol = lambda n: m.joints[m.getJointId(n)].idx_v   # noqa: E731
    prefix = joints[0].split("_")[0] + "_"
    leg_act = [i for i, n in enumerate(kin.actuated_joints) if n.startswith(prefix)]
    leg_rows = np.array([i for i in range(6, kin.nv)
                         if m.names[_joint_of_v(m, i)].startswith(prefix)], dtype=int)
    serial = [n for leg in robot.legs for n in leg.joint_names(m) if n.startswith(prefix)]
    iserial = np.array([vcol(n) for n in serial])
    ij = [serial.index(j) for j in joints]
    lo_q = m.lowerPositionLimit[leg_rows + 1]
    hi_q = m.upperPositionLimit[leg_rows + 1]
    # start with the legs straight: q = 0 closes every loop of hybrid_biped by design;
    # otherwise the reference pose
    q0 = np.zeros(m.nq)
    q0[6] = 1.0
    if np.max(np.abs(kin.residual(q0))) > 1e-9:
        q0 = kin.q_ref.copy()
    points: List[Tuple[float, float]] = []
    for k in range(directions):
        phi = 2 * np.pi * k / directions
        qd = np.zeros(len(serial))
        qd[ij[0]], qd[ij[1]] = speed * np.cos(phi), speed * np.sin(phi)
        q = q0.copy()
        for _ in range(steps):
            G, _ = kin.projection(q)
            Gl = G[np.ix_(leg_rows, 6 + np.array(leg_act))]
            Js = G[np.ix_(iserial, 6 + np.array(leg_act))]
            target = np.linalg.solve(Js, qd)
            th = q[leg_rows + 1]
            va = _qp_box(Gl, target, (lo_q - th) / dt, (hi_q - th) / dt)
            if np.linalg.norm(va - target) > 1e-4 * np.linalg.norm(target):
                break          # a limit became active: the ray from the start meets the boundary here
            v = G[:, 6:][:, leg_act] @ va
            q[7:] += dt * v[6:]
            q, info = kin.close(q)
            if not info["converged"]:
                break
        points.append((float(q[vcol(joints[0]) + 1]), float(q[vcol(joints[1]) + 1])))
    box = [(float(m.lowerPositionLimit[vcol(j) + 1]), float(m.upperPositionLimit[vcol(j) + 1])) for j in joints]
    return {"joints": list(joints), "points": points, "box": box}


def _joint_of_v(model, iv: int) -> int:
    for j in range(1, model.njoints):
        if model.joints[j].idx_v <= iv < model.joints[j].idx_v + model.joints[j].nv:
            return j
    raise IndexError(iv)


def plot_polygons(results: List[Dict[str, object]], path) -> None:
    matplotlib.use("Agg")
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4.5))
    axes = np.atleast_1d(axes)
    for ax, r in zip(axes, results):
        p = np.degrees(np.array(r["points"] + r["points"][:1]))
        ax.plot(p[:, 0], p[:, 1], "b.-", label="reachable (limit-exploration QP)")
        (a0, a1), (b0, b1) = np.degrees(r["box"][0]), np.degrees(r["box"][1])
        ax.plot([a0, a1, a1, a0, a0], [b0, b0, b1, b1, b0], "r-", label="serial joint box limits")
        ax.set_xlabel(f"{r['joints'][0]} [deg]")
        ax.set_ylabel(f"{r['joints'][1]} [deg]")
        ax.set_aspect("equal")
        ax.grid(True, lw=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

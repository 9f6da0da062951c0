"""Equivalent Cartesian inertia at the foot and centroidal angular momentum, projected for
closed chains; the chi and gamma ratios of a serial robot against a closed-chain one
([Mingo Hoffman 2024, Sec. V, Table III]).

Conventions (the paper leaves them open):
- Configuration: each robot's stand pose (TALOS: SRDF half_sitting; hybrid_biped: hip pitch
  -0.45, knee 0.9, ankle -0.45 rad), legs bent alike; base fixed at the identity.
- Lambda = (J M^-1 J^T + eps I)^-1, eps = 1e-5, with J the 6 x n_joints Jacobian of the left
  sole relative to base_link (joint columns only: fixed base), LOCAL_WORLD_ALIGNED (axes of
  base_link), rows [linear x y z, angular x y z]. For a closed chain, J G and G^T M G with
  G = d theta / d theta_a (the projected forms of section 2.6).
- chi_j = ||col_j(Lambda_serial)|| / ||col_j(Lambda_closed)||: full columns 1-3 ("linear")
  and 4-6 ("angular").
- CAMM: the angular rows (3:6) of Pinocchio's centroidal map A_G (Orin-Goswami-Lee); for a
  closed chain A_G G_f. gamma_x,y,z = ratio of the norms of the CAMM's x, y, z rows over the
  two legs' joint-velocity columns, both robots in the same coordinates: the serial leg joints
  (hip yaw, roll, pitch, knee, ankle pitch, roll; for the closed chain the serial-equivalent
  joints, columns A_G G_f (P J_m)^-1). Also reported: the same over the left leg only, and
  in the closed chain's actuator coordinates (m/s; not unit-comparable, for the record).
"""
from __future__ import annotations

from typing import Dict, List

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pinocchio as pin

from ..dynamics.closed_chain import LoopClosureKinematics

EPS = 1e-5
AXES = ["lin_x", "lin_y", "lin_z", "ang_x", "ang_y", "ang_z"]


def _fixed_base_q(robot) -> np.ndarray:
    q = robot.q_stand.copy()
    q[:7] = (0, 0, 0, 0, 0, 0, 1)
    return q


def _left_sole(robot) -> str:
    for c in robot.contacts:
        if c.leg.startswith("left") or c.frame.startswith("l"):
            return c.frame
    return robot.contacts[0].frame


def leg_serial_joints(robot) -> List[List[str]]:
    m = robot.model
    return [leg.joint_names(m) for leg in robot.legs]


def cartesian_inertia(robot, frame: str = None) -> np.ndarray:
    """Lambda (6x6) of ``frame`` relative to the base (projected for closed chains)."""
    kin = LoopClosureKinematics(robot)
    m, d = robot.model, robot.model.createData()
    q = _fixed_base_q(robot)
    frame = frame or _left_sole(robot)
    M = pin.crba(m, d, q)
    M = np.triu(M) + np.triu(M, 1).T
    pin.computeJointJacobians(m, d, q)
    pin.updateFramePlacements(m, d)
    J = pin.getFrameJacobian(m, d, m.getFrameId(frame), pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    G_f, _ = kin.projection(q)
    G = G_f[6:, 6:]
    Jr = J[:, 6:] @ G
    Mr = G.T @ M[6:, 6:] @ G
    return np.linalg.inv(Jr @ np.linalg.solve(Mr, Jr.T) + EPS * np.eye(6))


def camm(robot, coordinates: str = "serial") -> Dict[str, np.ndarray]:
    """Angular rows of the centroidal map over the legs' columns: 'serial' (leg joints, or the
    serial-equivalent joints of a closed chain) or 'actuated'. Returns {'both', 'left'}."""
    kin = LoopClosureKinematics(robot)
    m, d = robot.model, robot.model.createData()
    q = _fixed_base_q(robot)
    Ag = pin.computeCentroidalMap(m, d, q)[3:6]
    G_f, _ = kin.projection(q)
    legs = leg_serial_joints(robot)
    vcol = lambda n: m.joints[m.getJointId(n)].idx_v   # noqa: E731
    serial = [n for leg in legs for n in leg]
    if kin.L == 0:
        cols = {"both": [vcol(n) for n in serial], "left": [vcol(n) for n in legs[0]]}
        return {k: Ag[:, c] for k, c in cols.items()}
    A_act = Ag @ G_f[:, 6:]                         # columns: actuated joint velocities
    if coordinates == "actuated":
        left = [i for i, n in enumerate(kin.actuated_joints) if n.startswith(legs[0][0][:2])]
        return {"both": A_act, "left": A_act[:, left]}
    Js = G_f[[vcol(n) for n in serial], 6:]         # serial-equivalent velocities = Js v_a
    A_ser = A_act @ np.linalg.inv(Js)
    return {"both": A_ser, "left": A_ser[:, :len(legs[0])]}


def compare(serial_robot, closed_robot) -> Dict[str, object]:
    """chi (Lambda columns) and gamma (CAMM rows) of serial vs closed, as in Table III."""
    Ls, Lc = cartesian_inertia(serial_robot), cartesian_inertia(closed_robot)
    chi = np.linalg.norm(Ls, axis=0) / np.linalg.norm(Lc, axis=0)
    out = {"serial": serial_robot.name, "closed": closed_robot.name,
           "chi": dict(zip(AXES, chi.tolist())),
           "lambda_column_norms": {serial_robot.name: np.linalg.norm(Ls, axis=0).tolist(),
                                   closed_robot.name: np.linalg.norm(Lc, axis=0).tolist()},
           "paper_table_iii": {"chi_linear": [3.6, 4.1, 4.6], "chi_angular": [11.4, 4.9, 3.6],
                               "gamma": [2.6, 2.7, 2.0]}}
    cs, cc = camm(serial_robot), camm(closed_robot)
    for key in ("both", "left"):
        g = np.linalg.norm(cs[key], axis=1) / np.linalg.norm(cc[key], axis=1)
        out[f"gamma_{key}_legs_serial_coordinates"] = dict(zip(["x", "y", "z"], g.tolist()))
    ca = camm(closed_robot, "actuated")
    g = np.linalg.norm(cs["both"], axis=1) / np.linalg.norm(ca["both"], axis=1)
    out["gamma_both_legs_actuator_coordinates"] = dict(zip(["x", "y", "z"], g.tolist()))
    out["conventions"] = __doc__.split("Conventions (the paper leaves them open):")[1].strip()
    return out


def plot_comparison(result: Dict[str, object], path) -> None:
    matplotlib.use("Agg")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    chi = [result["chi"][a] for a in AXES]
    paper = result["paper_table_iii"]["chi_linear"] + result["paper_table_iii"]["chi_angular"]
    x = np.arange(6)
    axes[0].bar(x - 0.2, chi, 0.4, label=f"{result['serial']} / {result['closed']}")
    axes[0].bar(x + 0.2, paper, 0.4, label="paper: TALOS / Kangaroo")
    axes[0].set_xticks(x, AXES)
    axes[0].set_ylabel("chi = |col Lambda_serial| / |col Lambda_closed|")
    axes[0].set_title("Equivalent Cartesian inertia at the left sole")
    axes[0].axhline(1, color="k", lw=0.5)
    axes[0].legend(fontsize=8)
    g = result["gamma_both_legs_serial_coordinates"]
    axes[1].bar(np.arange(3) - 0.2, [g[k] for k in "xyz"], 0.4, label="ours (leg joint columns)")
    axes[1].bar(np.arange(3) + 0.2, result["paper_table_iii"]["gamma"], 0.4, label="paper")
    axes[1].set_xticks(range(3), ["x", "y", "z"])
    axes[1].set_ylabel("gamma = |row CAMM_serial| / |row CAMM_closed|")
    axes[1].set_title("Centroidal angular momentum matrix")
    axes[1].axhline(1, color="k", lw=0.5)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

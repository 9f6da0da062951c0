"""Static feasibility of a damaged legged robot: can it stand at all on the feet it has left?

For a morphology (legs or links lost, joints locked) the question is whether *some* standing
posture keeps the centre of mass inside the support polygon of the remaining feet while every
joint stays within its position limits and every motor within its torque limit. It is a small
nonlinear programme (SLSQP, scipy), body level at the origin of the plane, over

    x = (z_b, q_s, f, s):  base height, the free joints of the supporting legs, the vertical
                           force of each supporting foot, the stability margin

    max  s
    s.t. p_i,z(q) = 0                               each supporting foot on the ground
         sum_i f_i = m g,  sum_i f_i (p_i,xy - c_xy) = 0      static equilibrium
         d_e(c_xy) >= s  for each edge e of the polygon (feet in order around the body)
         |g_j(q) - sum_i J_i,z,j f_i| <= tau_max,j  each free joint (static torques)
         f_i >= 0,  q_lo <= q_s <= q_hi,  z_b >= min_height_fraction * (standing base height)

(``c`` the CoM of what is left, ``g(q)`` the generalized gravity, ``J_i,z`` the vertical row of
foot ``i``'s world-aligned Jacobian.) Vertical foot forces are enough on flat ground with the
body at rest, and with them the equilibrium rows say exactly that the CoM is a convex
combination of the feet, i.e. inside their polygon; ``s`` then asks for a margin too. Supporting
legs are the legs with a foot left; a locked joint stays at its angle (the leg may still stand
on its foot). The optimum is re-checked independently of the solver (convex hull of the feet
by :func:`~.locomotion.swing.convex_hull`, residuals of every constraint); it is feasible when
that check passes with a margin of at least ``margin_required``. Further starts (the legs
turned about their hips in both directions) guard against a poor local optimum when the first
finds no feasible posture; ``margin`` is that of the first feasible posture found (or the best).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np
import pinocchio as pin
from scipy.optimize import minimize

from ..model.morphology import Morphology, MorphologyMap
from .locomotion.swing import convex_hull, margin as hull_margin

GRAVITY = 9.81
MIN_HEIGHT_FRACTION = 0.5      # of the standing base height: lower is sitting, not standing
TOLERANCE = 1e-4               # m and N m: residuals accepted by the independent check


@dataclass
class Feasibility:
    feasible: bool
    margin: float                      # m, CoM inside the support polygon (negative: outside)
    legs: List[str]                    # the supporting legs
    q: np.ndarray                      # healthy-size configuration of the best posture
    forces: Dict[str, float] = field(default_factory=dict)   # foot frame -> vertical force (N)
    torque_ratio: float = 0.0          # largest |tau_j| / tau_max,j of the free joints
    reason: str = ""


def static_feasibility(robot, morphology: Morphology, *, margin_required: float = 0.0,
                       starts=(0.0, 0.4, -0.4)) -> Feasibility:
    """The best standing posture of ``robot`` with ``morphology`` (see the module docstring)."""
    mmap = MorphologyMap(robot, morphology)
    model = mmap.model
    data = model.createData()
    frames = {c.frame for c in mmap.contacts}
    legs = [leg for leg in robot.legs if leg.contact_frame in frames]
    q_stand = mmap.expand_q(mmap.reduce_q(robot.q_stand))
    q_stand[:3] = 0.0
    q_stand[3:7] = (0.0, 0.0, 0.0, 1.0)
    pin.framesForwardKinematics(model, data, q_stand)
    foot_ids = [model.getFrameId(leg.contact_frame) for leg in legs]
    ground = float(np.mean([data.oMf[f].translation[2] for f in foot_ids])) if foot_ids else -robot.q_stand[2]
    height0 = -ground
    mass = float(sum(model.inertias[j].mass for j in range(model.njoints)))
    if len(legs) < 3:
        return Feasibility(False, -np.inf, [leg.name for leg in legs], q_stand,
                           reason=f"{len(legs)} feet left: no support polygon")
    # feet in order around the body (angle of the hip), so consecutive feet are polygon edges
    hip_angle = [np.arctan2(*data.oMi[leg.joints[0]].translation[[1, 0]]) for leg in legs]
    order = list(np.argsort(hip_angle))
    legs = [legs[i] for i in order]
    foot_ids = [foot_ids[i] for i in order]
    locked = set(mmap.locked_joints)
    free = [j for leg in legs for j in leg.joints if j not in locked and model.joints[j].nv == 1]
    iq = np.array([model.joints[j].idx_q for j in free])
    iv = np.array([model.joints[j].idx_v for j in free])
    actuated = [j for j in mmap.active_joints if model.joints[j].nv == 1 and j not in locked and j > 1]
    tau_iv = np.array([model.joints[j].idx_v for j in actuated])
    tau_max = model.effortLimit[tau_iv]
    n, nf = len(free), len(legs)
    cache = {}

    def evaluate(x):
        key = x.tobytes()
        if key not in cache:
            if len(cache) > 256:        # finite-difference sweeps revisit a few points
                cache.clear()
            q = q_stand.copy()
            q[2] = x[0]
            q[iq] = x[1:1 + n]
            f = x[1 + n:1 + n + nf]
            pin.computeAllTerms(model, data, q, np.zeros(model.nv))
            pin.updateFramePlacements(model, data)
            feet = np.array([data.oMf[fid].translation for fid in foot_ids])
            com = pin.centerOfMass(model, data, q)
            g = pin.computeGeneralizedGravity(model, data, q)
            tau = g.copy()
            for fid, fi in zip(foot_ids, f):
                J = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)
                tau -= J[2] * fi
            cache[key] = (q, feet, com, tau[tau_iv], f)
        return cache[key]

    def edges(feet, com):
        d = []
        for k in range(nf):
            a, b = feet[k, :2], feet[(k + 1) % nf, :2]
            e = b - a
            d.append((e[0] * (com[1] - a[1]) - e[1] * (com[0] - a[0])) / max(np.linalg.norm(e), 1e-9))
        return np.array(d)

    def eq(x):
        _, feet, com, _, f = evaluate(x)
        return np.concatenate([feet[:, 2], [f.sum() / (mass * GRAVITY) - 1.0],
                               (f @ (feet[:, :2] - com[:2])) / (mass * GRAVITY)])

    def ineq(x):
        _, feet, com, tau, _ = evaluate(x)
        return np.concatenate([edges(feet, com) - x[-1], 1.0 - np.abs(tau) / tau_max])

    bounds = ([(MIN_HEIGHT_FRACTION * height0, 2.0 * height0)]
              + list(zip(model.lowerPositionLimit[iq], model.upperPositionLimit[iq]))
              + [(0.0, None)] * nf + [(None, None)])
    best = None
    coxa = np.array([k for k, j in enumerate(free) if any(j == leg.joints[0] for leg in legs)], int)
    for turn in starts:
        x0 = np.concatenate([[height0], q_stand[iq], np.full(nf, mass * GRAVITY / nf), [0.0]])
        x0[1 + coxa] = np.clip(x0[1 + coxa] + turn, model.lowerPositionLimit[iq][coxa], model.upperPositionLimit[iq][coxa])
        res = minimize(lambda x: -x[-1], x0, method="SLSQP", bounds=bounds,
                       constraints=[{"type": "eq", "fun": eq}, {"type": "ineq", "fun": ineq}],
                       options={"maxiter": 300, "ftol": 1e-10})
        checked = _check(res.x, evaluate, eq, bounds, tau_max, legs)
        if best is None or checked.margin > best.margin:
            best = checked
        if best.feasible and best.margin >= margin_required:
            break               # a posture exists: that is the question
    best.feasible = bool(best.feasible and best.margin >= margin_required)
    return best


def _check(x, evaluate, eq, bounds, tau_max, legs) -> Feasibility:
    """The solver's answer re-checked: residuals, bounds, and the margin from a convex hull."""
    x = np.array([np.clip(v, lo if lo is not None else -np.inf, hi if hi is not None else np.inf)
                  for v, (lo, hi) in zip(x, bounds)])
    q, feet, com, tau, f = evaluate(x)
    hull = convex_hull(feet[:, :2])
    margin = float(hull_margin(com[:2], hull)) if len(hull) >= 3 else -np.inf
    ratio = float(np.max(np.abs(tau) / tau_max)) if len(tau) else 0.0
    residual = float(np.max(np.abs(eq(x))))
    reasons = []
    if residual > TOLERANCE:
        reasons.append(f"equilibrium or feet-on-ground residual {residual:.1e}")
    if ratio > 1.0 + TOLERANCE:
        reasons.append(f"torque {ratio:.2f} x the limit")
    if margin <= 0.0:
        reasons.append(f"CoM {-margin * 1e3:.1f} mm outside the support polygon")
    return Feasibility(not reasons, margin, [leg.name for leg in legs], q,
                       {leg.contact_frame: float(fi) for leg, fi in zip(legs, f)}, ratio, "; ".join(reasons))

"""A soft-rigid module (joint followed by body) and its per-module terms, compiled once.

The terms are what the inter-body recursion needs [Pustina 2024, Sec. 4-5]: the relative
transform ``^{i-1}T_i = T_J T_B`` (Eq. (9)), the relative velocity, angular velocity, their
derivatives and speed Jacobians (Eqs. (39)-(40)), and the body integrals in the distal frame
{S_i}: mass, CoM and its derivatives, inertia and its rate and gradient, the deformation
momentum ``h_d = sum w r x rdot`` and the sums that make pi* (Eq. (47), with the centrifugal
term corrected to use dI/dq).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import casadi as ca
import numpy as np

from hybrid_dynamics.soft.bodies import Body
from hybrid_dynamics.soft.joints import Joint
from hybrid_dynamics.soft.symbolic import segment, vee

TERM_NAMES = ("R", "t", "vrel", "wrel", "vdrel", "wdrel", "Jv", "Jw", "m", "pc", "pdc", "pddc",
              "Jc", "I", "Id", "dI", "hd", "Srr", "H", "G", "Mbb", "Jrr", "s")


@dataclass
class Module:
    """Joint ``joint`` then body ``body``; ``parent`` names the module whose distal frame the
    joint is placed in (None: the base)."""
    name: str
    joint: Joint
    body: Body
    parent: Optional[str] = None

    @property
    def nq(self) -> int:
        return self.joint.nq + self.body.nq

    @property
    def nv(self) -> int:
        return self.joint.nv + self.body.nq


def module_transform(module: Module) -> ca.Function:
    """q_i -> (R, t) of ``^{i-1}T_i = T_J T_B`` [Pustina 2024, Eq. (9)] alone (no body integrals):
    what poses, material points and tendons need."""
    q = ca.SX.sym("q", module.nq)
    RJ, tJ = module.joint.transform(segment(q, 0, module.joint.nq))
    RB, tB = module.body.distal_transform(segment(q, module.joint.nq, module.nq))
    return ca.Function(f"transform_{module.name}", [q], [ca.densify(RJ @ RB), ca.densify(tJ + RJ @ tB)])


def module_terms(module: Module) -> ca.Function:
    """The compiled function (q_i, v_i, a_i) -> TERM_NAMES of one module."""
    joint, body = module.joint, module.body
    q, v, a = ca.SX.sym("q", module.nq), ca.SX.sym("v", module.nv), ca.SX.sym("a", module.nv)
    qJ, qB = segment(q, 0, joint.nq), segment(q, joint.nq, module.nq)
    vJ, vB = segment(v, 0, joint.nv), segment(v, joint.nv, module.nv)
    aB = segment(a, joint.nv, module.nv)
    RJ, tJ = joint.transform(qJ)
    RB, tB = body.distal_transform(qB)
    R, t = RJ @ RB, tJ + RJ @ tB                                   # Eq. (9)
    qd = ca.vertcat(joint.qdot(qJ, vJ), vB)
    z, zd = ca.vertcat(q, v), ca.vertcat(qd, a)
    vrel = ca.jtimes(t, q, qd)
    Rd = ca.reshape(ca.jtimes(ca.vec(R), q, qd), 3, 3)
    wrel = vee(Rd @ R.T)
    vdrel, wdrel = ca.jtimes(vrel, z, zd), ca.jtimes(wrel, z, zd)
    Jv, Jw = ca.jacobian(vrel, v), ca.jacobian(wrel, v)

    (m, pc, pdc, pddc, Jc, I, Id, dI, hd, Srr, H, G, Mbb, Jrr) = body.integrals(qB, vB, aB)
    s = body.elastic_force(qB, vB)
    values = [R, t, vrel, wrel, vdrel, wdrel, Jv, Jw, m, pc, pdc, pddc, Jc, I, Id, dI,
              hd, Srr, H, G, Mbb, Jrr, s]
    return ca.Function(f"terms_{module.name}", [q, v, a], [ca.densify(ca.SX(x)) for x in values],
                       ["q", "v", "a"], list(TERM_NAMES))


def check_distal_face(module: Module, samples: int = 3, tol: float = 1e-9,
                      rng: Optional[np.random.Generator] = None) -> Optional[str]:
    """None when Assumption 2 holds [Pustina 2024, Sec. 3]: the face points are orthogonal and
    distinct (Eq. (4)) and the face frame stays orthonormal at random configurations;
    otherwise what is wrong."""
    body = module.body
    xJ, xa, xb = body.face
    da, db = xa - xJ, xb - xJ
    if min(np.linalg.norm(da), np.linalg.norm(db)) < 1e-12:
        return "distal face points coincide (degenerate frame)"
    if abs(da @ db) > 1e-9 * np.linalg.norm(da) * np.linalg.norm(db):
        return "distal face points are not orthogonal: (x_a - x_J).(x_b - x_J) != 0"
    if body.relax_face or body.orthonormal_face or body.nq == 0:
        return None
    qB = ca.SX.sym("q", body.nq)
    RB, _ = body.distal_transform(qB)
    frame = ca.Function("face", [qB], [RB])
    rng = rng or np.random.default_rng(0)
    for _ in range(samples):
        Rv = np.array(frame(0.3 * rng.standard_normal(body.nq)))
        err = np.abs(Rv.T @ Rv - np.eye(3)).max()
        if err > tol:
            return f"distal face deforms (|R^T R - I| = {err:.2e}): Assumption 2 fails; " \
                   "relax it only on the last body of a branch"
    return None

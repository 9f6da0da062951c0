"""The controller's model update for a robot with soft leaves (soft feet): the whole robot's M
and h from :class:`~hybrid_dynamics.soft.leaves.SoftLeaves`, and contact rows on the material
points of the soft modules.

The deformation coordinates are unactuated: with ``soft.condensation: dynamic`` they are QP
variables and their rows join the floating-base rows as equalities,

    M dv + h = S^T tau + J_c^T f,      S = [0 | I_actuated | 0]     (base and soft rows: S = 0)

with ``J_c`` the world Jacobian of each contact material point (rigid and deformation columns)
and the contact acceleration ``J_c dv + Jdot_c v = 0`` on that point. The pads' visco-elastic
force ``s(q_s, v_s)`` in their rows is the one predicted ``soft.horizon`` ahead (semi-implicit,
``H``: the control period), ``s + K (H v_s + H^2 a_s) + D H a_s`` with the tangents ``K``,
``D`` (soft.leaves.SoftLeaves.spring_tangents), i.e.

    M_ss <- M_ss + H D + H^2 K,     h_s <- h_s + H K v_s

A pad is a stiff spring on a tiny mass: with the force at the current state (``H = 0``) the
contact force is pinned by the measured deformation and the QP can change it only through huge
accelerations of the pad's mass, which the next sample's state does not follow (jethexa_soft
falls within 0.6 s); the predicted force is what the pad will push with while the command is
held. With
``soft.condensation: quasi_static`` the modes are taken as stiff and at equilibrium under the
current load (``a_s = 0``, their rows left out): the QP keeps the rigid coordinates only, with
the pads' mass lumped on their frames at the current deformation (``M_r + J^T M_FF J``, the
rigid rows of the module docstring of soft/leaves.py) and a contact force passed through a pad
in static equilibrium to its frame as the same force at the deformed contact point
(``J_c,r^T f``). Dynamic keeps every coupling and costs the larger QP; quasi-static is right
when the pads' modes are much faster than the control bandwidth.

A damaged morphology (``morphology_map``): the modules hung from removed links leave with them
(:meth:`SoftLeaves.for_morphology`), the leaves are evaluated in the healthy-size rigid
coordinates (``expand_q``/``expand_v``, removed bodies without inertia) and the rows and columns
of the lost and locked joints are sliced out, as the rigid model update does ([Farghdani 2025],
Algorithm 1). ``q = (q_r, q_s)`` then holds the morphology's rigid coordinates and the surviving
modules' ones (``leaves.kept``: their positions among the healthy robot's).
"""
from __future__ import annotations

from typing import List

import numpy as np
import pinocchio as pin

from ..errors import InputError
from ..soft.leaves import SoftLeaves
from .model_update import LWA, ContactModel, ModelUpdate

CONDENSATIONS = ("dynamic", "quasi_static")


class SoftModelUpdate(ModelUpdate):
    """:class:`ModelUpdate` with soft leaves; ``q = (q_r, q_s)``, ``v = (v_r, v_s)`` in, and
    the controller's coordinates ``v`` (dynamic) or ``v_r`` (quasi-static)."""

    def __init__(self, robot, contacts: List[ContactModel], leaves: SoftLeaves, condensation: str,
                 morphology_map=None, horizon: float = 0.0):
        if condensation not in CONDENSATIONS:
            raise InputError(f"soft.condensation '{condensation}' is not dynamic or quasi_static",
                             field="soft.condensation")
        super().__init__(robot, contacts, morphology_map)
        if morphology_map is not None:
            leaves = leaves.for_morphology(morphology_map)
        self.leaves = leaves
        self.model, self.data = leaves.model, leaves.data
        self._oMi = self._base = None          # the leaves' own pass: read frame by frame
        self._data_views()
        self.dynamic = condensation == "dynamic"
        self.horizon = float(horizon)
        r = len(self.v_index)
        self.n = r + leaves.ns if self.dynamic else r
        # the healthy-size (rigid, soft) columns the controller keeps: its rigid ones, then the
        # surviving modules' (all of them, whatever the condensation: the contact Jacobians' columns)
        self.columns = np.concatenate([self.v_index, leaves.nv_r + np.arange(leaves.ns)]).astype(int)
        self.mass = self.mass + leaves.mass
        self.unactuated = np.concatenate([np.arange(self.nb), np.arange(r, self.n)]).astype(int)
        root = {frame: k for k, frame in enumerate(leaves.contact_roots)}
        self._soft = [root.get(c.frame) for c in contacts]
        for c, k in zip(contacts, self._soft):
            if k is not None and not c.at_origin:
                raise InputError(f"contact {c.frame}: a soft-module contact is one material point, "
                                 "declare it as a point contact", field="contacts")
        self._allocate(contacts, self.n)

    def update(self, q: np.ndarray, v: np.ndarray) -> None:
        leaves, model, data, n = self.leaves, self.model, self.data, self.n
        self.q, self.v = q, v
        r = len(self.v_index)
        if self.sliced:                    # the healthy-size rigid coordinates, then the modules'
            nq = self.mmap.nq
            q_leaves = np.concatenate([self.mmap.expand_q(q[:nq]), q[nq:]])
            v_leaves = np.concatenate([self.mmap.expand_v(v[:r]), v[r:]])
        else:
            q_leaves, v_leaves = q, v
        M, h = leaves.mass_and_nle(q_leaves, v_leaves)
        P, Jc, bc = leaves.contact_points(q_leaves, v_leaves, updated=True)
        if self.sliced:
            cols = self.columns
            M, h, Jc = M[np.ix_(cols, cols)], h[cols], Jc[:, cols]
        if self.dynamic and self.horizon:           # the spring-damper predicted H ahead
            H, (K, D) = self.horizon, leaves.spring_tangents()
            r = len(self.v_index)
            M[r:, r:] += H * D + H * H * K
            h[r:] += H * K @ v[r:]
        self.M, self.h = (M, h) if self.dynamic else (M[:n, :n], h[:n])
        self.v_m = v[:n]
        for i, fid in enumerate(self._ids):
            J6, drift, k = self.J6[i], self.drift[i], self._soft[i]
            J = pin.getFrameJacobian(model, data, fid, LWA)
            J6[:, :r] = J[:, self.v_index] if self.sliced else J
            drift[:] = pin.getFrameClassicalAcceleration(model, data, fid, LWA).vector
            self.frame_R[i], self.frame_p[i] = data.oMf[fid].rotation, data.oMf[fid].translation
            if k is not None:                      # the contact material point of a soft module
                J6[:3] = Jc[3 * k:3 * k + 3, :n]
                drift[:3] = bc[3 * k:3 * k + 3]
                self.frame_p[i] = P[k]
            self.Jp[i][:] = J6[:3]

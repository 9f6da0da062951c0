"""One Pinocchio pass per control cycle, and every quantity the tasks and constraints read.

:meth:`ModelUpdate.update` runs ``pin.computeAllTerms`` once (mass matrix ``M``, non-linear
effects ``h = C v + g``, joint Jacobians, CoM and its velocity, centroidal momentum, and the
frame accelerations at zero joint acceleration), then reads per contact frame:

  ``J6``     6 x n Jacobian in LOCAL_WORLD_ALIGNED (linear rows then angular rows):
             world-frame velocity of the frame origin and angular velocity;
  ``drift``  ``J̇6 v`` as the *classical* acceleration (``a = J6 dv + drift``);
  ``Jp``     3k x n Jacobians of the k contact points p_i (frame offsets), world linear:
             ``J_pi = J6[:3] - [R p_i]x J6[3:]`` (a point force f_i enters the dynamics as
             ``J_pi^T f_i``); for a point contact at the frame origin ``Jp = J6[:3]``.

Positions and velocities of contact frames are read on demand (swing tasks only), and so are
any other frame's Jacobian and drift (:meth:`ModelUpdate.frame_terms`), the centroidal momentum
matrix ``A_g`` with its drift ``Ȧ_g v`` (computeAllTerms fills ``Ag`` and ``dAg``) and the
x-rows of the decoupled equations (:attr:`ModelUpdate.decoupled_rows`, the decoupled tasks).

Damaged robots (:class:`~hybrid_dynamics.model.morphology.MorphologyMap`): Pinocchio runs on
the healthy-size model whose removed bodies have zero inertia, at ``expand_q/expand_v``, and
rows/columns are sliced with ``v_index`` ([Farghdani 2025], Algorithm 1): exact, no model rebuild.

Closed chains ([Mingo Hoffman 2024, Appendix B]): with ``v = G_f v_m`` and ``a = G_f a_m + d`` from
:class:`~hybrid_dynamics.dynamics.closed_chain.LoopClosureKinematics`, the controller works in
the independent coordinates: ``M_red = G_f^T M G_f``, ``h_red = G_f^T (h + M d)``,
``J_red = J G_f``, ``drift_red = drift + J d``; G_f's passive rows and ``d`` come from the pass's
placements, J and dJ in one compiled call, kept in place from cycle to cycle
(:meth:`~hybrid_dynamics.model.loop_kinematics.LoopKinematics.projection_into`). Loops that leave internal motions free (split
coaxial joints, Cassie's springs) add their inertial ones to the coordinates: ``G_f`` gets the
columns ``N`` (:meth:`~hybrid_dynamics.dynamics.closed_chain.LoopClosureKinematics.inertial_free_motions`),
``v_m`` the rates ``N^T v_u``, and their rows, like the base's, carry no actuator. Passive
joints' springs (Cassie's shin and heel) act in ``h`` as known forces: ``h_red = G_f^T (h - tau_s + M d)``.

Coordinates ``v_m = [base (nb: 6, or 0 for a fixed base), actuated joints, free motions]``;
``unactuated`` lists the rows of the dynamics with no actuator (base and free motions).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np
import pinocchio as pin

from ..dynamics.closed_chain import LoopState
from ..dynamics.decoupling import VelocityFormRows, velocity_form_coriolis, velocity_form_rows
from ..model.loop_kernels import reduce_dynamics
from ..model.loop_kinematics import placement_view
from . import kernels

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


@dataclass
class ContactModel:
    """A contact of the current morphology with its controller settings."""
    frame: str
    frame_id: int
    kind: str                 # "point" (3 acceleration rows) or "surface" (6 rows)
    points: np.ndarray        # (k, 3) point offsets in the frame
    normal: np.ndarray        # world contact normal
    friction: float
    min_normal_force: float   # per point
    max_normal_force: float   # per point

    @property
    def n_points(self) -> int:
        return len(self.points)

    @property
    def n_force(self) -> int:
        return 3 * len(self.points)

    @property
    def n_rows(self) -> int:
        return 6 if self.kind == "surface" else 3

    @property
    def at_origin(self) -> bool:
        """A single point at the frame origin: its Jacobian is the frame's linear rows."""
        return len(self.points) == 1 and not self.points.any()


class ModelUpdate:
    """Per-cycle dynamics and kinematics in the controller's coordinates (size ``n``)."""

    def __init__(self, robot, contacts: List[ContactModel], morphology_map=None, projection=None):
        self.robot = robot
        self.mmap = morphology_map
        self.model = morphology_map.model if morphology_map is not None else robot.model
        self.data = self.model.createData()
        self.contacts = contacts
        self.projection = projection          # LoopClosureKinematics or None
        # the contact frames' and the loops' terms from this pass's placements, J and dJ
        # (computeAllTerms fills them): one compiled call each
        self._oMi = placement_view(self.model, self.data)
        # the base's rotation and position: views of Pinocchio's placement of joint 1
        self._base = (self._oMi[1, :9].reshape(3, 3).T, self._oMi[1, 9:12]) \
            if self._oMi is not None and self.model.njoints > 1 else None
        self._loops_compiled = projection is not None and projection.compiled and self._oMi is not None \
            and self.model.nv == projection.nv
        # the whole projection in one compiled call, into G and d kept from cycle to cycle, and
        # the reduced dynamics and contact Jacobians in another
        self._loops_fused = self._loops_compiled and projection.fused and not projection.n_inertial \
            and not projection.has_springs
        self._G_d = (projection.G_f.copy(), np.zeros(projection.nv)) if self._loops_fused else None
        nv_full = self.model.nv
        self.v_index = (morphology_map.v_index if morphology_map is not None else np.arange(nv_full))
        self.sliced = len(self.v_index) != nv_full
        self.nv = len(self.v_index)
        m = self.model
        self.nb = 6 if m.njoints > 1 and m.joints[1].shortname() == "JointModelFreeFlyer" else 0
        self._m_index = np.r_[np.arange(self.nb), projection.ia].astype(np.intp) if projection is not None else None
        self.n_free = 0 if projection is None else projection.n_inertial
        n_act = len(robot.actuated_joints)
        self.n = self.nv if projection is None else self.nb + n_act + self.n_free
        self.unactuated = np.arange(self.nb) if projection is None else \
            np.r_[np.arange(self.nb), self.nb + n_act + np.arange(self.n_free)].astype(int)
        self.leaves = None                    # soft leaves (control/soft_model_update.py)
        self.mass = float(sum(self.model.inertias[j].mass for j in range(self.model.njoints)))
        self.gravity = np.array(self.model.gravity.linear)
        self.G_x = np.concatenate([-self.mass * self.gravity, np.zeros(3)])   # G_x of the decoupled x-rows
        self._allocate(contacts, self.n)
        self._ids = [c.frame_id for c in contacts]
        self._plain = [c.at_origin for c in contacts]
        self._soles = [i for i, c in enumerate(contacts) if not c.at_origin]
        self._frame_tables(contacts)
        self._data_views()
        # M, h, J6_stack, drift_stack, frame_p, the CoM, its velocity and the base's rotation are
        # the same arrays every cycle, written in place (a rigid robot's update, no morphology
        # slice): the formulation's plan keeps them in its call's arguments (control/assembly.py)
        self.same_arrays = (type(self).update is ModelUpdate.update and projection is None and not self.sliced
                            and self._terms is not None and self._com is not None and self._base is not None)
        self.q = self.v = self.v_m = None
        self.v_full = None
        self.G = None
        self.d = None
        self._rows = None
        self.cache = {}                  # per-cycle terms that tasks share (cleared by update)

    def _allocate(self, contacts, n: int) -> None:
        """Per-contact buffers, written in place each cycle: ``J6[i]`` and ``drift[i]`` are views
        of the stacks ``J6_stack`` (contacts, 6, n) and ``drift_stack`` (contacts, 6) that the
        compiled kernels read whole (:mod:`.kernels`); a point contact at its frame's origin
        has ``Jp[i]`` a view of ``J6[i][:3]``; the frames' rotations and origins (world)."""
        self.J6_stack = np.zeros((len(contacts), 6, n))
        self.drift_stack = np.zeros((len(contacts), 6))
        self.J6 = list(self.J6_stack)
        self.drift = list(self.drift_stack)
        self.Jp = [J[:3] if c.at_origin else np.zeros((c.n_force, n)) for c, J in zip(contacts, self.J6)]
        self.frame_R = np.zeros((len(contacts), 3, 3))
        self.frame_p = np.zeros((len(contacts), 3))

    def _frame_tables(self, contacts) -> None:
        """What :func:`.kernels.contact_frames` reads besides the pass: each contact frame's
        joint and placement in it, the joint's supporting velocity columns, the columns kept
        (a damaged robot's), and for closed chains a full-width stack to project."""
        m = self.model
        nc, nv = len(contacts), m.nv
        self._fjoint = np.array([m.frames[c.frame_id].parentJoint for c in contacts], dtype=np.intp)
        self._fplace = np.array([m.frames[c.frame_id].placement.homogeneous for c in contacts]).reshape(nc, 4, 4)
        self._support = np.zeros((nc, nv))
        for i, j in enumerate(self._fjoint):
            for k in m.supports[int(j)]:
                if k > 0:
                    self._support[i, m.joints[k].idx_v:m.joints[k].idx_v + m.joints[k].nv] = 1.0
        self._cols = np.arange(nv) if self.projection is not None else np.asarray(self.v_index, dtype=np.intp)
        self._J6_full = np.zeros((nc, 6, nv)) if self.projection is not None else None

    def _data_views(self) -> None:
        """The CoM and its velocity, ``M``, ``nle``, ``J`` and ``dJ`` as views of Pinocchio's
        storage (each ``data.com[0]`` is a Python call of about a microsecond, each ``data.M``
        0.2 us), when ``self.data`` hands out views (else None: read each time)."""
        d = self.data
        com, vcom = d.com[0], d.vcom[0]
        self._com = (com, vcom) if not (com.flags.owndata or vcom.flags.owndata) else None
        terms = (d.M, d.nle, d.J, d.dJ)
        self._terms = terms if not any(a.flags.owndata for a in terms) else None

    # ------------------------------------------------------------------ cycle
    def update(self, q: np.ndarray, v: np.ndarray) -> None:
        model, data = self.model, self.data
        if self.sliced:
            q_full, v_full = self.mmap.expand_q(q), self.mmap.expand_v(v)
        else:
            q_full, v_full = q, v
        self.q, self.v = q, v
        self.v_full = v_full
        self._rows = None
        self.cache.clear()
        pin.computeAllTerms(model, data, q_full, v_full)
        if self._loops_fused:
            self._closed_chain_compiled(data, v_full)
        elif self.projection is not None:
            kin = self.projection
            state = None
            if self._loops_compiled:
                e, JT, drift = kin.terms_from(data, self._oMi, v_full)
                state = LoopState(e, JT.T, drift)
            G, d = kin.projection(q_full, v_full, state)
            M = data.M
            vm = [v_full[:self.nb], v_full[kin.ia]]
            if self.n_free:
                M = np.triu(M) + np.triu(M, 1).T
                N = kin.inertial_free_motions(M)
                Nf = np.zeros((self.nv, self.n_free))
                Nf[kin.iu] = N
                G = np.hstack([G, Nf])
                vm.append(N.T @ v_full[kin.iu])
            self.G, self.d = G, d
            self.M = G.T @ M @ G
            self.h = G.T @ (data.nle - kin.spring_forces(q_full, v_full) + M @ d)
            self.v_m = np.concatenate(vm)
        elif self.sliced:
            ix = self.v_index
            self.M = data.M[np.ix_(ix, ix)]
            self.h = data.nle[ix]
            self.v_m = v
        else:
            self.M, self.h = self._terms[:2] if self._terms is not None else (data.M, data.nle)
            self.v_m = v
        if self._loops_fused:
            pass                         # the contact frames came with the reduction
        elif self._oMi is not None:
            full = self._J6_full
            J, dJ = self._terms[2:] if self._terms is not None else (data.J, data.dJ)
            kernels.CONTACT_FRAMES(self._oMi, self._fjoint, self._fplace, self._support, J, dJ, v_full,
                                   self._cols, self.J6_stack if full is None else full, self.drift_stack,
                                   self.frame_R, self.frame_p)
            if full is not None:         # closed chains: J G_f, drift + J d
                np.matmul(full, self.G, out=self.J6_stack)
                self.drift_stack += full @ self.d
        else:                            # placements not readable as one array: frame by frame
            for i, fid in enumerate(self._ids):
                self.J6[i][:], self.drift[i][:] = self.frame_terms(fid)
                self.frame_R[i], self.frame_p[i] = data.oMf[fid].rotation, data.oMf[fid].translation
        for i in self._soles:            # J_pi = J[:3] - [r_i]x J[3:], r_i = R p_i, all points at once
            kernels.point_jacobians(self.Jp[i], self.J6[i], self.frame_R[i], self.contacts[i].points)

    def _closed_chain_compiled(self, data, v_full: np.ndarray) -> None:
        """The closed-chain update of :meth:`update` in two compiled calls after the pass: G_f's
        passive rows and d (:meth:`~hybrid_dynamics.model.loop_kinematics.LoopKinematics.projection_into`),
        then the contact frames at full width and ``M = G^T M G``, ``h = G^T (h + M d)``,
        ``J6 G``, ``drift + J6 d`` over G_f's non-zeros (:func:`~hybrid_dynamics.model.loop_kernels.reduce_dynamics`)."""
        kin = self.projection
        G, d = self._G_d
        kin.projection_into(data, self._oMi, v_full, G, d)
        self.G, self.d = G, d
        self.v_m = v_full[self._m_index]
        full = self._J6_full
        J, dJ = self._terms[2:] if self._terms is not None else (data.J, data.dJ)
        kernels.CONTACT_FRAMES(self._oMi, self._fjoint, self._fplace, self._support, J, dJ, v_full, self._cols,
                               full, self.drift_stack, self.frame_R, self.frame_p)
        self.M, self.h = np.empty((self.n, self.n)), np.empty(self.n)
        reduce_dynamics(data.M, data.nle, G, d, full, self.drift_stack, self.M, self.h, self.J6_stack)

    # ------------------------------------------------------------------ on demand
    def _reduce(self, J: np.ndarray, a: np.ndarray):
        """A Jacobian of the full model and its drift ``J̇ v`` in the controller's coordinates."""
        if self.projection is not None:
            return J @ self.G, a + J @ self.d
        if self.sliced:
            return J[:, self.v_index], a
        return J, a

    def frame_terms(self, frame_id: int):
        """(J, drift) of a frame, LOCAL_WORLD_ALIGNED, drift the classical acceleration at dv = 0;
        ``frame_id`` -1: the root joint (the base body)."""
        model, data = self.model, self.data
        if frame_id < 0:
            J = pin.getJointJacobian(model, data, 1, LWA)
            a = pin.getClassicalAcceleration(model, data, 1, LWA).vector
        else:
            J = pin.getFrameJacobian(model, data, frame_id, LWA)
            a = pin.getFrameClassicalAcceleration(model, data, frame_id, LWA).vector
        return self._reduce(J, a)

    def centroidal_matrix(self):
        """(A_g, Ȧ_g v): ``h_c = A_g v`` and ``ḣ_c = A_g dv + Ȧ_g v`` (world axes at the CoM)."""
        return self._reduce(self.data.Ag, self.data.dAg @ self.v_full)

    @property
    def decoupled_rows(self) -> VelocityFormRows:
        """The x-rows of the decoupling transform in the velocity form at this cycle's state
        ([Feurstein 2021, Eq. (3.80)], computed once per cycle)."""
        if self._rows is None:
            data = self.data
            oMb = data.oMi[1]
            self._rows = velocity_form_rows(oMb.rotation, oMb.translation, data.com[0], data.hg.vector,
                                            data.Ig.matrix())
        return self._rows

    @property
    def decoupled_coriolis(self) -> np.ndarray:
        """C_x v_x of those x-rows (computed once per cycle, when a task needs it)."""
        c = self.cache.get("C_x_v_x")
        if c is None:
            data = self.data
            oMb = data.oMi[1]
            c = self.cache["C_x_v_x"] = velocity_form_coriolis(
                oMb.rotation, oMb.translation, data.com[0], self.v_full[:6], self.decoupled_rows.v_x,
                data.Ag[:, :6], data.dAg[:, :6])
        return c

    @property
    def com(self) -> np.ndarray:
        return self._com[0] if self._com is not None else self.data.com[0]

    @property
    def com_velocity(self) -> np.ndarray:
        return self._com[1] if self._com is not None else self.data.vcom[0]

    @property
    def base_rotation(self) -> np.ndarray:
        return self._base[0] if self._base is not None else self.data.oMi[1].rotation

    @property
    def base_translation(self) -> np.ndarray:
        return self._base[1] if self._base is not None else self.data.oMi[1].translation

    def frame_position(self, i: int) -> np.ndarray:
        return self.frame_p[i]

    def frame_rotation(self, i: int) -> np.ndarray:
        return self.frame_R[i]

    def frame_velocity(self, i: int) -> np.ndarray:
        return self.J6[i] @ self.v_m

    def point_positions(self, i: int) -> np.ndarray:
        return self.frame_p[i] + self.contacts[i].points @ self.frame_R[i].T

"""The whole-body inverse-dynamics QP: variables, tasks and constraints put together.

Variables ``x = (dv, f)``: the generalized accelerations (``n`` = nv of the current
morphology, or ``6 + n_actuated`` for a closed chain in the projected form of [Mingo Hoffman 2024,
Appendix B]) and the world-frame forces of the contact points (3 per point; a TALOS sole has
4 points). Torques are eliminated: the QP keeps only the six floating-base rows of the
dynamics as equalities, and the actuated rows give the torques afterwards
(:meth:`Formulation.decode`). The problem handed to a backend is

    min 1/2 x^T H x + g^T x    s.t.   A x = b,    l <= C x <= u

* cost: the weighted tasks of :mod:`.tasks` plus ``regularization * ||dv||^2``;
* equalities: floating-base dynamics, contact accelerations of the stance contacts;
* inequalities: friction pyramids and normal-force bounds, torque limits, joint limits
  (soft: :meth:`Layout.with_slacks` adds one slack per row when the hard problem is infeasible).

Two layouts (:class:`Layout`): ``dense`` keeps only the stance contacts' forces (smallest QP;
a new stance pattern is a new, cached, layout) and ``fixed`` keeps every contact's forces with
the swing ones bounded to zero, so that the sparsity pattern only changes with the morphology
(what OSQP needs to update values only).

After the solve, :meth:`Formulation.decode` re-solves the six base rows for the base
acceleration (a 6x6 solve with the joint accelerations and forces fixed), so the output obeys
the floating-base dynamics to machine precision whatever the solver's tolerance.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np
import pinocchio as pin

from ..errors import InputError
from . import kernels
from .assembly import CyclePlan
from .constraints import (INF, ActuationLimits, ContactAcceleration, FloatingBaseDynamics,
                          FrictionCone, JointLimits)
from .model_update import ContactModel, ModelUpdate
from .soft_model_update import SoftModelUpdate
from .tasks import (BaseOrientationTask, BasePositionTask, ComTask, DecoupledCentroidalTask,
                    ForceRegularizationTask, InternalImpedanceTask, MomentumTask, PostureTask,
                    SwingFootTask)

BIG = 1.0e6


class JointSet:
    """The actuated joints in the controller's coordinates, with limits and standing pose."""

    def __init__(self, robot, names: Sequence[str], q_idx: np.ndarray, v_cols: np.ndarray,
                 q_healthy_idx: np.ndarray, torque_scale: float = 1.0):
        m = robot.model
        self.names = list(names)
        self.q_idx = np.asarray(q_idx, int)            # into the q the controller receives
        self.v_cols = np.asarray(v_cols, int)          # into the n-vector of the QP
        qi = np.asarray(q_healthy_idx, int)             # into the healthy q
        vi = np.array([m.joints[m.getJointId(nm)].idx_v for nm in self.names], int)

        def clean(x, default):
            x = np.array(x, float)
            x[~np.isfinite(x) | (np.abs(x) >= 1e10)] = default
            return x
        self.q_min = clean(m.lowerPositionLimit[qi], -BIG)
        self.q_max = clean(m.upperPositionLimit[qi], BIG)
        same = self.q_min >= self.q_max
        self.q_min[same], self.q_max[same] = -BIG, BIG
        vmax = clean(m.velocityLimit[vi], BIG)
        vmax[vmax <= 0] = BIG
        self.v_max = vmax
        tmax = clean(m.effortLimit[vi], INF) * torque_scale
        tmax[tmax <= 0] = INF
        self.tau_max = tmax
        self.q_ref = robot.q_stand[qi].copy()
        self._index = {nm: k for k, nm in enumerate(self.names)}

    def reference(self, posture: Dict[str, float]) -> np.ndarray:
        q = self.q_ref.copy()
        for name, value in posture.items():
            k = self._index.get(name)
            if k is not None:
                q[k] = value
        return q


class Layout:
    """Sizes, index maps and the preallocated QP arrays of one stance pattern."""

    def __init__(self, formulation: "Formulation", stance: tuple, mode: str):
        f = formulation
        self.mode = mode
        self.contacts = f.contacts
        self.stance = stance
        self.mass = f.state.mass
        self.n = n = f.state.n
        self.included = [i for i in range(len(f.contacts)) if stance[i] or mode == "fixed"]
        self.f_offset, off = {}, 0
        for i in self.included:
            self.f_offset[i] = off
            off += f.contacts[i].n_force
        self.nf = off
        self.nx = n + off
        self.act = f.joints.v_cols
        self.n_act = len(self.act)
        u = f.state.unactuated                  # rows of the dynamics with no actuator
        self.n_unactuated = len(u)
        self.unactuated_rows = np.asarray(u, np.intp)
        self.unactuated_zeros = np.zeros(len(u))
        contiguous = len(u) and np.array_equal(u, np.arange(u[0], u[0] + len(u)))
        self.unactuated = slice(u[0], u[0] + len(u)) if contiguous else u
        self.others = np.setdiff1d(np.arange(n), u)      # every other coordinate of dv
        if contiguous and u[0] == 0:
            self.others = slice(len(u), n)
        self.key = (f.generation, mode) if mode == "fixed" else (f.generation, mode, stance)
        # stance forces (the ones tasks act on)
        self.stance_contacts = [i for i in self.included if stance[i]]
        self.swing_contacts = [i for i in range(len(f.contacts)) if not stance[i]]
        self.included_index = np.array(self.included, np.intp)
        self.included_rows = np.array([f.contacts[i].n_rows for i in self.included], np.intp)
        self.included_stance = np.array([stance[i] for i in self.included], bool)
        cols, self.stance_force_slice, k = [], {}, 0
        for i in self.stance_contacts:
            c = f.contacts[i]
            start = n + self.f_offset[i]
            cols.extend(range(start, start + c.n_force))
            self.stance_force_slice[c.frame] = slice(k, k + c.n_force)
            k += c.n_force
        self.nf_stance = k
        cols = np.array(cols, int)
        if mode == "dense":
            self.f_stance = slice(n, n + k)
            self.ff = (self.f_stance, self.f_stance)
        else:
            self.f_stance = cols
            self.ff = np.ix_(cols, cols)
        self.f_stance_diag = cols
        self.swing_force_cols = np.array([j for i in self.included if not stance[i]
                                          for j in range(n + self.f_offset[i], n + self.f_offset[i] + f.contacts[i].n_force)], int)
        self.sum_blocks = np.kron(np.ones((k // 3, k // 3)), np.eye(3))
        self.Jf = np.zeros((self.nf, n))
        # contact rows: for point contacts at their frame origin they are the force Jacobian
        self.rows_are_Jf = all(f.contacts[i].at_origin for i in self.included)
        self.swing_rows = []
        r = 0
        for i in self.included:
            k = f.contacts[i].n_rows
            if not stance[i]:
                self.swing_rows.extend(range(r, r + k))
            r += k
        self.swing_rows = np.array(self.swing_rows, int)
        # constraint blocks
        self.eq_blocks, self.in_blocks = [], []
        neq = nin = 0
        for con in f.constraints:
            r = con.rows(self)
            if con.equality:
                self.eq_blocks.append((con, slice(neq, neq + r)))
                neq += r
            else:
                self.in_blocks.append((con, slice(nin, nin + r)))
                nin += r
        self.neq, self.nin = neq, nin
        self.H = np.zeros((self.nx, self.nx))
        self.g = np.zeros(self.nx)
        self.A = np.zeros((neq, self.nx))
        self.b_lo = np.zeros(neq)
        self.b_hi = np.zeros(neq)
        self.C = np.zeros((nin, self.nx))
        self.l = np.zeros(nin)
        self.u = np.zeros(nin)
        self.lazy_rows = np.zeros(nin, bool)
        for con, s in self.in_blocks:
            self.lazy_rows[s] = con.lazy
        self.soft_rows = np.concatenate([np.arange(s.start, s.stop) for con, s in self.in_blocks if con.soft]
                                        or [np.zeros(0, int)]).astype(int)
        for con, s in self.eq_blocks:
            con.setup(self.A[s], self.b_lo[s], self.b_hi[s], self)
        for con, s in self.in_blocks:
            con.setup(self.C[s], self.l[s], self.u[s], self)
        self.H_fix = np.zeros((self.nx, self.nx))       # cost terms that never change
        self.H_fix[np.arange(n), np.arange(n)] = f.regularization
        self.plans = {}         # References.presence -> CyclePlan of the tasks active with it (its
        #                         constant Hessian, one call per cycle)
        self.x = None                                    # mapped start after a rebuild
        self.fill_call = None     # the cycle's fill left to the backend's call (Formulation.build)
        self.force_map = None     # the controller's output map of the forces (made on first use)

    @property
    def b(self) -> np.ndarray:
        return self.b_lo

    def force_slice(self, i: int) -> slice:
        start = self.n + self.f_offset[i]
        return slice(start, start + self.contacts[i].n_force)


class Formulation:
    """Builds the QP of each cycle (tasks + constraints) and decodes its solution."""

    generations = 0

    def __init__(self, robot, config: dict, morphology_map=None, projection=None, leaves=None):
        Formulation.generations += 1
        self.generation = Formulation.generations
        self.robot = robot
        self.config = config
        self.mmap = morphology_map
        self.mode = "fixed" if config["solver"] == "osqp" else "dense"
        self.regularization = float(config["regularization"])
        self.contacts = self._contacts(robot, config, morphology_map)
        self.state = self._model_update(robot, config, morphology_map, projection, leaves)
        self.joints = self._joints(robot, morphology_map, projection, config)
        tc = config["tasks"]
        # a fixed base (five-bars, deltas, test rigs) has no base, CoM or momentum to steer: the
        # joint-space posture task (and swing tasks of any contact frames) remain
        if not self.state.nb:
            floating = []
        elif config["centroidal_coordinates"] == "decoupled":      # [Feurstein 2021, Eq. (3.80)]
            if leaves is not None:
                raise InputError("centroidal_coordinates: decoupled needs the rigid model's centroidal "
                                 "terms; a robot with soft leaves uses standard", field="centroidal_coordinates")
            floating = [DecoupledCentroidalTask(tc["decoupled_centroidal"]),
                        InternalImpedanceTask(tc["internal_impedance"], self.state.model, robot.q_stand),
                        BasePositionTask(tc["base_position"])]
        else:
            floating = [ComTask(tc["com"]), BasePositionTask(tc["base_position"]),
                        BaseOrientationTask(tc["base_orientation"])]
        self.tasks = floating + [SwingFootTask(tc["swing_foot"]), PostureTask(tc["posture"], self.joints)] \
            + ([MomentumTask(tc["momentum"])] if self.state.nb else []) \
            + [ForceRegularizationTask(tc["force_regularization"],
                                       surfaces=any(c.kind == "surface" for c in self.contacts))]
        cc, lc = config["contacts"], config["limits"]
        self.constraints: List = [FloatingBaseDynamics(), ContactAcceleration(cc["kd"]),
                                  FrictionCone(cc["cone_facets"], cc["cone_approximation"])]
        if lc["torque"]:
            self.constraints.append(ActuationLimits(self.joints.tau_max))
        if lc["joints"]:
            self.constraints.append(JointLimits(self.joints, config["dt"], lc["position_horizon"],
                                                lc["max_joint_acceleration"], lc["velocity_horizon"],
                                                self._carriers()))
        self.slack_weight = float(lc["slack_weight"])
        self.frame_index = {c.frame: i for i, c in enumerate(self.contacts)}
        self.frames = [c.frame for c in self.contacts]
        self._no_stance = (False,) * len(self.frames)
        self.layouts: Dict[tuple, Layout] = {}

    # ------------------------------------------------------------------ construction
    def _model_update(self, robot, config, mmap, projection, leaves) -> ModelUpdate:
        """Pinocchio's model update, or the soft-leaves one (``leaves``: soft.leaves.SoftLeaves)."""
        if leaves is None:
            return ModelUpdate(robot, self.contacts, mmap, projection)
        if mmap is not None and mmap.morphology.is_healthy():
            mmap = None
        horizon = config["soft"]["horizon"]
        return SoftModelUpdate(robot, self.contacts, leaves, config["soft"]["condensation"], mmap,
                               float(config["dt"]) if horizon is None else float(horizon))

    @staticmethod
    def _contacts(robot, config, mmap) -> List[ContactModel]:
        cc = config["contacts"]
        mu_default = robot.friction if cc["friction"] is None else float(cc["friction"])
        out = []
        contacts = mmap.contacts if mmap is not None else robot.contacts
        for c in contacts:
            extra = dict(cc["per_contact"].get(c.frame, {}))
            unknown = set(extra) - {"normal", "friction", "min_normal_force", "max_normal_force"}
            if unknown:
                raise InputError(f"unknown keys {sorted(unknown)} for contact {c.frame}",
                                 field="contacts.per_contact")
            normal = np.asarray(extra.get("normal", cc["normal"]), float)
            out.append(ContactModel(
                frame=c.frame, frame_id=robot.model.getFrameId(c.frame), kind=c.kind,
                points=np.asarray(c.points, float), normal=normal / np.linalg.norm(normal),
                friction=float(extra.get("friction", mu_default)),
                min_normal_force=float(extra.get("min_normal_force", cc["min_normal_force"])),
                max_normal_force=float(extra.get("max_normal_force", cc["max_normal_force"]))))
        return out

    def _carriers(self) -> List[List[int]]:
        """Per contact, the rows of :attr:`joints` on its path from the base (the joints that
        move it: constraints/joint_limits.py frees those of legs in the air)."""
        m = self.robot.model
        index = {name: k for k, name in enumerate(self.joints.names)}
        return [[index[m.names[j]] for j in m.supports[m.frames[c.frame_id].parentJoint] if m.names[j] in index]
                for c in self.contacts]

    @staticmethod
    def _joints(robot, mmap, projection, config) -> JointSet:
        m = robot.model
        scale = float(config["limits"]["torque_scale"])
        if projection is not None:
            names = list(robot.actuated_joints)
            qh = np.array([m.joints[m.getJointId(nm)].idx_q for nm in names])
            js = JointSet(robot, names, qh, projection.nb + np.arange(len(names)), qh, scale)
            js.tau_max = np.asarray(projection.force_limits(), float) * scale   # screw or URDF
            js.tau_max[~np.isfinite(js.tau_max) | (js.tau_max <= 0)] = INF
            return js
        actuated = set(robot.actuated_joints)
        if mmap is None:
            names = [nm for nm in robot.joint_names if nm in actuated]
            qh = np.array([m.joints[m.getJointId(nm)].idx_q for nm in names], int)
            vh = np.array([m.joints[m.getJointId(nm)].idx_v for nm in names], int)
            return JointSet(robot, names, qh, vh, qh, scale)
        names = [nm for nm in mmap.joint_names if nm in actuated]
        qh = np.array([m.joints[m.getJointId(nm)].idx_q for nm in names], int)
        vh = np.array([m.joints[m.getJointId(nm)].idx_v for nm in names], int)
        q_pos = np.searchsorted(mmap.q_index, qh)
        v_pos = np.searchsorted(mmap.v_index, vh)
        return JointSet(robot, names, q_pos, v_pos, qh, scale)

    def stance_tuple(self, stance) -> tuple:
        """``stance`` as a tuple of booleans in contact order (a dict may name any subset)."""
        if isinstance(stance, dict):
            st = tuple(map(stance.get, self.frames, self._no_stance))
            if st in self.layouts:             # already booleans (not 0/1 or numpy's)
                return st
            return tuple([bool(s) for s in st])
        return tuple([bool(s) for s in stance])

    def layout(self, stance: tuple) -> Layout:
        lay = self.layouts.get(stance)
        if lay is None:
            lay = self.layouts[stance] = Layout(self, stance, self.mode)
        return lay

    # ------------------------------------------------------------------ one cycle
    def build(self, q: np.ndarray, v: np.ndarray, stance: tuple, refs, defer: bool = False) -> Layout:
        """Update the model at (q, v) and fill the QP of this stance pattern; ``defer`` (a
        backend that fills in its own call): when one compiled call covers the whole cycle,
        leave it to the backend in ``Layout.fill_call`` (control/assembly.py), else None there."""
        st = self.state
        st.update(q, v)
        lay = self.layouts.get(stance) or self.layout(stance)
        presence = refs.presence()
        plan = lay.plans.get(presence)
        if plan is None:
            plan = lay.plans[presence] = self._plan(lay, refs)
        lay.fill_call = plan.run(st, lay, q, refs, defer)
        return lay

    def _plan(self, lay: Layout, refs) -> CyclePlan:
        """The plan of the tasks active with ``refs`` (the same for every references object
        with its presence: ``Task.active``), with their constant Hessian."""
        active = tuple([t.active(refs) for t in self.tasks])
        H_const = lay.H_fix.copy()
        for task, on in zip(self.tasks, active):
            if on and task.constant_hessian:
                task.add_hessian(H_const, lay)
        return CyclePlan(self, lay, active, H_const, refs)

    def decode(self, lay: Layout, x: np.ndarray, exact: bool = False, torques=None):
        """(dv, f, tau, finite) from a solution (``finite``: tau and dv are). Unless the
        backend kept the equalities ``exact`` (null-space elimination), the unactuated rows are
        re-solved for the unactuated accelerations (base, free internal motions) with the
        others fixed. ``torques``: (tau, finite) of ``x`` already computed by the solve's call."""
        st = self.state
        n = lay.n
        dv = x[:n]
        f = x[n:]
        if exact and torques is not None and not len(lay.swing_force_cols):
            return (dv, f) + torques
        if len(lay.swing_force_cols):          # fixed layout: swing forces are zero exactly
            f = f.copy()
            f[lay.swing_force_cols - n] = 0.0
        Jf = lay.Jf
        M, h = st.M, st.h
        u, o = lay.unactuated, lay.others
        if not exact and lay.n_unactuated:
            dv = dv.copy()
            rhs = -h[u] - M[u][:, o] @ dv[o]
            if lay.nf:
                rhs += Jf[:, u].T @ f
            dv[u] = np.linalg.solve(M[u][:, u], rhs)
        tau = np.empty(len(lay.act))
        return dv, f, tau, kernels.actuated_torques(tau, M, h, Jf, lay.act, dv, f)

    def gravity_compensation(self, q: np.ndarray, v: np.ndarray, damping: float) -> np.ndarray:
        """Fallback torques: joint-space gravity at q minus joint damping (finite always)."""
        st = self.state
        js = self.joints
        try:
            if st.mmap is not None and st.sliced:       # (soft coordinates, if any, follow)
                qf, vf = st.mmap.expand_q(q[:st.mmap.nq]), st.mmap.expand_v(v[:st.mmap.nv])
            else:                                  # soft coordinates (if any) follow the rigid ones
                qf, vf = np.asarray(q, float)[:st.model.nq], np.asarray(v, float)[:st.model.nv]
            if st.projection is not None:
                G, _ = st.projection.projection(qf, vf)
                grav = G.T @ pin.computeGeneralizedGravity(st.model, st.data, qf)
                vm = np.concatenate([vf[:st.nb], vf[st.projection.ia]])
            else:
                grav = pin.computeGeneralizedGravity(st.model, st.data, qf)[st.v_index]
                vm = np.asarray(v, float)[:len(st.v_index)]
            tau = grav[js.v_cols] - damping * vm[js.v_cols]
        except Exception:      # a state Pinocchio cannot evaluate: damping only, or nothing
            tau = np.zeros(len(js.names))
        tau = np.where(np.isfinite(tau), tau, 0.0)
        return np.clip(tau, -js.tau_max, js.tau_max)

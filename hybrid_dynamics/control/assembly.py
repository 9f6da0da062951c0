"""The QP's numbers of one cycle in one compiled call (issue 15): every task and constraint
whose per-cycle arithmetic is a kernel of :mod:`.kernels` is written by :func:`fill_cycle`,
driven by a :class:`CyclePlan` made once per layout and set of active tasks.

At the QP's sizes the per-cycle cost was the Python around the kernels: per task and per
constraint a method call, attribute look-ups and a kernel call of about a microsecond of
dispatch (solo12 walking: ten of them, 15 us of a 40 us cycle). The plan gathers once what
those methods gathered each cycle (the row blocks of the QP arrays, the index tables, the
weights and gains, the limits) into one argument tuple; each cycle then reads the references
(:meth:`CyclePlan.run`) and makes one call, which calls the same kernels in the same order as
the tasks' and constraints' own methods (``add_hessian``, ``add_gradient``, ``add``, ``fill``:
the reference, each held to Pinocchio in test/control/test_qp_tasks.py and
test_qp_constraints.py; test/control/test_assembly.py holds this call to their sum to 1e-12).

Covered: the CoM, base-orientation, swing-foot and posture tasks, the force regularisation of
point forces without force references (its Hessian constant) and with soles its wrench form
(:func:`kernels.sole_wrenches`, with or without force references: its gradient is then made
each cycle by the task); the floating-base, contact, torque-limit and joint-limit rows; the
stance points' force Jacobian ``Jf`` when every included contact is a point at its frame's
origin. Any other active task (base position, momentum, the decoupled tasks, point force
references) and any other constraint adds its terms through its own method after the call.

With the goldfarb_idnani backend the same call also solves the problem it wrote and computes
the actuated torques (:func:`fill_and_solve`, when the call covers every term of the cycle):
the backend's ``solve`` receives it from the formulation (``Layout.fill_call``) and makes it with
its warm start and workspace, so that the cycle's tasks, constraints, solve and torques are one
compiled call.
"""
from __future__ import annotations

import numpy as np
from numba import boolean, float64, intp, njit, types, void

from . import kernels
from .solvers import dual_active_set as das
from .constraints import INF, ActuationLimits, Constraint, ContactAcceleration, FloatingBaseDynamics, JointLimits
from .tasks import BaseOrientationTask, ComTask, ForceRegularizationTask, PostureTask, SwingFootTask

F1, F2, F3, F5 = float64[:], float64[:, :], float64[:, :, :], float64[:, :, :, :, :]
I1, B1 = intp[:], boolean[:]
RO2 = types.Array(float64, 2, "A", readonly=True)

# params: the plan's scalars (0 switches a term off)
(COM, COM_KP, COM_KD, COM_SCALE, ORIENTATION, ORI_W, ORI_KP, ORI_KD, POSTURE, POSTURE_WKP,
 POSTURE_WKD, FORCE_SHARE, SWING_W, SWING_KP, SWING_KD, CONTACT_KD, LIMIT_T, LIMIT_DT, LIMIT_AMAX,
 WRENCHES) = range(20)
N_PARAMS = 20
# blocks: start and stop rows of the floating-base, contact (in A), torque-limit and
# joint-limit (in C) blocks (-1: absent), then whether Jf is J6's linear rows
(DYN, CONTACT, TORQUE, JOINT, JF_FROM_J6) = (0, 2, 4, 6, 8)
NO_FEET = (np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros((0, 3, 3)))
Z3 = np.zeros(3)
Z33 = np.zeros((3, 3))
R_NONE = np.eye(3)
R_NONE.setflags(write=False)
NO_ORIENTATION = (R_NONE, Z3, Z3)      # no base orientation task: its reference arguments
Z0 = np.zeros(0)
NO_WRENCHES = (Z0, np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros((0, 0, 0, 3, 3)),
               np.zeros((0, 0, 3)), Z0)        # no soles' wrench form: its per-plan arguments
NO_FRAMES = np.zeros((0, 3, 3))


@njit(void(F2, F2, F1, F2, F1, F1, F2, F1, F1, F2, I1, I1, I1, B1, I1, I1, I1, I1, I1, I1, F1, F2, F1,
           F1, I1, I1, I1, F5, F3, F1,
           F2, F1, F3, F2, F2, F1, F1, RO2, F3, F1, F1,
           F1, F1, F2, RO2, F1, F1, F1, I1, I1, F3, F1), cache=True)
def fill_cycle(H, H_const, g, A, b_lo, b_hi, C, l, u, Jf, blocks, included, included_rows, included_stance,
               unactuated, act, free, q_idx, v_cols, f_cols, params, limits, gravity,
               force_diag, sole_starts, sole_frames, sole_corners, sole_K, sole_G, sole_scales,
               M, h, J6, drift, frame_p, com, com_velocity, R, frame_R, q_joints, v_joints,
               v, q, com_target, R_ref, w_ref, dw_ref, q_ref, feet, feet_rows, feet_reference, force_gradient):
    """The cycle's ``H, g`` (the constant Hessian plus each covered task's terms, in the
    formulation's task order) and the covered constraints' rows, from the model update's
    arrays (``M, h``, the contact frames' ``J6``, ``drift``, positions, the CoM, its velocity,
    the base's rotation ``R``, the contact frames' rotations ``frame_R``; ``v``, ``q``).
    ``force_diag`` to ``sole_scales`` and ``force_gradient``: the soles' wrench form's
    arguments of :func:`kernels.sole_wrenches` (``params[WRENCHES]`` 1). ``limits`` rows:
    q_min, q_max, v_max, tau_max of the actuated joints; ``q_joints`` and ``v_joints`` are
    written (``q[q_idx]``, ``v[v_cols]``). The references: ``com_target`` the CoM target's position, velocity and
    acceleration (rows, ``Target.stack``), ``R_ref`` the base orientation target's rotation (the
    error ``log(R_ref R^T)`` is computed here). The arguments come in three groups: those made
    per layout and set of tasks, the model update's arrays and the plan's joint buffers (the
    same objects every cycle for a rigid robot without a morphology change: the plan keeps the
    two groups as one tuple), and those of the cycle (``v`` to ``force_gradient``)."""
    H[:, :] = H_const
    g[:] = 0.0
    n = v.shape[0]
    if blocks[JF_FROM_J6]:
        r = 0
        for j in range(included.shape[0]):
            for a in range(3):
                for c in range(n):
                    Jf[r, c] = J6[included[j], a, c]
                r += 1
    for k in range(q_idx.shape[0]):
        q_joints[k] = q[q_idx[k]]
        v_joints[k] = v[v_cols[k]]
    if params[COM] != 0.0 and f_cols.shape[0]:
        kernels.com_gradient(g, f_cols, com_target[2], com_target[0], com_target[1], com, com_velocity,
                             gravity, params[COM_KP], params[COM_KD], params[COM_SCALE])
    if params[ORIENTATION] != 0.0:
        kernels.orientation_gradient(g, R_ref, R, v, w_ref, dw_ref, params[ORI_W], params[ORI_KP], params[ORI_KD])
    if params[POSTURE] != 0.0:
        kernels.posture_gradient(g, v_cols, q_ref, q_joints, v_joints, params[POSTURE_WKP], params[POSTURE_WKD])
    if params[FORCE_SHARE] != 0.0 and f_cols.shape[0]:
        kernels.per_point_gradient(g, f_cols, 0.0, 0.0, params[FORCE_SHARE])
    if feet.shape[0]:
        kernels.swing_feet(H, g, J6, drift, feet, feet_rows, v, frame_p, feet_reference,
                           params[SWING_W], params[SWING_KP], params[SWING_KD])
    if params[WRENCHES] != 0.0:
        kernels.sole_wrenches(H, g, f_cols, force_diag, force_gradient, sole_starts, sole_frames, sole_corners,
                              sole_K, sole_G, sole_scales, frame_R)
    a, b = blocks[DYN], blocks[DYN + 1]
    if a >= 0:
        kernels.dynamics_rows(A[a:b], b_lo[a:b], b_hi[a:b], M, h, Jf, unactuated, n, 0.0, 0.0,
                              np.zeros(unactuated.shape[0]))
    a, b = blocks[CONTACT], blocks[CONTACT + 1]
    if a >= 0 and included.shape[0]:
        kernels.contact_rows(A[a:b], b_lo[a:b], b_hi[a:b], J6, drift, included, included_rows, included_stance,
                             v, params[CONTACT_KD], INF)
    a, b = blocks[TORQUE], blocks[TORQUE + 1]
    if a >= 0:
        kernels.dynamics_rows(C[a:b], l[a:b], u[a:b], M, h, Jf, act, n, -1.0, 1.0, limits[3])
    a, b = blocks[JOINT], blocks[JOINT + 1]
    if a >= 0:
        kernels.joint_acceleration_bounds(l[a:b], u[a:b], q_joints, v_joints, limits[0], limits[1], limits[2],
                                          free, params[LIMIT_T], params[LIMIT_DT], params[LIMIT_AMAX], INF)


C1, C2, CI = float64[::1], float64[:, ::1], intp[::1]     # the solver's (C-contiguous) arrays


@njit(types.Tuple((intp, intp, intp, float64, boolean))(
    C2, F2, C1, C2, C1, F1, C2, C1, C1, *fill_cycle.nopython_signatures[0].args[9:], CI, intp, float64, C1, CI, C2, C2, F1),
    cache=True)
def fill_and_solve(H, H_const, g, A, b_lo, b_hi, C, l, u, Jf, blocks, included, included_rows, included_stance,
                   unactuated, act, free, q_idx, v_cols, f_cols, params, limits, gravity,
                   force_diag, sole_starts, sole_frames, sole_corners, sole_K, sole_G, sole_scales,
                   M, h, J6, drift, frame_p, com, com_velocity, R, frame_R, q_joints, v_joints,
                   v, q, com_target, R_ref, w_ref, dw_ref, q_ref, feet, feet_rows, feet_reference, force_gradient,
                   warm, max_iter, tol, x, sides, H_last, Jt_last, tau):
    """:func:`fill_cycle`, then (bounds not crossed) the dual active-set solve of the problem it
    wrote (:func:`~hybrid_dynamics.control.solvers.dual_active_set.solve`: ``warm`` to
    ``Jt_last`` are its arguments), then the actuated torques of the solution into ``tau``
    (:func:`~hybrid_dynamics.control.kernels.actuated_torques`): the goldfarb_idnani backend's
    whole cycle in one call. Returns the solve's (sides, status, iterations, residual) and
    whether torques and accelerations are finite; status ``das.CROSSED`` when a lower bound is
    above its upper one (nothing solved)."""
    fill_cycle(H, H_const, g, A, b_lo, b_hi, C, l, u, Jf, blocks, included, included_rows, included_stance,
               unactuated, act, free, q_idx, v_cols, f_cols, params, limits, gravity,
               force_diag, sole_starts, sole_frames, sole_corners, sole_K, sole_G, sole_scales,
               M, h, J6, drift, frame_p, com, com_velocity, R, frame_R, q_joints, v_joints,
               v, q, com_target, R_ref, w_ref, dw_ref, q_ref, feet, feet_rows, feet_reference, force_gradient)
    if kernels.crossed(l, u):
        return 0, das.CROSSED, 0, 0.0, False
    k, status, iterations, residual = das.solve(H, g, A, b_lo, C, l, u, warm, max_iter, tol, x, sides,
                                                H_last, Jt_last)
    finite = False
    if status == das.SOLVED:
        n = v.shape[0]
        finite = kernels.actuated_torques(tau, M, h, Jf, act, x[:n], x[n:])
    return k, status, iterations, residual, finite


# The two calls' compiled entry points: the dispatcher's type resolution of their 43 and 51
# arguments cost about 3 us a cycle (solo12 walking), while every argument's type is fixed by
# the plan and the formulation's state (arrays made here and in control/formulation.py; the
# references' vectors are float (3,) arrays whenever set, control/references.py). The same
# machine code, so the same numbers to the bit.
FILL_CYCLE = fill_cycle.overloads[fill_cycle.signatures[0]].entry_point
FILL_AND_SOLVE = fill_and_solve.overloads[fill_and_solve.signatures[0]].entry_point


class CyclePlan:
    """What :func:`fill_cycle` reads that changes only with the layout and the set of active
    tasks (``static``: its leading arguments), the covered tasks whose references it reads
    each cycle, and the terms it does not cover (``gradients``, ``adds``, ``fills``: the
    tasks' and constraints' own methods, called after it)."""

    def __init__(self, formulation, layout, active, H_const: np.ndarray, refs):
        f, lay = formulation, layout
        forces = bool(refs.forces)
        on = [t for t, a in zip(f.tasks, active) if a]
        params = np.zeros(N_PARAMS)
        self.com = self.orientation = self.swing = self.posture = self.force = self.wrench = None
        wrench_args, self.wrench_gradient = NO_WRENCHES, Z0
        gradients, adds = [], []
        for t in on:
            if type(t) is ComTask:
                self.com = t
                params[[COM, COM_KP, COM_KD, COM_SCALE]] = 1.0, t.kp, t.kd, t.weight / lay.mass
            elif type(t) is BaseOrientationTask:
                self.orientation = t
                params[[ORIENTATION, ORI_W, ORI_KP, ORI_KD]] = 1.0, t.weight, t.kp, t.kd
            elif type(t) is PostureTask:
                self.posture = t
                params[[POSTURE, POSTURE_WKP, POSTURE_WKD]] = 1.0, t.weight * t.kp, t.weight * t.kd
            elif type(t) is SwingFootTask:
                self.swing = t
                params[[SWING_W, SWING_KP, SWING_KD]] = t.weight, t.kp, t.kd
            elif type(t) is ForceRegularizationTask and t.constant_hessian and lay.nf_stance:
                self.force = t       # without force references; with them, its own method
                if not forces:
                    params[FORCE_SHARE] = t.weight * t.W2[2] * lay.mass * 9.81 / (lay.nf_stance // 3)
            elif type(t) is ForceRegularizationTask and not t.constant_hessian:
                if lay.nf_stance:    # the soles' wrench form (no stance force: no term)
                    self.wrench = t
                    params[WRENCHES] = 1.0
                    diag, soles = t.wrench_form(lay)
                    wrench_args = (diag,) + soles
                    if not forces:   # with force references, made each cycle (run)
                        self.wrench_gradient = t.wrench_gradient(lay, refs)
            elif t.constant_hessian:
                gradients.append(t.add_gradient)
            else:
                adds.append(t.add)
        blocks = np.full(9, -1, np.intp)
        fills = []
        free = np.zeros(0, np.intp)
        limits = np.zeros((4, len(f.joints.names)))
        js = f.joints
        limits[0], limits[1], limits[2] = js.q_min, js.q_max, js.v_max
        for con, s in lay.eq_blocks + lay.in_blocks:
            rows = (lay.A, lay.b_lo, lay.b_hi) if con.equality else (lay.C, lay.l, lay.u)
            if type(con) is FloatingBaseDynamics:
                blocks[DYN:DYN + 2] = s.start, s.stop
            elif type(con) is ContactAcceleration:
                blocks[CONTACT:CONTACT + 2] = s.start, s.stop
                params[CONTACT_KD] = con.kd
            elif type(con) is ActuationLimits:
                blocks[TORQUE:TORQUE + 2] = s.start, s.stop
                limits[3] = con.tau_max
            elif type(con) is JointLimits:
                blocks[JOINT:JOINT + 2] = s.start, s.stop
                params[[LIMIT_T, LIMIT_DT, LIMIT_AMAX]] = con.T, con.dt, con.a_max
                free = con.in_the_air(lay.stance)
            elif type(con).fill is not Constraint.fill:
                fills.append((con.fill,) + tuple(r[s] for r in rows))
        blocks[JF_FROM_J6] = int(lay.rows_are_Jf)
        self.jf_by_points = bool(lay.nf) and not lay.rows_are_Jf      # soles: Jp stacked first
        self.gradients, self.adds, self.fills = gradients, adds, fills
        self.forces = forces and self.force is not None    # force references: the task's own gradient
        self.wrench_forces = forces and self.wrench is not None    # the wrench form's gradient each cycle
        self.whole = not (gradients or adds or fills or self.forces)       # every term is the call's
        st = f.state
        self.q_joints, self.v_joints = np.zeros(len(js.names)), np.zeros(len(js.names))
        self.q_ref = js.q_ref                                # the posture's reference without names
        self.named_posture = self.posture is not None and refs.posture is not None
        self.head = None                                     # static + the model update's arrays
        self.static = (lay.H, H_const, lay.g, lay.A, lay.b_lo, lay.b_hi, lay.C, lay.l, lay.u, lay.Jf, blocks,
                       lay.included_index, lay.included_rows, lay.included_stance,
                       lay.unactuated_rows, np.asarray(lay.act, np.intp), free,
                       np.asarray(js.q_idx, np.intp), np.asarray(js.v_cols, np.intp),
                       np.asarray(lay.f_stance_diag, np.intp), params, limits, st.gravity) + wrench_args

    def run(self, st, lay, q, refs, defer: bool = False):
        """One cycle: the references of the covered tasks, one call, then the others' terms.
        ``defer``: when the call covers every term of this cycle, make no call and return
        ``(fill_and_solve's entry point, its leading arguments)`` for the solver's own call;
        else None."""
        if self.jf_by_points:
            np.concatenate([st.Jp[i] for i in lay.included], out=lay.Jf)
        st.q_joints, st.v_joints = self.q_joints, self.v_joints
        head = self.head or self._head(st)
        com_target = refs.com.stack if self.com is not None else Z33
        if self.orientation is not None:
            o = refs.base_orientation
            o_args = (o.rotation(), o.angular_velocity, o.angular_acceleration)
        else:
            o_args = NO_ORIENTATION
        q_ref = self.posture.reference(refs) if self.named_posture else self.q_ref
        feet = (self.swing.targets(lay, refs) if self.swing is not None else None) or NO_FEET
        force_gradient = self.wrench.wrench_gradient(lay, refs) if self.wrench_forces else self.wrench_gradient
        args = head + (st.v_m, q, com_target, *o_args, q_ref, *feet, force_gradient)
        if defer and self.whole:
            return FILL_AND_SOLVE, args
        FILL_CYCLE(*args)
        for add_gradient in self.gradients:
            add_gradient(lay.g, st, lay, refs)
        if self.forces:
            self.force.add_gradient(lay.g, st, lay, refs)
        for add in self.adds:
            add(lay.H, lay.g, st, lay, refs)
        for fill, rows, lo, hi in self.fills:
            fill(rows, lo, hi, st, lay)
        return None

    def _head(self, st) -> tuple:
        """The call's arguments made per layout and set of tasks and the model update's arrays
        (:func:`fill_cycle`'s first two groups); kept when the model update writes its arrays in
        place (``ModelUpdate.same_arrays``), else made again each cycle."""
        head = self.static + (st.M, st.h, st.J6_stack, st.drift_stack, st.frame_p, st.com, st.com_velocity,
                              st.base_rotation if self.orientation is not None else R_NONE,
                              st.frame_R if self.wrench is not None else NO_FRAMES,
                              self.q_joints, self.v_joints)
        if st.same_arrays:
            self.head = head
        return head

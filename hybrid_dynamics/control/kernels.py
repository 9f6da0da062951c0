"""Compiled kernels of the QP assembly (numba, compiled on first use and cached on disk).

At the whole-body QP's sizes (20-70 variables) a numpy call costs more in dispatch (about a
microsecond on the development machine) than in arithmetic, and a task written in numpy makes
ten to thirty of them per cycle. Each kernel here does one task's or one constraint's whole
per-cycle work in one call, with the same arithmetic as the numpy it replaces
(test/control/test_kernels.py: the same matrices to 1e-12); the formulas and their sources
stay in the task and constraint modules that call them.
"""
from __future__ import annotations

import numpy as np
from numba import boolean, float64, intp, njit, types, void

# one signature per kernel, any memory layout ('A'): compiled when this module is imported
# (cached on disk), never in a control cycle, whatever layouts Pinocchio hands over
F1, F2, F3, F4, F5 = float64[:], float64[:, :], float64[:, :, :], float64[:, :, :, :], float64[:, :, :, :, :]
I1, B1 = intp[:], boolean[:]
f8, i8 = float64, intp
RO2 = types.Array(float64, 2, "A", readonly=True)      # Pinocchio's placements, a read-only view


@njit(cache=True)
def _stack_rows(out, vel, J6, contacts, nrows, v):
    """The first ``nrows[j]`` rows of ``J6[contacts[j]]`` stacked into the leading columns of
    ``out``, and their products with ``v`` into ``vel``."""
    r = 0
    for j in range(len(contacts)):
        i = contacts[j]
        for a in range(nrows[j]):
            s = 0.0
            for c in range(J6.shape[2]):
                out[r, c] = J6[i, a, c]
                s += J6[i, a, c] * v[c]
            vel[r] = s
            r += 1


@njit(void(F2, F1, F3, F2, I1, I1, F1, F2, F3, f8, f8, f8), cache=True)
def swing_feet(H, g, J6, drift, feet, nrows, v, position, reference, weight, kp, kd):
    """Swing-foot task (tasks/swing_foot.py): ``H[:n, :n] += w J^T J``, ``g[:n] -= w J^T b``
    over the stacked rows of the feet ``feet`` (``nrows`` 3 for a point, 6 for a sole) with
    ``b = p̈_ref + kp (p_ref - p) + kd (ṗ_ref - ṗ) - drift`` on the linear rows and
    ``-kd w - drift`` on the angular ones. ``J6`` (contacts, 6, n) and ``drift`` (contacts, 6)
    of every contact; ``position`` (contacts, 3) every contact's position; ``reference`` (feet, 3, 3)
    their target position, velocity and acceleration."""
    m = 0
    for j in range(len(feet)):
        m += nrows[j]
    n = J6.shape[2]
    J = np.empty((m, n))
    vel = np.empty(m)
    _stack_rows(J, vel, J6, feet, nrows, v)
    b = np.empty(m)
    o = 0
    for j in range(len(feet)):
        i = feet[j]
        for a in range(nrows[j]):
            if a < 3:
                b[o + a] = (reference[j, 2, a] + kp * (reference[j, 0, a] - position[i, a])
                            + kd * (reference[j, 1, a] - vel[o + a])) - drift[i, a]
            else:
                b[o + a] = -kd * vel[o + a] - drift[i, a]
        o += nrows[j]
    # J^T J and J^T b by loops (one pass over J's columns, the upper triangle mirrored): at
    # these sizes (6-12 rows) a BLAS call costs more in its own dispatch and code than the
    # arithmetic, and after an interruption its code is fetched again
    for r in range(n):
        s = 0.0
        for k in range(m):
            s += J[k, r] * b[k]
        g[r] -= weight * s
        for c in range(r, n):
            s = 0.0
            for k in range(m):
                s += J[k, r] * J[k, c]
            H[r, c] += weight * s
            if c != r:
                H[c, r] += weight * s


@njit(void(F1, F1, F1, F1, F1, F1, F1, I1, f8, f8, f8, f8), cache=True)
def joint_acceleration_bounds(lo, hi, q, v, q_min, q_max, v_max, free, T, dt, a_max, inf):
    """Joint limits as acceleration bounds (constraints/joint_limits.py): the intersection of
    the velocity, position and acceleration bounds; an empty one swapped (least violation).
    A joint past a stop has that stop where it stands (it brakes, it is not sent back). The
    rows ``free`` (joints of legs in the air) are left free, ``-inf..inf``."""
    c = 2.0 / (T * T)
    for k in range(len(q)):
        low = max((-v_max[k] - v[k]) / dt, c * (min(q_min[k], q[k]) - q[k] - v[k] * T))
        high = min((v_max[k] - v[k]) / dt, c * (max(q_max[k], q[k]) - q[k] - v[k] * T))
        low = min(max(low, -a_max), a_max)
        high = min(max(high, -a_max), a_max)
        if low > high:
            low, high = high, low
        lo[k] = low
        hi[k] = high
    for k in free:
        lo[k] = -inf
        hi[k] = inf


@njit(void(F2, F1, F1, F2, F1, F2, I1, i8, f8, f8, F1), cache=True)
def dynamics_rows(C, lo, hi, M, h, Jf, rows, n, sign_lo, sign_hi, bound):
    """Rows ``rows`` of the dynamics over ``x = (dv, f)``: ``C = [M[rows], -Jf[:, rows]^T]``
    and ``lo = sign_lo * bound - h[rows]``, ``hi = sign_hi * bound - h[rows]``
    (floating-base rows: ``bound`` 0; torque limits: ``bound`` = tau_max, signs -1, +1)."""
    nf = Jf.shape[0]
    for a in range(len(rows)):
        r = rows[a]
        for c in range(n):
            C[a, c] = M[r, c]
        for c in range(nf):
            C[a, n + c] = -Jf[c, r]
        lo[a] = sign_lo * bound[a] - h[r]
        hi[a] = sign_hi * bound[a] - h[r]


@njit(void(F2, F1, i8, F2, F4, F2, f8), cache=True)
def sole_wrench(H, g, start, R, K, G, scale):
    """Sole wrench regularisation of one sole (tasks/force_regularization.py) whose k corner
    forces start at column ``start``: 3 x 3 blocks ``H[a, b] += R K_ab R^T`` and
    ``g[a] -= scale R G_a`` (``K``: (k, k, 3, 3), ``G``: (k, 3))."""
    k = K.shape[0]
    for a in range(k):
        ra = start + 3 * a
        for i in range(3):
            s = 0.0
            for j in range(3):
                s += R[i, j] * G[a, j]
            g[ra + i] -= scale * s
        for b in range(k):
            rb = start + 3 * b
            for i in range(3):
                for j in range(3):
                    s = 0.0
                    for p in range(3):
                        t = 0.0
                        for q in range(3):
                            t += K[a, b, p, q] * R[j, q]
                        s += R[i, p] * t
                    H[ra + i, rb + j] += s


@njit(void(F2, F1, I1, F1, F1, I1, I1, I1, F5, F3, F1, F3), cache=True)
def sole_wrenches(H, g, cols, diag, gradient, starts, frames, corners, K, G, scales, R):
    """The force regularisation with soles (tasks/force_regularization.py) in one call:
    ``H[c, c] += diag`` and ``g[c] -= gradient`` over the stance forces' columns ``cols``, then
    :func:`sole_wrench` of each stance sole s (``corners[s]`` corner forces from column
    ``starts[s]``, rotation ``R[frames[s]]``, ``K[s]``, ``G[s]`` and ``scales[s]``; ``K`` and ``G``
    hold each sole's blocks in their leading ``corners[s]`` entries)."""
    for k in range(cols.shape[0]):
        H[cols[k], cols[k]] += diag[k]
    for k in range(cols.shape[0]):
        g[cols[k]] -= gradient[k]
    for s in range(starts.shape[0]):
        c = corners[s]
        sole_wrench(H, g, starts[s], R[frames[s]], K[s, :c, :c], G[s, :c], scales[s])


@njit(cache=True)
def _per_point(g, cols, b0, b1, b2):
    for p in range(len(cols) // 3):
        g[cols[3 * p]] -= b0
        g[cols[3 * p + 1]] -= b1
        g[cols[3 * p + 2]] -= b2


@njit(void(F1, I1, F1, F1, F1, F1, F1, F1, f8, f8, f8), cache=True)
def com_gradient(g, cols, acceleration, position, velocity, com, com_velocity, gravity, kp, kd, scale):
    """CoM task's gradient (tasks/com.py): ``g[cols] -= scale (c̈_des - g0)`` on every stance
    point's three force columns, ``c̈_des = c̈_ref + kp (c_ref - c) + kd (ċ_ref - ċ)``."""
    b = np.empty(3)
    for a in range(3):
        b[a] = scale * (acceleration[a] + kp * (position[a] - com[a]) + kd * (velocity[a] - com_velocity[a])
                        - gravity[a])
    _per_point(g, cols, b[0], b[1], b[2])


@njit(void(F1, I1, f8, f8, f8), cache=True)
def per_point_gradient(g, cols, b0, b1, b2):
    """``g[cols] -= (b0, b1, b2)`` on every stance point's three force columns (the force
    regularisation's gradient without force references, tasks/force_regularization.py)."""
    _per_point(g, cols, b0, b1, b2)


@njit(void(F2, F1, F1, F3, F2, I1, I1, B1, F1, f8, f8), cache=True)
def contact_rows(C, lo, hi, J6, drift, included, nrows, stance, v, kd, inf):
    """Contact accelerations (constraints/contact.py): per included contact its first
    ``nrows`` rows ``J6 dv = -(drift + kd J6 v)``; a swing contact's rows free (``-inf..inf``)."""
    vel = np.empty(len(lo))
    _stack_rows(C, vel, J6, included, nrows, v)
    r = 0
    for j in range(len(included)):
        i = included[j]
        for a in range(nrows[j]):
            if stance[j]:
                lo[r] = -(drift[i, a] + kd * vel[r])
                hi[r] = lo[r]
            else:
                lo[r] = -inf
                hi[r] = inf
            r += 1


@njit(boolean(F1, F2, F1, F2, I1, F1, F1), cache=True)
def actuated_torques(tau, M, h, Jf, act, dv, f):
    """``tau = M[act] dv + h[act] - Jf[:, act]^T f``: the actuated rows of the dynamics,
    written into ``tau``; returns whether ``tau`` and ``dv`` are finite (the controller's
    output check)."""
    n = len(dv)
    ok = True
    for a in range(len(act)):
        r = act[a]
        s = h[r]
        for c in range(n):
            s += M[r, c] * dv[c]
        for c in range(len(f)):
            s -= Jf[c, r] * f[c]
        tau[a] = s
        ok = ok and np.isfinite(s)
    for c in range(n):
        ok = ok and np.isfinite(dv[c])
    return ok


EPS = np.finfo(np.float64).eps
LOG3_PREC = EPS ** (1.0 / 3.0)     # Pinocchio's TaylorSeriesExpansion<double>::precision<2>()


@njit(cache=True)
def _theta_axis(i0, val, P, axis):
    """Near pi: the angle and unit axis of rotation ``P`` from its column ``i0`` (Pinocchio's
    ``internal::compute_theta_axis``, spatial/log.hxx)."""
    i1, i2 = (i0 + 1) % 3, (i0 + 2) % 3
    s = np.sqrt(val + EPS + EPS * EPS) * (1.0 if P[i2, i1] >= P[i1, i2] else -1.0)
    axis[i0] = s / 2.0
    axis[i1] = 1.0 / (2.0 * s) * (P[i1, i0] + P[i0, i1])
    axis[i2] = 1.0 / (2.0 * s) * (P[i2, i0] + P[i0, i2])
    w = 1.0 / (2.0 * s) * (P[i2, i1] - P[i1, i2])
    norm = np.sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2])
    for k in range(3):
        axis[k] /= norm
    return 2.0 * np.arctan2(norm, w)


@njit(void(F1, RO2, RO2), cache=True)
def log3_of_product(e, R_ref, R):
    """``e = log(R_ref R^T)``, Pinocchio's ``log3`` (spatial/log.hxx, the formula of pin 4:
    the product renormalised, ``theta = acos((tr - 1) / 2)`` with its expansions near 0 and pi,
    ``e = theta / sin(theta) * unskew(P)``, the singular branch within ``precision<2>`` of
    pi) in the compiled cycle instead of a numpy product and a Pinocchio call (1-1.5 us)."""
    P = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            P[i, j] = R_ref[i, 0] * R[j, 0] + R_ref[i, 1] * R[j, 1] + R_ref[i, 2] * R[j, 2]
    n0 = np.sqrt(P[0, 0] * P[0, 0] + P[1, 0] * P[1, 0] + P[2, 0] * P[2, 0])
    n1 = np.sqrt(P[0, 1] * P[0, 1] + P[1, 1] * P[1, 1] + P[2, 1] * P[2, 1])
    c0 = np.array([P[0, 0] / n0, P[1, 0] / n0, P[2, 0] / n0])
    c1 = np.array([P[0, 1] / n1, P[1, 1] / n1, P[2, 1] / n1])
    c2 = np.array([c0[1] * c1[2] - c0[2] * c1[1], c0[2] * c1[0] - c0[0] * c1[2], c0[0] * c1[1] - c0[1] * c1[0]])
    c0 = np.array([c1[1] * c2[2] - c1[2] * c2[1], c1[2] * c2[0] - c1[0] * c2[2], c1[0] * c2[1] - c1[1] * c2[0]])
    for i in range(3):
        P[i, 0], P[i, 1], P[i, 2] = c0[i], c1[i], c2[i]
    tr = P[0, 0] + P[1, 1] + P[2, 2]
    cos_value = (tr - 1.0) / 2.0
    if cos_value >= -1.0 + LOG3_PREC:
        expansion = np.sqrt(2.0 * (1.0 - cos_value) + EPS * EPS)
        if tr <= 3.0 - LOG3_PREC:
            theta = np.arccos(cos_value) if tr >= -1.0 + LOG3_PREC else np.pi - expansion
        else:
            theta = expansion
        a0, a1, a2 = 0.5 * (P[2, 1] - P[1, 2]), 0.5 * (P[0, 2] - P[2, 0]), 0.5 * (P[1, 0] - P[0, 1])
        sq = a0 * a0 + a1 * a1 + a2 * a2
        t = theta / np.sin(theta) if theta >= LOG3_PREC else 1.0 + sq / 6.0 + sq * sq * 3.0 / 40.0
        e[0], e[1], e[2] = t * a0, t * a1, t * a2
        return
    val = np.array([2.0 * P[0, 0] - tr + 1.0, 2.0 * P[1, 1] - tr + 1.0, 2.0 * P[2, 2] - tr + 1.0])
    if val[0] >= val[1]:
        k = 0 if val[0] >= val[2] else 2
    else:
        k = 1 if val[1] >= val[2] else 2
    axis = np.empty(3)
    theta = _theta_axis(k, val[k], P, axis)
    for i in range(3):
        e[i] = theta * axis[i]


@njit(void(F1, RO2, RO2, F1, F1, F1, f8, f8, f8), cache=True)
def orientation_gradient(g, R_ref, R, v, angular_velocity, angular_acceleration, weight, kp, kd):
    """Base orientation task's gradient (tasks/base_pose.py): ``g[3:6] -= w R^T ẇ_des`` with
    ``ẇ_des = ẇ_ref + kp e + kd (w_ref - R v[3:6])``, ``e = log(R_ref R^T)`` (world,
    :func:`log3_of_product`)."""
    e = np.empty(3)
    log3_of_product(e, R_ref, R)
    a = np.empty(3)
    for i in range(3):
        Rw = R[i, 0] * v[3] + R[i, 1] * v[4] + R[i, 2] * v[5]
        a[i] = angular_acceleration[i] + kp * e[i] + kd * (angular_velocity[i] - Rw)
    for j in range(3):
        g[3 + j] -= weight * (R[0, j] * a[0] + R[1, j] * a[1] + R[2, j] * a[2])


@njit(void(F2, F2, F2, F2), cache=True)
def point_jacobians(Jp, J, R, points):
    """World Jacobians of points ``p_i`` of a frame (model_update.py): rows ``3i..3i+3`` of
    ``Jp`` are ``J[:3] - [R p_i]x J[3:]`` (``J`` the frame's 6 x n LOCAL_WORLD_ALIGNED one)."""
    n = J.shape[1]
    for p in range(points.shape[0]):
        r0 = R[0, 0] * points[p, 0] + R[0, 1] * points[p, 1] + R[0, 2] * points[p, 2]
        r1 = R[1, 0] * points[p, 0] + R[1, 1] * points[p, 1] + R[1, 2] * points[p, 2]
        r2 = R[2, 0] * points[p, 0] + R[2, 1] * points[p, 1] + R[2, 2] * points[p, 2]
        for c in range(n):
            Jp[3 * p, c] = J[0, c] - (r1 * J[5, c] - r2 * J[4, c])
            Jp[3 * p + 1, c] = J[1, c] - (r2 * J[3, c] - r0 * J[5, c])
            Jp[3 * p + 2, c] = J[2, c] - (r0 * J[4, c] - r1 * J[3, c])


@njit(void(RO2, I1, F3, F2, F2, F2, F1, I1, F3, F2, F3, F2), cache=True)
def contact_frames(oMi, joints, placement, support, J, dJ, v, cols, J6, drift, R, p):
    """Every contact frame's terms from one Pinocchio pass (model_update.py; ``computeAllTerms``
    fills the joints' placements ``oMi`` (njoints x 12, [R column-major | t]), world Jacobians
    ``J`` and their time derivatives ``dJ``). Frame i is ``placement[i]`` (4 x 4) in joint
    ``joints[i]``, whose supporting columns are ``support[i]`` (1 or 0): its rotation ``R[i]``
    and origin ``p[i]``; its LOCAL_WORLD_ALIGNED Jacobian on the columns ``cols``,
    ``J6[i] = [J_lin + J_ang x p; J_ang]`` (the origin's velocity from the spatial twist at the
    world origin); and its classical acceleration at zero joint acceleration
    ``drift[i] = [a_lin + a_ang x p + w x v_p; a_ang]`` with ``(a_lin, a_ang) = dJ v`` and
    ``(v_p, w)`` the origin's velocity, over its supporting columns."""
    nv = J.shape[1]
    Rj = np.empty((3, 3))
    tw = np.empty(12)
    for i in range(joints.shape[0]):
        j = joints[i]
        H = placement[i]
        for a in range(3):
            for c in range(3):
                Rj[a, c] = oMi[j, 3 * c + a]
        for a in range(3):
            s = oMi[j, 9 + a]
            for c in range(3):
                s += Rj[a, c] * H[c, 3]
                R[i, a, c] = Rj[a, 0] * H[0, c] + Rj[a, 1] * H[1, c] + Rj[a, 2] * H[2, c]
            p[i, a] = s
        p0, p1, p2 = p[i, 0], p[i, 1], p[i, 2]
        tw[:] = 0.0                       # J v (6), dJ v (6) over the supporting columns
        for c in range(nv):
            if support[i, c] != 0.0:
                for a in range(6):
                    tw[a] += J[a, c] * v[c]
                    tw[6 + a] += dJ[a, c] * v[c]
        for k in range(cols.shape[0]):
            c = cols[k]
            if support[i, c] == 0.0:
                for a in range(6):
                    J6[i, a, k] = 0.0
                continue
            w0, w1, w2 = J[3, c], J[4, c], J[5, c]
            J6[i, 0, k] = J[0, c] + w1 * p2 - w2 * p1
            J6[i, 1, k] = J[1, c] + w2 * p0 - w0 * p2
            J6[i, 2, k] = J[2, c] + w0 * p1 - w1 * p0
            J6[i, 3, k] = w0
            J6[i, 4, k] = w1
            J6[i, 5, k] = w2
        o0, o1, o2 = tw[3], tw[4], tw[5]
        vp0 = tw[0] + o1 * p2 - o2 * p1
        vp1 = tw[1] + o2 * p0 - o0 * p2
        vp2 = tw[2] + o0 * p1 - o1 * p0
        al0, al1, al2 = tw[9], tw[10], tw[11]
        drift[i, 0] = tw[6] + al1 * p2 - al2 * p1 + o1 * vp2 - o2 * vp1
        drift[i, 1] = tw[7] + al2 * p0 - al0 * p2 + o2 * vp0 - o0 * vp2
        drift[i, 2] = tw[8] + al0 * p1 - al1 * p0 + o0 * vp1 - o1 * vp0
        drift[i, 3] = al0
        drift[i, 4] = al1
        drift[i, 5] = al2


# Its compiled entry point, without the dispatcher's type resolution of the 12 arguments (about
# 0.5 us a cycle). The entry point does not check types as the dispatcher does: a float32 array
# is refused with a TypeError (test/control/test_contact_frames.py), but other mismatches are
# not guaranteed to be (an int64 or 2-D array given to another kernel's entry point was read
# as float64 bytes, or crashed). Only the model update calls it, with arrays it made itself
# with the signature's types.
CONTACT_FRAMES = contact_frames.overloads[contact_frames.signatures[0]].entry_point


@njit(void(F1, I1, F1, F1, F1, f8, f8), cache=True)
def posture_gradient(g, cols, q_ref, q, v, wkp, wkd):
    """Posture task's gradient (tasks/posture.py): ``g[cols] -= w kp (q_ref - q) - w kd v``."""
    for k in range(len(cols)):
        g[cols[k]] -= wkp * (q_ref[k] - q[k]) - wkd * v[k]


@njit(boolean(F1), cache=True)
def finite(x):
    """Whether every entry of ``x`` is finite (the controller's input and output checks)."""
    for i in range(len(x)):
        if not np.isfinite(x[i]):
            return False
    return True


@njit(boolean(F1, F1), cache=True)
def crossed(lo, hi):
    """Whether any lower bound is above its upper bound."""
    for i in range(len(lo)):
        if lo[i] > hi[i]:
            return True
    return False

"""Farghdani et al.'s (2025) Boltzmann-Hamel whole-body model ([Farghdani 2025, Secs. III-V]), modular.

Coordinates are Pinocchio's: ``q = [p, quat xyzw, joints]`` and ``v = [V_b, theta_dot]`` with
V_b the base body twist [linear; angular] in the base frame X_b (Farghdani et al.'s (2025) quasi-velocity
V^b_sb; X_b is the root joint frame, which need not be at the CoM: I_b is then the body's
6x6 inertia about that origin and every formula holds unchanged). The equations are

    M(theta) v_dot + C(theta, v) v + N(Q) = tau + J^T F_t                           (6)

Each base-attached subtree is one *module* (Farghdani et al.'s (2025) leg; for TALOS also the torso with
arms and head). Its links l contribute, with Phi_l = [1_6, J_l] and J_l the leg Jacobian
whose columns are the base-frame joint twists xi'_k of l's ancestors (16-17),

    M^bb_l = Ad^-T_{g_b,l} I_l Ad^-1_{g_b,l},  M^btheta_l = M^bb_l J_l,  M^thth_l = J_l^T M^bb_l J_l

and M is the arrowhead (31): legs couple only through the body.

Two forms:

* :class:`HamelDirect` follows the paper literally: per-link blocks summed into per-leg
  modules (32), the arrowhead (31), C v by Proposition 2 (44)-(48) with the *corrected*
  Lemma 3 ([Farghdani 2025, Sec. IV-B, Eqs. (40)-(45), with the index typos corrected]) written through base-frame twists: with ad_k = ad(xi'_k),
  d Ad^-1_{g_b,l} / d theta_k = -Ad^-1_{g_b,l} ad_k for k an ancestor of l (or l itself) and
  d xi'_m / d theta_k = ad_k xi'_m for k a strict ancestor of m (0 otherwise). Substituting
  xi'_k = Ad_{e^{xi_1 th_1}...e^{xi_k th_k}} xi_k gives exactly the corrected (40) and (43).
  Gravity by (9) (which does depend on the leg angles), tip Jacobians by (11), forward
  dynamics by the arrowhead Schur complement, inverse dynamics by (6). Its tree is the
  compiled one (:class:`~hybrid_dynamics.dynamics.compiled_tree.CompiledTree`): links with x_ij = 0
  are absent, locked joints merged into their parents.

* :class:`HamelFast` is the precomputed per-leg-type form (section 2.9), vectorised instead of
  trig-monomial: every link of every leg at the same depth is one row of a numpy array, so
  an evaluation is a fixed number of array operations whatever the number of legs. The
  existence numbers multiply the link inertias (Algorithm 3: healthy dimensions, then the
  rows and columns of missing coordinates are deleted); a locked joint is held at its angle
  with zero rate and its row deleted, which is the same system as the merged body. M uses
  the composite regrouping sum_l x_l J_l^T M^bb_l J_l = [xi'_m . (sum_{l below m} M^bb_l)
  xi'_k]; h = C v + N is the base-frame Newton-Euler sum h = sum_l Phi_l^T w_l, with
  w_l = M^bb_l (a_l - g) - ad(V_l)^T M^bb_l V_l (the same quantity as (44) + (9)).
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from .engine import ModularEngine, tree_data
from .compiled_tree import _SEQ
from .lie import Ad, Ad_inv, ad, cross3, force_cross, quat_to_rot, skew, skew_b, vee3

GRAVITY = np.array([0.0, 0.0, -9.81])


def _tip_forces(J: np.ndarray, f_tips: Optional[np.ndarray]) -> np.ndarray:
    if f_tips is None:
        return np.zeros(J.shape[1])
    return J.T @ np.asarray(f_tips, float).reshape(-1)


def arrowhead_solve(M: np.ndarray, r: np.ndarray, classes) -> np.ndarray:
    """Solve M x = r for the arrowhead M of (31) by the Schur complement on the base:
    O(sum n_i^3 + 6^3). ``classes`` lists (positions (B, s)) of equal-size leg blocks."""
    S = M[:6, :6].copy()
    rb = r[:6].copy()
    parts = []
    for idx in classes:
        D = M[idx[:, :, None], idx[:, None, :]]                      # (B, s, s)
        Bt = M[idx, :6]                                              # (B, s, 6)
        rhs = np.concatenate([Bt, r[idx][:, :, None]], axis=2)       # (B, s, 7)
        Y = np.linalg.solve(D, rhs)
        S -= np.einsum("bsi,bsj->ij", Bt, Y[:, :, :6])
        rb -= np.einsum("bsi,bs->i", Bt, Y[:, :, 6])
        parts.append((idx, Y))
    x = np.empty_like(r)
    xb = np.linalg.solve(S, rb)
    x[:6] = xb
    for idx, Y in parts:
        x[idx] = Y[:, :, 6] - Y[:, :, :6] @ xb
    return x


def schur_classes(group_of_column: np.ndarray) -> List[np.ndarray]:
    """Positions in v (base first) of each leg module, grouped by module size."""
    by_group = {}
    for col, g in enumerate(group_of_column):
        by_group.setdefault(int(g), []).append(6 + col)
    by_size = {}
    for cols in by_group.values():
        by_size.setdefault(len(cols), []).append(cols)
    return [np.array(v, dtype=int) for v in by_size.values()]


# ================================================================================ direct
class HamelDirect(ModularEngine):
    """[Farghdani 2025] in its direct form: per-link modules, Lemma 3 derivatives (see module doc)."""

    name = "hamel"

    @staticmethod
    def _structure(tree):
        """Per leg module its bodies and each link's local columns (itself and its ancestors in
        the module), concatenated from the per-subtree pieces the skeleton was assembled from
        (a module is contiguous: depth-first order)."""
        return tree.skeleton.direct

    def _install(self, built) -> None:
        self.tree, self.coords, self.groups, self.cols = built

    @property
    def classes(self) -> List[np.ndarray]:
        """Positions in v of the leg modules, grouped by size (the Schur solve's batches);
        derived on the first forward dynamics of a structure."""
        extra = self.tree.skeleton.extra
        out = extra.get("hamel_classes")
        if out is None:
            by_size = {}
            for g in self.groups:
                by_size.setdefault(len(g), []).append(g[0])
            out = extra["hamel_classes"] = [np.array(v)[:, None] + _SEQ[5:5 + s] for s, v in by_size.items()]
        return out

    # ------------------------------------------------------------------ kinematics (12, 16-17)
    def _fk(self, q):
        t = self.tree
        n = t.n
        R, p = t.link_poses(q[7:], np.eye(3), np.zeros(3))
        xi = np.zeros((n + 1, 6))
        Mbb = np.empty((n + 1, 6, 6))
        Mbb[0] = t.I6[0]
        for b in range(1, n + 1):
            xi[b] = Ad(R[b], p[b]) @ t.S[b]                 # xi'_b: joint twist in X_b
            X = Ad_inv(R[b], p[b])
            Mbb[b] = X.T @ t.I6[b] @ X                      # Lemma 1: M^bb_l
        return R, p, xi, Mbb

    def _J(self, bodies, l, xi):
        J = np.zeros((6, len(bodies)))
        c = self.cols[l]
        J[:, c] = xi[bodies[c]].T
        return J

    # ------------------------------------------------------------------ M (31)-(32)
    def _mass(self, xi, Mbb):
        M = np.zeros((self.nv, self.nv))
        M[:6, :6] = Mbb[0]
        for bodies in self.groups:
            cols = 5 + bodies
            Mbb_leg = np.zeros((6, 6))
            Mbt = np.zeros((6, len(bodies)))
            Mtt = np.zeros((len(bodies), len(bodies)))
            for l in bodies:                                # x_ij = 1 for every link present
                J = self._J(bodies, l, xi)
                MJ = Mbb[l] @ J
                Mbb_leg += Mbb[l]
                Mbt += MJ
                Mtt += J.T @ MJ
            M[:6, :6] += Mbb_leg
            M[:6, cols] = Mbt
            M[cols, :6] = Mbt.T
            M[np.ix_(cols, cols)] = Mtt
        return M

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        self._check(q)
        _, _, xi, Mbb = self._fk(q)
        return self._mass(xi, Mbb)

    # ------------------------------------------------------------------ C v (44)-(48)
    def _coriolis(self, xi, Mbb, v):
        Vb = v[:6]
        Cv = np.zeros(self.nv)
        Pb = Mbb[0] @ Vb                                     # P = M v, body rows
        for bodies in self.groups:
            ng = len(bodies)
            cols = 5 + bodies
            vg = np.concatenate([Vb, v[cols]])
            Acal = np.zeros((6 + ng, 6 + ng))                # (45): M dot of this leg module
            dP = np.zeros((6 + ng, ng))                      # dP/dtheta_k with v fixed
            for l in bodies:
                J = self._J(bodies, l, xi)
                Ml = Mbb[l]
                Pb += Ml @ (J @ vg[6:] + Vb)
                c = self.cols[l]
                for i, k in enumerate(c):
                    adk = ad(xi[bodies[k]])
                    dMbb = -adk.T @ Ml - Ml @ adk            # Lemma 3 (43), corrected
                    dJ = np.zeros((6, ng))
                    for m in c[i + 1:]:                       # Lemma 3 (40), corrected
                        dJ[:, m] = adk @ xi[bodies[m]]
                    dMbt = dMbb @ J + Ml @ dJ                 # (36)
                    dMtt = dJ.T @ Ml @ J + J.T @ dMbb @ J + J.T @ Ml @ dJ   # (37)
                    dM = np.empty((6 + ng, 6 + ng))
                    dM[:6, :6], dM[:6, 6:], dM[6:, :6], dM[6:, 6:] = dMbb, dMbt, dMbt.T, dMtt
                    Acal += vg[6 + k] * dM
                    dP[:, k] += dM @ vg
            Av = Acal @ vg
            Cv[:6] += Av[:6]
            Cv[cols] += Av[6:] - 0.5 * (dP.T @ vg)           # -1/2 [D E] v   (47-48)
        # -1/2 B V = -ad(V_b)^T P_b   (46)
        Cv[:6] += force_cross(Vb, Pb)
        return Cv

    def coriolis(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """C(q, v) v of Proposition 2."""
        self._check(q, v)
        _, _, xi, Mbb = self._fk(q)
        return self._coriolis(xi, Mbb, v)

    # ------------------------------------------------------------------ N (9)
    def _gravity(self, q, R, p, xi, Mbb):
        t = self.tree
        ghat = -quat_to_rot(q[3:7]).T @ GRAVITY              # g0 R_sb^T e_z
        m = t.mass
        com = np.zeros((t.n + 1, 3))                         # CoM of each body in X_b
        for b in range(t.n + 1):
            if m[b] > 0:
                c_local = vee3(t.I6[b][3:, :3]) / m[b]
                com[b] = R[b] @ c_local + p[b]
        N = np.zeros(self.nv)
        N[:3] = m.sum() * ghat
        N[3:6] = (m[:, None] * cross3(com, ghat)).sum(0)
        for k in range(1, t.n + 1):                          # dp_l/dtheta_k = xi'_v + xi'_w x p_l
            below = t.anc[k, :] > 0
            dp = xi[k, :3] + cross3(xi[k, 3:], com[below])
            N[5 + k] = (m[below] * (dp @ ghat)).sum()
        return N

    def gravity(self, q: np.ndarray) -> np.ndarray:
        self._check(q)
        R, p, xi, Mbb = self._fk(q)
        return self._gravity(q, R, p, xi, Mbb)

    def nle(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """h = C(q, v) v + N(Q)."""
        self._check(q, v)
        R, p, xi, Mbb = self._fk(q)
        return self._coriolis(xi, Mbb, v) + self._gravity(q, R, p, xi, Mbb)

    # ------------------------------------------------------------------ tip Jacobians (11)
    def _tips(self, R, p, xi):
        t = self.tree
        J = np.zeros((6 * len(t.tips), self.nv))
        for i, tip in enumerate(t.tips):
            b = tip.body
            Rt, pt = R[b] @ tip.R, p[b] + R[b] @ tip.p
            X = Ad_inv(Rt, pt)
            rows = slice(6 * i, 6 * i + 6)
            J[rows, :6] = X
            anc = np.flatnonzero(t.anc[1:, b]) + 1
            J[rows, 5 + anc] = X @ xi[anc].T
        return J

    def tip_jacobians(self, q: np.ndarray) -> np.ndarray:
        """Stacked LOCAL tip Jacobians (6 per existing tip, in ``tips`` order)."""
        self._check(q)
        R, p, xi, _ = self._fk(q)
        return self._tips(R, p, xi)

    @property
    def tips(self) -> List[str]:
        return [t.name for t in self.tree.tips]

    # ------------------------------------------------------------------ FD / ID
    def forward_dynamics(self, q, v, tau, f_tips=None) -> np.ndarray:
        """v_dot = M^-1 (tau - C v - N + J^T F_t), by the arrowhead Schur complement."""
        self._check(q, v)
        R, p, xi, Mbb = self._fk(q)
        M = self._mass(xi, Mbb)
        r = np.asarray(tau, float) - self._coriolis(xi, Mbb, v) - self._gravity(q, R, p, xi, Mbb)
        if f_tips is not None:
            r = r + _tip_forces(self._tips(R, p, xi), f_tips)
        return arrowhead_solve(M, r, self.classes)

    def inverse_dynamics(self, q, v, a, f_tips=None) -> np.ndarray:
        """tau = M a + C v + N - J^T F_t (every coordinate, base included)."""
        self._check(q, v)
        R, p, xi, Mbb = self._fk(q)
        tau = self._mass(xi, Mbb) @ a + self._coriolis(xi, Mbb, v) + self._gravity(q, R, p, xi, Mbb)
        if f_tips is not None:
            tau = tau - _tip_forces(self._tips(R, p, xi), f_tips)
        return tau


# ================================================================================ fast
def _ad_tensor() -> np.ndarray:
    """G with ad(a) = (a @ G).reshape(6, 6): ad is linear in a, so a batch of ad matrices
    is one matrix product."""
    G = np.empty((6, 36))
    for i in range(6):
        e = np.zeros(6)
        e[i] = 1.0
        G[i] = ad(e).reshape(36)
    return G


_G_AD = _ad_tensor()
_G_FX = np.stack([-(g.reshape(6, 6).T) for g in _G_AD]).reshape(6, 36)   # -ad(a)^T
_G_SKEW = np.stack([skew(e).reshape(9) for e in np.eye(3)])              # skew(p) = (p @ G).reshape(3, 3)


def _level_index(idx: np.ndarray):
    """A slice when the indices are evenly spaced (a view instead of a gather)."""
    if len(idx) == 1:
        return slice(int(idx[0]), int(idx[0]) + 1)
    step = int(idx[1] - idx[0])
    if step > 0 and np.all(np.diff(idx) == step):
        return slice(int(idx[0]), int(idx[-1]) + 1, step)
    return idx


class HamelFast(ModularEngine):
    """Farghdani et al.'s (2025) fast form, vectorised over every leg at once (see module doc).

    Arrays have one row per body, the base first (row 0, identity pose, zero joint twist), so
    the base's own terms fall into the same sums as the links'."""

    name = "hamel_fast"

    def __init__(self, robot, morphology=None):
        d = tree_data(robot)
        n = d.n
        self._n = n
        self._levels = []
        for depth in range(1, int(d.depth.max()) + 1 if n else 1):
            bodies = np.flatnonzero(d.depth == depth)
            parents = d.parent[bodies]
            self._levels.append((_level_index(bodies), _level_index(parents), bool(np.all(parents == 0))))
            rows, par, base = self._levels[-1]
            rows_j = _level_index(bodies - 1)
            self._levels[-1] = (rows, par, base, rows_j)
        ax = d.axis[1:]
        K = skew_b(ax) * (d.kind[1:] == 0)[:, None, None]     # prismatic joints do not rotate
        self._K = d.R0[1:] @ K                              # R0 Rot(th) = R0 + s R0 K + (1-c) R0 K^2
        self._K2 = d.R0[1:] @ (K @ K)
        self._R0 = d.R0[1:]
        # joint placement * joint motion = [1, sin th, 1 - cos th, th] @ basis (Rodrigues)
        basis = np.zeros((n, 4, 4, 4))
        basis[:, 0, :3, :3] = d.R0[1:]
        basis[:, 0, :3, 3] = d.p0[1:]
        basis[:, 0, 3, 3] = 1.0
        basis[:, 1, :3, :3] = self._K
        basis[:, 2, :3, :3] = self._K2
        basis[:, 3, :3, 3] = np.einsum("nij,nj->ni", d.R0[1:], ax) * (d.kind[1:] == 1)[:, None]
        self._basis = basis.reshape(n, 4, 16)
        self._coef = np.ones((n, 1, 4))
        self._rev = (d.kind[1:] == 0).astype(float)[:, None]
        self._pri = (d.kind[1:] == 1).astype(float)[:, None]
        self._any_pri = bool(self._pri.any())
        self._R0ax = np.einsum("nij,nj->ni", d.R0[1:], ax)
        self._p0 = d.p0[1:]
        self._axisT = np.zeros((n + 1, 3, 1))
        self._axisT[1:, :, 0] = ax
        A = d.anc.copy()                                     # A[m, l]: m is l or above it
        A[0, 0] = 0.0
        self._A = A                                          # (n+1, n+1), row and column 0 zero
        self._AT = A.T.copy()
        self._Aj = A[1:].copy()                              # joint rows
        self._Astrict = A[1:, 1:] - np.eye(n)
        self._Ppar = np.zeros((n + 1, n + 1))                # Ppar @ x: the parent's row (base: 0)
        for b in range(1, n + 1):
            self._Ppar[b, d.parent[b]] = 1.0
        self._tips_all = d.tips
        self._tip_joint_all = np.array([t.body - 1 for t in d.tips], dtype=int)
        self._tip_body_all = self._tip_joint_all + 1
        self._tipR_all = np.array([t.R for t in d.tips]).reshape(-1, 3, 3)
        self._tipp_all = np.array([t.p for t in d.tips]).reshape(-1, 3)
        self._classes = schur_classes(d.group[1:])          # healthy leg blocks, by size
        self._eye4 = np.eye(4)
        super().__init__(robot, morphology)

    def _assemble(self, morphology):
        """Existence vectors and index maps only: every evaluation runs at healthy dimensions
        and deletes the rows and columns of missing coordinates (Algorithm 3)."""
        sk, angles = self.data.skeleton(morphology)          # raises before anything changes
        coords = sk.coordinates(angles)
        derived = sk.extra.get(self.name)                    # per skeleton, computed once
        if derived is None:
            act = sk.keep[1:] - 1                            # 0-based joint indices present
            alive = [i for p in sk.pieces for i, _, _, _ in p.tips]
            if not self.data._tips_sorted:
                alive.sort()
            alive = np.array(alive, dtype=int)
            # x_ij multiplies link l_ij (base: 1): the pieces' blocks side by side
            I6e = np.concatenate([self.data.I6[:1]] + [p.I6e for p in sk.pieces])
            vi = sk.v_index
            derived = sk.extra[self.name] = (act, alive, I6e, len(vi) == self._n + 6, vi[:, None], vi[None, :])
        return coords, derived

    def _install(self, built) -> None:
        self.coords, (self._act, self._alive, self._I6e, self._healthy, self._vi_r, self._vi_c) = built
        self._thfill = self.coords.q_fill[7:]

    @property
    def tips(self) -> List[str]:
        return [self._tips_all[i].name for i in self._alive]

    # ------------------------------------------------------------------ kinematics
    def _fk(self, q):
        """Base-frame poses (R, p), joint twists xi' and x_ij M^bb of every body (row 0: base)."""
        if self._healthy:
            th = q[7:]
        else:
            th = self._thfill.copy()
            th[self._act] = q[7:]
        coef = self._coef.copy()
        coef[:, 0, 1] = np.sin(th)
        coef[:, 0, 2] = 1.0 - np.cos(th)
        coef[:, 0, 3] = th
        Tl = (coef @ self._basis).reshape(-1, 4, 4)
        T = np.empty((self._n + 1, 4, 4))
        T[0] = self._eye4
        for rows, parents, at_base, rows_j in self._levels:  # one batched product per depth
            T[rows] = Tl[rows_j] if at_base else T[parents] @ Tl[rows_j]
        R = T[:, :3, :3]
        p = T[:, :3, 3]
        n1 = self._n + 1
        w = (R @ self._axisT)                                # (n+1, 3, 1) joint axes in X_b
        xi = np.empty((n1, 6))
        P = (p @ _G_SKEW).reshape(n1, 3, 3)                  # skew(p)
        pxw = (P @ w)[:, :, 0]
        if self._any_pri:
            xi[1:, :3] = pxw[1:] * self._rev + w[1:, :, 0] * self._pri
            xi[1:, 3:] = w[1:, :, 0] * self._rev
            xi[0] = 0.0
        else:
            xi[:, :3] = pxw
            xi[:, 3:] = w[:, :, 0]
        Rt = np.swapaxes(R, 1, 2)
        X = np.zeros((n1, 6, 6))                             # Ad^-1_{g_b,l}
        X[:, :3, :3] = Rt
        X[:, 3:, 3:] = Rt
        X[:, :3, 3:] = -Rt @ P
        Mbb = np.swapaxes(X, 1, 2) @ self._I6e @ X          # x_ij M^bb_ij of every body
        return R, p, xi, Mbb

    def _mass_full(self, xi, Mbb):
        """M at healthy dimensions (removed links carry x_ij = 0); Ic_m = sum of M^bb below m."""
        n = self._n
        Ic = (self._Aj @ Mbb.reshape(n + 1, 36)).reshape(n, 6, 6)
        xj = xi[1:]
        F = (Ic @ xj[:, :, None])[:, :, 0]
        X = xj @ F.T
        M = np.empty((n + 6, n + 6))
        M[:6, :6] = Mbb.sum(0)
        M[:6, 6:] = F.T
        M[6:, :6] = F
        M[6:, 6:] = X * self._Aj[:, 1:] + (X * self._Astrict).T
        return M

    def _h_full(self, q, xi, Mbb, v, with_velocity=True):
        """h = sum_l Phi_l^T w_l, w_l = M^bb_l (a_l - g) - ad(V_l)^T M^bb_l V_l (row 0: base)."""
        n1 = self._n + 1
        x, y, z, qw = q[3:7]
        g6 = np.array([-9.81 * 2 * (x * z - y * qw), -9.81 * 2 * (y * z + x * qw),
                       -9.81 * (1 - 2 * (x * x + y * y)), 0.0, 0.0, 0.0])    # R_sb^T g
        if with_velocity:
            Vb = v[:6]
            thd = np.zeros(n1)
            if self._healthy:
                thd[1:] = v[6:]
            else:
                thd[1 + self._act] = v[6:]
            Xd = xi * thd[:, None]
            V = self._AT @ Xd + Vb                           # twist of each body, in X_b
            # accelerations at v_dot = 0: a_l = sum over m above l of ad(V_parent(m)) xi'_m thd_m
            c = (((self._Ppar @ V) @ _G_AD).reshape(n1, 6, 6) @ Xd[:, :, None])[:, :, 0]
            a = self._AT @ c
            both = Mbb @ np.stack([a - g6, V], axis=2)       # M^bb (a - g), M^bb V
            w = both[:, :, 0] + ((V @ _G_FX).reshape(n1, 6, 6) @ both[:, :, 1:2])[:, :, 0]
        else:
            w = -(Mbb @ g6)
        h = np.empty(n1 + 5)
        h[:6] = w.sum(0)
        h[6:] = (xi[1:] * (self._Aj @ w)).sum(1)             # xi'_m . (sum of wrenches below m)
        return h

    def _tipJ_full(self, R, p, xi):
        alive = self._alive
        tb = self._tip_body_all[alive]
        T = len(tb)
        Rt = R[tb] @ self._tipR_all[alive]
        pt = p[tb] + (R[tb] @ self._tipp_all[alive][:, :, None])[:, :, 0]
        RtT = np.swapaxes(Rt, 1, 2)
        X = np.zeros((T, 6, 6))                              # Ad^-1_{g_b,t}
        X[:, :3, :3] = RtT
        X[:, 3:, 3:] = RtT
        X[:, :3, 3:] = -RtT @ (pt @ _G_SKEW).reshape(T, 3, 3)
        J = np.empty((T, 6, 6 + self._n))
        J[:, :, :6] = X
        J[:, :, 6:] = (X @ xi[1:].T) * self._A[1:, tb].T[:, None, :]
        return J.reshape(6 * T, -1)

    # deletion of the rows and columns of missing coordinates (Algorithm 3, step 4)
    def _cut(self, x):
        return x if self._healthy else x[self.coords.v_index]

    def _cut2(self, M):
        return M if self._healthy else M[self._vi_r, self._vi_c]

    def _solve_full(self, M, r):
        """Arrowhead Schur solve at healthy dimensions; a missing coordinate is decoupled
        (unit diagonal, zero row and column, zero right-hand side)."""
        if not self._healthy:
            d = np.flatnonzero(~self.coords.jmask) + 6
            M[d, :] = 0.0
            M[:, d] = 0.0
            M[d, d] = 1.0
            r[d] = 0.0
        return arrowhead_solve(M, r, self._classes)

    def _full(self, x):
        if self._healthy:
            return np.asarray(x, float)
        out = np.zeros(self._n + 6)
        out[self.coords.v_index] = x
        return out

    # ------------------------------------------------------------------ public
    def mass_matrix(self, q):
        self._check(q)
        _, _, xi, Mbb = self._fk(q)
        return self._cut2(self._mass_full(xi, Mbb))

    def nle(self, q, v):
        self._check(q, v)
        _, _, xi, Mbb = self._fk(q)
        return self._cut(self._h_full(q, xi, Mbb, v))

    def mass_and_nle(self, q, v):
        self._check(q, v)
        _, _, xi, Mbb = self._fk(q)
        return self._cut2(self._mass_full(xi, Mbb)), self._cut(self._h_full(q, xi, Mbb, v))

    def gravity(self, q):
        self._check(q)
        _, _, xi, Mbb = self._fk(q)
        return self._cut(self._h_full(q, xi, Mbb, None, with_velocity=False))

    def coriolis(self, q, v):
        self._check(q, v)
        _, _, xi, Mbb = self._fk(q)
        return self._cut(self._h_full(q, xi, Mbb, v) - self._h_full(q, xi, Mbb, None, with_velocity=False))

    def tip_jacobians(self, q):
        self._check(q)
        R, p, xi, _ = self._fk(q)
        J = self._tipJ_full(R, p, xi)
        return J if self._healthy else J[:, self.coords.v_index]

    def forward_dynamics(self, q, v, tau, f_tips=None):
        self._check(q, v)
        R, p, xi, Mbb = self._fk(q)
        r = self._full(tau) - self._h_full(q, xi, Mbb, v)
        if f_tips is not None:
            r = r + self._tipJ_full(R, p, xi).T @ np.asarray(f_tips, float).reshape(-1)
        return self._cut(self._solve_full(self._mass_full(xi, Mbb), r))

    def inverse_dynamics(self, q, v, a, f_tips=None):
        self._check(q, v)
        R, p, xi, Mbb = self._fk(q)
        tau = self._mass_full(xi, Mbb) @ self._full(a) + self._h_full(q, xi, Mbb, v)
        if f_tips is not None:
            tau = tau - self._tipJ_full(R, p, xi).T @ np.asarray(f_tips, float).reshape(-1)
        return self._cut(tau)

    # ------------------------------------------------------------------ simulation
    def forward_dynamics_contact(self, q, v, tau, force_law, dt: float = 0.0, joint_damping: float = 0.0):
        """v_dot with point contacts at the existing tips, from one kinematics pass.

        ``force_law(p, vel)`` gets the tips' world positions and world linear velocities
        (T x 3 each) and returns (f, C): world forces (T x 3) and their damping matrices
        C = -df/dvel (T x 3 x 3). The forces act at the tip frames as F_t = [R_st^T f; 0]
        ([Farghdani 2025, Eq. (11)]). With ``dt`` > 0 the damping of the contacts and the joint
        damping ``joint_damping`` (tau = ... - d theta_dot) are taken at the end of the step
        (linearly implicit): (M + dt (d 1_joints + J^T C J)) v_dot = tau - h + J^T f - d theta_dot;
        both terms keep the arrowhead shape (a tip moves with its own leg and the base).
        Returns (v_dot, f)."""
        R, p, xi, Mbb = self._fk(q)
        v_full = self._full(v)
        r = self._full(tau) - self._h_full(q, xi, Mbb, v)
        alive = self._alive
        tb = self._tip_body_all[alive]
        Rt = R[tb] @ self._tipR_all[alive]
        pt = p[tb] + (R[tb] @ self._tipp_all[alive][:, :, None])[:, :, 0]
        x, y, z, w = q[3:7]
        Rb = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                       [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                       [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        Rw = Rb @ Rt                                         # tip frames in the world
        pw = q[:3] + pt @ Rb.T
        T = len(tb)
        J = self._tipJ_full(R, p, xi).reshape(T, 6, -1)      # LOCAL, healthy columns
        Jw = Rw @ J[:, :3, :]                                # world linear rows (T, 3, nv)
        vel = Jw @ v_full
        f, C = force_law(pw, vel)
        r += np.einsum("tin,ti->n", Jw, f)
        M = self._mass_full(xi, Mbb)
        if dt > 0.0:
            n3 = Jw.reshape(3 * T, -1)
            M += dt * (n3.T @ (C @ Jw).reshape(3 * T, -1))
            if joint_damping:
                idx = np.arange(6, self._n + 6)
                M[idx, idx] += dt * joint_damping
        if joint_damping:
            r[6:] -= joint_damping * v_full[6:]
        return self._cut(self._solve_full(M, r)), f

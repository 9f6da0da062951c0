"""Shah et al.'s (2012) module-level DeNOC dynamics ([Shah 2012, Secs. 2-4, Eqs. (17)-(30)]), Saha's notation.

Every 3-vector is expressed in the inertial frame. Link k has its origin O_k on its inboard
joint axis (Pinocchio's joint frame origin); its twist is t_k = [w_k; o_dot_k] (angular
first) and its twist-rate the classical acceleration t_dot_k = [w_dot_k; o_ddot_k].

    A_{k,j} = [[1, 0], [skew(a_{k,j}), 1]],  a_{k,j} = O_j - O_k     (twist propagation)
    p_k = [e_k; 0] (revolute) or [0; e_k] (prismatic)                  (joint motion)
    M_k = [[I_k, m d~], [-m d~, m 1]]  about O_k,  Omega_k = diag(w~, w~),  E = diag(1, 0)
    w_k = M_k t_dot_k + Omega_k M_k E t_k - w^F_k                      (Newton-Euler about O_k)

*Modules* are the tree's maximal serial chains (each child module starts at the last link
of its parent), numbered outward from the base module M0. Module i stacks its links: the
module twist t^i = A^{i,beta} t^beta + N^i q_dot^i (8), with N^i block lower-triangular,
block (r, c) = A_{k_r, k_c} p_{k_c}, and A^{i,beta} zero but for its last block column.

The base module uses Pinocchio's coordinates instead of the paper's Euler angles (the choice
checked against Pinocchio in the tests): q_dot^0 = [v_b; w_b] in the base frame and
t_0 = P_0 q_dot^0 with P_0 = [[0, R], [R, 0]]; P_0_dot q_dot^0 = [0; R (w_b x v_b)].
Gravity enters as the base's o_ddot_0 - g.

Provided:
  * :meth:`DeNOC.gim` - the GIM by composite modules (A.1-A.3), I^{i,j} = N^iT M~^i A^{i,j} N^j;
  * :meth:`DeNOC.udu` - block UDU^T by articulated modules (A.4-A.9), D = diag(I_hat^i);
  * :meth:`DeNOC.nle` - h = N^T w at zero acceleration;
  * :meth:`DeNOC.inverse_dynamics` - every generalized force for a prescribed acceleration;
  * :meth:`DeNOC.floating_inverse_dynamics` - section 2.5: the base acceleration is not
    prescribed, q_ddot_0 = -I_0^-1 h~_0 and tau_theta = I_theta0 q_ddot_0 + h~_theta,
    by inter- and intra-modular recursions, O(n);
  * :meth:`DeNOC.forward_dynamics` - section 2.6: U phi_hat = tau - N^T w, D phi = phi_hat,
    U^T q_ddot = phi, as inter-modular recursions over modules and intra-modular ones over
    each module's links (the serial UDU^T of I_hat^i), O(n);
  * :meth:`DeNOC.forward_dynamics_dense` - the O(n^3) reference of Table 2: GIM + h, then a
    Cholesky solve.
"""
from __future__ import annotations

from typing import List

import numpy as np

from .engine import ModularEngine
from .hamel import GRAVITY
from .lie import cross3, quat_to_rot, skew, vee3


def _A(a: np.ndarray) -> np.ndarray:
    out = np.eye(6)
    out[3:, :3] = skew(a)
    return out


class _Kin:
    """World kinematics and link matrices at one configuration."""
    __slots__ = ("Rb", "R", "o", "e", "pk", "Mk", "m", "d", "I")


class DeNOC(ModularEngine):
    name = "denoc"

    @staticmethod
    def _structure(tree):
        """The link order of the recursions (inter- then intra-modular: modules in order, each
        outward) is the body order, since modules are contiguous chains numbered outward in
        depth-first order; the modules themselves are derived when gim/udu ask."""
        return (range(1, tree.n + 1),)

    def _install(self, built) -> None:
        self.tree, self.coords, self.order = built
        self._modules = None

    @property
    def modules(self):
        """Shah et al.'s (2012) modules: (parent module, links) of the current tree."""
        if self._modules is None:
            self._modules = self.tree.modules
        return self._modules

    @property
    def mchildren(self):
        """The child modules of each module (xi^i)."""
        extra = self.tree.skeleton.extra
        out = extra.get("mchildren")
        if out is None:
            modules = self.tree.modules
            out = [[] for _ in modules]
            for i in range(1, len(modules)):
                out[modules[i][0]].append(i)
            extra["mchildren"] = out
        return out

    @property
    def children(self):
        """Child links of each link."""
        children = [[] for _ in range(self.tree.n + 1)]
        for b, p in enumerate(self.tree.parent.tolist()[1:], 1):
            children[p].append(b)
        return children

    @property
    def module_of(self) -> np.ndarray:
        """The module of each link."""
        out = np.zeros(self.tree.n + 1, dtype=int)
        for i, (_, bodies) in enumerate(self.modules):
            out[list(bodies)] = i
        return out

    @property
    def tips(self) -> List[str]:
        return [t.name for t in self.tree.tips]

    # ------------------------------------------------------------------ kinematics
    def _kin(self, q) -> _Kin:
        t = self.tree
        n = t.n
        k = _Kin()
        Rb = quat_to_rot(q[3:7])
        R, o = t.link_poses(q[7:], Rb, q[:3])
        e = np.einsum("nij,nj->ni", R, t.axis)
        pk = np.zeros((n + 1, 6))
        rev = t.kind == 0
        pk[rev, :3] = e[rev]
        pk[t.kind == 1, 3:] = e[t.kind == 1]
        m = t.mass
        mc = np.array([vee3(I[3:, :3]) for I in t.I6])          # m c in the body frame
        d = np.einsum("nij,nj->ni", R, mc)                      # m d_k, world
        I = R @ t.I6[:, 3:, 3:] @ np.swapaxes(R, 1, 2)          # inertia about O_k, world
        Mk = np.zeros((n + 1, 6, 6))
        Mk[:, :3, :3] = I
        for b in range(n + 1):
            S = skew(d[b])
            Mk[b, :3, 3:] = S
            Mk[b, 3:, :3] = -S
            Mk[b, 3:, 3:] = m[b] * np.eye(3)
        k.Rb, k.R, k.o, k.e, k.pk, k.Mk, k.m, k.d, k.I = Rb, R, o, e, pk, Mk, m, d, I
        return k

    def _P0(self, k: _Kin) -> np.ndarray:
        P0 = np.zeros((6, 6))
        P0[:3, 3:] = k.Rb
        P0[3:, :3] = k.Rb
        return P0

    def _ext(self, k: _Kin, f_tips):
        """Tip wrenches (LOCAL [f; n] at each tip frame) as world wrenches [n; f] about O_k."""
        wF = np.zeros((self.tree.n + 1, 6))
        if f_tips is None:
            return wF
        F = np.asarray(f_tips, float).reshape(-1, 6)
        for tip, Ft in zip(self.tree.tips, F):
            b = tip.body
            Rt = k.R[b] @ tip.R
            r = k.o[b] + k.R[b] @ tip.p
            f, nm = Rt @ Ft[:3], Rt @ Ft[3:]
            wF[b, :3] += nm + cross3(r - k.o[b], f)
            wF[b, 3:] += f
        return wF

    # ------------------------------------------------------------------ link recursions
    def _forward(self, k: _Kin, v, qdd_theta, tdot0, wF):
        """Twists t_k, twist-rates t_dot_k and link wrenches w_k (step 1 of 2.5 and 2.6)."""
        n = self.tree.n
        par = self.tree.parent
        w_ = np.empty((n + 1, 3))
        od = np.empty((n + 1, 3))
        wd = np.empty((n + 1, 3))
        odd = np.empty((n + 1, 3))
        w_[0] = k.Rb @ v[3:6]
        od[0] = k.Rb @ v[:3]
        wd[0], odd[0] = tdot0[:3], tdot0[3:]
        kind = self.tree.kind
        thd = v[6:]
        for b in self.order:
            j = par[b]
            a = k.o[j] - k.o[b]                                  # a_{k, k-1}
            e = k.e[b]
            td, tdd = thd[b - 1], qdd_theta[b - 1]
            od[b] = od[j] + cross3(a, w_[j])                   # A_{k,k-1} t_{k-1}
            if kind[b] == 0:
                w_[b] = w_[j] + e * td
                wd[b] = wd[j] + e * tdd + cross3(w_[b], e) * td
                odd[b] = odd[j] + cross3(a, wd[j]) + cross3(od[j] - od[b], w_[j])
            else:
                w_[b] = w_[j]
                od[b] += e * td
                wd[b] = wd[j]
                odd[b] = (odd[j] + cross3(a, wd[j]) + cross3(od[j] - od[b], w_[j])
                          + e * tdd + cross3(w_[b], e) * td)
        # w_k = M_k t_dot_k + Omega_k M_k E t_k - w^F_k
        Iw = np.einsum("nij,nj->ni", k.I, w_)
        wd_ = np.einsum("nij,nj->ni", k.I, wd)
        md = k.d
        n_ = wd_ + cross3(md, odd) + cross3(w_, Iw)
        f_ = k.m[:, None] * odd + cross3(wd, md) + cross3(w_, cross3(w_, md))
        w = np.concatenate([n_, f_], axis=1) - wF
        return w

    def _shift(self, w_child, o_child, o_parent):
        """A_{c,k}^T w: the wrench at O_c moved to O_k."""
        out = w_child.copy()
        out[:3] += cross3(o_child - o_parent, w_child[3:])
        return out

    def _tdot0(self, k, v, a_base):
        """P_0 q_ddot_0 + P_0_dot q_dot_0 - [0; g]."""
        out = np.empty(6)
        out[:3] = k.Rb @ a_base[3:]
        out[3:] = k.Rb @ (a_base[:3] + cross3(v[3:6], v[:3])) - GRAVITY
        return out

    def _backward_wrench(self, k, w):
        """w~_k = w_k + sum over children A^T w~_c; modules s..0, links eta..1."""
        wt = w.copy()
        par = self.tree.parent
        for b in reversed(self.order):
            j = par[b]
            wt[j] += self._shift(wt[b], k.o[b], k.o[j])
        return wt

    def _generalized(self, k, wt):
        h = np.empty(self.nv)
        h[:3] = k.Rb.T @ wt[0, 3:]
        h[3:6] = k.Rb.T @ wt[0, :3]
        h[6:] = np.einsum("ni,ni->n", k.pk[1:], wt[1:])
        return h

    # ------------------------------------------------------------------ public: h, ID
    def nle(self, q, v):
        """h = N^T w at q_ddot = 0 (Coriolis, centrifugal and gravity)."""
        self._check(q, v)
        k = self._kin(q)
        w = self._forward(k, v, np.zeros(self.nv - 6), self._tdot0(k, v, np.zeros(6)), 0.0)
        return self._generalized(k, self._backward_wrench(k, w))

    def gravity(self, q):
        return self.nle(q, np.zeros(self.nv))

    def inverse_dynamics(self, q, v, a, f_tips=None):
        """Generalized forces for a prescribed acceleration a (base included): N^T w."""
        self._check(q, v)
        k = self._kin(q)
        w = self._forward(k, v, a[6:], self._tdot0(k, v, a[:6]), self._ext(k, f_tips))
        return self._generalized(k, self._backward_wrench(k, w))

    def floating_inverse_dynamics(self, q, v, qdd_theta, f_tips=None, tau_base=None):
        """Section 2.5: (q_ddot, tau_theta) for joint accelerations qdd_theta; the base
        acceleration follows from the unactuated base (generalized base force tau_base, 0)."""
        self._check(q, v)
        k = self._kin(q)
        t = self.tree
        par = t.parent
        w = self._forward(k, v, qdd_theta, self._tdot0(k, v, np.zeros(6)), self._ext(k, f_tips))
        wt = w.copy()
        Mt = k.Mk.copy()
        for b in reversed(self.order):                          # step 2
            j = par[b]
            Ab = _A(k.o[j] - k.o[b])
            wt[j] += self._shift(wt[b], k.o[b], k.o[j])
            Mt[j] += Ab.T @ Mt[b] @ Ab
        P0 = self._P0(k)
        h0 = P0.T @ wt[0] - (np.zeros(6) if tau_base is None else tau_base)
        I0 = P0.T @ Mt[0] @ P0
        qdd0 = -np.linalg.solve(I0, h0)                         # step 3
        mu = np.empty((t.n + 1, 6))
        mu[0] = P0 @ qdd0
        tau = np.empty(t.n)
        for b in self.order:
            j = par[b]
            mu[b] = _A(k.o[j] - k.o[b]) @ mu[j]                  # A_{k,0} P_0 q_ddot_0
            tau[b - 1] = k.pk[b] @ (wt[b] + Mt[b] @ mu[b])
        return np.concatenate([qdd0, qdd_theta]), tau

    # ------------------------------------------------------------------ FD (2.6)
    def forward_dynamics(self, q, v, tau, f_tips=None, armature=None):
        """Recursive O(n) forward dynamics; ``armature`` (scalar or per joint) is added to the
        joint-space diagonal, i.e. to every m_hat_k (a linearly implicit joint damping d takes
        armature = dt d)."""
        self._check(q, v)
        k = self._kin(q)
        t = self.tree
        par = t.parent
        tau = np.asarray(tau, float)
        w = self._forward(k, v, np.zeros(t.n), self._tdot0(k, v, np.zeros(6)), self._ext(k, f_tips))
        arm = np.broadcast_to(0.0 if armature is None else np.asarray(armature, float), (t.n,))
        Mh = k.Mk.copy()                                        # M_hat_k, then M_bar_k
        eta = w                                                 # eta_k, then eta_bar_k
        psi = np.zeros((t.n + 1, 6))
        phi = np.zeros(t.n + 1)
        # step 2: modules s..1, links eta^i..1 (the last link gathers its child modules): the
        # reversed body order
        for b in reversed(self.order):
            pk = k.pk[b]
            psih = Mh[b] @ pk
            mh = pk @ psih + arm[b - 1]
            psi[b] = psih / mh
            phi[b] = (tau[5 + b] - pk @ eta[b]) / mh
            Mbar = Mh[b] - np.outer(psih, psi[b])
            ebar = eta[b] + psih * phi[b]
            j = par[b]
            Ab = _A(k.o[j] - k.o[b])
            Mh[j] += Ab.T @ Mbar @ Ab
            eta[j] += self._shift(ebar, k.o[b], k.o[j])
        P0 = self._P0(k)
        I0 = P0.T @ Mh[0] @ P0
        qdd0 = np.linalg.solve(I0, tau[:6] - P0.T @ eta[0])
        # step 3: forward sweep
        mu = np.empty((t.n + 1, 6))
        mu[0] = P0 @ qdd0
        out = np.empty(self.nv)
        out[:6] = qdd0
        for b in self.order:
            j = par[b]
            Am = _A(k.o[j] - k.o[b]) @ mu[j]
            thdd = phi[b] - psi[b] @ Am
            mu[b] = Am + k.pk[b] * thdd
            out[5 + b] = thdd
        return out

    # ------------------------------------------------------------------ module matrices
    def _module_matrices(self, k):
        """N^i, M^i (block diagonal) and the coordinate positions of every module."""
        mods = []
        P0 = self._P0(k)
        for i, (_, bodies) in enumerate(self.modules):
            if i == 0:
                mods.append((P0, k.Mk[0].copy(), np.arange(6)))
                continue
            eta = len(bodies)
            N = np.zeros((6 * eta, eta))
            M = np.zeros((6 * eta, 6 * eta))
            for r, kr in enumerate(bodies):
                M[6 * r:6 * r + 6, 6 * r:6 * r + 6] = k.Mk[kr]
                for c in range(r + 1):
                    kc = bodies[c]
                    N[6 * r:6 * r + 6, c] = _A(k.o[kc] - k.o[kr]) @ k.pk[kc]
            mods.append((N, M, 5 + np.array(bodies)))
        return mods

    def _Aij(self, k, i, j):
        """A^{i,j} (module i descendant of module j): only its last block column is non-zero."""
        bi = self.modules[i][1]
        bj = self.modules[j][1]
        last = bj[-1]
        A = np.zeros((6 * len(bi), 6 * len(bj)))
        for r, kr in enumerate(bi):
            A[6 * r:6 * r + 6, -6:] = _A(k.o[last] - k.o[kr])
        return A

    def _module_ancestors(self, i):
        out = []
        while i >= 0:
            out.append(i)
            i = self.modules[i][0]
        return out

    def gim(self, q):
        """The generalized inertia matrix by composite modules (A.1-A.3)."""
        self._check(q)
        k = self._kin(q)
        mods = self._module_matrices(k)
        Mt = [M.copy() for _, M, _ in mods]
        for i in range(len(self.modules) - 1, 0, -1):          # composite module mass matrices
            j = self.modules[i][0]
            Aij = self._Aij(k, i, j)
            Mt[j] += Aij.T @ Mt[i] @ Aij
        I = np.zeros((self.nv, self.nv))
        for i in range(len(self.modules)):
            Ni, _, ci = mods[i]
            for j in self._module_ancestors(i):
                Nj, _, cj = mods[j]
                blk = Ni.T @ Mt[i] @ (self._Aij(k, i, j) if j != i else np.eye(Mt[i].shape[0])) @ Nj
                I[np.ix_(ci, cj)] = blk
                I[np.ix_(cj, ci)] = blk.T
        return I

    mass_matrix = gim

    def udu(self, q):
        """Block UDU^T of the GIM by articulated modules (A.4-A.9): returns (U, D)."""
        self._check(q)
        k = self._kin(q)
        mods = self._module_matrices(k)
        s = len(self.modules)
        Mbar = [None] * s
        Psi = [None] * s
        U = np.eye(self.nv)
        D = np.zeros((self.nv, self.nv))
        for i in range(s - 1, -1, -1):
            N, M, ci = mods[i]
            Mh = M.copy()
            for c in self.mchildren[i]:
                Aci = self._Aij(k, c, i)
                Mh += Aci.T @ Mbar[c] @ Aci
            Psih = Mh @ N
            Ih = N.T @ Psih
            Psi[i] = Psih @ np.linalg.inv(Ih)
            Mbar[i] = Mh - Psih @ Psi[i].T
            D[np.ix_(ci, ci)] = Ih
        for i in range(s):                                      # U^{i,j}, j below i
            N, _, ci = mods[i]
            for j in range(i + 1, s):
                if i in self._module_ancestors(j):
                    U[np.ix_(ci, mods[j][2])] = N.T @ self._Aij(k, j, i).T @ Psi[j]
        return U, D

    def forward_dynamics_dense(self, q, v, tau, f_tips=None, armature=None):
        """The O(n^3) path: GIM and h, then a Cholesky solve."""
        I = self.gim(q)
        if armature is not None:
            I[6:, 6:] += np.diag(np.broadcast_to(np.asarray(armature, float), (self.nv - 6,)))
        k = self._kin(q)
        w = self._forward(k, v, np.zeros(self.nv - 6), self._tdot0(k, v, np.zeros(6)), self._ext(k, f_tips))
        h = self._generalized(k, self._backward_wrench(k, w))
        L = np.linalg.cholesky(I)
        y = np.linalg.solve(L, np.asarray(tau, float) - h)
        return np.linalg.solve(L.T, y)

    def tip_jacobians(self, q):
        """LOCAL tip Jacobians by twist propagation: column k is A_{tip,k} p_k."""
        self._check(q)
        k = self._kin(q)
        t = self.tree
        J = np.zeros((6 * len(t.tips), self.nv))
        for i, tip in enumerate(t.tips):
            b = tip.body
            Rt = k.R[b] @ tip.R
            r = k.o[b] + k.R[b] @ tip.p
            cols = np.zeros((6, self.nv))                       # world [w; o_dot] columns
            cols[:3, 3:6] = k.Rb
            cols[3:, :3] = k.Rb
            cols[3:, 3:6] = skew(k.o[0] - r) @ k.Rb
            j = b
            while j > 0:
                cols[:, 5 + j] = _A(k.o[j] - r) @ k.pk[j]
                j = t.parent[j]
            J[6 * i:6 * i + 3] = Rt.T @ cols[3:]
            J[6 * i + 3:6 * i + 6] = Rt.T @ cols[:3]
        return J

"""Trees of soft-rigid modules and the recursions of [Pustina 2024]: IID (Alg. 1), ID with
gravity folded in by ``a0 = -g`` (Sec. 6.1, Eq. (52) with the body-local visco-elastic force
added outside the recursion), and MID returning M and h in one pass (Alg. 3, Eqs. (75)-(79)).

Beyond the paper: the backward pass sums over children (trees), and a module may start with a
free-flyer joint (floating base, Pinocchio's local-velocity convention: speeds are the body
twist). Each recursion is traced once into a CasADi graph calling the compiled per-module
functions, which also gives exact tangents (Newton statics) and forward kinematics.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import casadi as ca
import numpy as np

from hybrid_dynamics.soft.module import Module, TERM_NAMES, check_distal_face, module_terms, module_transform
from hybrid_dynamics.soft.symbolic import segment, skew

GRAVITY = np.array([0.0, 0.0, -9.81])


class SoftTree:
    """Modules listed parents first; q and v are the concatenation of the modules' own."""

    def __init__(self, modules: Sequence[Module], gravity=GRAVITY):
        self.modules = list(modules)
        names = [m.name for m in self.modules]
        self.index = {n: i for i, n in enumerate(names)}
        self.parent = [self.index[m.parent] if m.parent is not None else -1 for m in self.modules]
        if any(p >= i for i, p in enumerate(self.parent)):
            raise ValueError("modules must be listed parents first")
        self.children: List[List[int]] = [[] for _ in self.modules]
        for i, p in enumerate(self.parent):
            if p >= 0:
                self.children[p].append(i)
        for i, m in enumerate(self.modules):
            problem = check_distal_face(m)
            if problem is None and m.body.relax_face and self.children[i]:
                problem = "a relaxed distal face is allowed only on a leaf body"
            if problem:
                raise ValueError(f"module '{m.name}': {problem}")
        self.qslice, self.vslice = [], []
        nq = nv = 0
        for m in self.modules:
            self.qslice.append(slice(nq, nq + m.nq))
            self.vslice.append(slice(nv, nv + m.nv))
            nq, nv = nq + m.nq, nv + m.nv
        self.nq, self.nv = nq, nv
        self.gravity = np.asarray(gravity, float)
        self.terms = [module_terms(m) for m in self.modules]
        self.transforms = [module_transform(m) for m in self.modules]
        q, v, a, a0 = ca.MX.sym("q", nq), ca.MX.sym("v", nv), ca.MX.sym("a", nv), ca.MX.sym("a0", 3)
        Q, _ = self._recursion(q, v, a, a0, with_mass=False)
        self._iid = ca.Function("iid", [q, v, a, a0], [Q]).expand()
        self._loads = ca.Function("loads", [q, v, a, a0], [self._body_loads])
        h, M = self._recursion(q, v, ca.MX.zeros(nv), a0, with_mass=True)
        self._mid = ca.Function("mid", [q, v, a0], [M, h]).expand()
        self._s = ca.Function("s", [q, v], [self._elastic(q, v)]).expand()
        poses = self.symbolic_poses(q)
        self._fk = ca.Function("fk", [q], [ca.horzcat(*[ca.horzcat(R, p) for R, p in poses])])
        V = 0
        for i, (R, p) in enumerate(poses):
            d = dict(zip(TERM_NAMES, self.terms[i](self._q(q, i), ca.MX.zeros(self.modules[i].nv),
                                                   ca.MX.zeros(self.modules[i].nv))))
            qB = segment(self._q(q, i), self.modules[i].joint.nq, self.modules[i].nq)
            V = V - d["m"] * ca.dot(ca.DM(self.gravity), p + R @ d["pc"]) + self.modules[i].body.elastic_energy(qB)
        self._potential = ca.Function("potential", [q], [V])
        self._qdot = ca.Function("qdot", [q, v], [self.symbolic_qdot(q, v)])

    def symbolic_qdot(self, q, v):
        """qdot = G(q) v for the whole tree (identity except for free flyers)."""
        return ca.vertcat(*[
            ca.vertcat(m.joint.qdot(segment(self._q(q, i), 0, m.joint.nq), segment(self._v(v, i), 0, m.joint.nv)),
                       segment(self._v(v, i), m.joint.nv, m.nv)) for i, m in enumerate(self.modules)])

    def _q(self, q, i: int):
        return segment(q, self.qslice[i].start, self.qslice[i].stop)

    def _v(self, v, i: int):
        return segment(v, self.vslice[i].start, self.vslice[i].stop)

    # ---------------------------------------------------------------- the recursions
    def _call_terms(self, q, v, a) -> List[Dict]:
        out = []
        for i, fn in enumerate(self.terms):
            vals = fn(self._q(q, i), self._v(v, i), self._v(a, i))
            out.append(dict(zip(TERM_NAMES, vals)))
        return out

    def _recursion(self, q, v, a, a0, with_mass: bool):
        """Forward then backward pass (Lemma 1, Theorem 1); with ``with_mass`` the 3 x n
        Jacobians with respect to the accelerations are carried too (MIID, Alg. 3)."""
        T = self._call_terms(q, v, a)
        n = self.nv
        zero3, zeroJ = ca.MX.zeros(3), ca.MX.zeros(3, n)
        vel, om, acc, omd, Jacc, Jomd = [], [], [], [], [], []
        Fs, Ts, pis, JFs, JTs, Jpis = [], [], [], [], [], []
        for i, d in enumerate(T):
            p = self.parent[i]
            vp, wp, ap, wdp = (vel[p], om[p], acc[p], omd[p]) if p >= 0 else (zero3, zero3, a0, zero3)
            R, t = d["R"], d["t"]
            vel.append(R.T @ (vp + ca.cross(wp, t) + d["vrel"]))
            om.append(R.T @ (wp + d["wrel"]))
            acc.append(R.T @ (ap + ca.cross(wdp, t) + ca.cross(wp, ca.cross(wp, t))
                              + 2 * ca.cross(wp, d["vrel"]) + d["vdrel"]))
            omd.append(R.T @ (wdp + ca.cross(wp, d["wrel"]) + d["wdrel"]))
            w, wd, pc = om[i], omd[i], d["pc"]
            ac = acc[i] + ca.cross(wd, pc) + ca.cross(w, ca.cross(w, pc)) + 2 * ca.cross(w, d["pdc"]) + d["pddc"]
            F = -d["m"] * ac                                                         # Eq. (44)
            Tq = -(d["I"] @ wd + ca.cross(w, d["I"] @ w) + d["Id"] @ w + ca.cross(w, d["hd"]) + d["Srr"])  # Eq. (46)
            ww = ca.vec(w @ w.T)
            # Eq. (47), centrifugal term with dI/dq (erratum: the paper prints grad_q of vec(Idot))
            pi = d["Jc"].T @ F - d["H"].T @ wd + 0.5 * d["dI"].T @ ww - 2 * d["G"].T @ w - d["Jrr"]
            Fs.append(F)
            Ts.append(Tq)
            pis.append(pi)
            if with_mass:
                sl, nb = self.vslice[i], self.modules[i].body.nq
                Jap, Jwdp = (Jacc[p], Jomd[p]) if p >= 0 else (zeroJ, zeroJ)
                Jv_full = ca.horzcat(ca.MX.zeros(3, sl.start), d["Jv"], ca.MX.zeros(3, n - sl.stop))
                Jw_full = ca.horzcat(ca.MX.zeros(3, sl.start), d["Jw"], ca.MX.zeros(3, n - sl.stop))
                Jc_full = ca.horzcat(ca.MX.zeros(3, sl.stop - nb), d["Jc"], ca.MX.zeros(3, n - sl.stop))
                H_full = ca.horzcat(ca.MX.zeros(3, sl.stop - nb), d["H"], ca.MX.zeros(3, n - sl.stop))
                Mbb_full = ca.horzcat(ca.MX.zeros(nb, sl.stop - nb), d["Mbb"], ca.MX.zeros(nb, n - sl.stop))
                Jacc.append(R.T @ (Jap - skew(t) @ Jwdp + Jv_full))                    # Eq. (75)
                Jomd.append(R.T @ (Jwdp + Jw_full))
                Jac = Jacc[i] - skew(pc) @ Jomd[i] + Jc_full
                JF = -d["m"] * Jac
                JFs.append(JF)
                JTs.append(-(d["I"] @ Jomd[i] + H_full))
                Jpis.append(d["Jc"].T @ JF - d["H"].T @ Jomd[i] - Mbb_full)
        Qparts: List = [None] * len(T)
        Mrows: List = [None] * len(T)
        Ftot, Ttot, JFtot, JTtot = list(Fs), [None] * len(T), list(JFs), [None] * len(T)
        for i in reversed(range(len(T))):
            d, pc = T[i], T[i]["pc"]
            Ttot[i] = Ts[i] + ca.cross(pc, Fs[i])                                      # Eq. (38)
            if with_mass:
                JTtot[i] = JTs[i] + skew(pc) @ JFs[i]
            for c in self.children[i]:
                Rc, tc = T[c]["R"], T[c]["t"]
                Ftot[i] = Ftot[i] + Rc @ Ftot[c]                                       # Eq. (37)
                Ttot[i] = Ttot[i] + Rc @ Ttot[c] + ca.cross(tc, Rc @ Ftot[c])
                if with_mass:
                    JFtot[i] = JFtot[i] + Rc @ JFtot[c]
                    JTtot[i] = JTtot[i] + Rc @ JTtot[c] + skew(tc) @ Rc @ JFtot[c]
            nJ = self.modules[i].joint.nv
            R = d["R"]
            Qparts[i] = -ca.vertcat(ca.MX.zeros(nJ), pis[i]) - d["Jv"].T @ (R @ Ftot[i]) \
                - d["Jw"].T @ (R @ Ttot[i])                                            # Eq. (43)
            if with_mass:
                Mrows[i] = -ca.vertcat(ca.MX.zeros(nJ, self.nv), Jpis[i]) - d["Jv"].T @ (R @ JFtot[i]) \
                    - d["Jw"].T @ (R @ JTtot[i])
        Q = ca.vertcat(*Qparts)
        self._body_loads = ca.vertcat(*[ca.vertcat(F, Tq, pi) for F, Tq, pi in zip(Fs, Ts, pis)])
        return (Q, ca.vertcat(*Mrows)) if with_mass else (Q, None)

    def _elastic(self, q, v):
        parts = []
        for i, fn in enumerate(self.terms):
            s = fn(self._q(q, i), self._v(v, i), ca.MX.zeros(self.modules[i].nv))[TERM_NAMES.index("s")]
            parts.append(ca.vertcat(ca.MX.zeros(self.modules[i].joint.nv), s))
        return ca.vertcat(*parts)

    def symbolic_poses(self, q) -> List[Tuple]:
        """World (R, p) of every distal frame {S_i}."""
        poses: List[Tuple] = []
        for i, fn in enumerate(self.transforms):
            R, t = fn(self._q(q, i))
            p = self.parent[i]
            Rp, tp = poses[p] if p >= 0 else (ca.MX.eye(3), ca.MX.zeros(3))
            poses.append((Rp @ R, tp + Rp @ t))
        return poses

    # ---------------------------------------------------------------- numeric entry points
    def neutral(self) -> np.ndarray:
        return np.concatenate([np.concatenate([m.joint.neutral(), np.zeros(m.body.nq)]) for m in self.modules])

    def iid(self, q, v, a) -> np.ndarray:
        """M(q) a + c(q, v) [Pustina 2024, Alg. 1]."""
        return np.array(self._iid(q, v, a, np.zeros(3))).ravel()

    def inverse_dynamics(self, q, v, a) -> np.ndarray:
        """nu = M a + c + g + s [Pustina 2024, Alg. 2 / Eq. (52)]."""
        return np.array(self._iid(q, v, a, -self.gravity)).ravel() + self.elastic_force(q, v)

    def mid(self, q, v) -> Tuple[np.ndarray, np.ndarray]:
        """(M, h = c + g + s) in one pass [Pustina 2024, Alg. 3]."""
        M, h = self._mid(q, v, -self.gravity)
        return np.array(M), np.array(h).ravel() + self.elastic_force(q, v)

    def body_loads(self, q, v, a) -> List[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per module, the inertial loads in {S_i} without gravity: F* (Eq. (44)), T* about
        the CoM (Eq. (46)) and pi* (Eq. (47))."""
        x = np.array(self._loads(q, v, a, np.zeros(3))).ravel()
        out, k = [], 0
        for m in self.modules:
            nb = m.body.nq
            out.append((x[k:k + 3], x[k + 3:k + 6], x[k + 6:k + 6 + nb]))
            k += 6 + nb
        return out

    def elastic_force(self, q, v) -> np.ndarray:
        return np.array(self._s(q, v)).ravel()

    def frame_poses(self, q) -> List[Tuple[np.ndarray, np.ndarray]]:
        X = np.array(self._fk(q))
        return [(X[:, 4 * i:4 * i + 3], X[:, 4 * i + 3]) for i in range(len(self.modules))]

    def energy(self, q, v) -> Tuple[float, float]:
        """(kinetic 1/2 v^T M v, potential of gravity and elasticity)."""
        M, _ = self.mid(q, v)
        return 0.5 * float(v @ M @ v), float(self._potential(q))

    def qdot(self, q, v) -> np.ndarray:
        return np.array(self._qdot(q, v)).ravel()

    def module_index(self, name: str) -> int:
        return self.index[name]

    def symbolic(self) -> Tuple[ca.Function, ca.Function, ca.Function]:
        """The traced (iid, mid, s) functions, for exact tangents (statics, C(q, v))."""
        return self._iid, self._mid, self._s

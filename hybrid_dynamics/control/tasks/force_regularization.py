"""Force regularisation: ``w sum_i || W (f_i - f_ref,i) ||^2 + eps ||f||^2`` over the stance
point forces.

``f_ref`` is ``References.forces[frame]`` (per point, world) where given, else an equal share
of the robot's weight, ``m |g| / n_points`` along the world vertical; ``W = diag(axis_weights)``
(world axes, default ones); ``eps = hessian_regularization`` (default 0). With several stance
contacts this term is what splits the load between the feet.

Option ``surface_wrench_weights`` (6 weights ``W6``): a surface contact (a sole with k corner
points) is regularised on its wrench instead, as TSID's ``Contact6d`` does,

    w || W6 (G R^T f - w_ref) ||^2,

with ``G`` the 6 x 3k map from corner forces (sole frame) to the wrench at the sole origin
(sole frame), ``R`` the sole orientation and ``w_ref = (0, 0, k * share, 0, 0, 0)``; the
internal forces of the sole (which change neither its wrench nor the torques) then rest on
``eps`` alone. TSID's defaults are ``axis_weights = (1, 1, 1e-3)``,
``W6 = (1, 1, 1e-3, 2, 2, 2)`` and ``eps = 1e-8`` (its Hessian regularisation).
"""
from __future__ import annotations

import numpy as np

from ...dynamics.lie import skew
from .. import kernels
from .base import Task


class ForceRegularizationTask(Task):
    name = "force_regularization"

    def __init__(self, config: dict, surfaces: bool = True):
        super().__init__(config)
        wrench = config.get("surface_wrench_weights")
        self.wrench_weights = None if wrench is None else np.asarray(wrench, float).reshape(6)
        self.W2 = np.asarray(config.get("axis_weights", [1.0, 1.0, 1.0]), float).reshape(3) ** 2
        self.eps = float(config.get("hessian_regularization", 0.0))
        # the wrench form changes with the sole orientation; without soles it is never used
        self.constant_hessian = self.wrench_weights is None or not surfaces
        self._G = {}
        self._diags = {}
        self._surface = {}

    def active(self, refs) -> bool:
        return self.weight > 0.0 or self.eps > 0.0

    def _diag(self, layout) -> np.ndarray:
        d = self._diags.get(id(layout))
        if d is None:
            d = self._diags[id(layout)] = self.weight * np.tile(self.W2, layout.nf_stance // 3) + self.eps
        return d

    def add_hessian(self, H, layout) -> None:
        idx = layout.f_stance_diag
        H[idx, idx] += self._diag(layout)

    def _f_ref(self, layout, forces, share):
        f_ref = np.zeros(layout.nf_stance)
        f_ref[2::3] = share
        for frame, force in forces.items():
            sl = layout.stance_force_slice.get(frame)
            if sl is not None:
                f_ref[sl] = np.tile(np.asarray(force, float), (sl.stop - sl.start) // 3)
        return f_ref

    def add_gradient(self, g, state, layout, refs) -> None:
        if not layout.nf_stance:
            return
        share = layout.mass * 9.81 / (layout.nf_stance // 3)
        if not refs.forces:
            kernels.per_point_gradient(g, layout.f_stance_diag, 0.0, 0.0, (self.weight * self.W2[2]) * share)
            return
        wW = self.weight * np.tile(self.W2, layout.nf_stance // 3)
        g[layout.f_stance] -= wW * self._f_ref(layout, refs.forces, share)

    def add(self, H, g, state, layout, refs) -> None:
        if self.constant_hessian:
            return super().add(H, g, state, layout, refs)
        if not layout.nf_stance:
            return
        diag, soles = self.wrench_form(layout)
        # per sole A = W6 G blkdiag(R^T, ..., R^T): A^T A = Rb (G^T W6^2 G) Rb^T, 3 x 3 blocks
        # R K_ab R^T; the diagonal, the points' gradient and every sole in one call
        kernels.sole_wrenches(H, g, layout.f_stance_diag, diag, self.wrench_gradient(layout, refs), *soles,
                              state.frame_R)

    def wrench_form(self, layout):
        """The wrench form's per-layout arguments of :func:`kernels.sole_wrenches` (stance forces
        present): the diagonal and the stance soles' arrays (``starts`` to ``scales``)."""
        diag, _, soles, _ = self._surface_terms(layout)
        return diag, soles

    def wrench_gradient(self, layout, refs) -> np.ndarray:
        """The wrench form's gradient of the points (weights times the weight share, or times
        the force references where ``refs`` has them; a sole's entries 0: its ``G`` term)."""
        _, wW, _, g_share = self._surface_terms(layout)
        if not refs.forces:
            return g_share
        return wW * self._f_ref(layout, refs.forces, layout.mass * 9.81 / (layout.nf_stance // 3))

    def _surface_terms(self, layout):
        """Per layout: the diagonal and the point weights with every sole's entries left to the
        wrench form (``eps`` and 0), and the gradient of the points without a force reference
        (weights times the weight share); per stance sole (arrays, :func:`kernels.sole_wrenches`)
        its first column, contact, corners, ``w G^T W6^2 G`` as (k, k, 3, 3) blocks and
        ``w G^T W6^2 e_z`` as (k, 3) rows (sole frame) and the scale of its weight share."""
        terms = self._surface.get(id(layout))
        if terms is not None:
            return terms
        share = layout.mass * 9.81 / (layout.nf_stance // 3)
        w = self.weight
        diag = self._diag(layout).copy()
        wW = w * np.tile(self.W2, layout.nf_stance // 3)
        soles = [(i, layout.contacts[i]) for i in layout.stance_contacts if layout.contacts[i].kind == "surface"]
        most = max([c.n_points for _, c in soles], default=0)
        K, Gb = np.zeros((len(soles), most, most, 3, 3)), np.zeros((len(soles), most, 3))
        for s, (i, c) in enumerate(soles):
            rel = layout.stance_force_slice[c.frame]
            diag[rel] = self.eps
            wW[rel] = 0.0
            WG = self._wrench_map(c)
            k = c.n_points
            K[s, :k, :k] = (w * WG.T @ WG).reshape(k, 3, k, 3).transpose(0, 2, 1, 3)
            Gb[s, :k] = (w * self.wrench_weights[2] * WG[2]).reshape(k, 3)
        arrays = (np.array([layout.force_slice(i).start for i, _ in soles], np.intp),
                  np.array([i for i, _ in soles], np.intp), np.array([c.n_points for _, c in soles], np.intp),
                  K, Gb, np.array([c.n_points * share for _, c in soles], float))
        terms = self._surface[id(layout)] = (diag, wW, arrays, wW * self._f_ref(layout, {}, share))
        return terms

    def _wrench_map(self, c) -> np.ndarray:
        """``W6 G`` of a surface contact (sole frame), cached."""
        G = self._G.get(c.frame)
        if G is None:
            G = np.vstack([np.hstack([np.eye(3)] * c.n_points),
                           np.hstack([skew(p) for p in c.points])])
            G = self.wrench_weights[:, None] * G
            self._G[c.frame] = G
        return G

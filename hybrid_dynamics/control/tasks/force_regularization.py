"""Force regularisation: ``w || f - f_ref ||^2`` over the stance point forces.

``f_ref`` is ``References.forces[frame]`` (per point, world) where given, else an equal share
of the robot's weight, ``m |g| / n_points`` along the world vertical.
"""
from __future__ import annotations

import numpy as np

from .base import Task


class ForceRegularizationTask(Task):
    name = "force_regularization"
    constant_hessian = True

    def add_hessian(self, H, layout) -> None:
        idx = layout.f_stance_diag
        H[idx, idx] += self.weight

    def add_gradient(self, g, state, layout, refs) -> None:
        if not layout.nf_stance:
            return
        share = layout.mass * 9.81 / (layout.nf_stance // 3)
        if not refs.forces:
            layout.g_force_rows(g)[:, 2] -= self.weight * share
            return
        f_ref = np.zeros(layout.nf_stance)
        f_ref[2::3] = share
        for frame, force in refs.forces.items():
            sl = layout.stance_force_slice.get(frame)
            if sl is not None:
                f_ref[sl] = np.tile(np.asarray(force, float), (sl.stop - sl.start) // 3)
        g[layout.f_stance] -= self.weight * f_ref

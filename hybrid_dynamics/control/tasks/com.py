"""CoM position task, written on the contact forces.

On the constraint manifold the floating-base rows are Newton's law for the whole robot,
``m c̈ = sum_i f_i + m g``, so the CoM acceleration is linear in the point forces alone:

    c̈ = (1/m) S f + g,       S = [I3 I3 ... I3]   (one block per stance point)

and the task ``|| c̈ - c̈_des ||^2`` with ``c̈_des = c̈_ref + kp (c_ref - c) + kd (ċ_ref - ċ)``
needs neither the CoM Jacobian nor its drift (this is the same optimum as TSID's
``J_com dv + J̇_com v = c̈_des``, since the dynamics hold exactly). Its Hessian
``(w/m^2) S^T S`` depends only on the stance pattern. With no stance contact the CoM is
ballistic and the task is inert.
"""
from __future__ import annotations

from .. import kernels
from .base import Task


class ComTask(Task):
    name = "com"
    constant_hessian = True

    def active(self, refs) -> bool:
        return self.weight > 0.0 and refs.com is not None

    def add_hessian(self, H, layout) -> None:
        if layout.nf_stance:
            m = layout.mass
            H[layout.ff] += (self.weight / (m * m)) * layout.sum_blocks

    def add_gradient(self, g, state, layout, refs) -> None:
        if not layout.nf_stance:
            return
        t = refs.com
        # -w/m^2 S^T (m (a_des - g)): the same 3-vector for every stance point
        kernels.com_gradient(g, layout.f_stance_diag, t.acceleration, t.position, t.velocity, state.com,
                             state.com_velocity, state.gravity, self.kp, self.kd, self.weight / layout.mass)

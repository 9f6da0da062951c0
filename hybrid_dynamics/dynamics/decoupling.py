"""Velocity transforms of the floating-base equations of motion [Feurstein 2021, Sec. 3.3].

With new velocities v_T = T(q) nu the equations M nu_dot + C nu + G = F become [Feurstein 2021,
Eq. (3.77)]

    M_T = T^{-T} M T^{-1},   C_T = T^{-T} C T^{-1} - M_T Tdot T^{-1},   F_T = T^{-T} F.

The decoupling transform [Feurstein 2021, Eq. (3.80)], with K = M_bb^{-1} M_bq,

    T = [[T_x, T_x K], [0, T_y]],   T^{-1} = [[T_x^{-1}, -K T_y^{-1}], [0, T_y^{-1}]]

keeps joint torques out of the x-rows (T_yx = 0) and block-diagonalises M; with the Hamel C it
also gives C_xy = 0 for any T_x, T_y (Prop. 3.3.1); with the passive C^p, C^p_xy = -C^p_yx^T
instead (Prop. 3.3.2). Its *momentum form* T_x = A_cb^{-T} M_bb makes v_x = h_c, and then C_x v_x
= 0 (the invariance structure) exactly when h_c is conserved; the *velocity form* T_x = A_cb only
gives d/dt(M_x v_x) = F_x (C_x v_x = Mdot_x v_x, not 0: the thesis's sentence in Sec. 3.3.4 holds
in the momentum parameterisation only). Tdot needs Kdot = M_bb^{-1}(Mdot_bq - Mdot_bb K) and,
for the CoM frame, d/dt A_cb = A_cb a_cb with nu_cb = nu_b - A_cb^{-1} [o_ic_dot; 0].

The axiomatic external/internal decomposition [Feurstein 2021, Sec. 3.3.4]: for bodies j,
nu_j = nu_j^ext + nu_j^int with nu_j^ext = A_jb nu_b^loc and nu_j^int = J_j^int qd, J_j^int =
J_jq - A_jb K; [nu^ext; nu^int] = I [nu_b; qd], I = [[A_cb, A_cb K], [0, J^int]]. J^int has more
rows than columns for several bodies, or fewer for one, so the internal velocities map back
through a right pseudo-inverse D^# (D D^# = I): Moore-Penrose D^T (D D^T)^{-1} or dynamically
consistent W D^T (D W D^T)^{-1} with W the inverse of the locked-base joint inertia M_y =
M_qq - M_bq^T K (the thesis leaves W open, footnote of Sec. 3.3.4).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import InputError
from .floating_hamel import FloatingHamel
from .lie import ad, ad2, cross3, inverse3, skew

COND_LIMIT = 1e12
PSEUDO_INVERSES = ("moore-penrose", "dynamically-consistent")
FORMS = ("momentum", "velocity")


def _checked_inverse(A: np.ndarray, name: str) -> np.ndarray:
    """inv(A), or InputError naming ``name`` when A is singular or not finite."""
    if not np.isfinite(A).all():
        raise InputError(f"the transform {name} has non-finite entries", field=name)
    try:
        inv = np.linalg.inv(A)
        cond = np.abs(A).sum(1).max() * np.abs(inv).sum(1).max()          # infinity-norm condition number
    except np.linalg.LinAlgError:
        cond = np.inf
    if not cond < COND_LIMIT:
        raise InputError(f"the transform {name} is singular (condition number {cond:.3g}); choose an "
                         f"invertible {name}", field=name)
    return inv


def transform_equations(M: np.ndarray, C: np.ndarray, T: np.ndarray, Tdot: np.ndarray,
                        F: Optional[np.ndarray] = None, T_inv: Optional[np.ndarray] = None):
    """(M_T, C_T, F_T) of [Feurstein 2021, Eq. (3.77)] (F_T is None without F); ``T_inv`` when
    the caller has it in closed form (``decoupling_inverse``), else T is inverted and checked."""
    Ti = _checked_inverse(T, "T") if T_inv is None else T_inv
    M_T = Ti.T @ M @ Ti
    C_T = Ti.T @ C @ Ti - M_T @ Tdot @ Ti
    return M_T, C_T, (None if F is None else Ti.T @ F)


def locked_map(M: np.ndarray, Mdot: np.ndarray, nb: int = 6):
    """K = M_bb^{-1} M_bq and its rate Kdot = M_bb^{-1}(Mdot_bq - Mdot_bb K) (nb base velocities:
    6 on SE(3), 3 on SE(2))."""
    Mbb_inv = _checked_inverse(M[:nb, :nb], "M_bb")
    K = Mbb_inv @ M[:nb, nb:]
    return K, Mbb_inv @ (Mdot[:nb, nb:] - Mdot[:nb, :nb] @ K)


def decoupling_transform(M: np.ndarray, Mdot: np.ndarray, T_x: np.ndarray, Tdot_x: np.ndarray,
                         T_y: np.ndarray, Tdot_y: np.ndarray):
    """T and Tdot of [Feurstein 2021, Eq. (3.80)] for given (T_x, Tdot_x) and (T_y, Tdot_y)."""
    _checked_inverse(T_x, "T_x")
    _checked_inverse(T_y, "T_y")
    nx, ny = T_x.shape[0], T_y.shape[0]
    K, Kdot = locked_map(M, Mdot, nx)
    T = np.zeros((nx + ny, nx + ny))
    Td = np.zeros_like(T)
    T[:nx, :nx], T[:nx, nx:], T[nx:, nx:] = T_x, T_x @ K, T_y
    Td[:nx, :nx], Td[:nx, nx:], Td[nx:, nx:] = Tdot_x, Tdot_x @ K + T_x @ Kdot, Tdot_y
    return T, Td


def decoupling_inverse(T: np.ndarray, nx: int) -> np.ndarray:
    """T^{-1} = [[T_x^{-1}, -K T_y^{-1}], [0, T_y^{-1}]] of (3.80), with K = T_x^{-1} T_xy."""
    Tx_inv = _checked_inverse(T[:nx, :nx], "T_x")
    Ty_inv = _checked_inverse(T[nx:, nx:], "T_y")
    out = np.zeros_like(T)
    out[:nx, :nx], out[nx:, nx:] = Tx_inv, Ty_inv
    out[:nx, nx:] = -(Tx_inv @ T[:nx, nx:]) @ Ty_inv
    return out


def com_frame_rates(A_cb: np.ndarray, v: np.ndarray, com_velocity: np.ndarray) -> np.ndarray:
    """d/dt A_cb = A_cb a_cb for the inertially aligned CoM frame: nu_cb = nu_b - A_cb^{-1}
    [o_ic_dot; 0] [Feurstein 2021, Sec. 3.3.3] (SE(3), or SE(2) for a 3 x 3 A_cb)."""
    nb = A_cb.shape[0]
    nu_ic = np.zeros(nb)
    nu_ic[:len(com_velocity)] = com_velocity
    nu_cb = np.asarray(v[:nb], float) - np.linalg.solve(A_cb, nu_ic)
    return A_cb @ (ad(nu_cb) if nb == 6 else ad2(nu_cb))


def momentum_form(M: np.ndarray, Mdot: np.ndarray, A_cb: np.ndarray, Adot_cb: np.ndarray):
    """T_x = A_cb^{-T} M_bb and its rate: v_x = h_c [Feurstein 2021, Sec. 3.3.3]."""
    A_invT = _checked_inverse(A_cb, "A_cb").T
    dA_invT = -A_invT @ Adot_cb.T @ A_invT                     # d/dt A^{-T} = -A^{-T} a_cb^T
    nb = A_cb.shape[0]
    return A_invT @ M[:nb, :nb], dA_invT @ M[:nb, :nb] + A_invT @ Mdot[:nb, :nb]


@dataclass
class VelocityFormRows:
    """The x-rows of the decoupling transform (3.80) in the velocity form T_x = A_cb at one state,
    c the CoM frame aligned with the inertial frame: M_x v_x_dot + C_x v_x + G_x = F_x."""
    v_x: np.ndarray             # A_cb nu_b^loc = I_g^{-1} h_c = [CoM velocity; locked angular velocity], world
    M_x_inv: np.ndarray         # (T_x^{-T} M_bb T_x^{-1})^{-1} = I_g^{-1} = diag(I / m, I_c^{-1})
    T_x_invT: np.ndarray        # T_x^{-T} = A_cb^{-T}: base wrench (LOCAL) -> wrench at the CoM (world), F_x = T_x^{-T} F_b


def velocity_form_rows(R_ib: np.ndarray, o_ib: np.ndarray, com: np.ndarray, h_c: np.ndarray,
                       I_g: np.ndarray) -> VelocityFormRows:
    """v_x, M_x^{-1} and T_x^{-T} of the velocity form from the base pose, the CoM and Pinocchio's
    centroidal h_c and I_g (block-diagonal at the CoM): with T_x = A_cb = Ad(R_ib, o_ib - o_ic),
    M_x = A_cb^{-T} M_bb A_cb^{-1} = I_g [Feurstein 2021, Eq. (A.4a) corrected] and
    v_x = A_cb nu_b^loc = A_cb M_bb^{-1} h_b = I_g^{-1} h_c."""
    M_x_inv = np.zeros((6, 6))
    M_x_inv[0, 0] = M_x_inv[1, 1] = M_x_inv[2, 2] = 1.0 / I_g[0, 0]
    M_x_inv[3:, 3:] = inverse3(I_g[3:, 3:])
    T_x_invT = np.zeros((6, 6))                                 # Ad(R_ib, o_ib - o_ic)^{-T}
    T_x_invT[:3, :3] = T_x_invT[3:, 3:] = R_ib
    T_x_invT[3:, :3] = skew(o_ib - com) @ R_ib
    return VelocityFormRows(v_x=M_x_inv @ h_c, M_x_inv=M_x_inv, T_x_invT=T_x_invT)


def velocity_form_coriolis(R_ib: np.ndarray, o_ib: np.ndarray, com: np.ndarray, nu_b: np.ndarray,
                           v_x: np.ndarray, Ag_b: np.ndarray, dAg_b: np.ndarray) -> np.ndarray:
    """C_x v_x of the velocity form's x-rows (the Hamel C_xy is zero), from the base columns
    Ag_b = A_cb^{-T} M_bb of Pinocchio's A_g and their rate dAg_b (dccrba).

    h_c = I_g v_x obeys h_c_dot = A_cb^{-T}(F_b - G_b) [Feurstein 2021, Prop. 3.2.1], so the
    x-rows read I_g v_x_dot + I_g_dot v_x + G_x = F_x: C_x v_x = Mdot_x v_x, not zero in this
    form (module docstring). I_g = Ag_b A_cb^{-1} gives I_g_dot v_x = dAg_b nu_loc - Ag_b a_cb nu_loc
    with nu_loc = A_cb^{-1} v_x and A_cb_dot = A_cb a_cb (``com_frame_rates``)."""
    v_c, w = v_x[:3], v_x[3:]
    # nu_loc = A_cb^{-1} v_x and nu_cb = nu_b - A_cb^{-1} [o_ic_dot; 0] [Feurstein 2021, Sec. 3.3.3]
    rot = np.array([v_c - cross3(o_ib - com, w), w, v_c]) @ R_ib           # rows: R_ib^T (.)
    a, b = nu_b[:3] - rot[2], nu_b[3:]
    bx_uo = skew(b) @ rot[:2].T                                            # a_cb nu_loc = ad(nu_cb) nu_loc
    return dAg_b @ rot[:2].ravel() - Ag_b @ np.concatenate([bx_uo[:, 0] + cross3(a, rot[1]), bx_uo[:, 1]])


@dataclass
class BlockStructure:
    """Norms of the coupling blocks of transformed equations (x: first ``nx`` rows)."""
    M_xy: float                 # |M_xy|: 0 for a decoupling transform
    C_xy: float                 # |C_xy|: 0 for the Hamel C after a decoupling transform
    passive_skew: float         # |C_xy + C_yx^T|: 0 for a passive C after a decoupling transform
    invariance: float           # |C_x v_x + C_xy v_y|: 0 when v_x is a conserved momentum


def block_structure(M_T: np.ndarray, C_T: np.ndarray, v_T: np.ndarray, nx: int = 6) -> BlockStructure:
    """The block-structure checks of [Feurstein 2021, Props. 3.3.1-3.3.2] on transformed equations."""
    return BlockStructure(
        M_xy=float(np.abs(M_T[:nx, nx:]).max(initial=0.0)),
        C_xy=float(np.abs(C_T[:nx, nx:]).max(initial=0.0)),
        passive_skew=float(np.abs(C_T[:nx, nx:] + C_T[nx:, :nx].T).max(initial=0.0)),
        invariance=float(np.abs(C_T[:nx] @ v_T).max()))


@dataclass
class ExternalInternal:
    """The axiomatic decomposition [Feurstein 2021, Sec. 3.3.4] of one state."""
    I: np.ndarray               # [[A_cb, A_cb K], [0, J^int]]: [nu^ext; nu^int] = I nu
    J_int: np.ndarray           # stacked J_j^int = J_jq - A_jb K (6k x n)
    D_pinv: np.ndarray          # right pseudo-inverse D^# of D = J^int
    M_ext: np.ndarray           # A_cb^{-T} M_bb A_cb^{-1}
    M_int: np.ndarray           # D^#T (M_qq - M_bq^T K) D^#


def external_internal(M: np.ndarray, A_cb: np.ndarray, body_jacobians, pseudo_inverse: str = "moore-penrose"
                      ) -> ExternalInternal:
    """I, J^int and the block-diagonal inertia of the decomposition, for the bodies whose LOCAL
    Jacobians J_j = [A_jb, J_jq] (6 x nv each) are given."""
    if pseudo_inverse not in PSEUDO_INVERSES:
        raise InputError(f"pseudo_inverse '{pseudo_inverse}' is not one of {PSEUDO_INVERSES}",
                         field="pseudo_inverse")
    Mbb_inv = _checked_inverse(M[:6, :6], "M_bb")
    K = Mbb_inv @ M[:6, 6:]
    D = np.vstack([J[:, 6:] - J[:, :6] @ K for J in body_jacobians])      # J_j^int
    M_y = M[6:, 6:] - M[6:, :6] @ K                                          # Schur complement
    W = np.eye(M_y.shape[0]) if pseudo_inverse == "moore-penrose" else np.linalg.inv(M_y)
    if np.linalg.matrix_rank(D) < D.shape[0]:
        raise InputError(f"the stacked internal Jacobian J^int ({D.shape[0]} x {D.shape[1]}) has rank "
                         f"{np.linalg.matrix_rank(D)}: no right pseudo-inverse; pass fewer bodies or rows",
                         field="J_int")
    D_pinv = W @ D.T @ np.linalg.inv(D @ W @ D.T)
    n = M.shape[0] - 6
    I = np.zeros((6 + D.shape[0], 6 + n))
    I[:6, :6], I[:6, 6:], I[6:, 6:] = A_cb, A_cb @ K, D
    A_inv = _checked_inverse(A_cb, "A_cb")
    return ExternalInternal(I=I, J_int=D, D_pinv=D_pinv, M_ext=A_inv.T @ M[:6, :6] @ A_inv,
                            M_int=D_pinv.T @ M_y @ D_pinv)


@dataclass
class Decoupled:
    """The equations M_T v_T_dot + C_T v_T + G_T = F_T of one state in decoupled coordinates."""
    M_T: np.ndarray
    C_T: np.ndarray
    G_T: np.ndarray
    T: np.ndarray
    Tdot: np.ndarray
    v_T: np.ndarray


class DecoupledDynamics:
    """Hamel equations of a free-flyer model in the decoupling transform (3.80) with T_x in the
    momentum form (v_x = h_c) or the velocity form (v_x = A_cb nu_b^loc), T_y = I (v_y = qd)."""

    def __init__(self, model, form: str = "momentum"):
        if form not in FORMS:
            raise InputError(f"form '{form}' is not one of {FORMS}", field="form")
        self.hamel = FloatingHamel(model)
        self.form = form
        n = self.hamel.n
        self._Ty, self._Tdy = np.eye(n), np.zeros((n, n))

    def transform(self, q, v, M: np.ndarray, Mdot: np.ndarray):
        """(T, Tdot) at the state."""
        c = self.hamel.centroidal(q, v, M)
        Adot = com_frame_rates(c.A_cb, v, c.h_c[:len(c.com)] / M[0, 0])
        Tx, Tdx = momentum_form(M, Mdot, c.A_cb, Adot) if self.form == "momentum" else (c.A_cb, Adot)
        return decoupling_transform(M, Mdot, Tx, Tdx, self._Ty, self._Tdy)

    def equations(self, q, v) -> Decoupled:
        e = self.hamel
        M = e.mass_matrix(q)
        Mdot = e.mass_matrix_derivative(q, v)
        C = e.hamel_coriolis(q, v, M, Mdot)
        T, Td = self.transform(q, v, M, Mdot)
        M_T, C_T, G_T = transform_equations(M, C, T, Td, F=e.gravity(q), T_inv=decoupling_inverse(T, e.nb))
        return Decoupled(M_T=M_T, C_T=C_T, G_T=G_T, T=T, Tdot=Td, v_T=T @ v)

"""Checks of the soft-module recursions against references that are not this code: Pinocchio
for rigid chains, trees and floating bases; an Euler-Lagrange model differentiated from the
energies (hybrid_dynamics/soft/lagrange.py) for soft chains and trees of every stock body; the
re-derived toy-example closed forms of [Pustina 2024, Sec. 3]. Used by the tests and by
``hybrid-dynamics validate soft``."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import casadi as ca
import numpy as np
import pinocchio as pin

from hybrid_dynamics.paths import example_robot_data_dir
from hybrid_dynamics.soft import bodies as B, quadrature
from hybrid_dynamics.soft.from_pinocchio import tree_from_pinocchio
from hybrid_dynamics.soft.joints import FixedJoint, Placement, revolute
from hybrid_dynamics.soft.lagrange import LagrangeReference
from hybrid_dynamics.soft.lvp import LVPBody
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.symbolic import axis_rotation
from hybrid_dynamics.soft.tree import SoftTree

STOCK_KINDS = ["rigid", "cc_planar", "pcc_planar_elong", "cc_spatial_elong", "pcs", "gvs", "modal", "lvp", "user"]
PINOCCHIO_ROBOTS = {"ur10": ("ur_description/urdf/ur10_robot.urdf", False),
                    "solo12": ("solo_description/robots/solo12.urdf", True)}


def toy_tree(n_axial: int = 12) -> SoftTree:
    """The toy example: planar CC body on a fixed joint, unit radius and length, rho = 1."""
    return SoftTree([Module("toy", FixedJoint(), B.constant_curvature(
        1.0, 1.0, 1.0, planar=True, elongation=False, n_axial=n_axial))], gravity=[0, 0, 0])


def toy_closed_forms(q: float, qd: float, qdd: float) -> Dict[str, float]:
    """F*_x, F*_z, T*_y, pi* of the toy body, re-derived (the printed ones are wrong)."""
    c, s = np.cos(q), np.sin(q)
    return {
        "Fx": np.pi * (-q**2 * qdd * c - q**2 * qdd + 2 * q * qd**2 * c + 4 * q * qd**2 + 2 * q * qdd * s
                       - 6 * qd**2 * s) / q**4,
        "Fz": np.pi * (-q**2 * qd**2 + q**2 * qdd * s - 2 * q * qd**2 * s + 2 * q * qdd * c - 2 * q * qdd
                       - 6 * qd**2 * c + 6 * qd**2) / q**4,
        "Ty": np.pi * (q**5 * qdd + 4 * q**3 * qdd - 8 * q**2 * qd**2 - 8 * q * qd**2 * s + 8 * q * qdd * c
                       - 8 * q * qdd - 32 * qd**2 * c + 32 * qd**2) / (8 * q**5),
        "pi": np.pi * (q**6 * qdd + 4 * q**4 * qdd - 16 * q**3 * qd**2 - 72 * q**2 * qdd + 192 * q * qd**2
                       + 96 * q * qdd * s - 24 * q * (q * qdd - 2 * qd**2) * c - 240 * qd**2 * s) / (24 * q**6),
    }


def pinocchio_model(name: str) -> pin.Model:
    path, floating = PINOCCHIO_ROBOTS[name]
    urdf = str(example_robot_data_dir() / path)
    return pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(urdf)


def pinocchio_errors(name: str, samples: int = 3, seed: int = 0) -> Dict[str, float]:
    """Largest absolute differences of ID, M, h, g and h without gravity against Pinocchio."""
    model = pinocchio_model(name)
    data = model.createData()
    tree = tree_from_pinocchio(model)
    no_gravity = tree_from_pinocchio(model, gravity=np.zeros(3))
    rng = np.random.default_rng(seed)
    err = {"rnea": 0.0, "crba": 0.0, "nonLinearEffects": 0.0, "computeGeneralizedGravity": 0.0,
           "nonLinearEffects_no_gravity": 0.0}
    for _ in range(samples):
        q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        v, a = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        M, h = tree.mid(q, v)
        Mp = pin.crba(model, data, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        g = pin.computeGeneralizedGravity(model, data, q)
        if np.abs(g).max() < 1e-3:
            raise AssertionError("gravity vanishes: the comparison would be vacuous")
        gravity = model.gravity.linear.copy()
        model.gravity.linear[:] = 0
        nle0 = pin.nonLinearEffects(model, data, q, v)
        model.gravity.linear[:] = gravity
        for key, ours, ref in (("rnea", tree.inverse_dynamics(q, v, a), pin.rnea(model, data, q, v, a)),
                               ("crba", M, Mp), ("nonLinearEffects", h, pin.nonLinearEffects(model, data, q, v)),
                               ("computeGeneralizedGravity", tree.inverse_dynamics(q, 0 * v, 0 * v), g),
                               ("nonLinearEffects_no_gravity", no_gravity.iid(q, v, 0 * v), nle0)):
            err[key] = max(err[key], float(np.abs(ours - ref).max()))
    return err


def stock_body(kind: str, rng: np.random.Generator, leaf: bool = False) -> B.Body:
    """One of every stock body with random dimensions and small quadratures."""
    L, r, rho = rng.uniform(0.1, 0.4), rng.uniform(0.01, 0.04), rng.uniform(800, 1200)
    mat = dict(youngs_modulus=1e5, damping_time=0.01, n_axial=3)
    if kind == "rigid":
        S = np.diag(rng.uniform(0.001, 0.01, 3))
        return B.RigidBody(rng.uniform(0.5, 2), rng.uniform(-0.1, 0.1, 3), np.trace(S) * np.eye(3) - S)
    if kind in ("cc_planar", "pcc_planar_elong", "cc_spatial_elong"):
        return B.constant_curvature(L, r, rho, planar=kind != "cc_spatial_elong",
                                    elongation=kind != "cc_planar", **mat)
    if kind == "pcs":
        return B.piecewise_constant_strain(L, r, rho, 2, strains=(0, 1, 5), **mat)
    if kind == "gvs":
        return B.variable_strain(L, r, rho, 2, strains=(0, 2), steps=3, **mat)
    if kind == "modal":
        return B.ModalBody(L, r, rho, 1, youngs_modulus=1e5)
    if kind == "lvp":
        return LVPBody(3 * L, r, rho, ["stretch", "bend_x", "twist", "shear_y"], n_axial=3,
                       elastic_coefficient=1e4, relax_face=leaf, orthonormal_face=not leaf)
    # any user map: a box twisting and stretching along its axis, written with CasADi
    pts, w = quadrature.box((0.1, 0.06, L), rho, n=2)

    def fmap(x, q):
        return axis_rotation([0, 0, 1], q[0] * x[2] / L) @ ca.DM(x) + ca.vertcat(0, 0, q[1] * x[2] ** 2 / L)
    return B.MapBody(2, fmap, pts, w, (np.array([0, 0, L]), np.array([0.05, 0, L]), np.array([0, 0.03, L])))


def random_tree(kinds: Sequence[str], rng: np.random.Generator, branch: bool = False) -> SoftTree:
    """A chain (or a random tree) of the given bodies behind random revolute or fixed joints;
    an LVP body, whose distal face deforms, relaxes it on a leaf and passes its orthonormalised
    frame on elsewhere."""
    parents: List[Optional[int]] = [None] + [int(rng.integers(0, i)) if branch else i - 1
                                             for i in range(1, len(kinds))]
    leaves = set(range(len(kinds))) - set(parents)
    modules = []
    for i, kind in enumerate(kinds):
        joint = revolute(rng.standard_normal(3), Placement(np.eye(3), rng.uniform(-0.05, 0.05, 3))) \
            if rng.random() < 0.8 else FixedJoint()
        parent = None if parents[i] is None else f"m{parents[i]}"
        modules.append(Module(f"m{i}", joint, stock_body(kind, rng, leaf=i in leaves), parent))
    return SoftTree(modules)


def lagrange_errors(tree: SoftTree, rng: np.random.Generator) -> Dict[str, float]:
    """Relative differences of ID (without s), M and M a + h against the EL reference at a
    random state; raises when the comparison would be vacuous (nothing moved)."""
    q = 0.25 * np.tanh(rng.standard_normal(tree.nq))      # inside every body's valid range
    v, a = rng.standard_normal(tree.nv), rng.standard_normal(tree.nv)
    Mel, Qel = LagrangeReference(tree)(q, v, a)
    if np.linalg.norm(Qel) == 0 or np.linalg.norm(Mel) == 0:
        raise AssertionError("the Euler-Lagrange reference is zero: vacuous comparison")
    s = tree.elastic_force(q, v)
    M, h = tree.mid(q, v)
    return {"id": float(np.linalg.norm(tree.inverse_dynamics(q, v, a) - s - Qel) / np.linalg.norm(Qel)),
            "mass_matrix": float(np.linalg.norm(M - Mel) / np.linalg.norm(Mel)),
            "mid": float(np.linalg.norm(M @ a + h - s - Qel) / np.linalg.norm(Qel)),
            "min_eig_M": float(np.linalg.eigvalsh(0.5 * (M + M.T)).min())}

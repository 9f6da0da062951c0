"""Simulation 3 of [Pustina 2024, Sec. 7.3]: planar chains of N constant-curvature bodies
(radius 0.03 m, length 0.3 m, rho = 1000 kg/m^3) timed against the Euler-Lagrange model, and
the accuracy of the recursion over random samples (Fig. 11).

Choices the paper leaves out: each body is a planar CC body (1 DoF, bending about y) on a
fixed joint; Gauss quadrature with 4 axial x 2 radial x 4 angular points (exact in the
cross-section); the EL reference is the symbolic AD model of hybrid_dynamics/soft/lagrange.py
(CasADi SX, evaluated by the same virtual machine), built only up to ``EL_MAX_BODIES``.
"""
from __future__ import annotations

import time
from typing import Callable, Dict, List

import numpy as np

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.soft import bodies as B
from hybrid_dynamics.soft.joints import FixedJoint
from hybrid_dynamics.soft.lagrange import LagrangeReference
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.tree import SoftTree

EL_MAX_BODIES = 6
LENGTH, RADIUS, DENSITY = 0.3, 0.03, 1000.0


def planar_cc_chain(n_bodies: int, n_axial: int = 4) -> SoftTree:
    modules = [Module(f"b{i}", FixedJoint(), B.constant_curvature(LENGTH, RADIUS, DENSITY, planar=True,
                                                                elongation=False, n_axial=n_axial),
                      None if i == 0 else f"b{i - 1}") for i in range(n_bodies)]
    return SoftTree(modules)


def median_time(fn: Callable, args_list: List, repeats: int = 1) -> float:
    """Median wall time of one call over the argument list (seconds)."""
    out = []
    for args in args_list:
        t0 = time.perf_counter()
        for _ in range(repeats):
            fn(*args)
        out.append((time.perf_counter() - t0) / repeats)
    return float(np.median(out))


def timing_row(n_bodies: int, samples: int, with_el: bool) -> Dict[str, float]:
    """Build time and per-call median of M qdd = IID(q, 0, qdd), c = IID(q, qd, 0), MID, and of
    the EL reference (where built), at unit q, qd, qdd as in Fig. 11a-c."""
    t0 = time.perf_counter()
    tree = planar_cc_chain(n_bodies)
    row: Dict[str, float] = {"bodies": n_bodies, "build_s": time.perf_counter() - t0}
    one, zero = np.ones(tree.nv), np.zeros(tree.nv)
    row["iid_Mqdd_us"] = 1e6 * median_time(tree.iid, [(one, zero, one)] * samples)
    row["iid_c_us"] = 1e6 * median_time(tree.iid, [(one, one, zero)] * samples)
    row["id_us"] = 1e6 * median_time(tree.inverse_dynamics, [(one, one, one)] * samples)
    row["mid_us"] = 1e6 * median_time(tree.mid, [(one, one)] * samples)
    if with_el:
        t0 = time.perf_counter()
        el = LagrangeReference(tree)
        row["el_build_s"] = time.perf_counter() - t0
        row["el_us"] = 1e6 * median_time(el, [(one, one, one)] * samples)
    return row


def accuracy(n_bodies: int, samples: int = 100, seed: int = 0) -> Dict[str, float]:
    """Mean and std of |ID - EL| / |EL| over random q in [-pi, pi], qd in [-10, 10],
    qdd in [-100, 100] (Fig. 11d)."""
    tree = planar_cc_chain(n_bodies)
    el = LagrangeReference(tree)
    rng = np.random.default_rng(seed)
    errs = []
    for _ in range(samples):
        q, qd, qdd = (rng.uniform(-b, b, tree.nv) for b in (np.pi, 10.0, 100.0))
        _, ref = el(q, qd, qdd)
        ours = tree.inverse_dynamics(q, qd, qdd) - tree.elastic_force(q, qd)
        errs.append(np.linalg.norm(ours - ref) / np.linalg.norm(ref))
    return {"bodies": n_bodies, "mean_rel_error": float(np.mean(errs)), "std_rel_error": float(np.std(errs))}


def body_counts(text: str) -> List[int]:
    """The chain lengths of a ``--bodies`` option ("1,2,5"), sorted and distinct."""
    try:
        return sorted({int(n) for n in text.split(",") if n.strip()})
    except ValueError:
        raise InputError(f"--bodies must be comma-separated integers, got {text!r}", field="bodies") from None


def fitted_exponent(ns, times) -> float:
    """Slope of log(time) against log(N): 1 for linear growth."""
    return float(np.polyfit(np.log(ns), np.log(times), 1)[0])

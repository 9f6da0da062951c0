"""Named morphologies, and the comparison of every engine with Pinocchio on random states.

Relative error of a quantity x against its reference x_ref (one sample):
``max|x - x_ref| / max|x_ref|`` (max norms over every entry); reported is the largest over
the samples. References: ``crba`` (M), ``rnea(q, v, 0)`` (h = C v + N),
``computeGeneralizedGravity`` (N), ``aba`` with the tip wrenches as external forces (fd),
``rnea(q, v, a)`` with the same wrenches (id), LOCAL ``getFrameJacobian`` at each existing
tip (J_tips); for DeNOC also the block UDU^T product against crba (udu) and the floating-base
inverse dynamics of section 2.5 fed back into ``aba`` (id_floating: the joint accelerations
it was given must come back). Damaged references come from :mod:`.reference`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np
import pinocchio as pin

from ..errors import InputError
from ..model.morphology import Morphology
from ..model.yamlio import load_yaml
from .denoc import DeNOC
from .hamel import HamelDirect, HamelFast
from .reference import Reference

ENGINES = {"hamel": HamelDirect, "hamel_fast": HamelFast, "denoc": DeNOC}


def _legs(robot, count: int, what: str):
    if len(robot.legs) < count:
        raise InputError(f"morphology '{what}' needs at least {count} legs; {robot.name} has {len(robot.legs)}",
                         field="morphology")
    return robot.legs


def _s1(robot) -> Morphology:
    """Farghdani et al.'s (2025) S1: legs 3 and 4 removed."""
    legs = _legs(robot, 4, "s1")
    return Morphology.healthy(robot).remove_leg(legs[2].name).remove_leg(legs[3].name)


def _s2(robot) -> Morphology:
    """Farghdani et al.'s (2025) S2: legs 4 and 5 lose links 2 and 3."""
    legs = _legs(robot, 5, "s2")
    return Morphology.healthy(robot).remove_links(legs[3].name, 2).remove_links(legs[4].name, 2)


def _locked_femur(robot) -> Morphology:
    """The second joint of the first leg locked at 0.4 rad."""
    leg = robot.legs[0]
    if len(leg.joints) < 2:
        raise InputError(f"{leg.name} has no second joint to lock", field="morphology")
    return Morphology.healthy(robot).lock_joint(robot.model.names[leg.joints[1]], 0.4)


def _lost_shank_locked_hip(robot) -> Morphology:
    """The last leg loses its last link and the first joint of the first leg is locked."""
    legs = robot.legs
    m = Morphology.healthy(robot).remove_links(legs[-1].name, len(legs[-1].joints))
    return m.lock_joint(robot.model.names[legs[0].joints[0]], -0.3)


MORPHOLOGIES: Dict[str, Callable] = {
    "healthy": Morphology.healthy,
    "s1": _s1,
    "s2": _s2,
    "locked_femur": _locked_femur,
    "mixed": _lost_shank_locked_hip,
}


def morphology_from_yaml(robot, path: Path) -> Morphology:
    """A morphology file::

        remove_legs: [leg3]
        remove_links: {leg4: 2}          # links 2..n of leg4 removed
        lock: {leg1_femur_joint: 0.3}
    """
    doc = load_yaml(path)
    data = doc.data or {}
    if not isinstance(data, dict):
        raise doc.error("expected a mapping with remove_legs, remove_links, lock")
    m = Morphology.healthy(robot)
    for key in data:
        if key not in ("remove_legs", "remove_links", "lock"):
            raise doc.error("unknown key (remove_legs, remove_links, lock)", key)
    for leg in data.get("remove_legs") or []:
        m = m.remove_leg(str(leg))
    for leg, first in (data.get("remove_links") or {}).items():
        m = m.remove_links(str(leg), int(first))
    for joint, angle in (data.get("lock") or {}).items():
        m = m.lock_joint(str(joint), float(angle))
    return m


def named_morphology(robot, name: str) -> Morphology:
    if name in MORPHOLOGIES:
        return MORPHOLOGIES[name](robot)
    path = Path(name)
    if path.suffix in (".yaml", ".yml"):
        return morphology_from_yaml(robot, path)
    raise InputError(f"unknown morphology '{name}': {', '.join(MORPHOLOGIES)}, or a .yaml file",
                     field="morphology")


def random_state(robot, engine, rng: np.random.Generator):
    """A random (q, v, a, tau, f_tips) in the engine's reduced coordinates."""
    m = robot.model
    names = engine.joint_names
    lo = np.array([m.lowerPositionLimit[m.joints[m.getJointId(n)].idx_q] for n in names])
    hi = np.array([m.upperPositionLimit[m.joints[m.getJointId(n)].idx_q] for n in names])
    lo, hi = np.maximum(np.nan_to_num(lo, nan=-np.pi), -np.pi), np.minimum(np.nan_to_num(hi, nan=np.pi), np.pi)
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    q = np.concatenate([rng.normal(size=3), quat, rng.uniform(lo, hi)])
    nv = engine.nv
    return (q, rng.normal(size=nv), rng.normal(size=nv), rng.normal(size=nv) * 5.0,
            rng.normal(size=(len(engine.tips), 6)) * 3.0)


def _rel(x, ref) -> float:
    scale = float(np.max(np.abs(ref))) if np.size(ref) else 0.0
    diff = float(np.max(np.abs(np.asarray(x) - ref))) if np.size(ref) else 0.0
    return diff / scale if scale > 0 else diff


def validate(robot, morphology: Morphology, samples: int = 10, seed: int = 0,
             engines: Optional[List[str]] = None) -> Dict[str, float]:
    """Largest relative error of every quantity of every engine against Pinocchio."""
    engines = engines or list(ENGINES)
    rng = np.random.default_rng(seed)
    built = {name: ENGINES[name](robot, morphology) for name in engines}
    first = built[engines[0]]
    ref = Reference(robot, morphology, first.joint_names)
    m, d = ref.model, ref.data
    errors: Dict[str, float] = {}

    def put(key, value):
        errors[key] = max(errors.get(key, 0.0), value)

    for _ in range(samples):
        q, v, a, tau, F = random_state(robot, first, rng)
        qr, vr, ar, taur = ref.q(q), ref.v(v), ref.v(a), ref.v(tau)
        Mr = pin.crba(m, d, qr)
        Mr = ref.matrix_to_engine(np.triu(Mr) + np.triu(Mr, 1).T)
        hr = ref.to_engine(pin.rnea(m, d, qr, vr, np.zeros(m.nv)))
        Nr = ref.to_engine(pin.computeGeneralizedGravity(m, d, qr))
        tips = first.tips
        fext = ref.tip_fext(q, tips, F)
        fdr = ref.to_engine(pin.aba(m, d, qr, vr, taur, fext))
        idr = ref.to_engine(pin.rnea(m, d, qr, vr, ar, fext))
        Jr = ref.tip_jacobians(q, tips)
        for name, e in built.items():
            if e.joint_names != first.joint_names or e.tips != tips:
                raise AssertionError(f"{name} orders its coordinates or tips differently")
            put(f"{name}.M", _rel(e.mass_matrix(q), Mr))
            put(f"{name}.h", _rel(e.nle(q, v), hr))
            put(f"{name}.N", _rel(e.gravity(q), Nr))
            put(f"{name}.fd", _rel(e.forward_dynamics(q, v, tau, F), fdr))
            put(f"{name}.id", _rel(e.inverse_dynamics(q, v, a, F), idr))
            put(f"{name}.J_tips", _rel(e.tip_jacobians(q), Jr))
            if name == "denoc":
                U, D = e.udu(q)
                put("denoc.udu", _rel(U @ D @ U.T, Mr))
                put("denoc.fd_dense", _rel(e.forward_dynamics_dense(q, v, tau, F), fdr))
                qdd, tq = e.floating_inverse_dynamics(q, v, a[6:], F)
                back = ref.to_engine(pin.aba(m, d, qr, vr, ref.v(np.concatenate([np.zeros(6), tq])), fext))
                put("denoc.id_floating", _rel(back, qdd))
    return errors

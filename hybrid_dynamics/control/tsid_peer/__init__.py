"""The TSID peer: the same whole-body problem handed to TSID 1.7.1 in its own interpreter.

:func:`problem` describes a run (robot URDF, stance contacts, task weights and gains taken
from our controller configuration, limits, and the states with their CoM references) as
JSON; :func:`run_peer` feeds it to ``peer.py`` under ``.venv-tsid/bin/python`` (``make
tsid-venv``) and returns TSID's cycle times, torques and accelerations. :func:`run_ours`
runs our :class:`~hybrid_dynamics.control.WholeBodyController` on the very same states,
tasks and weights, so that timings and torques can be compared one to one.

The shared problem: all contacts in stance (points, or TALOS's 4-corner soles as TSID's
``Contact6d``), CoM task, base orientation task (TSID: SE3 task masked to its angular part),
posture task towards the standing pose, force regularisation towards an equal share of the
weight, torque limits and joint position/velocity/acceleration limits. TSID's friction
pyramid is 4 facets along the contact x and y axes with mu itself (the outer
approximation); it regularises a point force with weights (1, 1, 1e-3), a sole's 6D wrench
in the sole frame with weights (1, 1, 1e-3, 2, 2, 2), and adds 1e-8 to the Hessian:
:data:`SAME_PROBLEM` sets ours alike. One difference remains: TSID's
joint bounds use its own viability formulas (inactive in the compared problems). Closed chains are not a TSID problem
(``hybrid_biped`` has none).
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import pinocchio as pin

from ...errors import InputError

PEER = Path(__file__).with_name("peer.py")
SAME_PROBLEM = {"contacts": {"cone_facets": 4, "cone_approximation": "outer"},
                "regularization": 1e-8,          # TSID's Hessian regularisation
                "tasks": {"force_regularization": {"axis_weights": [1, 1, 1e-3],
                                                   "surface_wrench_weights": [1, 1, 1e-3, 2, 2, 2],
                                                   "hessian_regularization": 1e-8}}}


def tsid_python() -> Optional[Path]:
    """The TSID environment's interpreter: $HYBRID_DYNAMICS_TSID_PYTHON or .venv-tsid."""
    env = os.environ.get("HYBRID_DYNAMICS_TSID_PYTHON")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[3] / ".venv-tsid" / "bin" / "python")
    for c in candidates:
        if c.is_file():
            return c
    return None


def base_frame(model: pin.Model) -> str:
    """The body frame carried by the free flyer (base_link)."""
    for f in model.frames:
        if f.parentJoint == 1 and f.type == pin.FrameType.BODY:
            return f.name
    raise InputError("no body frame on the floating base")


def sway_states(robot, cycles: int, dt: float = 0.001, amplitude: float = 0.02, seed: int = 0):
    """A standing sway: joints oscillate around the standing pose (kept 0.01 rad inside their
    limits, where they then stand still), the CoM reference circles. Legs ending in a sole
    (surface contact) keep their standing angles, so the soles stay flat on the ground: TSID
    takes a sole's friction cone about the sole's normal, we about the ground's."""
    m = robot.model
    still = np.zeros(m.nv - 6, bool)
    surfaces = {c.frame for c in robot.contacts if c.kind == "surface"}
    for leg in robot.legs:
        if leg.contact_frame in surfaces:
            for j in leg.joints:
                still[m.joints[j].idx_v - 6] = True
    lo = m.lowerPositionLimit[7:] + 0.01
    hi = m.upperPositionLimit[7:] - 0.01
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0, 2 * np.pi, m.nv - 6)
    w = 2 * np.pi * 0.5
    d = m.createData()
    q0 = robot.q_stand.copy()
    pin.centerOfMass(m, d, q0)
    c0 = d.com[0].copy()
    states = []
    for k in range(cycles):
        t = k * dt
        q = q0.copy()
        v = np.zeros(m.nv)
        q[7:] += np.where(still, 0.0, amplitude * np.sin(w * t + phase))
        v[6:] = np.where(still, 0.0, amplitude * w * np.cos(w * t + phase))
        out = (q[7:] < lo) | (q[7:] > hi)
        q[7:] = np.clip(q[7:], lo, hi)
        v[6:][out] = 0.0
        com = c0 + 0.01 * np.array([np.cos(w * t), np.sin(w * t), 0.0])
        states.append((q, v, com))
    return states


def problem(robot, controller, states, repeat: int = 1) -> Dict:
    """The JSON problem for the peer, with our controller's weights, gains and limits."""
    if robot.loops is not None:
        raise InputError(f"{robot.name} has closed loops: TSID has no loop-closure formulation here")
    cfg = controller.config
    f = controller.formulation
    js = f.joints
    contacts = []
    n_points = sum(c.n_points for c in f.contacts)
    share = controller.formulation.state.mass * 9.81 / n_points    # our default force reference
    for c in f.contacts:
        ref = [0.0, 0.0, share] if c.kind == "point" else [0.0, 0.0, share * c.n_points, 0.0, 0.0, 0.0]
        contacts.append({"frame": c.frame, "kind": c.kind, "points": c.points.tolist(),
                         "force_reference": ref,
                         "normal": c.normal.tolist(), "mu": c.friction,
                         "fmin": c.min_normal_force * (c.n_points if c.kind == "surface" else 1),
                         "fmax": c.max_normal_force * (c.n_points if c.kind == "surface" else 1)})
    lc = cfg["limits"]
    tau_max = np.where(js.tau_max >= 1e19, 1e6, js.tau_max)
    return {
        "urdf": str(robot.urdf), "base_frame": base_frame(robot.model),
        "contacts": contacts,
        "tasks": {k: cfg["tasks"][k] for k in ("com", "base_orientation", "posture")},
        "force_regularization": cfg["tasks"]["force_regularization"]["weight"],
        "tau_max": tau_max.tolist() if lc["torque"] else None,
        "joint_bounds": {"dt": cfg["dt"], "q_min": js.q_min.tolist(), "q_max": js.q_max.tolist(),
                         "v_max": js.v_max.tolist(), "a_max": lc["max_joint_acceleration"]}
        if lc["joints"] else None,
        "base_rotation": np.eye(3).tolist(),
        "posture_ref": js.q_ref.tolist(),
        "states": [{"q": q.tolist(), "v": v.tolist(), "com": c.tolist()} for q, v, c in states],
        "repeat": repeat,
    }


def run_peer(prob: Dict, timeout: float = 300.0) -> Dict:
    py = tsid_python()
    if py is None:
        raise InputError("the TSID environment is missing: run `make tsid-venv`")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([str(py), str(PEER)], input=json.dumps(prob), capture_output=True,
                          text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"TSID peer failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def references_for(com):
    from ..references import OrientationTarget, References, Target
    return References(com=Target(com), base_orientation=OrientationTarget([0, 0, 0, 1]))


def run_ours(controller, states, repeat: int = 1) -> Dict:
    """Our controller on the peer's problem: all contacts in stance."""
    stance = {c.frame: True for c in controller.formulation.contacts}
    refs = [references_for(c) for _, _, c in states]
    times, taus, dvs, fallbacks = [], [], [], 0
    for rep in range(repeat):
        times = []
        for (q, v, _), r in zip(states, refs):
            t0 = time.perf_counter()
            out = controller.update(q, v, stance, r)
            times.append(time.perf_counter() - t0)
            if rep == repeat - 1:
                taus.append(out.tau_vector.tolist())
                dvs.append(out.dv.tolist())
                fallbacks += int(out.fallback)
    return {"times": times, "tau": taus, "dv": dvs, "fallbacks": fallbacks}


def percentiles(times: List[float]) -> Dict[str, float]:
    t = np.asarray(times) * 1e3
    return {"p50_ms": float(np.percentile(t, 50)), "p99_ms": float(np.percentile(t, 99)),
            "max_ms": float(t.max()), "over_1ms": float(np.mean(t > 1.0))}

"""The TSID peer: the same whole-body problem handed to TSID 1.7.1 in its own interpreter.

:func:`problem` describes a run (robot URDF, stance contacts, task weights and gains taken
from our controller configuration, limits, and the states with their CoM references) as
JSON; :func:`run_peer` feeds it to ``peer.py`` under ``.venv-tsid/bin/python`` (``make
tsid-venv``) and returns TSID's cycle times, torques and accelerations. :func:`run_ours`
runs our :class:`~hybrid_dynamics.control.WholeBodyController` on the very same states,
tasks and weights, so that timings and torques can be compared one to one.

The shared problem, per sample of a workload (:mod:`.workloads`): the sample's stance
contacts (points, or TALOS's 4-corner soles as TSID's ``Contact6d``; TSID removes and adds
its rigid contacts when the stance changes, inside the timed cycle), CoM task (position,
velocity and acceleration reference), base orientation task (TSID: SE3 task masked to its
angular part), swing-foot tasks on the feet in the air (TSID: SE3 task in the world-aligned
frame, position gains on the linear part only, damping on all six: our swing-foot task),
posture task towards the standing pose, force regularisation towards an equal share of the
weight over the stance points, torque limits and joint position/velocity/acceleration limits. TSID's friction
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
from ..references import OrientationTarget, References, Target
from ..controller import WholeBodyController
from .workloads import Sample

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


TSID_SOLVERS = ("HQuadProg", "HQuadProgFast")     # TSID's default (eiquadprog) and its fastest


def problem(robot, controller, states, repeat: int = 1, solver: str = "HQuadProgFast", evict_bytes: int = 0) -> Dict:
    """The JSON problem for the peer, with our controller's weights, gains and limits."""
    if robot.loops is not None:
        raise InputError(f"{robot.name} has closed loops: TSID has no loop-closure formulation here")
    cfg = controller.config
    f = controller.formulation
    js = f.joints
    contacts = []
    for c in f.contacts:
        contacts.append({"frame": c.frame, "kind": c.kind, "points": c.points.tolist(),
                         "n_points": c.n_points, "normal": c.normal.tolist(), "mu": c.friction,
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
        "swing_foot": cfg["tasks"]["swing_foot"],
        "weight": f.state.mass * 9.81,
        "states": [{"q": s.q.tolist(), "v": s.v.tolist(), "com": [x.tolist() for x in s.com],
                    "stance": list(s.stance),
                    "swing": {k: [x.tolist() for x in t] for k, t in s.swing.items()},
                    "swing_rotation": _swing_rotations(robot, s)} for s in states],
        "repeat": repeat, "solver": solver, "evict_bytes": evict_bytes,
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


def _swing_rotations(robot, sample: Sample) -> Dict[str, list]:
    """Each swing foot's own orientation (column-major), TSID's SE3 reference rotation: its
    position error is the linear part of log6(M_ref^-1 M), which is the world position error
    (our swing-foot task) only when the reference rotation is the foot's."""
    if not sample.swing:
        return {}
    m = robot.model
    d = m.createData()
    pin.framesForwardKinematics(m, d, sample.q)
    return {f: d.oMf[m.getFrameId(f)].rotation.flatten(order="F").tolist() for f in sample.swing}


def references_for(sample: Sample) -> References:
    """The controller's references of a workload sample: CoM, level base, swing feet."""
    return References(com=Target(*sample.com), base_orientation=OrientationTarget([0, 0, 0, 1]),
                      swing_feet={f: Target(*t) for f, t in sample.swing.items()})


def active_rows(problem, x, tol: float = 1e-7) -> int:
    """Inequality rows of a solved QP at one of their bounds (rows with l == u left out)."""
    cx = problem.C @ x
    return int(np.count_nonzero(((cx <= problem.l + tol) | (cx >= problem.u - tol)) & (problem.l < problem.u)))


def evict(buffer: Optional[np.ndarray], k: int) -> None:
    """Write every byte of ``buffer`` (None: nothing): run between two timed cycles, it pushes
    the cycle's code and data out of the core's caches, as another process's time slice or an
    interrupt does (``bench controller --evict-kib``; the peer's loop does the same)."""
    if buffer is not None:
        buffer.fill(k)


def run_ours(controller, samples: List[Sample], repeat: int = 1, evict_bytes: int = 0) -> Dict:
    """Our controller on the peer's problem, sample by sample (stance from the sample). Also
    counts, outside the timed call, the cycles whose solution has an active inequality.
    ``evict_bytes``: that many bytes written between cycles, outside the timed call (:func:`evict`).

    The torques and accelerations are kept in arrays made before the loop, not as a list per
    cycle: lists kept alive grow the garbage collector's youngest generation, and its
    collection (80-90 us at load 7) ran inside about one timed cycle in 330 (6 of 2000 on
    solo12's walk), whichever code made the allocation that crossed its threshold."""
    frames = [c.frame for c in controller.robot.contacts]
    stances = [dict(zip(frames, s.stance)) for s in samples]
    refs = [references_for(s) for s in samples]
    shortcuts0 = getattr(controller.solver, "shortcuts", 0)
    taus = np.zeros((len(samples), len(controller.joint_names)))
    dvs = np.zeros((len(samples), controller.formulation.state.n))
    times, fallbacks, active = [], 0, 0
    buffer = np.zeros(evict_bytes // 8) if evict_bytes >= 8 else None
    for rep in range(repeat):
        times = []
        for k, (s, stance, r) in enumerate(zip(samples, stances, refs)):
            evict(buffer, k)
            t0 = time.perf_counter()
            out = controller.update(s.q, s.v, stance, r)
            times.append(time.perf_counter() - t0)
            if rep == repeat - 1:
                taus[k] = out.tau_vector
                dvs[k] = out.dv
                fallbacks += int(out.fallback)
                if not out.fallback:
                    active += active_rows(controller.last_problem, controller.last_solution) > 0
    return {"times": times, "tau": taus, "dv": dvs, "fallbacks": fallbacks, "active_cycles": int(active),
            "shortcuts": getattr(controller.solver, "shortcuts", 0) - shortcuts0}


def percentiles(times: List[float]) -> Dict[str, float]:
    t = np.asarray(times) * 1e3
    return {"p50_ms": float(np.percentile(t, 50)), "p99_ms": float(np.percentile(t, 99)),
            "max_ms": float(t.max()), "over_1ms": float(np.mean(t > 1.0))}


def binding_torque_scale(robot, samples: List[Sample], overrides: dict, over: float = 1.15) -> float:
    """The scale of the URDF torque limits at which the most loaded joint's peak torque over
    ``samples`` (controller without torque limits) is ``over`` times its limit."""
    free = dict(overrides, limits={**overrides.get("limits", {}), "torque": False})
    ctrl = WholeBodyController(robot, free)
    tau = np.abs(np.array(run_ours(ctrl, samples)["tau"]))
    ratio = tau.max(axis=0) / ctrl.formulation.joints.tau_max
    return float(ratio.max() / over)

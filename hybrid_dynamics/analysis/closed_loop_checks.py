"""Self-checks of a robot's closed linkages (``hybrid-dynamics validate closed-loop``) and the
per-cycle benchmark of estimator + model update + constrained ID (``bench estimator``).

Every check compares against an independent reference: finite differences of the position
closure, the Lagrange-multiplier form of the dynamics, the other ID form, an exact static
stance. Each returns ``{"name", "value", "tolerance", "passed", ...}``. A check that could
pass without anything moving fails instead: the sampled actuators must span part of their
stroke (a URDF whose limits read [0, 0] gives samples that never move).
"""
from __future__ import annotations

import time
from typing import Dict, List

import numpy as np
import pinocchio as pin

from ..dynamics.closed_chain import ClosedChainInverseDynamics, LoopClosureKinematics
from ..estimation.passive_state import PassiveStateEstimator
from ..estimation.wrench import WrenchEstimator


def _check(name: str, value: float, tolerance: float, **extra) -> dict:
    return {"name": name, "value": float(value), "tolerance": tolerance,
            "passed": bool(np.isfinite(value) and value <= tolerance), **extra}


def _actuator_sample(kin: LoopClosureKinematics, rng, scale: float) -> np.ndarray:
    lo = np.maximum(kin.model.lowerPositionLimit[kin.qa], -1.0)
    hi = np.minimum(kin.model.upperPositionLimit[kin.qa], 1.0)
    mid, half = kin.q_ref[kin.qa], np.minimum(scale * (hi - lo) / 2, 2 * amplitude(kin, 1.0))
    return np.clip(mid + half * rng.uniform(-1, 1, kin.n_act), lo, hi)


def amplitude(kin: LoopClosureKinematics, scale: float = 0.25, cap: float = 0.1) -> np.ndarray:
    """Sinusoid amplitude per actuator: ``scale`` of its distance to the nearer limit, at most
    ``cap`` (rad or m: a stroke assumed as a revolute's full turn is not the workspace)."""
    lo, hi = kin.model.lowerPositionLimit[kin.qa], kin.model.upperPositionLimit[kin.qa]
    q0 = kin.q_ref[kin.qa]
    return np.minimum(scale * np.minimum(q0 - lo, hi - q0), cap)


def sinusoid(kin: LoopClosureKinematics, t: float, scale: float = 0.25):
    """Actuator reference around the reference pose: positions, velocities, accelerations."""
    q0, amp = kin.q_ref[kin.qa], amplitude(kin, scale)
    w = 2 * np.pi * (0.4 + 0.05 * np.arange(kin.n_act))
    return q0 + amp * np.sin(w * t), amp * w * np.cos(w * t), -amp * w ** 2 * np.sin(w * t)


def run_checks(robot, seed: int = 0) -> Dict[str, object]:
    kin = LoopClosureKinematics(robot)
    rng = np.random.default_rng(seed)
    checks: List[dict] = []
    info = {"robot": robot.name, "nv": robot.nv, "actuated": kin.n_act, "passive": kin.n_pas,
            "loops": kin.L, "rows": kin.m}
    if robot.loops is not None:
        info["load"] = {k: v for k, v in robot.loop_report.items() if k != "q_ref"}
    # 0. the actuators the checks sample move: each spans at least 1e-3 (rad or m)
    if kin.L:
        still = [n for n, a in zip(kin.actuated_joints, amplitude(kin)) if not a > 1e-3]
        checks.append(_check("actuators_sampled_move", len(still), 0, still=still,
                             message="actuators with no stroke (limits of zero width: give stroke in the loop "
                                     "YAML): " + ", ".join(still) if still else ""))
    # 1. position closure from a cold start (the reference pose)
    iters, res = [], []
    for _ in range(5):
        q, out = kin.close(kin.with_actuated(kin.q_ref, _actuator_sample(kin, rng, 0.5)), tol=1e-10)
        iters.append(out["iterations"] if out["converged"] else 99)
        res.append(out["residual"])
    checks.append(_check("cold_start_closure_iterations", max(iters), 9 if not kin.n_free else 30, residual=max(res)))
    # 2. J_m against central differences of the closure
    q0 = kin.q_ref
    G, _ = kin.projection(q0)
    h, err = 1e-6, 0.0
    for i in range(kin.n_act):
        qs = []
        for sgn in (1, -1):
            qa = q0[kin.qa].copy()
            qa[i] += sgn * h
            qs.append(kin.close(kin.with_actuated(q0, qa), tol=1e-13)[0][kin.qu])
        diff = (qs[0] - qs[1]) / (2 * h) - G[kin.iu, kin.nb + i]     # free internal motions: least norm
        err = max(err, float(np.max(np.abs(kin.determined(q0, diff)))) if kin.n_pas else 0.0)
    checks.append(_check("jm_vs_finite_differences", err, 1e-6))
    # 3. drift: J_dot v against differences of J v along v
    v, a = kin.complete(q0, rng.normal(size=kin.n_act), rng.normal(size=kin.n_act),
                        v_base=rng.normal(size=kin.nb) if kin.nb else None,
                        a_base=rng.normal(size=kin.nb) if kin.nb else None)
    st = kin.compute(q0, v)
    if kin.m:
        Jp = kin.compute(pin.integrate(kin.model, q0, h * v)).J
        Jn = kin.compute(pin.integrate(kin.model, q0, -h * v)).J
        err = float(np.max(np.abs((Jp - Jn) @ v / (2 * h) - st.drift_acc)))
        checks.append(_check("drift_vs_finite_differences", err, 1e-5))
        checks.append(_check("consistent_acceleration_residual", float(np.max(np.abs(st.J @ a + st.drift_acc))), 1e-9))
    # 4. fixed-base ID against the Lagrange-multiplier form (eqs. 28-29 without contacts)
    vf, _ = kin.complete(q0, rng.normal(size=kin.n_act))
    a_a = rng.normal(size=kin.n_act)
    tau, af = kin.inverse_dynamics(q0, vf, a_a)
    # the passive joints' springs (docs/loops.md) act as known forces: tau' = rnea - tau_s
    rnea = pin.rnea(kin.model, kin.model.createData(), q0, vf, af) - kin.spring_forces(q0, vf)
    if kin.m:
        stf = kin.compute(q0, vf)
        lam = np.linalg.lstsq(stf.J[:, kin.iu].T, rnea[kin.iu], rcond=None)[0]
        ref = rnea[kin.ia] - stf.J[:, kin.ia].T @ lam
    else:
        ref = rnea[kin.ia]
    # relative to the largest force (descriptions in g and mm give forces of 1e6)
    checks.append(_check("fixed_base_id_vs_multiplier_form", float(np.max(np.abs(tau - ref))) /
                         max(1.0, float(np.max(np.abs(ref)))), 1e-9))
    # 5. floating base with contacts: three-step against projected
    if robot.contacts and kin.floating:
        idd = ClosedChainInverseDynamics(robot, kin)
        a_ref = np.array([0.1, -0.05, 0.3, 0.05, 0.1, -0.05])
        full = idd.solve(q0, np.zeros(kin.nv), a_ref, form="three-step")
        proj = idd.solve(q0, np.zeros(kin.nv), a_ref, form="projected")
        diff = float(np.max(np.abs(full.tau - proj.tau))) if full.status == proj.status == "solved" else float("inf")
        checks.append(_check("three_step_vs_projected_tau", diff, 1e-9, status=[full.status, proj.status]))
        # 6. wrench estimate of an exact static stance recovers the weight
        M, hh, Jc, dJc, stc, G_f, drift = idd.terms(q0, np.zeros(kin.nv), robot.contacts)
        F = np.linalg.lstsq((G_f.T @ Jc.T)[:6], (G_f.T @ hh)[:6], rcond=None)[0]
        tau_s = (G_f.T @ (hh - Jc.T @ F))[kin.nb:]
        est = WrenchEstimator(robot, kin).estimate(q0, tau_s)
        weight = robot.total_mass() * 9.81
        total = sum(f[2] for f in est.foot_force.values())
        checks.append(_check("wrench_weight_relative_error", abs(total - weight) / weight, 0.01,
                             weight_N=weight, estimated_N=float(total)))
    # 7. estimator against exact closure on a 1 s sinusoid at 1 kHz
    if kin.m:
        est = PassiveStateEstimator(kin)
        worst, res_max, invalid = 0.0, 0.0, 0
        for k in range(1000):
            qa, va, _ = sinusoid(kin, k * 1e-3)
            e = est.update(qa, va)
            res_max = max(res_max, e.residual)
            invalid += not e.valid
            if k % 100 == 99:     # distance to the closure at the measured actuators, from the estimate
                q_exact, _ = kin.close(kin.with_actuated(e.q, qa), tol=1e-12)
                # the part the actuators determine (free internal motions: Newton may move along them)
                worst = max(worst, float(np.max(np.abs(kin.determined(q_exact, e.q[kin.qu] - q_exact[kin.qu])))))
        checks.append(_check("estimator_passive_error_rad", worst if not invalid else float("inf"), 1e-3,
                             closure_residual=res_max, invalid_updates=invalid))
    info["checks"] = checks
    info["passed"] = all(c["passed"] for c in checks)
    return info


def bench_cycle(robot, cycles: int = 2000, warmup: int = 200) -> Dict[str, object]:
    """Per control cycle, both legs, no contacts: passive-state estimator update, model update
    (loop kinematics, J_m and drift at the estimate) and constrained ID (tau = G^T rnea).
    Returns percentiles in milliseconds and the breakdown."""
    kin = LoopClosureKinematics(robot)
    est = PassiveStateEstimator(kin)
    t_est, t_id, t_cycle = [], [], []
    clock = time.perf_counter
    for k in range(cycles + warmup):
        qa, va, aa = sinusoid(kin, k * 1e-3)
        t0 = clock()
        e = est.update(qa, va)
        t1 = clock()
        tau, _ = kin.inverse_dynamics(e.q, e.v, aa)
        t2 = clock()
        if k >= warmup:
            t_est.append(t1 - t0)
            t_id.append(t2 - t1)
            t_cycle.append(t2 - t0)
    # cold-start position closure (iterations to 1e-10) for the record
    rng = np.random.default_rng(1)
    iters = [kin.close(kin.with_actuated(kin.q_ref, _actuator_sample(kin, rng, 0.5)), tol=1e-10)[1]["iterations"]
             for _ in range(10)]

    def pct(x):
        x = np.array(x) * 1e3
        return {"p50": float(np.percentile(x, 50)), "p99": float(np.percentile(x, 99)), "max": float(x.max())}
    cyc = pct(t_cycle)
    return {"robot": robot.name, "cycles": cycles, "nv": robot.nv, "actuated": kin.n_act, "passive": kin.n_pas,
            "cycle_ms": cyc, "estimator_ms": pct(t_est), "model_update_and_id_ms": pct(t_id),
            "reference_ms": 0.38, "ratio_p50_to_reference": cyc["p50"] / 0.38,
            "cold_start_iterations_max": int(max(iters))}

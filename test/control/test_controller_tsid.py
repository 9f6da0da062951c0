"""TSID 1.7.1 (its own venv, ``make tsid-venv``) solving the same problem as our controller:
same robot, contacts, tasks, weights, gains, limits and states. The torques agree."""
import gc

import numpy as np
import pytest

from hybrid_dynamics.control import WholeBodyController
from hybrid_dynamics.control import tsid_peer as tp
from hybrid_dynamics.control.tsid_peer import workloads as wl
from hybrid_dynamics.model.robot import load_robot

pytestmark = pytest.mark.skipif(tp.tsid_python() is None,
                                reason="TSID environment missing (make tsid-venv; make test builds it)")

# Stated tolerances (N m). Point feet: the two QPs have one optimum and both solvers reach it.
# TALOS: the sole's internal forces are regularised by 1e-8 only (TSID's Hessian
# regularisation) while corner friction facets are active, so the optimum is nearly degenerate
# and each solver stops at its own tolerance (measured 0.05 N m of 119 N m).
CASES = [("solo12", 1e-5), ("jethexa", 1e-5), ("talos", 0.2)]


@pytest.mark.parametrize("name,tol", CASES)
def test_torques_agree_with_tsid(name, tol):
    robot = load_robot(name)
    ctrl = WholeBodyController(robot, tp.SAME_PROBLEM)
    states = wl.sway(robot, 300)[::10]
    peer = tp.run_peer(tp.problem(robot, ctrl, states))
    ours = tp.run_ours(ctrl, states)
    assert all(s == 0 for s in peer["status"]) and ours["fallbacks"] == 0
    tau_tsid, tau_ours = np.array(peer["tau"]), np.array(ours["tau"])
    assert tau_tsid.shape == tau_ours.shape
    assert np.abs(tau_tsid).max() > 0.1                      # a problem with real torques
    assert np.abs(tau_tsid - tau_ours).max() < tol
    # and the accelerations too (same optimum, not only the same torques)
    assert np.abs(np.array(peer["dv"]) - np.array(ours["dv"])).max() < 1e-3
    # a different problem does not agree: the comparison can fail
    other = WholeBodyController(robot, dict(tp.SAME_PROBLEM, tasks={"posture": {"weight": 10.0}}))
    tau_other = np.array(tp.run_ours(other, states[:5])["tau"])
    assert np.abs(tau_other - tau_tsid[:5]).max() > 10 * tol


@pytest.mark.parametrize("solver", ["daqp", "goldfarb_idnani"])
@pytest.mark.parametrize("name", ["solo12", "jethexa"])
def test_walking_torques_agree_with_tsid(name, solver):
    """The walking workload (stance changes, swing-foot tasks, stance forces on their
    pyramids, torque limits binding at the peaks) is the same problem for both: the torques
    agree on cycles with active inequalities. (TALOS's walk differs by a few N m on single
    support, its sole's swing task and internal forces not being the same problem;
    `bench controller` prints it.)"""
    robot = load_robot(name)
    samples = wl.walk(robot, 600)[::6]
    scale = tp.binding_torque_scale(robot, samples, tp.SAME_PROBLEM)
    # the active-set backends (the bench's): ProxQP stops up to 0.09 N m away on a few jethexa cycles
    ctrl = WholeBodyController(robot, dict(tp.SAME_PROBLEM, solver=solver, limits={"torque_scale": scale}))
    peer = tp.run_peer(tp.problem(robot, ctrl, samples))
    ours = tp.run_ours(ctrl, samples)
    assert all(s == 0 for s in peer["status"]) and ours["fallbacks"] == 0
    assert ours["active_cycles"] >= len(samples) // 4          # not a problem of equalities only
    tau_tsid, tau_ours = np.array(peer["tau"]), np.array(ours["tau"])
    assert np.abs(tau_tsid).max() > 0.1
    assert np.abs(tau_tsid - tau_ours).max() < 1e-3 * np.abs(tau_tsid).max()


def test_the_bench_timing_keeps_no_python_object_per_cycle():
    """``run_ours`` (the bench's timing of our cycles) keeps its results in arrays made before
    its loop, so its timed loop leaves no garbage-collected object per cycle behind. Its result
    lists, two per cycle kept alive, filled the collector's youngest generation, whose
    collections then started inside timed cycles (6 of 2000 solo12 walking cycles, 80-90 us
    each on the loaded machine)."""
    robot = load_robot("solo12")
    samples = wl.walk(robot, 500)
    ctrl = WholeBodyController(robot, dict(tp.SAME_PROBLEM, solver="goldfarb_idnani"))
    tp.run_ours(ctrl, samples)                        # layouts and plans made
    gc.collect()
    gc.disable()
    try:
        before = {id(o) for o in gc.get_objects()}
        ours = tp.run_ours(ctrl, samples)
        kept = [o for o in gc.get_objects() if id(o) not in before]
    finally:
        gc.enable()
    assert len(ours["times"]) == len(samples) and ours["fallbacks"] == 0
    # what the call itself made (the samples' stances and references, its result) and no more
    assert len(kept) < 4 * len(samples), len(kept)
    per_cycle = [o for o in kept if isinstance(o, list) and len(o) == len(ctrl.joint_names)]
    assert not per_cycle and np.asarray(ours["tau"]).shape == (len(samples), len(ctrl.joint_names))


def test_the_bench_evicts_the_caches_between_timed_cycles_in_both_loops(cli):
    """``bench controller --evict-kib N``: N KiB written between timed cycles by our loop and
    TSID's (the peer's problem carries it), outside the timed call; the same torques as
    without. A negative size is refused."""
    import json
    buffer = np.zeros(1024)
    tp.evict(buffer, 7)
    assert (buffer == 7).all()
    robot = load_robot("solo12")
    samples = wl.walk(robot, 40)
    ctrl = WholeBodyController(robot, dict(tp.SAME_PROBLEM, solver="goldfarb_idnani"))
    assert tp.problem(robot, ctrl, samples, evict_bytes=4096)["evict_bytes"] == 4096
    proc = cli("bench", "controller", "--robot", "solo12", "--workload", "walk", "--cycles", "60",
               "--evict-kib", "256", "--json")
    assert proc.returncode == 0, proc.stderr
    walk = json.loads(proc.stdout)["workloads"]["walk"]
    assert walk["evict_kib"] == 256 and walk["ours"]["fallbacks"] == 0
    for name in tp.TSID_SOLVERS:
        t = walk["tsid"][name]
        assert t["torque_max_abs_diff"] < 1e-3 * max(1.0, t["torque_max_abs"]) and t["p50_ms"] > 0
    bad = cli("bench", "controller", "--robot", "solo12", "--evict-kib", "-1", "--no-tsid")
    assert bad.returncode == 2 and "--evict-kib" in bad.stderr


def test_bench_controller_command(cli):
    """``hybrid-dynamics bench controller --robot solo12 --json``: percentiles of both, the
    ratio and the torque agreement (no wall-clock assertion)."""
    import json
    proc = cli("bench", "controller", "--robot", "solo12", "--cycles", "450", "--json")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["robot"] == "solo12" and set(r["workloads"]) == {"sway", "walk"}
    for b in r["workloads"].values():
        assert b["ours"]["fallbacks"] == 0
        for name in tp.TSID_SOLVERS:
            t = b["tsid"][name]
            for key in ("p50_ms", "p99_ms", "max_ms"):
                assert b["ours"][key] > 0 and t[key] > 0
            assert t["ratio_p50"] == round(b["ours"]["p50_ms"] / t["p50_ms"], 2)
            assert t["ratio_p99"] == round(b["ours"]["p99_ms"] / t["p99_ms"], 2)
            assert t["torque_max_abs_diff"] < 1e-3 * max(1.0, t["torque_max_abs"])
    walk = r["workloads"]["walk"]
    assert walk["ours"]["active_cycles"] > 0 and walk["stance_patterns"] == 2
    assert walk["torque_scale"] is not None
    bad = cli("bench", "controller", "--robot", "nosuchrobot", "--no-tsid")
    assert bad.returncode == 2 and "unknown robot" in bad.stderr

"""The benchmark workloads (control/tsid_peer/workloads.py): closed-chain states have their
loops closed (checked with Pinocchio's frame placements, independently of the package's
closure code), and the walking workload really walks (stance changes, swing feet lifted,
stance feet still in the world)."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control.tsid_peer import workloads as wl
from hybrid_dynamics.model.robot import load_robot


@pytest.mark.parametrize("workload", wl.WORKLOADS)
def test_closed_chain_bench_states_have_closed_loops(workload):
    robot = load_robot("hybrid_biped")
    m = robot.model
    d = m.createData()
    samples = wl.workload(robot, workload, 400)[::20]
    actuated = [m.joints[m.getJointId(n)].idx_q for n in robot.actuated_joints]
    passive = sorted(set(range(7, m.nq)) - set(actuated))
    # the states move: actuators and the passive joints that follow them
    spread = np.ptp(np.array([s.q for s in samples]), axis=0)
    assert spread[actuated].max() > 1e-3 and spread[passive].max() > 1e-4
    worst = 0.0
    for s in samples:
        pin.framesForwardKinematics(m, d, s.q)
        for loop in robot.loops.loops:
            a = d.oMf[m.getFrameId(loop.frame_a)]
            b = d.oMf[m.getFrameId(loop.frame_b)]
            err = pin.log6(a.actInv(b)).vector
            worst = max(worst, float(np.abs(err[list(loop.axes)]).max()))
    assert worst <= 1e-10
    assert wl.closure_residual(robot, samples) <= 1e-10
    # the velocities are consistent with the loops: the closure is constant along v
    q_next = pin.integrate(m, samples[0].q, 1e-6 * samples[0].v)
    assert wl.closure_residual(robot, [wl.Sample(q_next, samples[0].v, samples[0].com, samples[0].stance)]) < 1e-9


def test_walk_lifts_swing_feet_and_keeps_stance_feet_still():
    robot = load_robot("solo12")
    m = robot.model
    d = m.createData()
    samples = wl.walk(robot, 800)
    assert len({s.stance for s in samples}) == 2
    pin.framesForwardKinematics(m, d, robot.q_stand)
    ground = min(d.oMf[m.getFrameId(c.frame)].translation[2] for c in robot.contacts)
    lifted, still = 0.0, 0.0
    for s in samples[50:350]:                      # inside the first half period
        pin.forwardKinematics(m, d, s.q, s.v)
        pin.updateFramePlacements(m, d)
        for c, down in zip(robot.contacts, s.stance):
            fid = m.getFrameId(c.frame)
            vel = pin.getFrameVelocity(m, d, fid, pin.LOCAL_WORLD_ALIGNED).linear
            if down:
                still = max(still, float(np.abs(vel).max()))
            else:
                lifted = max(lifted, float(d.oMf[fid].translation[2] - ground))
    assert lifted > 0.015                          # a swing foot rises by most of its step
    assert still < 0.1 * 0.04 / 0.4                # stance feet: within 10 % of the base speed


def test_bench_closed_chain_whole_cycle_and_table(cli, tmp_path):
    """`bench controller --robot hybrid_biped`: timed on closed states only (residual in the
    JSON), the whole Pipeline cycle beside the QP cycle with its per-stage split (and with
    `--cpu-stages` the finer one in CPU time); `--table` turns the JSON into the
    README's rows (no wall-clock assertion)."""
    import json
    proc = cli("bench", "controller", "--robot", "hybrid_biped", "--workload", "sway", "--cycles", "40",
               "--no-tsid", "--cpu-stages", "--json")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    b = r["workloads"]["sway"]
    assert b["closure_residual"] <= 1e-10 and b["ours"]["fallbacks"] == 0
    wc = b["whole_cycle"]
    assert wc["p50_ms"] > 0 and wc["safe_mode_cycles"] == 0 and wc["reference_ms"] == 0.38
    # the per-stage split: every stage timed, none longer than the longest whole cycle
    assert list(wc["stages"]) == ["inputs", "estimate", "references_and_command", "model_build_decode", "solve"]
    assert all(0 < f["p50_ms"] <= f["max_ms"] <= wc["max_ms"] for f in wc["stages"].values())
    # --cpu-stages: the finer account in thread CPU time, every measured stage non-zero
    cpu = wc["cpu_stages"]
    assert list(cpu) == ["inputs", "passive_completion", "base_estimator", "estimate_rest", "references",
                         "model_update", "qp_build", "solve", "decode", "command_glue", "step_rest", "total"]
    assert all(cpu[k]["p50_ms"] > 0 for k in ("inputs", "passive_completion", "base_estimator", "references",
                                              "model_update", "qp_build", "solve", "total"))
    assert all(f["p50_ms"] <= f["p99_ms"] for f in cpu.values())
    saved = tmp_path / "qp.json"
    saved.write_text(proc.stdout)
    table = cli("bench", "controller", "--table", saved)
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if line.startswith("| hybrid_biped")]
    assert len(rows) == 1 and "whole cycle" in rows[0] and "closure" in rows[0]
    bad = cli("bench", "controller", "--table", tmp_path / "missing.json")
    assert bad.returncode == 2 and "missing.json" in bad.stderr

"""The damage detector on a soft-footed robot runs on the soft robot's model
(estimation/damage_detector.py): the pads' deformation coordinates are rows of its momentum
residual, M and h come from the soft leaves [Pustina 2024, Alg. 3], each foot force acts at
the pad's deformed contact point.

In MuJoCo (scenario ``jethexa_soft_damage``, library loop, damage undeclared): over healthy
walking each pad's elongation row of the residual carries the force MuJoCo's floor puts on
that foot (its mean over 1.5 s against MuJoCo's, through the pad's Jacobian), no leg is
convicted, and the pair lost at 3 s is found as two whole legs as fast as with the rigid
model (which left leg 4's coxa in the model, "leg4 lost links 2..").

Through the one-process ROS 2 graph (``demo`` without ``--library``) the same undeclared loss
is found by the morphology manager's detector, on the estimates the state estimator publishes:
it converges over the healthy walk (it tests, with ``|e|`` well under its threshold) and the
morphology it detects is the plant's true one. Before the base filter of jethexa_soft leaned on
the IMU (a stance pad's tip chatters on MuJoCo's floor, so the legs' kinematics measure the
base velocity to 0.1-0.2 m/s only: docs/soft.md) ``|e|`` never stayed under half the threshold
for 0.2 s in the graph and nothing was ever tested.
"""
import json

import numpy as np
import pytest
import yaml

from bag_messages import topic_messages

from hybrid_dynamics.estimation.damage_detector import DamageDetector
from hybrid_dynamics.sim.plant import Plant
from hybrid_dynamics.sim.runner import ScenarioRun
from hybrid_dynamics.sim.scenario import load_scenario


def test_soft_model_detector_carries_the_pad_forces_and_finds_a_lost_pair(tmp_path):
    sc = load_scenario("jethexa_soft_damage")
    sc.controller = {"soft": {"machine_code": False}}          # no C compile in the test
    run = ScenarioRun(sc, tmp_path, duration=4.0, undeclared=True, bag=False, plots=False, progress=False)
    forces, rows = [], []
    read, update = Plant.joint_states, DamageDetector.update

    def recorded(plant):
        forces.append((plant.time, plant.contact_forces()))
        return read(plant)

    def observed(det, t, *args, **kwargs):
        out = update(det, t, *args, **kwargs)
        if det.leaves is not None and det.leaves.ns == 18:          # healthy: every pad
            qf = np.concatenate([det.map.expand_q(det.map.reduce_q(args[0])), args[4]])
            vf = np.concatenate([det.map.expand_v(det.map.reduce_v(args[1])), args[5]])
            J = det.leaves.contact_points(qf, vf)[1]
            rows.append((t, det.r[len(det.vi):].copy(), J[:, det.model.nv:]))
        return out
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Plant, "joint_states", recorded)
        mp.setattr(DamageDetector, "update", observed)
        s = run.run()
    leaves = run.detector.healthy_leaves
    frames = list(leaves.roots)
    window = (1.5, 2.95)
    # MuJoCo's floor force on each foot, mean over the window, through each pad's Jacobian
    # (elongation column) against the mean of the residual's elongation rows
    f_mj = np.mean([np.concatenate([f.get(fr, np.zeros(3)) for fr in frames]) for t, f in forces
                    if window[0] < t < window[1]], axis=0)
    samples = [(r, J) for t, r, J in rows if window[0] < t < window[1]]
    assert len(samples) > 200
    J_mean = np.mean([J for _, J in samples], axis=0)
    r_mean = np.mean([r for r, _ in samples], axis=0)
    for g, root in enumerate(frames):
        name = leaves.module_names[g][0]
        axial = leaves.slices[name].stop - 1                     # the pad's change of length
        predicted = J_mean[3 * g:3 * g + 3, axial] @ f_mj[3 * g:3 * g + 3]
        print(f"{root}: elongation row {r_mean[axial]:.3f} N, MuJoCo through J {predicted:.3f} N")
        assert abs(predicted) > 1.0                                # the foot carried load
        assert abs(r_mean[axial] - predicted) < 0.05 * abs(predicted)
    print({k: s[k] for k in ("detections", "detection_latency_s", "min_base_height_m", "max_abs_roll_deg",
                             "final_morphology", "false_detections")})
    assert s["completed"] and not s["fell"] and s["false_detections"] == 0
    assert s["detection_latency_s"] is not None and s["detection_latency_s"] <= 0.065
    assert sorted(d["what"] for d in s["detections"]) == ["leg3 lost", "leg4 lost"]
    assert run.detector.leaves.ns == 12 and len(run.detector.r) == len(run.detector.vi) + 12


def test_undeclared_pair_loss_is_found_through_the_one_process_graph(cli, tmp_path):
    out = cli("demo", "--scenario", "jethexa_soft_damage", "--duration", "3.4", "--undeclared", "--out", tmp_path,
              "--quiet", timeout=600)
    assert out.returncode == 0, (out.stdout, out.stderr[-3000:])
    s = json.loads((tmp_path / "summary.json").read_text())
    print({k: s[k] for k in ("detections", "detection_latency_s", "min_base_height_m", "max_abs_roll_deg",
                             "final_morphology", "false_detections")})
    assert s["runner"] == "ros2 graph (one process)"
    assert s["completed"] and not s["fell"] and s["false_detections"] == 0
    assert s["detection_latency_s"] is not None and 0 < s["detection_latency_s"] <= 0.1
    sources = [e.get("source") for e in s["morphology_timeline"] if e["kind"] == "morphology"]
    assert sources == ["detected"]
    # the plant's own account of what it lost (ground truth), not the software's
    truth = yaml.safe_load(topic_messages(tmp_path / "bag", "/sim/ground_truth/morphology")[-1].data)
    detected = yaml.safe_load(topic_messages(tmp_path / "bag", "/morphology_manager/morphology")[-1].data)
    assert truth["source"] == "plant" and detected["source"] == "detected"
    assert {k: v for k, v in detected.items() if k not in ("revision", "source", "t")} == \
        {k: v for k, v in truth.items() if k not in ("revision", "source", "t")}
    # the detector tested the healthy walk (|e| published, NaN while not testing), well under
    # its threshold: not a detection by a residual that was never calm
    e = np.array([m.data[0] for m in topic_messages(tmp_path / "bag", "/whole_body_controller/detector")])
    threshold = topic_messages(tmp_path / "bag", "/whole_body_controller/detector")[0].data[1]
    healthy = e[:int(0.85 * len(e))]
    assert np.isfinite(healthy).sum() > 200
    assert np.nanmedian(healthy) < 0.25 * threshold and np.nanpercentile(healthy, 99) < threshold

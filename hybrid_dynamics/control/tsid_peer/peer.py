"""TSID 1.7.1 solving the whole-body problem of our controller, in its own interpreter.

Run with the TSID environment's Python (``make tsid-venv``: ``tsid==1.7.1`` with
``pin==3.4.0``; it cannot import hybrid_dynamics, whose Pinocchio is 4.x)::

    .venv-tsid/bin/python hybrid_dynamics/control/tsid_peer/peer.py < problem.json > result.json

The problem (written by :func:`hybrid_dynamics.control.tsid_peer.problem`) names the URDF,
the contact frames (point or 4-corner surface, normal, friction, normal-force bounds), the
task weights and gains (CoM, base orientation, posture, force regularisation), torque and
joint limits, and a sequence of states (q, v) with the CoM reference of each. The result
holds the time of every cycle (``computeProblemData`` + ``solve`` + ``getActuatorForces``, the
whole TSID cycle) and the torques, accelerations and forces of every cycle.

Traps (DESIGN.md): import TSID as ``from tsid import tsid_pywrap as tsid``; keep every
trajectory sample handed to ``setReference`` alive in a variable.
"""
import json
import sys
import time

import numpy as np
import pinocchio as pin
from tsid import tsid_pywrap as tsid


def main() -> int:
    P = json.load(sys.stdin)
    robot = tsid.RobotWrapper(P["urdf"], [], pin.JointModelFreeFlyer(), False)
    model = robot.model()
    nv = model.nv
    states = [(np.array(s["q"]), np.array(s["v"]), np.array(s["com"])) for s in P["states"]]
    q0, v0, _ = states[0]
    invdyn = tsid.InverseDynamicsFormulationAccForce("tsid", robot, False)
    invdyn.computeProblemData(0.0, q0, v0)
    data = invdyn.data()
    keep = []                                       # every object TSID references stays alive
    for c in P["contacts"]:
        normal = np.array(c["normal"])
        if c["kind"] == "surface":
            points = np.array(c["points"]).T        # 3 x 4
            contact = tsid.Contact6d(c["frame"], robot, c["frame"], points, normal, c["mu"],
                                     c["fmin"], c["fmax"])
            contact.setKp(np.zeros(6))
            contact.setKd(np.zeros(6))
        else:
            contact = tsid.ContactPoint(c["frame"], robot, c["frame"], normal, c["mu"], c["fmin"], c["fmax"])
            contact.setKp(np.zeros(3))
            contact.setKd(np.zeros(3))
            contact.useLocalFrame(False)
        H_ref = robot.framePosition(data, model.getFrameId(c["frame"]))
        contact.setReference(H_ref)
        f_ref = np.array(c["force_reference"])      # 3 (point) or 6 (wrench, sole frame)
        contact.setForceReference(f_ref)
        keep.append(f_ref)
        invdyn.addRigidContact(contact, P["force_regularization"])
        keep += [contact, H_ref]
    T = P["tasks"]
    com = tsid.TaskComEquality("com", robot)
    com.setKp(T["com"]["kp"] * np.ones(3))
    com.setKd(T["com"]["kd"] * np.ones(3))
    invdyn.addMotionTask(com, T["com"]["weight"], 1, 0.0)
    base = tsid.TaskSE3Equality("base", robot, P["base_frame"])
    base.setKp(T["base_orientation"]["kp"] * np.ones(6))
    base.setKd(T["base_orientation"]["kd"] * np.ones(6))
    base.setMask(np.array([0, 0, 0, 1, 1, 1.0]))
    invdyn.addMotionTask(base, T["base_orientation"]["weight"], 1, 0.0)
    posture = tsid.TaskJointPosture("posture", robot)
    posture.setKp(T["posture"]["kp"] * np.ones(nv - 6))
    posture.setKd(T["posture"]["kd"] * np.ones(nv - 6))
    invdyn.addMotionTask(posture, T["posture"]["weight"], 1, 0.0)
    keep += [com, base, posture]
    if P.get("tau_max") is not None:
        act = tsid.TaskActuationBounds("torque_bounds", robot)
        tmax = np.array(P["tau_max"])
        act.setBounds(-tmax, tmax)
        invdyn.addActuationTask(act, 1.0, 0, 0.0)
        keep.append(act)
    if P.get("joint_bounds") is not None:
        jb = P["joint_bounds"]
        bounds = tsid.TaskJointPosVelAccBounds("joint_bounds", robot, jb["dt"], False)
        bounds.setPositionBounds(np.array(jb["q_min"]), np.array(jb["q_max"]))
        bounds.setVelocityBounds(np.array(jb["v_max"]))
        bounds.setAccelerationBounds(jb["a_max"] * np.ones(nv - 6))
        invdyn.addMotionTask(bounds, 1.0, 0, 0.0)
        keep.append(bounds)
    # references: base orientation and posture fixed, CoM per state
    base_ref = pin.SE3(np.array(P["base_rotation"]), np.zeros(3))
    base_sample = tsid.TrajectorySample(12, 6)
    base_sample.value(np.concatenate([np.zeros(3), base_ref.rotation.flatten(order="F")]))
    base_sample.derivative(np.zeros(6))
    base_sample.second_derivative(np.zeros(6))
    base.setReference(base_sample)
    posture_sample = tsid.TrajectorySample(nv - 6)
    posture_sample.value(np.array(P["posture_ref"]))
    posture_sample.derivative(np.zeros(nv - 6))
    posture_sample.second_derivative(np.zeros(nv - 6))
    posture.setReference(posture_sample)
    com_samples = []
    for _, _, c in states:
        s = tsid.TrajectorySample(3)
        s.value(c)
        s.derivative(np.zeros(3))
        s.second_derivative(np.zeros(3))
        com_samples.append(s)
    keep += [base_sample, posture_sample, com_samples]
    solver = tsid.SolverHQuadProgFast("qp")
    solver.resize(invdyn.nVar, invdyn.nEq, invdyn.nIn)
    times, taus, dvs, statuses, forces = [], [], [], [], []
    repeat = int(P.get("repeat", 1))
    for rep in range(repeat):
        times = []
        for k, (q, v, _c) in enumerate(states):
            com.setReference(com_samples[k])
            t0 = time.perf_counter()
            hqp = invdyn.computeProblemData(0.0, q, v)
            sol = solver.solve(hqp)
            tau = invdyn.getActuatorForces(sol)
            times.append(time.perf_counter() - t0)
            if rep == repeat - 1:
                taus.append(tau.tolist())
                dvs.append(invdyn.getAccelerations(sol).tolist())
                forces.append(invdyn.getContactForces(sol).tolist())
                statuses.append(int(sol.status))
    json.dump({"times": times, "tau": taus, "dv": dvs, "status": statuses, "forces": forces,
               "nvar": invdyn.nVar, "neq": invdyn.nEq, "nin": invdyn.nIn}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())

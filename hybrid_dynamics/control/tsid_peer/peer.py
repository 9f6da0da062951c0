"""TSID 1.7.1 solving the whole-body problem of our controller, in its own interpreter.

Run with the TSID environment's Python (``make tsid-venv``: ``tsid==1.7.1`` with
``pin==3.4.0``; it cannot import hybrid_dynamics, whose Pinocchio is 4.x)::

    .venv-tsid/bin/python hybrid_dynamics/control/tsid_peer/peer.py < problem.json > result.json

The problem (written by :func:`hybrid_dynamics.control.tsid_peer.problem`) names the URDF,
the contact frames (point or 4-corner surface, normal, friction, normal-force bounds), the
task weights and gains (CoM, base orientation, swing feet, posture, force regularisation),
torque and joint limits, TSID's solver (``HQuadProg``, its default, or ``HQuadProgFast``), and
a sequence of states (q, v) with the stance pattern, CoM and swing-foot references of each.
The result holds the time of every cycle (contact and swing-task changes +
``computeProblemData`` + ``solve`` + ``getActuatorForces``, the whole TSID cycle) and the
torques and accelerations of every cycle. ``evict_bytes``: a buffer of that size written
between cycles, outside the timed region (our loop does the same).

Traps (DESIGN.md): import TSID as ``from tsid import tsid_pywrap as tsid``; keep every
trajectory sample handed to ``setReference`` alive in a variable.
"""
import json
import sys
import time

import numpy as np
import pinocchio as pin
from tsid import tsid_pywrap as tsid


def _states(P):
    """(q, v, CoM reference (pos, vel, acc), stance pattern, swing-foot references) per state."""
    return [(np.array(s["q"]), np.array(s["v"]), [np.array(x) for x in s["com"]], s["stance"],
             {f: [np.array(x) for x in t] + [np.array(s["swing_rotation"][f])] for f, t in s["swing"].items()})
            for s in P["states"]]


def _contacts(P, robot, data, keep):
    """TSID's contact per declared contact (4-corner surface or point), at rest where it stands."""
    model = robot.model()
    contacts = []
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
        contacts.append(contact)
        keep += [contact, H_ref]
    return contacts


def _motion_tasks(P, robot, invdyn, keep):
    """CoM, base orientation and posture tasks added to ``invdyn``; one swing-foot task per
    contact (added while its foot swings); torque and joint bounds when the problem has them."""
    nv = robot.model().nv
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
    # swing feet: world-aligned SE3 tasks, position gains on the linear part (our swing-foot task)
    sw, swing_tasks = P["swing_foot"], []
    for c in P["contacts"]:
        task = tsid.TaskSE3Equality("swing_" + c["frame"], robot, c["frame"])
        task.useLocalFrame(False)
        task.setKp(sw["kp"] * np.array([1, 1, 1, 0, 0, 0.0]))
        task.setKd(sw["kd"] * np.ones(6))
        task.setMask(np.ones(6) if c["kind"] == "surface" else np.array([1, 1, 1, 0, 0, 0.0]))
        swing_tasks.append(task)
    keep += swing_tasks
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
    return com, base, posture, swing_tasks


def _sample(value, derivative, second_derivative, size=None):
    s = tsid.TrajectorySample(*size) if size else tsid.TrajectorySample(len(value))
    s.value(value)
    s.derivative(derivative)
    s.second_derivative(second_derivative)
    return s


def _references(P, states, base, posture, keep):
    """Base orientation and posture references set (fixed); per state the CoM sample, the
    contact force references (the weight shared by the stance points) and the swing samples."""
    nv = len(P["posture_ref"]) + 6
    base_sample = _sample(np.concatenate([np.zeros(3), np.array(P["base_rotation"]).flatten(order="F")]),
                          np.zeros(6), np.zeros(6), (12, 6))
    base.setReference(base_sample)
    posture_sample = _sample(np.array(P["posture_ref"]), np.zeros(nv - 6), np.zeros(nv - 6))
    posture.setReference(posture_sample)
    com_samples, force_refs, swing_samples = [], [], []
    for _, _, c, stance, swing in states:
        com_samples.append(_sample(c[0], c[1], c[2]))
        share = P["weight"] / sum(k["n_points"] for k, down in zip(P["contacts"], stance) if down)
        force_refs.append([np.array([0.0, 0.0, share]) if k["kind"] == "point"
                           else np.array([0.0, 0.0, share * k["n_points"], 0.0, 0.0, 0.0])
                           for k in P["contacts"]])
        swing_samples.append({frame: _sample(np.concatenate([pos, rot]), np.concatenate([vel, np.zeros(3)]),
                                             np.concatenate([acc, np.zeros(3)]), (12, 6))
                              for frame, (pos, vel, acc, rot) in swing.items()})
    keep += [base_sample, posture_sample, com_samples, swing_samples, force_refs]
    return com_samples, force_refs, swing_samples


def main() -> int:
    P = json.load(sys.stdin)
    robot = tsid.RobotWrapper(P["urdf"], [], pin.JointModelFreeFlyer(), False)
    states = _states(P)
    invdyn = tsid.InverseDynamicsFormulationAccForce("tsid", robot, False)
    invdyn.computeProblemData(0.0, states[0][0], states[0][1])
    keep = []                                       # every object TSID references stays alive
    contacts = _contacts(P, robot, invdyn.data(), keep)
    com, base, posture, swing_tasks = _motion_tasks(P, robot, invdyn, keep)
    com_samples, force_refs, swing_samples = _references(P, states, base, posture, keep)
    solver = getattr(tsid, "Solver" + P.get("solver", "HQuadProgFast"))("qp")
    solver.resize(invdyn.nVar, invdyn.nEq, invdyn.nIn)
    weight_f, sw_weight = P["force_regularization"], P["swing_foot"]["weight"]
    down = [False] * len(contacts)                  # contacts currently in TSID's problem
    swinging = [False] * len(contacts)
    # results in arrays made before the loop (no list kept per cycle: lists kept alive trigger
    # the garbage collector's collections, which then run inside timed cycles)
    taus, dvs = np.zeros((len(states), robot.na)), np.zeros((len(states), robot.nv))
    times, statuses = [], np.zeros(len(states), int)
    repeat = int(P.get("repeat", 1))
    # bytes written between cycles, outside the timed region (tsid_peer.evict: the same)
    evict = np.zeros(int(P.get("evict_bytes", 0)) // 8) if int(P.get("evict_bytes", 0)) >= 8 else None
    for rep in range(repeat):
        times = []
        for k, (q, v, _c, stance, swing) in enumerate(states):
            com.setReference(com_samples[k])
            if evict is not None:
                evict.fill(k)
            t0 = time.perf_counter()
            for i, (contact, c) in enumerate(zip(contacts, P["contacts"])):
                if stance[i] and not down[i]:
                    if swinging[i]:
                        invdyn.removeTask(swing_tasks[i].name, 0.0)
                        swinging[i] = False
                    invdyn.addRigidContact(contact, weight_f)
                    down[i] = True
                elif not stance[i] and down[i]:
                    invdyn.removeRigidContact(c["frame"], 0.0)
                    down[i] = False
                if stance[i]:
                    contact.setForceReference(force_refs[k][i])
                elif c["frame"] in swing:
                    swing_tasks[i].setReference(swing_samples[k][c["frame"]])
                    if not swinging[i]:
                        invdyn.addMotionTask(swing_tasks[i], sw_weight, 1, 0.0)
                        swinging[i] = True
            hqp = invdyn.computeProblemData(0.0, q, v)
            sol = solver.solve(hqp)
            tau = invdyn.getActuatorForces(sol)
            times.append(time.perf_counter() - t0)
            if rep == repeat - 1:
                taus[k] = tau
                dvs[k] = invdyn.getAccelerations(sol)
                statuses[k] = int(sol.status)
    json.dump({"times": times, "tau": taus.tolist(), "dv": dvs.tolist(), "status": statuses.tolist(),
               "nvar": invdyn.nVar, "neq": invdyn.nEq, "nin": invdyn.nIn}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A run read back from its bag (the graph's recording, sim/bagfile.py) for the summary and
plots the library loop computes directly, and the closed-chain figures of a balance run."""
from __future__ import annotations

from pathlib import Path
from typing import Dict

import numpy as np
import pinocchio as pin
import yaml
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore
from scipy.spatial import ConvexHull

from ..dynamics.closed_chain import LoopClosureKinematics
from .log import Log


def _sec(stamp) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


class _LogReader:
    """Fills a :class:`Log` from a graph's bag, one handler per topic (see log_from_bag)."""

    def __init__(self, robot):
        self.frames = [c.frame for c in robot.contacts]
        self.n_legs = len(robot.legs)
        self.log = Log(forces={f: [] for f in self.frames})
        self.gt_t, self.est_t, self.est_p, self.forces = [], [], [], []
        self.stat_t, self.stat, self.morph_t, self.alive = [], [], [], []
        self.handlers = {
            "/sim/ground_truth/odometry": self.ground_truth,
            "/state_estimator/odometry": self.estimate,
            "/sim/ground_truth/contact_forces": self.contact_forces,
            "/whole_body_controller/cycle": self.cycle,
            "/whole_body_controller/detector": self.detector,
            "/sim/ground_truth/morphology": self.damage,
            "/morphology_manager/morphology": self.morphology,
        }

    def ground_truth(self, msg, t_bag: float) -> None:
        p, o = msg.pose.pose.position, msg.pose.pose.orientation
        self.gt_t.append(_sec(msg.header.stamp))
        self.log.pos.append(np.array([p.x, p.y, p.z]))
        self.log.rpy.append(pin.rpy.matrixToRpy(pin.Quaternion(o.w, o.x, o.y, o.z).toRotationMatrix()))

    def estimate(self, msg, t_bag: float) -> None:
        p = msg.pose.pose.position
        self.est_t.append(_sec(msg.header.stamp))
        self.est_p.append(np.array([p.x, p.y, p.z]))

    def contact_forces(self, msg, t_bag: float) -> None:
        self.forces.append(np.asarray(msg.data, float).reshape(-1, 3))

    def cycle(self, msg, t_bag: float) -> None:
        d = np.asarray(msg.data, float)
        lg = self.log
        lg.solve_ms.append(float(d[0]))
        lg.cycle_ms.append(float(d[1]))
        lg.fallback.append(bool(d[2] > 0.5))
        lg.infeasible.append(bool(d[3] > 0.5))

    def detector(self, msg, t_bag: float) -> None:
        self.stat_t.append(t_bag)
        self.stat.append(float(msg.data[0]))

    def damage(self, msg, t_bag: float) -> None:
        data = yaml.safe_load(msg.data) or {}
        self.morph_t.append(t_bag)
        self.alive.append(sum(1 for k in (data.get("links_kept") or {}).values() if k > 0))
        self.log.events.append({"t": round(t_bag, 4), "kind": "damage", "morphology": data.get("description", "")})

    def morphology(self, msg, t_bag: float) -> None:
        data = yaml.safe_load(msg.data) or {}
        if int(data.get("revision", 0)) <= 0:
            return
        desc, source = data.get("description", ""), data.get("source", "")
        if source == "detected":
            self.log.events.append({"t": round(t_bag, 4), "kind": "detection", "what": desc})
        self.log.events.append({"t": round(t_bag, 4), "kind": "morphology", "source": source, "morphology": desc})

    def finish(self) -> Log:
        """Rows at the ground-truth stamps; the other series held from their latest value."""
        lg = self.log
        lg.t = self.gt_t
        t = np.asarray(self.gt_t)

        def held(times, values, default):
            idx = np.searchsorted(np.asarray(times), t, side="right") - 1
            return [values[i] if i >= 0 else default for i in idx]
        lg.est_pos = held(self.est_t, self.est_p, np.full(3, np.nan))
        lg.statistic = held(self.stat_t, self.stat, np.nan)
        lg.legs_alive = held(self.morph_t, self.alive, self.n_legs)
        for k in range(len(t)):
            F = self.forces[k] if k < len(self.forces) else np.zeros((len(self.frames), 3))
            for i, f in enumerate(self.frames):
                lg.forces[f].append(F[i] if i < len(F) else np.zeros(3))
        lg.events.sort(key=lambda e: e["t"])
        return lg


def log_from_bag(path: Path, robot) -> Log:
    """A run's :class:`~hybrid_dynamics.sim.log.Log` from a bag recorded through the ROS
    graph (ros/scenario.py), for the same summary and plots as the library loop: rows at the
    ground-truth odometry stamps; the estimate, detector statistic and true morphology held
    from their latest message; QP statistics one row per controller cycle; the morphology
    timeline from /sim/ground_truth/morphology (damage) and /morphology_manager/morphology."""
    ts = get_typestore(Stores.ROS2_JAZZY)
    reader = _LogReader(robot)
    with Reader(Path(path)) as bag:
        for conn, t_ns, raw in bag.messages():
            handler = reader.handlers.get(conn.topic)
            if handler is not None:
                handler(ts.deserialize_cdr(raw, conn.msgtype), t_ns * 1e-9)
    return reader.finish()


def closed_chain_metrics(path: Path, robot):
    """Figures of a closed-chain run from its bag (summary.json), and the series behind them
    (plots), by :func:`closed_chain_figures`: the passive-joint estimate
    (``/state_estimator/joint_states_full``) against MuJoCo's passive joints
    (``/sim/ground_truth/joint_states``) at the same stamps, the CoM on MuJoCo's configuration
    (ground-truth odometry + every joint), the actuator forces the controller published
    (``/whole_body_controller/actuator_forces``)."""
    ts = get_typestore(Stores.ROS2_JAZZY)
    names = list(robot.joint_names)
    gt_js: Dict[float, np.ndarray] = {}
    est_js: Dict[float, np.ndarray] = {}
    gt_base: Dict[float, np.ndarray] = {}
    forces = []

    def sec(stamp) -> float:
        return round(stamp.sec + 1e-9 * stamp.nanosec, 6)

    with Reader(Path(path)) as reader:
        for conn, _, raw in reader.messages():
            topic = conn.topic
            if topic not in ("/sim/ground_truth/joint_states", "/state_estimator/joint_states_full",
                             "/sim/ground_truth/odometry", "/whole_body_controller/actuator_forces"):
                continue
            msg = ts.deserialize_cdr(raw, conn.msgtype)
            if topic == "/whole_body_controller/actuator_forces":
                forces.append(np.asarray(msg.data, float))
            elif topic == "/sim/ground_truth/odometry":
                p, o = msg.pose.pose.position, msg.pose.pose.orientation
                gt_base[sec(msg.header.stamp)] = np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w])
            else:
                pos = np.asarray(msg.position, float)
                if list(msg.name) != names:
                    pos = pos[[list(msg.name).index(n) for n in names]]
                (gt_js if topic.startswith("/sim") else est_js)[sec(msg.header.stamp)] = pos
    times = [t for t in sorted(gt_js) if t in gt_base]
    q_true = [np.concatenate([gt_base[t], gt_js[t]]) for t in times]
    q_est = [np.concatenate([gt_base[t], est_js[t]]) if t in est_js else None for t in times]
    return closed_chain_figures(robot, times, q_true, q_est, forces)


def closed_chain_figures(robot, times, q_true, q_est, forces):
    """(summary figures, plot series) of a closed-chain run: per sample time, MuJoCo's
    configuration ``q_true`` (Pinocchio q) and the estimate ``q_est`` (or None: not
    estimated then); ``forces`` one row per control cycle in ``robot.actuated_joints`` order.
    Passive estimate error: max over the passive joints; CoM margin: Pinocchio's CoM on
    ``q_true`` to the edges of the convex hull of every sole corner (``robot.contacts``
    points; all feet down); forces against ``LoopClosureKinematics.force_limits``."""

    kin = LoopClosureKinematics(robot)
    passive = np.array([7 + robot.joint_names.index(n) for n in robot.passive_joints], dtype=int)
    model, data = robot.model, robot.model.createData()
    fids = [model.getFrameId(c.frame) for c in robot.contacts]
    t_err, err, com_y, margin = [], [], [], []
    for t, q, qe in zip(times, q_true, q_est):
        if qe is not None:
            t_err.append(t)
            err.append(float(np.abs(qe[passive] - q[passive]).max()))
        pin.framesForwardKinematics(model, data, q)
        com = pin.centerOfMass(model, data, q)
        corners = np.vstack([data.oMf[f].translation + c.points @ data.oMf[f].rotation.T
                             for f, c in zip(fids, robot.contacts)])
        hull = ConvexHull(corners[:, :2])
        com_y.append(float(com[1]))
        margin.append(float(-np.max(hull.equations[:, :2] @ com[:2] + hull.equations[:, 2])))
    F = np.array(forces, dtype=float).reshape(-1, len(robot.actuated_joints))
    limits = kin.force_limits()[[kin.actuated_joints.index(n) for n in robot.actuated_joints]]
    metrics = {
        "max_passive_estimate_error_rad": float(f"{max(err):.3e}") if err else None,
        "passive_estimate_samples": len(err),
        "min_com_margin_m": round(min(margin), 5) if margin else None,
        "com_y_range_m": [round(min(com_y), 5), round(max(com_y), 5)] if com_y else None,
        "max_abs_actuator_force_n": round(float(np.abs(F).max()), 2) if F.size else None,
        "actuator_force_limit_n": round(float(limits.min()), 2),
        "max_actuator_force_fraction_of_limit": round(float((np.abs(F) / limits).max()), 4) if F.size else None,
        "actuator_force_samples": int(len(F)),
    }
    series = {"t_err": np.array(t_err), "passive_error": np.array(err), "t_com": np.array(times, dtype=float),
              "com_y": np.array(com_y), "com_margin": np.array(margin), "actuator_forces": F,
              "actuator_limits": limits, "actuators": list(robot.actuated_joints)}
    return metrics, series

"""A scenario through the ROS 2 graph, in one process: ``hybrid-dynamics demo``.

One rclpy context and executor (ros/graph.py) host

  mujoco_sim            the plant (ros/sim_node.py), ``lockstep``: it advances one control period
                        each time a command arrives, publishing /joint_states (actuated joints),
                        the IMU (noise and bias of the scenario), /clock, ground truth
  state_estimator       its own filter -> ~/odometry, ~/joint_states_full
  whole_body_controller ``trigger: joint_states`` (one cycle per joint state), ``gait: true``
                        (owns the locomotion planner, follows /cmd_vel and the morphology),
                        ``detector: true`` (the damage detector in its cycle, between estimate and
                        command, as in the library loop: runtime/detection.py)
  morphology_manager    ~/damage, and the controller's detections (whole_body_controller/detections)
  scenario_driver       /cmd_vel (10 Hz of simulated time); when the plant has been damaged
                        (its ``damage`` at ``damage_at``: exactly, at the end of the step that
                        reaches it, as under sim.launch.py), if declared, the event goes to
                        /morphology_manager/damage and the state of that instant waits until the
                        controller has reassembled (the library loop's cycle of the damage time
                        uses the declared morphology)
  bag_recorder          every topic, MCAP (ros/bag.py)

Every node runs on simulated time (``use_sim_time``, /clock); nothing paces the simulation
but the computation, so the real-time factor is what the graph sustains. The run is the same
on a quiet and on a loaded machine: one joint state in flight (ros/lockstep.py; the plant's
watchdog waits ``LOCKSTEP_TIMEOUT``, not the half second of a graph that may lose a message),
the controller has /cmd_vel before the physics starts, and a declared damage reaches the
controller before the next step. When the run ends
(duration, a fall, an error, Ctrl-C) the bag is closed and the plots and summary.json are
made from the bag (sim/recording.log_from_bag, sim/report.py, sim/runner.summarize).
"""
from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np
import yaml
from geometry_msgs.msg import Twist
from rclpy.parameter import Parameter
from std_msgs.msg import String

from ..errors import InputError
from ..estimation.damage_detector import DamageDetectorConfig
from ..model.damage_events import with_lock_angles
from ..model.morphology import Morphology
from ..sim.log import Log
from ..sim.recording import closed_chain_metrics, log_from_bag
from ..sim.runner import FALL_HEIGHT_FRACTION, FALL_TILT_DEG, SETTLE_S, finish, guarded, progress_line
from ..sim.scenario import prepare_run
from . import params as P
from .bag import GRAPH_TOPICS, BagRecorder
from .graph import Graph
from .lean import LeanNode
from .sim_node import MujocoSimNode

# recorded besides the graph's own topics (sim.bagfile.TOPICS holds the types)
SIM_TOPICS = ("/clock", "/sim/ground_truth/odometry", "/sim/ground_truth/joint_states",
              "/sim/ground_truth/contact_forces", "/sim/ground_truth/morphology", "/whole_body_controller/cycle",
              "/whole_body_controller/markers", "/whole_body_controller/detector",
              "/whole_body_controller/detections")
CLOCK_RATE = 50.0       # Hz of /clock: the nodes' timers (diagnostics, markers, /cmd_vel) need no more
STALL_S = 20.0          # wall seconds without simulated progress: the run is stuck
LOCKSTEP_TIMEOUT = 5.0  # wall seconds before the plant sends its state again (in one process
                        # nothing is lost; a slow cycle on a loaded machine took more than 0.5 s)


class ScenarioDriver(LeanNode):
    """/cmd_vel of the scenario, and its damage at the scenario time (module docstring)."""

    def __init__(self, scenario, sim, controller, declared: bool, **kwargs):
        super().__init__("scenario_driver", **kwargs)
        self.sc, self.sim, self.controller = scenario, sim, controller
        self.declared = declared
        self.cmd_pub = self.create_publisher(Twist, "/cmd_vel", 10)
        self.damage_pub = self.create_publisher(String, "/morphology_manager/damage", 10)
        self.t_damage: Optional[float] = None
        self.true_morphology: Optional[Morphology] = None
        self.twist = Twist()
        self.twist.linear.x = scenario.cmd_vel["linear_x"]
        self.twist.linear.y = scenario.cmd_vel["linear_y"]
        self.twist.angular.z = scenario.cmd_vel["angular_z"]
        self.create_timer(0.1, self.publish_cmd)             # simulated time
        sim.damage_hooks.append(self.on_damage)
        self.publish_cmd()

    def publish_cmd(self) -> None:
        self.cmd_pub.publish(self.twist)

    def on_damage(self, t: float) -> None:
        """The plant was damaged at ``t``, before the state of ``t`` is published."""
        if self.t_damage is not None:
            return
        self.t_damage = t
        self.true_morphology = self.sim.morphology
        if self.declared:       # a locked joint declared at the angle the plant locked it at
            events = with_lock_angles(self.sc.damage_events, dict(self.sim.morphology.locked))
            revision = self.controller.revision
            self.damage_pub.publish(String(data=yaml.safe_dump(events)))
            self.sim.pause_until(lambda: self.controller.revision > revision)

    def commanded(self) -> bool:
        """The controller follows this driver's /cmd_vel."""
        gait = self.controller.pipeline.gait
        twist = self.twist
        return gait is None or gait.command == (twist.linear.x, twist.linear.y, twist.angular.z)


class GraphRun:
    """``run()`` a scenario through the graph; the attributes are those sim/runner.summarize
    and sim/report.write_plots read."""

    runner = "ros2 graph (one process)"

    def __init__(self, scenario, out: Path, *, duration: Optional[float] = None, undeclared: bool = False,
                 progress: bool = True, plots: bool = True):
        self.sc = scenario
        self.out = Path(out)
        self.duration, self.declared, self.robot = prepare_run(scenario, duration, undeclared)
        self.progress, self.want_plots = progress, plots
        self.threshold = DamageDetectorConfig.from_dict(scenario.detector).threshold
        self.t_damage = self.detection_t = None
        self.final_morphology = Morphology.healthy(self.robot).describe()
        self.extra_summary: dict = {}

    # ------------------------------------------------------------------ set-up
    def _params(self) -> dict:
        sc = self.sc
        ctrl = {"trigger": "joint_states", "update_rate": float(sc.control_rate), "use_sim_time": True,
                "references": sc.references, "gait": sc.references == "gait"}
        if sc.references == "gait":
            ctrl.update(P.flatten({"locomotion": dict(sc.locomotion)}))
        elif sc.references == "weight_shift":
            ctrl.update(P.flatten({"weight_shift": dict(sc.balance)}))
        unknown = set(sc.controller) - {"solver"}
        if unknown:
            raise InputError(f"controller settings the graph does not take: {', '.join(sorted(unknown))}",
                             file=str(sc.path), field="controller")
        if "solver" in sc.controller:
            ctrl["solver"] = str(sc.controller["solver"])
        # the scenario's base-estimator settings go to both filters: the controller's own and
        # the state estimator's (odometry, rviz), as the library loop's one
        estimator = P.flatten({"estimator": dict(sc.estimator)})
        ctrl.update(estimator)
        # the damage detector in the controller's cycle, as in the library loop (runtime/detection.py)
        ctrl.update({"detector": self.detector, **P.flatten({"damage_detector": dict(sc.detector),
                                                             "fall_monitor": dict(sc.fall_monitor)})})
        return {"whole_body_controller": ctrl,
                "state_estimator": {"use_sim_time": True, "stance_topic": "/whole_body_controller/cycle",
                                    "publish_rate": 0.0, **estimator},
                "morphology_manager": {"use_sim_time": True}}

    @property
    def detector(self) -> bool:
        """The momentum-observer damage detector runs for a walking serial robot, as in the
        library loop (its model has no loop closures: on a closed chain the passive joints'
        constraint forces would read as damage)."""
        return self.robot.loops is None and self.sc.references == "gait"

    def _sim_params(self):
        sc = self.sc
        # a closed chain starts as the library loop (sim/runner.py) does, from the standing pose
        # with its feet on the floor: a joint PD cannot hold it up through its linear actuators
        settle = SETTLE_S if self.robot.loops is None else 0.0
        values = {"robot": self.robot.name, "publish_rate": float(sc.control_rate), "lockstep": True,
                  "lockstep_timeout": LOCKSTEP_TIMEOUT,
                  "settle": settle, "seed": int(sc.seed), "clock_rate": CLOCK_RATE}
        if sc.damage_at is not None:
            values.update(damage=yaml.safe_dump(sc.damage_events), damage_at=float(sc.damage_at))
        for key, value in sc.sensors.items():
            values[f"sensors.{key}"] = [float(x) for x in value] if isinstance(value, (list, tuple)) else float(value)
        return [Parameter(k, value=v) for k, v in values.items()]

    # ------------------------------------------------------------------ the run
    def run(self) -> dict:
        self.out.mkdir(parents=True, exist_ok=True)
        bag_dir = self.out / "bag"
        if bag_dir.exists():
            shutil.rmtree(bag_dir)
        self.wall0 = time.perf_counter()
        self.graph = None
        reason = "completed"
        try:
            reason, error = guarded(lambda: self._build_and_loop(bag_dir))
        finally:
            sim_wall = time.perf_counter() - self.wall0
            graph = self.graph
            if graph is not None:
                self._collect(graph)
                try:
                    graph.shutdown()           # destroys the recorder: the bag is closed
                except Exception as exc:
                    reason += f"; shutdown: {exc}"
        if self.progress:
            print(file=sys.stderr)
        have_bag = (bag_dir / "metadata.yaml").is_file()
        self.log = log_from_bag(bag_dir, self.robot) if have_bag else None
        if self.log is None:
            self.log = Log()
        if have_bag and self.robot.loops is not None:
            try:
                metrics, self.balance_series = closed_chain_metrics(bag_dir, self.robot)
                self.extra_summary.update(metrics)
            except Exception as exc:
                self.extra_summary["closed_chain_metrics_error"] = f"{type(exc).__name__}: {exc}"
        return finish(self, self.out, reason, getattr(self, "loop_wall", sim_wall), error, self.want_plots)

    def _build_and_loop(self, bag_dir: Path) -> str:
        self.graph = self._build(bag_dir)
        self.wall0 = time.perf_counter()
        return self._loop(self.graph)

    def _build(self, bag_dir: Path):
        graph = Graph(self.robot, params=self._params(), single_threaded=True, parameter_services=False)
        quiet = {"start_parameter_services": False, "default_events": False}
        try:
            self.sim = graph.add_node(MujocoSimNode(self.robot, context=graph.context,
                                                    parameter_overrides=self._sim_params(), **quiet))
            self.t_start = self.sim.plant.time
            self.stand_height = float(self.sim.plant.q()[2])
            self.driver = graph.add_node(ScenarioDriver(self.sc, self.sim, graph.nodes["whole_body_controller"],
                                                        self.declared,
                                                        context=graph.context, **quiet,
                                                        parameter_overrides=[Parameter("use_sim_time", value=True)]))
            topics = list(GRAPH_TOPICS) + list(SIM_TOPICS)
            if self.robot.soft_modules:
                topics.append("/whole_body_controller/soft_deformation")
            try:
                import tf2_msgs.msg  # noqa: F401  # optional: tf2_msgs is not in every ROS install
                topics.append("/tf")
            except ImportError:
                pass
            ctrl = graph.nodes["whole_body_controller"]
            graph.add_node(BagRecorder(bag_dir, self.robot, topics=topics, controller_params=ctrl.flat,
                                       context=graph.context, **quiet,
                                       parameter_overrides=[Parameter("use_sim_time", value=True)]))
            self.sim.step_hooks.append(self._watch)
            self.stop_reason: Optional[str] = None
        except BaseException:
            graph.shutdown()
            raise
        return graph

    def _watch(self, t: float) -> None:
        """In the sim's step, on the state reached: stop the physics at the end (the state of
        the end time is not published: the library loop's last cycle is one period before
        it) or on a fall (ground truth)."""
        plant = self.sim.plant
        if t >= self.t_start + self.duration - 1e-9:
            self.stop_reason = self.stop_reason or "completed"
        q = plant.q()
        x, y, z, w = q[3:7]
        roll = np.degrees(np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y)))
        pitch = np.degrees(np.arcsin(np.clip(2 * (w * y - z * x), -1, 1)))
        if self.stop_reason is None and max(abs(roll), abs(pitch)) > FALL_TILT_DEG:
            self.stop_reason = f"fell: tilt over {FALL_TILT_DEG:.0f} deg at t = {t - self.t_start:.2f} s"
        if self.stop_reason is None and q[2] < FALL_HEIGHT_FRACTION * self.stand_height:
            self.stop_reason = f"fell: base height {q[2]:.3f} m at t = {t - self.t_start:.2f} s"
        if self.stop_reason is not None:
            self.sim.hold = True

    def _loop(self, graph: Graph) -> str:
        # every subscription matched (DDS discovery, wall time) before the physics starts
        ctrl, est = graph.nodes["whole_body_controller"], graph.nodes["state_estimator"]
        sim = self.sim
        sim.hold = True
        graph.start()

        def matched() -> bool:
            return (sim.js_pub.get_subscription_count() >= 4 and sim.imu_pub.get_subscription_count() >= 3
                    and sim.gt_pub.get_subscription_count() >= 1 and sim.gt_js_pub.get_subscription_count() >= 1
                    and ctrl.cmd_pub.get_subscription_count() >= 2
                    and ctrl.cycle_pub.get_subscription_count() >= 2
                    and est.odom_pub.get_subscription_count() >= 1
                    and est.js_pub.get_subscription_count() >= 1
                    and (ctrl.detection is None or ctrl.detections_pub.get_subscription_count() >= 2)
                    and (ctrl.force_pub is None or ctrl.force_pub.get_subscription_count() >= 1))
        if not graph.spin_until(matched, timeout=30.0):
            return "error: the nodes did not discover each other in 30 s"
        self.driver.publish_cmd()
        if not graph.spin_until(self.driver.commanded, timeout=30.0):
            return "error: the controller did not receive /cmd_vel in 30 s"
        sim.hold = False
        wall0, cpu0 = time.perf_counter(), time.process_time()
        sim0 = self.sim.plant.time
        last_t, last_progress = sim0, time.monotonic()
        printed = -np.inf
        while self.stop_reason is None:
            time.sleep(0.05)
            if graph.error is not None:
                raise graph.error
            t = self.sim.plant.time
            if t > last_t:
                last_t, last_progress = t, time.monotonic()
            elif time.monotonic() - last_progress > STALL_S:
                return f"error: no simulated progress for {STALL_S:.0f} s at t = {t - self.t_start:.2f} s"
            if self.progress and time.monotonic() - printed >= 0.5:
                printed = time.monotonic()
                rtf = (t - sim0) / max(time.perf_counter() - wall0, 1e-9)
                mm = graph.nodes["morphology_manager"].morphology.describe()
                progress_line(self.sc.name, t - self.t_start, self.duration,
                              float(self.sim.plant.q()[0] - self.sim.robot.q_stand[0]), rtf, mm)
        self.loop_wall = time.perf_counter() - wall0
        simulated = self.sim.plant.time - sim0
        self.rtf = simulated / max(self.loop_wall, 1e-9)
        # simulated s per CPU s of this process: the RTF on a core of its own (the 2 cores
        # are shared, so the wall-clock RTF depends on what else runs)
        self.extra_summary["cpu_real_time_factor"] = round(simulated / max(time.process_time() - cpu0, 1e-9), 3)
        graph.spin_until(lambda: False, timeout=0.3)         # the last messages reach the bag
        return self.stop_reason

    def _collect(self, graph: Graph) -> None:
        ctrl = graph.nodes.get("whole_body_controller")
        mm = graph.nodes.get("morphology_manager")
        driver = getattr(self, "driver", None)
        if driver is not None:
            self.t_damage = driver.t_damage
        if mm is not None:
            self.final_morphology = mm.morphology.describe()
            self.detection_t = mm.detections[0]["t"] if mm.detections else None
        if ctrl is not None:
            self.extra_summary.update({
                "controller_cycles": int(ctrl.cycles),
                "controller_safe_cycles": int(ctrl.safe_cycles),
                "sim_resent_states": int(getattr(self.sim, "resent", 0)),
            })
        if hasattr(self, "rtf"):
            self.extra_summary["graph_real_time_factor"] = round(self.rtf, 3)

"""The whole-body controller: state + references in, torques out, every cycle.

    ctrl = WholeBodyController(load_robot("jethexa"), {"solver": "daqp"})
    out = ctrl.update(q, v, {"leg1_foot": True, ...}, References.hold(com=[0, 0, 0.1]))
    out.tau["leg1_femur_joint"], out.contact_forces["leg1_foot"], out.fallback

One cycle (:meth:`WholeBodyController.update`):
  1. model update: one ``pin.computeAllTerms`` pass (:mod:`.model_update`);
  2. QP build: tasks and constraints into preallocated arrays (:mod:`.formulation`);
  3. solve (:mod:`.solvers`, backend chosen by ``config["solver"]``), warm-started;
  4. torque mapping: ``tau = M_a dv + h_a - J_a^T f`` with the base rows re-solved exactly;
     for closed chains the actuator forces follow from the actuated-joint torques.

Infeasibility, in the same cycle, in this order:
  * the joint-limit acceleration bounds are soft: when the hard QP fails they get one slack
    each (``limits.slack_weight``) and the QP is solved again (``ControlOutput.relaxed``);
  * if that fails too (a state whose torque limits and friction cones cannot hold the robot,
    or non-finite input), the **fallback** is gravity compensation with joint damping,
    ``tau = g_a(q) - d * v_a`` clipped to the torque limits (``fallback.joint_damping``),
    with ``dv`` and the contact forces reported as zeros. The output is never NaN.
Every relaxation, infeasible solve and fallback is counted in :attr:`WholeBodyController.stats`.

Morphology change (:meth:`set_morphology`): the formulation is rebuilt on the new
:class:`~hybrid_dynamics.model.morphology.MorphologyMap` (removed bodies have zero inertia,
locked joints leave the variables), the solver forgets its structures, the OSQP pattern is
prepared at once, and the previous solution is mapped (surviving accelerations by index,
surviving contacts' forces by frame) to warm-start the first solve of the new structure.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property
from typing import Dict, Optional, Sequence

import numpy as np
import pinocchio as pin

from ..dynamics.closed_chain import LoopClosureKinematics
from ..soft.leaves import SoftLeaves
from . import kernels
from .config import controller_config
from .formulation import Formulation
from .references import References, Target
from .solvers import SlackProblem, SolveResult, make_solver

NO_FORCES = np.zeros((0, 3))


@dataclass
class ControlOutput:
    """What one cycle produces (see the module docstring). The dictionaries by name (``tau``,
    ``actuator_forces``, ``contact_forces``, ``point_forces``) are made from the vectors on
    first access: a consumer that reads ``tau_vector`` (the runtime's command) builds none."""
    tau_vector: np.ndarray                      # torques in ``joint_names`` order (N m or N)
    dv: np.ndarray                              # generalized acceleration (controller coords)
    status: str
    solve_time: float                           # s, QP solve(s) only (goldfarb_idnani: the QP's numbers
    #                                             written in the same call, control/assembly.py)
    fallback: bool
    infeasible: bool                            # the hard QP was not solved this cycle
    relaxed: bool = False                       # joint limits softened by slacks
    cycle_time: float = 0.0                     # s, the whole update
    joint_names: Sequence[str] = ()
    closed_chain: bool = False                  # the torques are the actuators' forces
    forces: Optional[np.ndarray] = None         # the QP's point forces (world), 3 per point
    # per contact: (frame, its points' rows of ``forces`` or None (swing), one point, zeros)
    force_map: Sequence[tuple] = ()

    @cached_property
    def tau(self) -> Dict[str, float]:
        """Actuated joint -> torque (N m or N)."""
        return dict(zip(self.joint_names, self.tau_vector.tolist()))

    @cached_property
    def actuator_forces(self) -> Dict[str, float]:
        """Closed chains: actuator -> force (N along a ball screw, N m for a rotary actuator),
        the generalized force on its joint (motor torques: ``LoopClosureKinematics.motor_torque``);
        serial robots: empty."""
        return dict(self.tau) if self.closed_chain else {}

    @cached_property
    def point_forces(self) -> Dict[str, np.ndarray]:
        """Contact frame -> (k, 3) world forces of its points, zeros for a swing contact."""
        rows = self._rows()
        return {frame: zeros if sl is None else rows[sl] for frame, sl, _, zeros in self.force_map}

    @cached_property
    def contact_forces(self) -> Dict[str, np.ndarray]:
        """Contact frame -> world force (the sum of its points')."""
        rows = self._rows()
        out = {}
        for frame, sl, single, zeros in self.force_map:
            if sl is None:
                out[frame] = zeros[0]
            else:
                out[frame] = rows[sl.start] if single else rows[sl].sum(axis=0)
        return out

    def _rows(self) -> np.ndarray:
        return NO_FORCES if self.forces is None else self.forces.reshape(-1, 3)


class WholeBodyController:
    """QP inverse dynamics with friction cones (module docstring)."""

    def __init__(self, robot, config: Optional[dict] = None, morphology_map=None):
        self.robot = robot
        self.config = controller_config(robot.name, overrides=config)
        self.projection = self._projection(robot)
        self.leaves = SoftLeaves(robot, machine_code=bool(self.config["soft"]["machine_code"])) \
            if robot.soft_modules else None                                # soft feet
        self.solver = make_solver(self.config["solver"], self.config["solver_settings"])
        self._fills = bool(getattr(self.solver, "fills", False))     # fill, solve, torques: one call
        self.stats = {"cycles": 0, "fallbacks": 0, "infeasible": 0, "relaxed": 0}
        self._warm = None
        self._last = None
        self.last_problem = self.last_solution = None    # the last solved QP and its x
        self.formulation = None
        self._install(morphology_map)

    # ------------------------------------------------------------------ structure
    @staticmethod
    def _projection(robot):
        if robot.loops is None:
            return None
        return LoopClosureKinematics(robot)

    def _install(self, mmap) -> None:
        self.formulation = Formulation(self.robot, self.config, mmap, self.projection, self.leaves)
        self.mmap = mmap
        self.solver.reset()
        self._slack = {}
        self._no_forces = None
        if self.config["solver"] == "osqp":
            self._prepare_pattern()

    @property
    def joint_names(self):
        return self.formulation.joints.names

    @property
    def active_leaves(self) -> Optional[SoftLeaves]:
        """The soft leaves of the current morphology (those of lost links dropped; ``kept``:
        their coordinates' positions in the healthy robot's), or None without soft modules."""
        return self.formulation.state.leaves

    @property
    def contact_frames(self):
        return [c.frame for c in self.formulation.contacts]

    def set_morphology(self, morphology_map) -> None:
        """Rebuild the QP for a new morphology and warm-start it from the mapped solution."""
        old_map, last = self.mmap, self._last
        self._install(morphology_map)
        if last is None:
            return
        dv_old, forces_old = last.dv, last.point_forces
        n_new = self.formulation.state.n
        dv = np.zeros(n_new)
        if self.projection is None:
            old_idx = old_map.v_index if old_map is not None else np.arange(self.robot.nv)
            new_idx = morphology_map.v_index if morphology_map is not None else np.arange(self.robot.nv)
            _, ia, ib = np.intersect1d(old_idx, new_idx, return_indices=True)
            dv[ib] = dv_old[ia]
        else:
            dv[:] = dv_old[:n_new]
        self._warm = (dv, forces_old)

    def _prepare_pattern(self, samples: int = 3) -> None:
        """OSQP: every entry of H and [A; C] that may be non-zero (module doc of osqp_solver)."""
        f = self.formulation
        model = f.state.model
        rng = np.random.default_rng(0)
        nc = len(f.contacts)
        P_mask = A_mask = None
        lay = None
        for s in range(samples):
            # generic states from our own generator (pin.randomConfiguration draws from
            # Pinocchio's global one: the pattern, and so OSQP's results, depended on which
            # tests had run before in the process)
            qf = pin.integrate(model, pin.neutral(model), rng.uniform(-3.0, 3.0, model.nv))
            if self.projection is not None:      # loops must stay closed: the standing pose
                qf = self.robot.q_stand.copy()
            q = qf if f.mmap is None else f.mmap.reduce_q(qf)
            ns = self.active_leaves.ns if self.leaves is not None else 0
            q = np.concatenate([q, np.zeros(ns)])
            v = rng.standard_normal(f.state.nv + ns)
            refs = References(com=Target(rng.standard_normal(3)), base_position=Target(rng.standard_normal(3)),
                              swing_feet={c.frame: Target(rng.standard_normal(3)) for c in f.contacts},
                              momentum=rng.standard_normal(6))
            refs.base_orientation = References.hold().base_orientation
            for stance in ((True,) * nc, (False,) * nc):
                lay = f.build(q, v, stance, refs)
                pm = lay.H != 0
                am = np.vstack([lay.A, lay.C]) != 0
                P_mask = pm if P_mask is None else P_mask | pm
                A_mask = am if A_mask is None else A_mask | am
        P_mask |= P_mask.T
        self.solver.set_pattern(lay.key, P_mask, A_mask)

    # ------------------------------------------------------------------ cycle
    def update(self, q, v, stance, references: Optional[References] = None) -> ControlOutput:
        t0 = time.perf_counter()
        f = self.formulation
        refs = references if references is not None else References()
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        self.stats["cycles"] += 1
        if not (kernels.finite(q) and kernels.finite(v)):
            return self._fallback(q, v, t0, 0.0, "non-finite state", infeasible=False)
        st = f.stance_tuple(stance)
        try:
            lay = f.build(q, v, st, refs, self._fills)
        except (RuntimeError, ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            # e.g. a closed linkage at a singularity (closed_chain.SingularLinkage)
            return self._fallback(q, v, t0, 0.0, f"model update: {exc}", infeasible=False)
        if self._warm is not None:
            lay.x = self._mapped_start(lay)
            self._warm = None
        t1 = time.perf_counter()
        res = self._solve(lay, lay.fill_call)
        relaxed = False
        infeasible = not res.ok        # the hard QP was not solved (infeasible or no convergence)
        x = res.x
        if not res.ok and len(lay.soft_rows):
            sp = self._slack.get(lay.key)
            if sp is None:
                sp = self._slack[lay.key] = SlackProblem(lay, f.slack_weight)
            res2 = self._solve(sp.refresh())
            if res2.ok:
                relaxed, x, res = True, res2.x[:lay.nx], res2
                self.stats["relaxed"] += 1
        solve_time = time.perf_counter() - t1
        if infeasible:
            self.stats["infeasible"] += 1
        if not res.ok:
            return self._fallback(q, v, t0, solve_time, res.status, infeasible=infeasible)
        dv, forces, tau, finite = f.decode(lay, x, res.exact, res.torques)
        if not finite:
            return self._fallback(q, v, t0, solve_time, "non-finite solution", infeasible=infeasible)
        out = ControlOutput(
            tau, dv, res.status + "+slack" if relaxed else res.status, solve_time, False, infeasible, relaxed,
            time.perf_counter() - t0, f.joints.names, self.projection is not None, forces,
            lay.force_map or self._force_map(lay))
        self._last = out
        self.last_problem, self.last_solution = lay, x
        return out

    def _solve(self, problem, fill=None) -> SolveResult:
        """The backend's solve (``fill``: with the problem's fill, ``Layout.fill_call``); crossed
        bounds or a backend error are a failed solve."""
        if fill is None and kernels.crossed(problem.l, problem.u):
            return SolveResult(np.zeros(problem.nx), False, "crossed bounds", 0, True)
        try:
            return self.solver.solve(problem) if fill is None else self.solver.solve(problem, fill)
        except (ValueError, RuntimeError, ArithmeticError) as exc:
            return SolveResult(np.zeros(problem.nx), False, f"solver error: {exc}", 0, False)

    def _force_map(self, lay=None):
        """Per contact (frame, rows of its points in the QP's forces or None, one point,
        read-only zeros), per layout; ``lay`` None: every contact without forces (fallback)."""
        fm = lay.force_map if lay is not None else self._no_forces
        if fm is None:
            fm = []
            for i, c in enumerate(self.formulation.contacts):
                zeros = np.zeros((c.n_points, 3))
                zeros.setflags(write=False)
                if lay is not None and i in lay.f_offset:
                    a = lay.f_offset[i] // 3
                    fm.append((c.frame, slice(a, a + c.n_points), c.n_points == 1, zeros))
                else:
                    fm.append((c.frame, None, c.n_points == 1, zeros))
            if lay is None:
                self._no_forces = fm
            else:
                lay.force_map = fm
        return fm

    def _mapped_start(self, lay) -> np.ndarray:
        dv, forces = self._warm
        x = np.zeros(lay.nx)
        x[:lay.n] = dv[:lay.n]
        for i in lay.included:
            c = lay.contacts[i]
            pf = forces.get(c.frame)
            if pf is not None and pf.size == c.n_force:
                x[lay.force_slice(i)] = pf.ravel()
        return x

    def _fallback(self, q, v, t0, solve_time, status, infeasible) -> ControlOutput:
        f = self.formulation
        self.stats["fallbacks"] += 1
        tau = f.gravity_compensation(q, v, float(self.config["fallback"]["joint_damping"]))
        return ControlOutput(tau, np.zeros(f.state.n), f"fallback: {status}", solve_time, True, infeasible,
                             False, time.perf_counter() - t0, f.joints.names, self.projection is not None,
                             None, self._force_map())

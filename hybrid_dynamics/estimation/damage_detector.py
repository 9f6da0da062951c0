"""Damage detection from a generalized-momentum observer, leg by leg.

[Farghdani 2025] leaves damage identification as future work ([Farghdani 2025, Sec. VII]); this goes
beyond it.

**Observer** (De Luca's generalized-momentum residual, on the model of the *current*
morphology: :class:`~hybrid_dynamics.model.morphology.MorphologyMap`'s masked model sliced
with ``v_index``)::

    p = M(q) v,      r(t) = K ( p(t) - p(t0) - integral_t0^t (tau + C(q, v)^T v - g(q) + r) ds )

``r`` is a first-order filtered estimate (bandwidth ``K``) of every external generalized
force the model does not explain. For the robot the model describes, that is only the contact
forces: ``r = sum_i J_i^T f_i``.

**On a robot with soft modules** (soft feet, soft/leaves.py) the observer runs on the soft
robot's model: coordinates ``(q_r, q_s)`` with the deformation coordinates the plant reports
(the pads' ``<module>_q0..``), M and ``h = C v + g + K q_s + D v_s`` from one
:class:`~hybrid_dynamics.soft.leaves.SoftLeaves` evaluation [Pustina 2024, Alg. 3], so the
pads' mass, springs and dampers are in the residual and its rows include the deformation
coordinates. With only M and h, the momentum balance is integrated as ``int M dv``
(``p - int Mdot v``, trapezoidal: ``1/2 (M_k + M_k-1)(v_k - v_k-1)``) against
``int (tau - h + r)``; each foot force is read from the leg's joint rows as above, acting at
the pad's deformed contact point (the pad's Jacobian, soft/leaves.py). The pad's own rows are
not used for it: in MuJoCo their axial row follows the foot's normal force to 5-10 % only
(the plant's pseudo-rigid pad against the controller's CC rod, docs/soft.md), and the least
squares over the joint and pad rows raised the healthy ``|e|`` (median 6.3 N against 3.0 N
over a tripod walk: the observer never converged).

**Per-leg test.** A leg's joint rows give its own foot force exactly, ``f_i = J_leg,i^-T
r_leg,i`` (a 3-joint leg, square Jacobian), whatever the contact state. The base rows must
then agree with the sum of those forces::

    e = r_base - sum_i J_base,i^T f_i  = 0       for the robot the model describes.

A lost or partly lost leg (its mass gone, its motors dead, its foot off the ground) or a
locked joint (a constraint torque on one joint) breaks this identity with a wrench ``e`` that
is, to first order, the wrench of that leg's wrongly inferred foot force: the leg ``k`` whose
removal from the sum best explains ``e`` (``min_k |e + J_base,k^T f_k|``) is the damaged one.
``|e|`` is compared with a threshold (force and moment rows weighted by a length, so one
number) for ``persistence`` seconds before a leg is declared.

**Swing-leg joint test.** A leg in its planned swing carries no foot force, so each of its
joint rows of ``r`` must vanish: over healthy walking they stay under ~2e-3 N m. A joint that
cannot follow its torque (a locked joint, or a lost link whose dead motor is still commanded
and whose encoder is frozen) shows its constraint torque there: ~0.05 N m for a femur locked
in the air, ~0.6 N m for a stump (jethexa). Such a constraint torque is internal to the leg, so
the base rows do not see it and ``|e|`` stays small (a locked femur: < 1 N): the whole-robot
test alone misses it, and a stump that loses its foot while swinging is otherwise only noticed
when the robot falls onto it. A swing leg whose largest joint residual exceeds
``swing_threshold`` for ``persistence`` is blamed if its encoders also show that the joint
carrying that largest residual is frozen (below): a constraint torque sits on the joint that
cannot move. An unexpected ground contact during swing moves every joint's residual but
freezes none, so it is not taken for damage; nor is a joint resting on its stop (within
``stop_margin`` of its position limit): the stop holds it still and takes a constraint torque
just as a lock would (a swing foot the sinking body pushes up drives its femur into the stop),
so the two cannot be told apart there, and a joint locked on its stop is not convicted by
this test; nor is a swing leg stepping in place, whose hip
joint stands still by command while the timing of its inputs (late or coarse samples
between processes on a loaded machine) puts residual on the joints that lift the foot.
The ``switch_holdoff`` pause after a planned contact switch does not stop the swing test of a
leg whose evidence began in its swing (a leg lost just before its planned touch-down, whose
evidence the pause used to wipe) once ``|e|`` is above its threshold too: a healthy foot that
lands early puts its force in the base rows as well, so ``|e|`` stays small. With such a
leg convicted, a leg in planned swing whose joints have all stayed still since that evidence
began is convicted with it (a pair lost at once: the second leg, lifting as the first should
have landed, does not move although commanded to).

**What happened to it** is read from the encoders over the last ``classify_window`` seconds:
the leg's joints that stopped moving while the leg was commanded are the frozen ones; frozen
trailing joints ``j..n`` mean links ``j..n`` are lost (``j = 1``: the whole leg); a single
frozen joint with moving joints below it is a locked joint. (On the real robot a lost link
takes its servo with it; the plant freezes the encoders of lost joints, see sim/plant.py.)

**Deciding on time-consistent inputs only.** The observer integrates ``tau`` over the
interval since the previous call, so every call must carry the state, the torques and the
planned stance *of one instant*, and the calls must follow each other closely (the control
cycle gives it its own: runtime/detection.py). An interval longer than ``max_gap`` (a dropped
or late message) is not integrated: the observer holds its residual across it, the evidence
gathered so far is discarded and nothing is decided for ``resync``. Nothing is decided for
``startup_grace`` after the first call either, nor until ``|e|`` has then stayed under half
the threshold for ``converged_for`` (the base estimate has converged). A test convicts only
after ``persistence`` seconds *and* ``min_samples`` consecutive calls above its threshold
(the confirmation window), so one late or coarse sample never decides; and a leg the
whole-robot test blames is convicted only once its encoders show a frozen joint (a lost link
takes its servo with it, a locked joint stops): a base estimate gone astray moves ``e`` but
freezes no joint. Each detection carries
its evidence (:meth:`Detection.evidence`: which test, the residual and its threshold, since
when and over how many calls).
"""
from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, fields, replace
from typing import Deque, Dict, List, Mapping, Optional, Tuple

import numpy as np
import pinocchio as pin

from ..errors import InputError, reject_unknown_settings
from ..model.morphology import Morphology, MorphologyMap
from ..soft.leaves import SoftLeaves

BASE_TEST = "base wrench |e|"                  # the whole-robot test (N, moments / moment_arm)
SWING_TEST = "swing-leg joint residual"        # the swing-leg joint test (N m)


@dataclass
class DamageDetectorConfig:
    gain: float = 40.0                 # 1/s, observer bandwidth K
    threshold: float = 5.0             # N (moments divided by moment_arm), on |e|
    moment_arm: float = 0.1            # m, weights the moment rows of e
    persistence: float = 0.05          # s above threshold before a detection (confirmation window)
    min_samples: int = 3               # consecutive calls above threshold before a detection
    switch_holdoff: float = 0.1        # s after a planned touchdown or lift-off without testing
    max_legs: int = 2                  # legs blamed at once (two lost together, as in S1)
    explain_ratio: float = 0.6         # the blamed leg must remove this fraction of |e| at least
    explain_ratio_with_swing: float = 0.4   # the same, with the legs the swing test convicted
    classify_window: float = 0.1       # s of encoder history to find frozen joints (at most)
    frozen_span: float = 0.04          # s of encoder history since the onset needed (at least)
    frozen_samples: int = 5            # encoder samples since the onset needed (at least)
    frozen_speed: float = 0.02         # rad/s: a joint slower than this over the window is frozen
    holdoff: float = 0.3               # s after a morphology change before testing again
    swing_threshold: float = 0.01      # N m, joint residual of a leg in planned swing (healthy < 2e-3)
    stop_margin: float = 0.01          # rad: a joint this close to its position limit rests on its stop
    max_gap: float = 0.03              # s: a longer interval between calls is not integrated
    resync: float = 0.1                # s without decisions after such a gap
    startup_grace: float = 1.0         # s after the first call without decisions
    converged_for: float = 0.2         # s of |e| < threshold / 2 before the first decision
    # While the IMU says the body falls (estimation/fall_monitor.py) the tests decide on less
    # evidence: a body that falls has lost what carried it. The observer (bandwidth ``gain``)
    # needs 20-40 ms to build the residual that explains the loss, but the lost legs' encoders
    # stop at once while the legs that carry a walking, falling body move; a pair lost in
    # stance while the other tripod swings, declared 20 ms after the loss, walks or stands in
    # all 8 such campaign falls, 30 ms late 2 fall again (docs/campaign.md).
    falling_persistence: float = 0.005           # s: confirmation window, and ...
    falling_min_samples: int = 2                 # ... calls
    falling_frozen_span: float = 0.015           # s of encoder history (from the fall's onset)
    falling_frozen_samples: int = 3
    # a falling body may have lost three or four legs at once: with two at most, a third leg
    # lost with them was found only after ``holdoff`` (0.065-0.255 s after the loss) and the
    # catch acted on a morphology that still counted it (jethexa_tripod undeclared: 15 of 20
    # fell; with three, 8, the others found at 0.015-0.025 s and standing); with three at most,
    # four legs lost were found three first and the fourth after the holdoff (0.095-0.255 s),
    # the body already down, and the two feet on a line under the CoM could not come down
    # balanced over it (jethexa_quad undeclared: with four, all 15 found at 0.015-0.02 s and
    # those three land or stand, docs/campaign.md)
    falling_max_legs: int = 4
    falling_frozen_speed: float = 0.06           # rad/s: 0.9 mrad over 15 ms (encoder noise 0.2 mrad)
    falling_explain_ratio: float = 0.3
    falling_explain_ratio_with_swing: float = 0.2

    @classmethod
    def from_dict(cls, data: Optional[Mapping] = None) -> "DamageDetectorConfig":
        data = dict(data or {})
        reject_unknown_settings(cls, data, "damage detector", "damage_detector")
        counts = ("max_legs", "min_samples", "frozen_samples", "falling_min_samples", "falling_frozen_samples",
                  "falling_max_legs")
        return cls(**{k: (int(v) if k in counts else float(v)) for k, v in data.items()})

    def falling(self) -> "DamageDetectorConfig":
        """The settings while the body falls: each ``falling_X`` in place of ``X``."""
        return replace(self, **{f.name[len("falling_"):]: getattr(self, f.name) for f in fields(self)
                                if f.name.startswith("falling_")})


@dataclass
class Detection:
    t: float                      # time of the detection
    leg: str
    kind: str                     # "removed" (links first..n) or "locked"
    first_link: int = 1           # removed: first lost link (1 = whole leg)
    joint: Optional[str] = None   # locked: the joint
    angle: float = 0.0            # locked: its angle
    statistic: float = 0.0        # the residual of the deciding test at detection
    onset: float = 0.0            # when it first crossed the threshold
    test: str = BASE_TEST         # which test decided
    threshold: float = 0.0        # that test's threshold
    samples: int = 0              # consecutive calls above the threshold
    falling: bool = False         # decided on the falling_* settings (the IMU said the body fell)

    def apply(self, morphology: Morphology) -> Morphology:
        if self.kind == "locked":
            return morphology.lock_joint(self.joint, self.angle)
        return morphology.remove_links(self.leg, self.first_link)

    def describe(self) -> str:
        if self.kind == "locked":
            return f"{self.leg}: {self.joint} locked at {self.angle:.3f} rad"
        if self.first_link == 1:
            return f"{self.leg} lost"
        return f"{self.leg} lost links {self.first_link}.."

    def evidence(self) -> Dict[str, object]:
        """What convicted the leg: the test, its residual against its threshold, for how long."""
        return {"t": round(self.t, 4), "leg": self.leg, "what": self.describe(), "test": self.test,
                "residual": round(self.statistic, 4), "threshold": self.threshold,
                "onset": round(self.onset, 4), "above_for_s": round(self.t - self.onset, 4),
                "samples": self.samples, "falling": self.falling}


class DamageDetector:
    """Momentum-residual damage detector; call :meth:`update` once per control cycle."""

    def __init__(self, robot, config: Optional[DamageDetectorConfig | Mapping] = None):
        self.robot = robot
        self.robot_legs = {leg.name: leg for leg in robot.legs}    # the healthy robot's, by name
        self.config = config if isinstance(config, DamageDetectorConfig) else DamageDetectorConfig.from_dict(config)
        self.falling_rules = self.config.falling()
        self.rules = self.config                   # the settings of this call (falling or not)
        self.falling_calls = 0                     # calls made while the body fell
        self.falling_since: Optional[float] = None  # the fall's onset, while the IMU says it falls
        self.statistic = 0.0
        self.history: Deque[Tuple[float, np.ndarray, np.ndarray]] = deque()
        self.detections: List[Detection] = []
        self.started: Optional[float] = None       # time of the first call
        self.calm_since: Optional[float] = None    # |e| under half the threshold since then
        self.converged = False
        self.gaps = 0                              # intervals longer than max_gap, not integrated
        self.healthy_leaves = SoftLeaves(robot) if robot.soft_modules else None
        self.set_morphology(Morphology.healthy(robot), None)

    # ------------------------------------------------------------------ morphology
    def set_morphology(self, morphology: Morphology, t: Optional[float]) -> None:
        """Use the model of ``morphology`` from now on; the observer restarts."""
        self.morphology = morphology
        self.map = MorphologyMap(self.robot, morphology)
        self.model = self.map.model
        self.data = self.model.createData()
        m = self.model
        vi = self.map.v_index
        self.vi = vi
        pos = {int(full): k for k, full in enumerate(vi)}
        self.legs = []
        self.leg_frame: Dict[str, str] = {}
        self.row_joint: Dict[str, List[int]] = {}
        self.leaves = None if self.healthy_leaves is None else self.healthy_leaves.for_morphology(self.map)
        # the observer's coordinates: the morphology's rigid velocities, then the surviving pads'
        self.obs_index = vi if self.leaves is None else np.concatenate([vi, m.nv + np.arange(self.leaves.ns)])
        self.pad: Dict[str, int] = {}        # leg -> its pad's contact point (soft/leaves.py order)
        if self.leaves is not None:
            contacts = [self.leaves.roots.index(r) for r in self.leaves.contact_roots]
            for k, g in enumerate(sorted(contacts)):
                joint = m.frames[self.leaves.root_ids[g]].parentJoint
                self.pad[next(l.name for l in self.map.legs if joint in l.joints)] = k
        for leg in self.map.legs:
            contact = next((c for c in self.map.contacts if c.leg == leg.name), None)
            # the leg's surviving joints: (index in leg.joints, velocity column)
            kept = [(k, m.joints[j].idx_v) for k, j in enumerate(leg.joints) if m.joints[j].idx_v in pos]
            if contact is None or not kept:
                continue          # no foot left
            cols = [c for _, c in kept]
            self.legs.append((leg.name, m.getFrameId(contact.frame), np.array(cols),
                              np.array([pos[c] for c in cols])))
            self.leg_frame[leg.name] = contact.frame
            self.row_joint[leg.name] = [k for k, _ in kept]     # the leg's joint of each of its rows of r
        self.r = np.zeros(len(self.obs_index))
        self.integral = None
        self.M_prev = None
        self.t_prev = None
        self.quiet_until = -np.inf if t is None else t + self.config.holdoff
        self.switch_until = -np.inf                # the pause after a planned contact switch
        self.e = np.zeros(6)
        self._stance_prev = None
        self.testing = False
        self.swing_statistic = 0.0
        self._forget_evidence()

    def _forget_evidence(self) -> None:
        self.above_since: Optional[float] = None
        self.above_samples = 0
        self.swing_above: Dict[str, Tuple[float, int]] = {}      # leg -> (since, calls)

    # ------------------------------------------------------------------ the cycle
    def update(self, t: float, q: np.ndarray, v: np.ndarray, tau: np.ndarray,
               stance: Optional[Mapping[str, bool]] = None, q_soft: Optional[np.ndarray] = None,
               v_soft: Optional[np.ndarray] = None, falling_since: Optional[float] = None) -> List[Detection]:
        """``q``, ``v`` healthy-size (Pinocchio conventions), ``tau`` the torques of every 1-DoF
        joint (healthy size, Pinocchio order) *applied since the previous call* (their mean
        over the interval), ``q_soft``, ``v_soft`` the deformation coordinates of every soft
        module (healthy size, a robot with soft modules only), ``stance`` the planned contact
        flags (frame -> bool) at ``t``: for
        ``switch_holdoff`` after any of them changes nothing is tested (the base velocity
        estimate jumps at contact switches, and so does the residual). ``falling_since``: the
        IMU says the body falls since then (estimation/fall_monitor.py): the tests decide on
        the ``falling_*`` settings and the encoders are judged from that onset on. Returns
        the legs detected in this cycle (usually none)."""
        falling = falling_since is not None
        self.rules = self.falling_rules if falling else self.config
        self.falling_since = falling_since
        self.falling_calls += falling
        qf = self.map.expand_q(self.map.reduce_q(q))
        vf = self.map.expand_v(self.map.reduce_v(v))
        if self.leaves is not None:
            if q_soft is None or v_soft is None:
                raise InputError(f"robot '{self.robot.name}' has soft modules: the damage detector needs their "
                                 "deformation coordinates (q_soft, v_soft)", field="q_soft")
            qf = np.concatenate([qf, np.asarray(q_soft, float)[self.leaves.kept]])
            vf = np.concatenate([vf, np.asarray(v_soft, float)[self.leaves.kept]])
        self._observe(t, qf, vf, tau)
        self._record(t, q, tau)
        self._note_stance(t, stance)
        contributions = self._base_wrench(qf, vf)
        self._track_convergence(t)
        self.testing = self.converged and t >= max(self.quiet_until, self.switch_until)
        if not self.testing:
            if self.converged and t >= self.quiet_until:
                # a contact switch pauses the tests, but not the swing test of a leg whose
                # evidence began in its swing (a lost leg due to land at the switch), once the
                # base rows disagree too: a healthy foot landing early shows its force there
                self.above_since, self.above_samples = None, 0
                carried = self._swing_test(t, stance, carried_only=True)
                if not carried or self.statistic < self.config.threshold:
                    return []
                return self._found(carried + self._frozen_in_swing(t, stance, carried))
            self._forget_evidence()
            return []
        swung = self._swing_test(t, stance)
        base = self._base_test(t, contributions, swung)
        if base is None:
            return []             # the whole-robot test is deciding: swing-test legs wait for it
        return self._found(swung + base)

    def _observe(self, t: float, qf: np.ndarray, vf: np.ndarray, tau: np.ndarray) -> None:
        """One step of the momentum observer ``r`` (module docstring); an interval longer
        than ``max_gap`` is held over, not integrated."""
        cfg = self.config
        p, h = self._momentum(qf, vf)
        if self.started is None:
            self.started = t
        if self.integral is None:
            self.integral = p.copy()
            self.t_prev, self.h_prev = t, h
        dt = max(t - self.t_prev, 0.0)
        self.t_prev = t
        if dt > cfg.max_gap:
            # the torques and states in between are unknown: keep r, restart the integral
            # from here (r = K (p - integral) unchanged) and decide nothing for a while
            self.gaps += 1
            self.integral = p - self.r / cfg.gain
            self.h_prev = h
            self.quiet_until = max(self.quiet_until, t + cfg.resync)
            return
        tau_full = np.zeros(len(vf))
        tau_full[6:self.model.nv] = tau
        # tau was applied over the interval (its mean); the state terms are integrated with
        # the trapezoidal rule
        self.integral += (tau_full[self.obs_index] + 0.5 * (h + self.h_prev) + self.r) * dt
        self.h_prev = h
        self.r = cfg.gain * (p - self.integral)

    def _momentum(self, qf: np.ndarray, vf: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(p, f) of the observer's coordinates: ``dp/dt = tau + f + external``. Rigid:
        ``p = M v``, ``f = C^T v - g`` (Pinocchio). Soft: ``f = -h`` (C v + g + K q_s + D v_s)
        and p the running ``int M dv`` (``p - int Mdot v``: no C is formed), trapezoidal."""
        idx = self.obs_index
        if self.leaves is None:
            m, d, vi = self.model, self.data, self.vi
            M = pin.crba(m, d, qf)
            M = np.triu(M) + np.triu(M, 1).T
            C = pin.computeCoriolisMatrix(m, d, qf, vf)
            g = pin.computeGeneralizedGravity(m, d, qf)
            return M[np.ix_(vi, vi)] @ vf[vi], C[np.ix_(vi, vi)].T @ vf[vi] - g[vi]
        M, h = self.leaves.mass_and_nle(qf, vf)
        M, v = M[np.ix_(idx, idx)], vf[idx]
        if self.M_prev is None:
            self.p_soft = M @ v
        else:
            self.p_soft = self.p_soft + 0.5 * (M + self.M_prev) @ (v - self.v_prev)
        self.M_prev, self.v_prev = M, v
        return self.p_soft.copy(), -h[idx]

    def _note_stance(self, t: float, stance: Optional[Mapping[str, bool]]) -> None:
        if stance is None:
            return
        flags = tuple(sorted(stance.items()))
        if self._stance_prev is not None and flags != self._stance_prev:
            self.switch_until = max(self.switch_until, t + self.config.switch_holdoff)
        self._stance_prev = flags

    def _base_wrench(self, qf: np.ndarray, vf: np.ndarray) -> Dict[str, np.ndarray]:
        """Each leg's foot force from its joint rows of ``r``, its base wrench, and ``e``
        (the base rows minus those wrenches, ``self.e``, norm ``self.statistic``)."""
        m, d = self.model, self.data
        if self.leaves is None:
            pin.computeJointJacobians(m, d, qf)
            pin.updateFramePlacements(m, d)
        else:             # the contact material points of the pads, at the last model update
            points = self.leaves.contact_points(qf, vf, updated=True)[1]
        e = self.r[:6].copy()
        contributions = {}
        for name, fid, cols, rows in self.legs:
            if name in self.pad:
                J = points[3 * self.pad[name]:3 * self.pad[name] + 3, :m.nv]
            else:
                J = pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED)[:3]
            J_leg = J[:, cols]
            if len(cols) == 3:
                f = np.linalg.solve(J_leg.T, self.r[rows])
            else:                 # a leg with a locked joint: the least-norm force
                f = np.linalg.lstsq(J_leg.T, self.r[rows], rcond=None)[0]
            wrench = J[:, :6].T @ f
            contributions[name] = wrench
            e -= wrench
        self.e = e
        self.statistic = float(np.linalg.norm(self._weights() * e))
        return contributions

    def _weights(self) -> np.ndarray:
        arm = self.config.moment_arm
        return np.array([1, 1, 1, 1 / arm, 1 / arm, 1 / arm])

    def _track_convergence(self, t: float) -> None:
        """Converged: ``startup_grace`` after the first call, once ``|e|`` has stayed under
        half the threshold for ``converged_for`` (once converged, for good)."""
        cfg = self.config
        if self.converged:
            return
        if self.statistic >= 0.5 * cfg.threshold:
            self.calm_since = None
            return
        if self.calm_since is None:
            self.calm_since = t
        self.converged = t - self.started >= cfg.startup_grace and t - self.calm_since >= cfg.converged_for

    def _frozen_in_swing(self, t: float, stance: Mapping[str, bool],
                         carried: List[Detection]) -> List[Detection]:
        """With a leg convicted in a contact switch's pause: the other legs in planned swing
        whose joints have all stayed still since its evidence began (a pair lost at once, the
        second leg lifting as the first should land: commanded to swing, it does not move)."""
        since = min(d.onset for d in carried)
        convicted = {d.leg for d in carried}
        found = []
        for name, _, _, _ in self.legs:
            if name in convicted or stance.get(self.leg_frame[name], True) or not all(self._frozen(name, since, self.config)):
                continue
            detection = self._classify(t, name, since, None, self.config)
            detection.statistic, detection.onset = self.statistic, since
            detection.test, detection.threshold = BASE_TEST, self.config.threshold
            found.append(detection)
        return found

    def _base_test(self, t: float, contributions: Dict[str, np.ndarray],
                   swung: List[Detection]) -> Optional[List[Detection]]:
        """The whole-robot test: ``|e|`` above the threshold through the confirmation window,
        explained by the fewest legs (with those the swing test found in this call: S1, one
        leg lost in swing, one in stance, declared together). None: ``|e|`` is above the
        threshold but not yet confirmed or explained."""
        cfg = self.rules
        if self.statistic < cfg.threshold:
            self.above_since, self.above_samples = None, 0
            return []
        if self.above_since is None:
            self.above_since = t
        self.above_samples += 1
        if t - self.above_since < cfg.persistence or self.above_samples < cfg.min_samples:
            return None
        since = min([self.above_since] + [d.onset for d in swung] +
                    ([] if self.falling_since is None else [self.falling_since]))
        blamed = self._blame(contributions, {d.leg for d in swung})
        if self.rules is self.falling_rules:
            # on a fall's short evidence the fewest legs that explain a share of |e| may be
            # one of two lost: the others whose joints all stopped at the onset go with it
            still = self._still_legs(since, {d.leg for d in swung} | set(blamed or ()))
            if still is not None:
                blamed = (blamed or []) + still
        if blamed is None:
            return None           # |e| is large but not explained yet: keep gathering evidence
        if self.history[-1][0] - max(self.history[0][0], since) < cfg.frozen_span:
            return []             # the encoders since the onset decide: wait for them
        if not all(any(self._frozen(leg, since, cfg)) for leg in blamed):
            return None           # a blamed leg whose joints all still move is not lost (yet)
        found = []
        for leg in blamed:
            detection = self._classify(t, leg, since, None, cfg)
            detection.statistic, detection.onset = self.statistic, self.above_since
            detection.test, detection.threshold, detection.samples = BASE_TEST, cfg.threshold, self.above_samples
            detection.falling = cfg is self.falling_rules
            found.append(detection)
        return found

    def _still_legs(self, since: float, already: set) -> Optional[List[str]]:
        """While the body falls: the legs (not in ``already``) whose joints have all stayed
        still since ``since``, if there are at most ``max_legs`` with ``already``, else None.
        In the first 20-40 ms after a loss the observer (bandwidth ``gain``) has not yet
        built the residual that :meth:`_blame` needs (legs 4+5 lost in stance at phase 1:
        ``|e|`` 12-14 N from 10 ms on, explained by the pair only at 90 ms), while the lost
        legs' encoders stopped at once and the legs that carry a walking, falling body move."""
        still = [name for name, _, _, _ in self.legs if name not in already and all(self._frozen(name, since, self.rules))]
        if not still or len(still) + len(already) > self.rules.max_legs:
            return None
        return still

    def _blame(self, contributions: Dict[str, np.ndarray], already: set) -> Optional[List[str]]:
        """The fewest legs (up to ``max_legs``, with every leg of ``already``: those the
        swing test convicted) whose inferred forces, removed from the sum, leave at most
        ``1 - explain_ratio`` of ``|e|`` (``1 - explain_ratio_with_swing`` with such legs: their
        frozen encoders are evidence already); None if no such set. Returns the legs not in
        ``already``."""
        cfg, w, e = self.rules, self._weights(), self.e
        ratio = cfg.explain_ratio_with_swing if already else cfg.explain_ratio
        limit = (1.0 - ratio) * self.statistic
        others = [k for k in contributions if k not in already]
        base = e + sum((contributions[k] for k in already if k in contributions), np.zeros(6))
        for size in range(0 if already else 1, int(cfg.max_legs) - len(already) + 1):
            best, best_norm = None, np.inf
            for subset in itertools.combinations(others, size):
                n = float(np.linalg.norm(w * (base + sum((contributions[k] for k in subset), np.zeros(6)))))
                if n < best_norm:
                    best, best_norm = subset, n
            if best is not None and best_norm <= limit:
                return list(best)
        return None

    def _found(self, found: List[Detection]) -> List[Detection]:
        if found:
            self._forget_evidence()
            self.detections.extend(found)
        return found

    def _swing_test(self, t: float, stance: Optional[Mapping[str, bool]],
                    carried_only: bool = False) -> List[Detection]:
        """Legs in planned swing whose joint residual shows a constraint torque through the
        confirmation window and whose encoders show a frozen joint (module docstring).
        ``carried_only`` (during a contact switch's pause): only the legs whose evidence began
        in their swing, whatever their planned contact now."""
        cfg = self.config
        worst = 0.0
        found = []
        if stance is None:
            self.swing_above.clear()
            self.swing_statistic = 0.0
            return found
        for name, _, _, rows in self.legs:
            carried = carried_only and name in self.swing_above
            if not carried and (carried_only or stance.get(self.leg_frame[name], True)):
                self.swing_above.pop(name, None)
                continue
            residual = np.abs(self.r[rows])
            level = float(residual.max())
            worst = max(worst, level)
            if level < cfg.swing_threshold:
                self.swing_above.pop(name, None)
                continue
            since, calls = self.swing_above.get(name, (t, 0))
            self.swing_above[name] = (since, calls + 1)
            rules = self._swing_rules(name, t - since, calls + 1, since)
            if rules is None:
                continue
            suspect = self.row_joint[name][int(np.argmax(residual))]
            if not self._frozen(name, since, rules)[suspect] or self._at_stop(name, suspect):
                continue          # the joint carrying the residual moves, or its stop holds it
            detection = self._classify(t, name, since, suspect, rules)
            detection.statistic, detection.onset = level, since
            detection.test, detection.threshold, detection.samples = SWING_TEST, cfg.swing_threshold, calls + 1
            detection.falling = rules is self.falling_rules
            found.append(detection)
        self.swing_statistic = worst
        return found

    def _swing_rules(self, name: str, above_for: float, calls: int, since: float) -> Optional[DamageDetectorConfig]:
        """The settings the swing test decides on for a leg whose residual has been above
        its threshold for ``above_for`` s over ``calls`` calls (None: not yet confirmed).
        While the body falls, the short evidence of the ``falling_*`` settings serves only a leg gone
        still as a whole (lost: its encoders stopped); a single still joint (a lock) waits for
        the usual evidence (a swing leg about to land moves slowly, and 20 ms of it convicted
        a healthy femur as locked: leg 6 lost at phase 2, campaign)."""
        for rules in ((self.rules, self.config) if self.rules is not self.config else (self.config,)):
            if above_for < rules.persistence or calls < rules.min_samples:
                continue
            if rules is self.config or all(self._frozen(name, since, rules)):
                return rules
        return None

    # ------------------------------------------------------------------ classification
    def _record(self, t: float, q: np.ndarray, tau: np.ndarray) -> None:
        self.history.append((t, np.array(q[7:]), np.array(tau)))
        while self.history and self.history[0][0] < t - self.config.classify_window:
            self.history.popleft()

    def _frozen(self, leg_name: str, since: float, rules: DamageDetectorConfig) -> List[bool]:
        """Per joint of the leg: did it stay still over the last ``classify_window`` (and
        since ``since``: the swing test judges only what the encoders did after its residual
        rose, so the motion before the damage does not hide a frozen joint)?"""
        model = self.robot.model
        leg = self.robot_legs[leg_name]
        qs = np.array([h[1] for h in self.history if h[0] >= since - 1e-9])
        times = [h[0] for h in self.history if h[0] >= since - 1e-9]
        span = times[-1] - times[0] if times else 0.0
        if len(qs) < rules.frozen_samples or span < rules.frozen_span:
            return [False] * len(leg.joints)      # not enough history yet: nothing is frozen
        # range of a moving average over up to 5 samples, leaving at least frozen_samples
        # averages: encoder noise averages out, a turning joint still shows its excursion
        width = max(1, min(5, len(qs) - rules.frozen_samples + 1))
        kernel = np.ones(width) / width
        frozen = []
        for j in leg.joints:
            k = model.joints[j].idx_q - 7
            smooth = np.convolve(qs[:, k], kernel, mode="valid")
            speed = (smooth.max() - smooth.min()) / span
            frozen.append(speed < rules.frozen_speed)
        return frozen

    def _at_stop(self, leg_name: str, k: int) -> bool:
        """Does joint ``k`` of the leg rest on its stop (the hardware's position limit, the
        model's ``lower/upperPositionLimit``) by its last encoder reading?"""
        model = self.robot.model
        joint = model.joints[self.robot_legs[leg_name].joints[k]]
        angle = self.history[-1][1][joint.idx_q - 7]
        lower, upper = model.lowerPositionLimit[joint.idx_q], model.upperPositionLimit[joint.idx_q]
        return bool(angle <= lower + self.config.stop_margin or angle >= upper - self.config.stop_margin)

    def _classify(self, t: float, leg_name: str, since: float, suspect: Optional[int],
                  rules: DamageDetectorConfig) -> Detection:
        """What happened to the leg, from its frozen joints (module docstring); ``suspect``:
        the joint (index in the leg) the swing test's residual sits on, the locked one if the
        leg did not lose its links."""
        model = self.robot.model
        leg = self.robot_legs[leg_name]
        qs = np.array([h[1] for h in self.history])
        frozen = self._frozen(leg_name, since, rules)
        n = len(leg.joints)
        # trailing frozen joints j..n: links j..n lost; one frozen joint with motion below: locked
        first = n
        while first > 0 and frozen[first - 1]:
            first -= 1
        if first < n and (first == 0 or not any(frozen[:first])):
            return Detection(t, leg_name, "removed", first_link=first + 1)
        if any(frozen):
            k = suspect if suspect is not None and frozen[suspect] else frozen.index(True)
            name = model.names[leg.joints[k]]
            return Detection(t, leg_name, "locked", joint=name, angle=float(qs[-1, model.joints[leg.joints[k]].idx_q - 7]))
        return Detection(t, leg_name, "removed", first_link=1)

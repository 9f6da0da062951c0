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
``swing_threshold`` for ``persistence`` is blamed if its encoders also show a frozen joint
(below); an unexpected ground contact during swing moves every joint's residual but freezes
none, so it is not taken for damage.

**What happened to it** is read from the encoders over the last ``classify_window`` seconds:
the leg's joints that stopped moving while the leg was commanded are the frozen ones; frozen
trailing joints ``j..n`` mean links ``j..n`` are lost (``j = 1``: the whole leg); a single
frozen joint with moving joints below it is a locked joint. (On the real robot a lost link
takes its servo with it; the plant freezes the encoders of lost joints, see sim/plant.py.)
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Deque, Dict, List, Mapping, Optional, Tuple

import numpy as np
import pinocchio as pin

from ..errors import reject_unknown_settings
from ..model.morphology import Morphology, MorphologyMap


@dataclass
class DamageDetectorConfig:
    gain: float = 40.0                 # 1/s, observer bandwidth K
    threshold: float = 5.0             # N (moments divided by moment_arm), on |e|
    moment_arm: float = 0.1            # m, weights the moment rows of e
    persistence: float = 0.05          # s above threshold before a detection
    switch_holdoff: float = 0.1        # s after a planned touchdown or lift-off without testing
    max_legs: int = 2                  # legs blamed at once (two lost together, as in S1)
    explain_ratio: float = 0.6         # the blamed leg must remove this fraction of |e| at least
    classify_window: float = 0.1       # s of encoder history to find frozen joints (at most)
    frozen_span: float = 0.04          # s of encoder history since the onset needed (at least)
    frozen_speed: float = 0.02         # rad/s: a joint slower than this over the window is frozen
    holdoff: float = 0.3               # s after a morphology change before testing again
    swing_threshold: float = 0.01      # N m, joint residual of a leg in planned swing (healthy < 2e-3)

    @classmethod
    def from_dict(cls, data: Optional[Mapping] = None) -> "DamageDetectorConfig":
        data = dict(data or {})
        reject_unknown_settings(cls, data, "damage detector", "damage_detector")
        return cls(**{k: (int(v) if k == "max_legs" else float(v)) for k, v in data.items()})


@dataclass
class Detection:
    t: float                      # time of the detection
    leg: str
    kind: str                     # "removed" (links first..n) or "locked"
    first_link: int = 1           # removed: first lost link (1 = whole leg)
    joint: Optional[str] = None   # locked: the joint
    angle: float = 0.0            # locked: its angle
    statistic: float = 0.0        # |e| at detection
    onset: float = 0.0            # when |e| first crossed the threshold

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


class DamageDetector:
    """Momentum-residual damage detector; call :meth:`update` once per control cycle."""

    def __init__(self, robot, config: Optional[DamageDetectorConfig | Mapping] = None):
        self.robot = robot
        self.config = config if isinstance(config, DamageDetectorConfig) else DamageDetectorConfig.from_dict(config)
        self.statistic = 0.0
        self.history: Deque[Tuple[float, np.ndarray, np.ndarray]] = deque()
        self.detections: List[Detection] = []
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
        for leg in self.map.legs:
            contact = next((c for c in self.map.contacts if c.leg == leg.name), None)
            cols = [m.joints[j].idx_v for j in leg.joints if m.joints[j].idx_v in pos]
            if contact is None or not cols:
                continue          # no foot left
            self.legs.append((leg.name, m.getFrameId(contact.frame), np.array(cols),
                              np.array([pos[c] for c in cols])))
            self.leg_frame[leg.name] = contact.frame
        self.r = np.zeros(len(vi))
        self.integral = None
        self.t_prev = None
        self.quiet_until = -np.inf if t is None else t + self.config.holdoff
        self.above_since: Optional[float] = None
        self.e = np.zeros(6)
        self._stance_prev = None
        self.testing = False
        self.swing_above: Dict[str, float] = {}
        self.swing_statistic = 0.0

    # ------------------------------------------------------------------ the cycle
    def update(self, t: float, q: np.ndarray, v: np.ndarray, tau: np.ndarray,
               stance: Optional[Mapping[str, bool]] = None) -> List[Detection]:
        """``q``, ``v`` healthy-size (Pinocchio conventions), ``tau`` the torques of every 1-DoF
        joint (healthy size, Pinocchio order) *applied since the previous call* (the effort
        field of the joint states); ``stance`` the planned contact flags (frame -> bool): for
        ``switch_holdoff`` after any of them changes nothing is tested (the base velocity
        estimate jumps at contact switches, and so does the residual). Returns the legs
        detected in this cycle (usually none)."""
        cfg = self.config
        m, d, vi = self.model, self.data, self.vi
        qf = self.map.expand_q(self.map.reduce_q(q))
        vf = self.map.expand_v(self.map.reduce_v(v))
        M = pin.crba(m, d, qf)
        M = np.triu(M) + np.triu(M, 1).T
        C = pin.computeCoriolisMatrix(m, d, qf, vf)
        g = pin.computeGeneralizedGravity(m, d, qf)
        tau_full = np.zeros(m.nv)
        tau_full[6:] = tau
        Mr = M[np.ix_(vi, vi)]
        vr = vf[vi]
        p = Mr @ vr
        h = C[np.ix_(vi, vi)].T @ vr - g[vi]
        if self.integral is None:
            self.integral = p.copy()
            self.t_prev = t
            self.h_prev = h
        dt = max(t - self.t_prev, 0.0)
        self.t_prev = t
        # tau was applied since the previous call (zero-order hold); the state terms are
        # integrated with the trapezoidal rule
        self.integral += (tau_full[vi] + 0.5 * (h + self.h_prev) + self.r) * dt
        self.h_prev = h
        self.r = cfg.gain * (p - self.integral)
        self._record(t, q, tau)
        if stance is not None:
            flags = tuple(sorted(stance.items()))
            if self._stance_prev is not None and flags != self._stance_prev:
                self.quiet_until = max(self.quiet_until, t + cfg.switch_holdoff)
            self._stance_prev = flags

        # per-leg forces and the base consistency wrench
        pin.computeJointJacobians(m, d, qf)
        pin.updateFramePlacements(m, d)
        e = self.r[:6].copy()
        contributions = {}
        for name, fid, cols, rows in self.legs:
            J = pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED)[:3]
            J_leg = J[:, cols]
            if len(cols) == 3:
                f = np.linalg.solve(J_leg.T, self.r[rows])
            else:                 # a leg with a locked joint: the least-norm force
                f = np.linalg.lstsq(J_leg.T, self.r[rows], rcond=None)[0]
            wrench = J[:, :6].T @ f
            contributions[name] = wrench
            e -= wrench
        w = np.array([1, 1, 1, 1 / cfg.moment_arm, 1 / cfg.moment_arm, 1 / cfg.moment_arm])
        self.e = e
        self.statistic = float(np.linalg.norm(w * e))
        self.testing = t >= self.quiet_until
        swung = self._swing_test(t, stance) if self.testing else []
        # legs found by the swing test are joined by those the whole-robot test blames in the
        # same cycle (S1: one leg lost in swing, one in stance, declared together)
        if not self.testing or self.statistic < cfg.threshold:
            self.above_since = None
            return self._found(swung)
        if self.above_since is None:
            self.above_since = t
        if t - self.above_since < cfg.persistence:
            return []             # the whole-robot test decides: a swing-test leg waits for it
        # the fewest legs whose inferred forces explain e (one leg, else two, ...)
        import itertools
        limit = (1.0 - cfg.explain_ratio) * self.statistic
        names = list(contributions)
        blamed = None
        for size in range(1, int(cfg.max_legs) + 1):
            best, best_norm = None, np.inf
            for subset in itertools.combinations(names, size):
                n = float(np.linalg.norm(w * (e + sum(contributions[k] for k in subset))))
                if n < best_norm:
                    best, best_norm = subset, n
            if best is not None and best_norm <= limit:
                blamed = [k for k in best if k not in {d.leg for d in swung}]
                break
        if blamed is None:
            return []             # |e| is large but not explained yet: keep gathering evidence
        since = min([self.above_since] + [d.onset for d in swung])
        if self.history[-1][0] - max(self.history[0][0], since) < cfg.frozen_span:
            return self._found(swung)     # the encoders since the onset decide: wait for them
        found = list(swung)
        for leg in blamed:
            detection = self._classify(t, leg, since)
            detection.statistic = self.statistic
            detection.onset = self.above_since
            found.append(detection)
        return self._found(found)

    def _found(self, found: List[Detection]) -> List[Detection]:
        if found:
            self.above_since = None
            self.detections.extend(found)
        return found

    def _swing_test(self, t: float, stance: Optional[Mapping[str, bool]]) -> List[Detection]:
        """Legs in planned swing whose joint residual shows a constraint torque and whose
        encoders show a frozen joint (see the module docstring)."""
        cfg = self.config
        worst = 0.0
        found = []
        if stance is None:
            self.swing_above.clear()
            self.swing_statistic = 0.0
            return found
        for name, _, _, rows in self.legs:
            frame = self.leg_frame[name]
            if stance.get(frame, True):
                self.swing_above.pop(name, None)
                continue
            level = float(np.abs(self.r[rows]).max())
            worst = max(worst, level)
            if level < cfg.swing_threshold:
                self.swing_above.pop(name, None)
                continue
            since = self.swing_above.setdefault(name, t)
            if t - since < cfg.persistence or not any(self._frozen(name, since)):
                continue
            detection = self._classify(t, name, since)
            detection.statistic = level
            detection.onset = since
            found.append(detection)
        self.swing_statistic = worst
        return found

    # ------------------------------------------------------------------ classification
    def _record(self, t: float, q: np.ndarray, tau: np.ndarray) -> None:
        self.history.append((t, np.array(q[7:]), np.array(tau)))
        while self.history and self.history[0][0] < t - self.config.classify_window:
            self.history.popleft()

    def _frozen(self, leg_name: str, since: float = -np.inf) -> List[bool]:
        """Per joint of the leg: did it stay still over the last ``classify_window`` (and
        since ``since``: the swing test judges only what the encoders did after its residual
        rose, so the motion before the damage does not hide a frozen joint)?"""
        model = self.robot.model
        leg = next(l for l in self.robot.legs if l.name == leg_name)
        qs = np.array([h[1] for h in self.history if h[0] >= since - 1e-9])
        times = [h[0] for h in self.history if h[0] >= since - 1e-9]
        if len(qs) < 2:
            return [False] * len(leg.joints)
        span = max(times[-1] - times[0], 1e-6)
        if span < self.config.frozen_span:
            return [False] * len(leg.joints)      # not enough history yet
        # range of a 5-sample moving average: encoder noise averages out, a turning joint
        # still shows its excursion
        width = min(5, len(qs))
        kernel = np.ones(width) / width
        frozen = []
        for j in leg.joints:
            k = model.joints[j].idx_q - 7
            smooth = np.convolve(qs[:, k], kernel, mode="valid")
            speed = (smooth.max() - smooth.min()) / span
            frozen.append(speed < self.config.frozen_speed)
        return frozen

    def _classify(self, t: float, leg_name: str, since: float = -np.inf) -> Detection:
        model = self.robot.model
        leg = next(l for l in self.robot.legs if l.name == leg_name)
        qs = np.array([h[1] for h in self.history])
        frozen = self._frozen(leg_name, since)
        n = len(leg.joints)
        # trailing frozen joints j..n: links j..n lost; one frozen joint with motion below: locked
        first = n
        while first > 0 and frozen[first - 1]:
            first -= 1
        if first < n and (first == 0 or not any(frozen[:first])):
            return Detection(t, leg_name, "removed", first_link=first + 1)
        if any(frozen):
            k = frozen.index(True)
            name = model.names[leg.joints[k]]
            return Detection(t, leg_name, "locked", joint=name, angle=float(qs[-1, model.joints[leg.joints[k]].idx_q - 7]))
        return Detection(t, leg_name, "removed", first_link=1)

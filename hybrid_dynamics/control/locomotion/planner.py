"""Locomotion planner: from ``/cmd_vel`` and the morphology to whole-body references.

The planner integrates a *nominal frame* ``N(t) = (x, y, yaw)`` at the commanded planar twist.
Each foot has a nominal position ``n_i`` in that frame (the standing pose). A stance foot
stays where it landed; a swing foot lands at ``N(t_td + T_stance/2) n_i`` (under its nominal
point at mid-stance, a Raibert-style foothold re-computed every cycle while it swings, so it
follows a changing command) along :func:`~.swing.swing_point`.

The base follows ``N(t)`` at the standing height, level. For static gaits the CoM instead
follows a path planned at the start of every slot over the next ``body_horizon`` gait cycles
(:mod:`.body`): bounded acceleration, C1 across re-plans, at least ``stability_margin`` inside
the polygon of the feet that are down at each instant (the feet's current positions and the
footholds predicted for the coming swings), as close to the commanded motion as that allows.
Fallback (no feasible path even with the margin and acceleration bound relaxed, and while the
gait settles after a morphology change): an offset ``O_k``, the smallest shift that keeps the
CoM inside the polygon of the feet that stay down for the next swing, reached minimum-jerk
while every foot is down.

The CoM height target is the standing CoM height; the whole-body controller's posture task
(config/controller/jethexa.yaml) is weak on purpose: its reference is the standing pose, and a
strong one resists the body shifts of the wave gait.

After a morphology change a static gait's crawl order starts so that no leg stands onto a stop
of its hip yaw joint before its first swing (:meth:`LocomotionPlanner._first_to_step`): a foot
that stands through the change and the cycle after it is carried onto that stop by the walking
body, and the body, held back by it, leaves its planned path.

The feet in the air at a morphology change land on the new gait's footholds, each turned about
its hip where that puts the CoM's capture point further inside the polygon of the feet down
and landing (:meth:`LocomotionPlanner._catch_landing`): until they land, two or three feet
carry a body tipping towards the lost legs.

Which legs walk: every leg whose contact survives the morphology and none of whose joints is
locked (a leg with a locked joint is held up, its foot tucked under the hip). Six walking legs
with complete gait groups: the tripod; 4 or 5: the wave gait; 3: stand still, CoM centred;
fewer than 3: sit down.

**Sitting down** (what cannot be held): with fewer than three feet left (no standing posture
exists, ``control/static_feasibility.py``), every foot lands and stays down and the CoM height
reference descends at ``sit_speed`` to the ground, the body free to tilt
(:meth:`LocomotionPlanner._sit_down`). The same when the body is falling: the measured CoM
``fall_drop`` below its reference, sinking faster than ``fall_sink`` and its capture point
outside the polygon of the feet that are down or landing (:meth:`LocomotionPlanner._falling`).
A body that sat down stays down.

**Two feet left, the CoM on their line**: every force of the feet acts on the line through
them, so the roll about it is governed by the CoM's offset alone (``dH_L/dt = m g e``,
:mod:`.line_balance`); free to tilt, a body whose CoM starts on that line rolls off it and
tips over. Held level while a foot still lands, then, if the measured CoM and its capture
point are within ``balance_offset`` of the line through the measured feet, it comes down
balanced over it, turned slowly about it so that one edge lands first
(:meth:`LocomotionPlanner._balance_holds`, :meth:`LocomotionPlanner._balance_reference`).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pinocchio as pin

from ...errors import reject_unknown_settings
from . import gait as gaits
from .gait import GaitPattern, GaitScheduler
from .body import ComPath, plan_com_path
from .edge_landing import EdgeLanding, LegGeometry
from .line_balance import LineBalance, line_through
from .planar_landing import box_corners, leg_capacity, leg_reach, nearest_edge
from .swing import convex_hull, halfplanes, min_jerk, project, swing_point


@dataclass
class LocomotionConfig:
    tripod_period: float = 1.3          # s, Table IV's T_g
    step_height: float = 0.025          # m
    wave_period: float = 1.6            # s, a wave cycle (one slot per walking leg)
    shift_fraction: float = 0.5         # of a wave slot, every foot down while the body shifts
    max_splay: float = 0.5              # rad, how far a damaged robot may turn a leg about its hip
    max_shift: float = 0.1              # m, largest body offset from the nominal frame (leg reach)
    stability_margin: float = 0.02      # m, CoM inside the support polygon
    settle_time: float = 0.4            # s after a morphology change before the new gait starts
    landing_time: float = 0.05          # s for a foot in the air at a morphology change to land (fast: a lost stance leg tips the body; 0.08 s let the CoM of six double losses leave the polygon, campaign)
    touch_tolerance: float = 0.003      # m above the ground at which a measured foot counts as down
    search_speed: float = 0.2           # m/s, a landing foot not down at the end of its landing keeps descending
    search_depth: float = 0.03          # m below the ground the search goes before the foot is taken as down anyway
    abort_drop: float = 0.01            # m the measured CoM may sink below its reference while a static gait swings a foot; then the foot lands and the robot stands
    sit_speed: float = 0.1              # m/s, how fast the CoM reference descends when the body sits down (half the 0.2 m/s touch-down bound)
    fall_drop: float = 0.01             # m below its reference height and ...
    fall_sink: float = 0.1              # m/s sinking, with its capture point outside the feet down: the body is falling and sits down
    balance_roll: float = 0.35          # rad the balanced body is turned about the feet's line as it comes down, so that one edge lands first (0.17: feet 2+5 and 3+4 ended balanced above the floor, campaign)
    balance_roll_rate: float = 0.35     # rad/s of that turn
    balance_offset: float = 0.005       # m: two feet left and down, the CoM and its capture point this close to their line: the body comes down balanced over it (line_balance.py)
    balance_landing: float = 0.02       # m: ... and at the loss, with a foot still landing, this close to the line to its target: held level until it lands (the foot lands ~1 cm off its target, campaign)
    max_speed: float = 0.15             # m/s, |cmd_vel| is clipped to this
    max_stride: float = 0.075           # m a stance foot may sweep under the body: caps the speed per gait
    max_yaw_rate: float = 0.5           # rad/s
    max_accel: float = 0.2              # m/s^2 (and rad/s^2): the command is ramped
    tuck: float = 0.04                  # m, how far a non-walking foot is lifted
    body_horizon: float = 1.5           # gait cycles covered by each CoM path plan (static gaits)
    body_step: float = 0.04             # s, grid of the CoM path (piecewise-constant acceleration)
    body_max_accel: float = 1.5         # m/s^2 per axis, CoM path acceleration bound (relaxed x2, x4 if infeasible)
    catch_clearance: float = 0.1        # rad, a landing foot turned to catch the body keeps its hip yaw joint this far inside its stops
    line_foot_speed: float = 1.0        # m/s, a foot sent under the line lands no faster than this on average
    line_reach_min: float = 0.8         # two feet left: a landing foot may be pulled in to this fraction of its distance from the hip to put their line under the CoM
    edge_clearance: float = 0.008       # m above the floor the first plan of a landing on an edge brings the body to rest (edge_landing.py)
    body_bandwidth: float = 6.0         # rad/s, how tightly the CoM path follows the commanded motion

    @classmethod
    def from_dict(cls, data: Optional[Mapping] = None) -> "LocomotionConfig":
        data = dict(data or {})
        reject_unknown_settings(cls, data, "locomotion", "locomotion")
        return cls(**{k: float(v) for k, v in data.items()})


@dataclass
class FootReference:
    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    stance: bool


@dataclass
class LocomotionReference:
    """What the whole-body controller tracks at one instant (world frame)."""
    t: float
    base_position: np.ndarray
    base_orientation: Optional[np.ndarray]   # quaternion x y z w; None: free (the body sits down)
    base_linear_velocity: np.ndarray
    base_angular_velocity: np.ndarray
    base_linear_acceleration: np.ndarray
    com_position: np.ndarray
    feet: Dict[str, FootReference]        # contact frame -> reference
    gait: str
    walking_legs: List[str] = field(default_factory=list)
    base_angular_acceleration: Optional[np.ndarray] = None     # world; None: zero

    @property
    def stance(self) -> Dict[str, bool]:
        return {frame: ref.stance for frame, ref in self.feet.items()}


GRAVITY = 9.81      # m/s^2


def _margin(point, points) -> float:
    hull = convex_hull(points)
    if len(hull) < 3:
        return -np.inf
    A, b = halfplanes(hull)
    return float(np.min(b - A @ np.asarray(point)[:2]))


def _edge_feet(frames, feet, com) -> List[str]:
    """The two of three feet (``frames``, world positions ``feet``) on the edge of their
    triangle the CoM is furthest outside of (:func:`.planar_landing.nearest_edge`)."""
    a, b, _, _ = nearest_edge(np.asarray(com)[:2], [np.asarray(f)[:2] for f in feet])
    return [frames[a], frames[b]]


def _yaw_rot(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


class LocomotionPlanner:
    """Gait scheduling, footholds, swing trajectories and body motion for any set of legs."""

    def __init__(self, robot, config: Optional[LocomotionConfig | Mapping] = None):
        self.robot = robot
        self.config = config if isinstance(config, LocomotionConfig) else LocomotionConfig.from_dict(config)
        model = robot.model
        data = model.createData()
        q0 = robot.q_stand.copy()
        q0[:3] = 0.0
        q0[3:7] = (0, 0, 0, 1)
        pin.framesForwardKinematics(model, data, q0)
        self.leg_of = {c.frame: c.leg for c in robot.contacts}
        self.frame_of = {c.leg: c.frame for c in robot.contacts}
        self.nominal = {c.frame: data.oMf[model.getFrameId(c.frame)].translation.copy() for c in robot.contacts}
        self.nominal0 = {f: p.copy() for f, p in self.nominal.items()}
        self.hips = {}
        for leg in robot.legs:
            if leg.contact_frame in self.nominal and leg.joints:
                self.hips[leg.name] = data.oMi[leg.joints[0]].translation[:2].copy()
        self.reach = self._hip_yaw_reach(q0)
        legs = {leg.contact_frame: LegGeometry(data.oMi[leg.joints[0]].translation.copy(),
                                               leg_reach(robot, model, leg), leg_capacity(robot, model, data, q0, leg))
                for leg in robot.legs if leg.contact_frame in self.nominal and leg.joints}
        self.edge_landing = EdgeLanding(box_corners(robot), legs, float(robot.friction))
        self.foot_radius = float(robot.contacts[0].radius)
        self._com_offset_model = model
        self.morphology_map = None
        self.walking: List[str] = []
        self.scheduler: Optional[GaitScheduler] = None
        self.t = None

    # ------------------------------------------------------------------ set-up
    def reset(self, t: float, q: np.ndarray) -> None:
        """Start standing at the measured configuration ``q`` (every foot down where it is).
        The gait's cycles are counted from t = 0 of the clock (:meth:`GaitScheduler.on_clock`):
        it steps from its first slot at or after ``t``, so planners started at different
        instants on one clock (one process, or one process per node) are in the same phase
        at the same time."""
        model = self.robot.model
        data = model.createData()
        pin.framesForwardKinematics(model, data, q)
        R = pin.Quaternion(q[6], *q[3:6]).toRotationMatrix()
        yaw = float(np.arctan2(R[1, 0], R[0, 0]))
        self.N = np.array([q[0], q[1], yaw])
        self.height = float(q[2])
        self.feet_pos = {f: data.oMf[model.getFrameId(f)].translation.copy() for f in self.nominal}
        self.ground = float(np.median([p[2] for p in self.feet_pos.values()]))
        self.offset = np.zeros(2)
        self.offset_from = np.zeros(2)
        self.offset_to = np.zeros(2)
        self.offset_window = (t, t)
        self.landing: Dict[str, tuple] = {}
        self.lift_from: Dict[str, np.ndarray] = {}
        self.touchdown: Dict[str, np.ndarray] = {}
        self.t = float(t)
        self.cmd = np.zeros(3)
        self.cmd_ramped = np.zeros(3)
        self._slot_seen = None
        self.body_plan: Optional[ComPath] = None
        self.plans: List[ComPath] = []          # every CoM path planned (tests and plots read them)
        self.last_com_v = np.zeros(2)
        self.sitting: Optional[list] = None     # [t, CoM height, CoM xy] once the body sits down
        self.balance: Optional[LineBalance] = None   # two feet left: the body comes down balanced over their line
        self.balance_from = None
        self.edge_stage: Optional[str] = None   # three feet left, landing on an edge: "waiting", "approach", "touch", "down" (_edge_landing_step)
        self.edge_rest = None                   # CoM, base rotation and third foot where the body came to rest on the edge
        self.base_rotation: Optional[np.ndarray] = None          # of the estimate (update)
        self.base_measured: Optional[np.ndarray] = None          # world, of the estimate (update)
        self.base_angular_velocity: Optional[np.ndarray] = None  # world, of the estimate
        self.feet_measured: Optional[Mapping[str, np.ndarray]] = None
        self.foot_down = True                   # a walking foot down at the start of the cycle (update)
        self.com_velocity: Optional[np.ndarray] = None   # of the estimate, world frame (update)
        self.com_measured: Optional[np.ndarray] = None
        self.com_shift = np.zeros(2)            # world xy: the CoM's move at a morphology change the estimate has not seen yet
        self.set_morphology(self.morphology_map, t, settle=0.0, phase_origin=0.0)

    def walking_legs(self, mmap=None) -> List[str]:
        if mmap is None:
            return [c.leg for c in self.robot.contacts if c.leg in self.hips]
        model = self.robot.model
        locked = {model.names[j] for j in mmap.locked_joints}
        legs = []
        for c in mmap.contacts:
            leg = next((l for l in self.robot.legs if l.name == c.leg), None)
            if leg is None or c.leg not in self.hips:
                continue
            if any(model.names[j] in locked for j in leg.joints):
                continue
            legs.append(c.leg)
        return legs

    def choose_gait(self, legs: Sequence[str]) -> GaitPattern:
        cfg = self.config
        groups = [list(g) for g in self.robot.gait_groups]
        if len(legs) == len(self.hips) and len(groups) == 2 and set(sum(groups, [])) == set(legs):
            return gaits.tripod(groups, cfg.tripod_period)
        return gaits.wave({leg: self.hips[leg] for leg in legs}, cfg.wave_period / len(legs), cfg.shift_fraction)

    def set_morphology(self, mmap, t: float, settle: Optional[float] = None,
                       phase_origin: Optional[float] = None) -> None:
        """Re-plan for a new morphology (``None``: healthy) from time ``t``; the new gait
        starts after ``settle``, its cycles counted from then, or from ``phase_origin`` on
        the clock (:meth:`reset`)."""
        self.morphology_map = mmap
        legs = self.walking_legs(mmap)
        pattern = self.choose_gait(legs)
        settle = self.config.settle_time if settle is None else settle
        model = mmap.model if mmap is not None else self.robot.model
        q0 = mmap.expand_q(mmap.reduce_q(self.robot.q_stand)) if mmap is not None else self.robot.q_stand.copy()
        q0[:3] = 0.0
        q0[3:7] = (0, 0, 0, 1)
        self.held = self._held_feet(model, q0, legs, mmap)
        data = model.createData()
        com0 = pin.centerOfMass(model, data, q0)
        if self.scheduler is not None:
            # the estimate's CoM is still the former body's until its next update: the CoM
            # moves with the mass lost (legs 2+3+5+6 lost: 2 cm forward)
            self.com_shift = _yaw_rot(self.N[2])[:2, :2] @ (com0[:2] - self.com_offset)
        self.com_offset = com0[:2].copy()
        pin.ccrba(model, data, q0, np.zeros(model.nv))
        self.mass, self.inertia = pin.computeTotalMass(model), data.Ig.inertia.copy()    # centroidal, base axes
        # the CoM height target is the standing CoM height (base height + the CoM's offset
        # below the base at the standing pose), not the base height: a CoM target at the
        # base height lifts the body ~2 cm and drives the legs towards their joint limits
        self.com_dz = float(com0[2])
        self._redistribute(legs, pattern)
        if self.t is not None and self.scheduler is not None:
            # feet in the air land during the settle time, straight down to their foothold
            # of the new gait (the legs turned to cover a lost neighbour, _redistribute): a
            # pair lost in front leaves the CoM near the middle feet's line, and a middle foot
            # landing turned forward puts the support polygon's edge ahead of it (campaign);
            # then each turned about its hip where it best catches the body (_catch_landing)
            for frame in list(self.nominal):
                leg = self.leg_of[frame]
                if leg in self.walking and not self.scheduler.phase(t, leg).stance and leg in legs:
                    target = self._foothold_now(frame)
                    self.landing[frame] = (self.feet_pos[frame].copy(), target, t, t + self.config.landing_time)
                    # the swing it was on is over: it stays where it lands, not at that swing's target
                    self.lift_from.pop(frame, None)
                    self.touchdown.pop(frame, None)
            self._catch_landing(t, legs)
            self._line_landing(legs)
        self.walking = legs
        self.body_plan = None
        self.pattern = pattern
        self.speed_limit = self.config.max_stride / max(pattern.stance_time, 1e-6)
        if phase_origin is None:
            # the crawl order started so that no leg stands onto its coxa's stop first (legs
            # 5 and 6 lost: leg 1, last in the order, stood on its stop, campaign)
            first = self._first_to_step(pattern)
            self.scheduler = GaitScheduler(pattern, t + settle, t + settle - first * pattern.period / len(pattern.legs))
        else:
            self.scheduler = GaitScheduler.on_clock(pattern, t + settle, phase_origin)
        self._slot_seen = None
        if pattern.static:
            # shift right away into the polygon of every walking foot, then per slot
            self._plan_offset(t, t + max(settle, 0.2), exclude=None)
            if pattern.swing_fraction > 0.0 and self.t is not None:
                # and plan the CoM path through the settle time and the first swings at once
                # (a plan started only at the first slot inherits a state that did not
                # anticipate the first swing)
                p0 = self.N[:2] + self.offset + _yaw_rot(self.N[2])[:2, :2] @ self.com_offset
                self.body_plan = self._plan_body(t, p0, self.last_com_v)
                if self.body_plan is not None:
                    self.plans.append(self.body_plan)
        if self.t is not None and (self.sitting is not None or len(legs) < 3):
            # fewer than three feet cannot hold the body anywhere (static feasibility); a body
            # that sat down stays down whatever is detected later
            self._sit_down(t)

    def _first_to_step(self, pattern: GaitPattern) -> int:
        """Index (in ``pattern.legs``) of the leg to swing first in a static gait after a
        morphology change: the crawl order's own first (0), unless a leg would reach a stop of
        its hip yaw joint more than ``stability_margin`` of walk before its first swing (the
        body path keeps that margin inside the support polygon: a body held back by less
        stays inside it). Each leg's walk left before that stop (:meth:`_walk_left`, its foot
        held where it stands, a landing foot at its target) against the body's walk at the
        gait's speed until its slot comes (the slots before it and the shift that opens its
        own); then the start that leaves the most walk to spare (the crawl order kept, its
        start rotated). 0 without a command or a previous gait."""
        v = self.cmd[:2] if self.scheduler is not None else np.zeros(2)
        speed = min(float(np.linalg.norm(v)), self.config.max_stride / max(pattern.stance_time, 1e-6))
        if not pattern.static or pattern.swing_fraction <= 0.0 or speed < 1e-9:
            return 0
        R = _yaw_rot(self.N[2])[:2, :2]
        base = self.N[:2] + self.offset
        left = []
        for leg in pattern.legs:
            frame = self.frame_of[leg]
            at = self.landing[frame][1] if frame in self.landing else self.feet_pos[frame]
            left.append(self._walk_left(leg, R.T @ (at[:2] - base) - self.hips[leg], v / np.linalg.norm(v)))
        n, slot = len(left), pattern.period / len(pattern.legs)
        spare = [min(left[j] - speed * slot * ((j - first) % n + pattern.shift_fraction) for j in range(n))
                 for first in range(n)]
        return 0 if spare[0] >= -self.config.stability_margin else int(np.argmax(spare))

    def _catch_landing(self, t: float, legs: Sequence[str]) -> None:
        """Turn the landing targets of the feet in the air at a morphology change about their
        hips (the leg's reach kept, the hip yaw joint ``catch_clearance`` inside its stops,
        :meth:`_hip_yaw_reach`) by up to ``max_splay`` so that the capture point of the
        measured CoM is as far inside the polygon of the feet down and landing as possible:
        until they land two or three feet carry a body tipping towards the lost legs, and
        the body is caught only if the polygon it lands on holds it (legs 1 and 3 lost: foot 5
        landing on the new gait's foothold left the capture point 1.9 cm inside the diagonal 2-5,
        and the CoM was outside it by the landing, campaign). A turn must pay for itself: each radian costs
        ``stability_margin / max_splay`` of margin (summed over the feet), so the gait's
        foothold is kept unless turning gains more."""
        cfg = self.config
        frames = [f for f, (_, _, ta, _) in self.landing.items() if ta == t and self.leg_of[f] in legs]
        if not frames:
            return
        down = [self.landing[self.frame_of[l]][1][:2] if self.frame_of[l] in self.landing else self.feet_pos[self.frame_of[l]][:2]
                for l in legs if self.frame_of[l] not in frames]
        if self.com_measured is None or self.com_velocity is None:
            point = self._com_xy(self.N[:2] + self.offset, self.N[2])
        else:
            point = self._capture_point(self.com_measured, self.com_velocity)
        R = _yaw_rot(self.N[2])
        base = np.append(self.N[:2] + self.offset, 0.0)
        options = []
        for frame in frames:
            leg, target = self.leg_of[frame], self.landing[frame][1]
            hip = base + R @ np.append(self.hips[leg], 0.0)
            ends = self.reach.get(leg)
            turns = []
            for d in np.linspace(-cfg.max_splay, cfg.max_splay, 5):
                p = hip + _yaw_rot(d) @ (target - hip)
                p[2] = target[2]
                rel = R.T @ (p - hip)
                yaw = np.arctan2(rel[1], rel[0])
                if d == 0.0 or ends is None or ends[0] + cfg.catch_clearance <= yaw <= ends[1] - cfg.catch_clearance:
                    turns.append((abs(d), p))
            options.append(turns)
        weight = cfg.stability_margin / cfg.max_splay

        def score(choice):
            return _margin(point, down + [p[:2] for _, p in choice]) - weight * sum(d for d, _ in choice)
        best = tuple(next(o for o in turns if o[0] == 0.0) for turns in options)     # the gait's footholds
        best_score = score(best)
        for choice in itertools.product(*options):
            value = score(choice)
            if value > best_score:
                best, best_score = choice, value
        for frame, (_, p) in zip(frames, best):
            p0, _, ta, tb = self.landing[frame]
            self.landing[frame] = (p0, p, ta, tb)

    def _line_landing(self, legs: Sequence[str]) -> None:
        """Two walking feet left, one or both in the air at the morphology change: land them where
        the line through the two feet passes under the measured CoM and its capture point, so
        that the body comes down balanced over it (:mod:`.line_balance`) instead of rolling over
        a line beside the CoM (``dH_L/dt = m g e``: no force of two feet stops that roll). Each
        landing foot's candidates are its target turned about its hip (the hip yaw joint
        ``catch_clearance`` inside its stops, :meth:`_hip_yaw_reach`) at ``line_reach_min`` to 1 times its
        distance from the hip; a foot down stays where it is. The gait's targets are kept when
        their line is already within ``balance_landing`` of both points, and when no candidate
        line is; otherwise the line nearest both points, and of those within 1 mm of it, the
        feet's smallest move."""
        cfg = self.config
        frames = [self.frame_of[leg] for leg in legs]
        if len(legs) != 2 or not any(f in self.landing for f in frames) or self.com_measured is None \
                or self.com_velocity is None:
            return
        com = self._com_now()
        points = np.array([com[:2], self._capture_point(com, self.com_velocity)])
        R = _yaw_rot(self.N[2])
        base = np.append(self.N[:2] + self.offset, 0.0)
        options = []
        for leg, frame in zip(legs, frames):
            if frame not in self.landing:
                measured = None if self.feet_measured is None else self.feet_measured.get(frame)
                options.append(np.asarray(self.feet_pos[frame] if measured is None else measured, float)[None, :2])
                continue
            target = self.landing[frame][1]
            hip = base + R @ np.append(self.hips[leg], 0.0)
            ends = self.reach.get(leg)
            rel = target[:2] - hip[:2]
            yaw0 = float(np.arctan2(*(R[:2, :2].T @ rel)[::-1]))
            yaws = [yaw0] if ends is None else np.linspace(ends[0] + cfg.catch_clearance, ends[1] - cfg.catch_clearance, 17)
            radius = float(np.linalg.norm(rel))
            cand = [target[:2]] + [hip[:2] + k * radius * (R[:2, :2] @ np.array([np.cos(y), np.sin(y)]))
                                   for y in yaws for k in np.linspace(cfg.line_reach_min, 1.0, 3)]
            options.append(np.array(cand))
        worst = line_through(options[0], options[1], points, cfg.stability_margin)
        if worst[0, 0] <= cfg.balance_landing or worst.min() > cfg.balance_landing:
            return
        move = sum(np.meshgrid(*[np.linalg.norm(o - o[0], axis=1) for o in options], indexing="ij"))
        i, j = np.unravel_index(np.argmin(np.where(worst <= worst.min() + 1e-3, move, np.inf)), worst.shape)
        for frame, option, k in zip(frames, options, (i, j)):
            if frame in self.landing:
                p0, target, ta, tb = self.landing[frame]
                p1 = np.array([option[k][0], option[k][1], target[2]])
                tb = max(tb, ta + float(np.linalg.norm(p1 - p0)) / cfg.line_foot_speed)
                self.landing[frame] = (p0, p1, ta, tb)

    def _walk_left(self, leg: str, foot: np.ndarray, heading: np.ndarray) -> float:
        """How far (m) the body can walk along ``heading`` (base frame, unit) before the leg's
        hip yaw joint reaches a stop with its foot held at ``foot`` (base frame, from the hip):
        the foot moves back by the distance walked, and leaves the wedge of
        :meth:`_hip_yaw_reach` where it crosses one of its edges. +inf for a leg without one."""
        ends = self.reach.get(leg)
        if ends is None:
            return np.inf
        left = np.inf
        for a in ends:
            e = np.array([np.cos(a), np.sin(a)])
            towards = e[0] * heading[1] - e[1] * heading[0]          # e x heading
            if abs(towards) > 1e-12:
                d = (e[0] * foot[1] - e[1] * foot[0]) / towards     # (e x foot) / (e x heading)
                if d >= 0.0:
                    left = min(left, d)
        return left

    def _land_swinging(self, t: float) -> None:
        """Every walking foot in the air lands straight down where it is within ``landing_time``
        (the swing it was on is over)."""
        for leg in self.walking:
            frame = self.frame_of[leg]
            if self.scheduler.phase(t, leg).stance or frame in self.landing:
                continue
            target = self.feet_pos[frame].copy()
            target[2] = self.ground
            self.landing[frame] = (self.feet_pos[frame].copy(), target, t, t + self.config.landing_time)
            self.lift_from.pop(frame, None)
            self.touchdown.pop(frame, None)

    def _sit_down(self, t: float) -> None:
        """Land the body from ``t``: every foot lands and stays down (gait ``sit``) and the CoM
        height reference descends at ``sit_speed`` from its reference height (or the measured
        one, if lower: a falling body is not lifted first) to the ground, its
        horizontal reference following the measured CoM with zero velocity, and no orientation
        target (:meth:`_sit_reference`): the legs
        brake the descent instead of holding a posture that cannot be held. Held level, two
        feet brake nothing (a vertical force off the CoM tilts the body, so the QP gave the
        feet ~3 N of the 21 N weight and the body fell at 1 m/s, campaign); free to tilt, the
        body settles onto its edge."""
        self._land_swinging(t)
        self.pattern = replace(gaits.stand(self.walking), name="sit")
        self.scheduler = GaitScheduler(self.pattern, t)
        self.body_plan = None
        self._slot_seen = None
        if self.sitting is None:
            xy = self._com_xy(self.N[:2] + self.offset, self.N[2])
            z0 = self.height + self.com_dz
            if self.com_measured is not None:
                z0 = min(z0, float(self.com_measured[2]))
            self.sitting = [t, z0, xy]
            self.balance = self._line_balance()
            self.balance_from = None
            self.edge_stage = "waiting" if self._beyond_stand() else None

    def _beyond_stand(self) -> bool:
        """Three walking feet (down, or landing at their targets) whose triangle has the measured
        CoM outside an edge, the body's angular momentum about it outwards or zero
        (:meth:`.EdgeLanding.falls_over`): no force of the feet turns it back."""
        measured = self._edge_measured()
        return measured is not None and self.edge_landing.falls_over(*measured)

    def _edge_measured(self):
        """The arguments of :meth:`.EdgeLanding.planar` for the body now: three walking feet (a
        foot down where the estimate measures it, a landing foot at its target) and the
        body's state measured; None otherwise."""
        if len(self.walking) != 3 or any(x is None for x in (
                self.base_rotation, self.com_measured, self.base_measured, self.com_velocity,
                self.base_angular_velocity, self.feet_measured)):
            return None
        frames = [self.frame_of[leg] for leg in self.walking]
        feet = [self.landing[f][1] if f in self.landing else np.asarray(self.feet_measured[f], float) for f in frames]
        return (frames, feet, self.ground - self.foot_radius, self.com_measured, self.com_velocity, self.base_measured,
                self.base_rotation, self.base_angular_velocity, self.mass, self.inertia)

    def _edge_landing_step(self, t: float) -> bool:
        """A body falling over an edge of its three feet (:meth:`.EdgeLanding.falls_over`, judged
        when it sits down) lands on that edge along the optimiser's plan from its measured
        state (:mod:`.edge_landing`): once the edge's two feet are down (a foot in the air
        passes no force; until then the sit-down's references), a plan that brings the body to
        rest ``edge_clearance`` above the floor ("approach": the plan's touch-down is grazing,
        and the body tracking it a few millimetres low touched the floor 25 ms early at 0.19
        m/s, legs 3+5+6 lost, campaign), then, from the state measured at its end, one onto the
        floor ("touch"), again from the state measured at its end while the body is not down;
        once it is, held where it came to rest ("down"). Whether the body follows a plan (or
        rests) at ``t``."""
        cfg, edge = self.config, self.edge_landing
        measured = self._edge_measured() if self.edge_stage == "waiting" else None
        if measured is not None and not any(f in self.landing for f in _edge_feet(*measured[:2], measured[3])):
            if edge.solve(t, *measured, clearance=cfg.edge_clearance) is not None:
                self.edge_stage = "approach"
            else:
                self.edge_stage = "touch" if edge.solve(t, *measured) is not None else None
        elif self.edge_stage in ("approach", "touch") and t >= edge.end:
            # the body, tracking the plan a little late, is not yet down: again from where it is
            self.edge_stage = "touch" if edge.solve(t, *self._edge_measured()) is not None else "down"
            if self.edge_stage == "down":
                third = np.asarray(self.feet_measured[edge.third], float).copy()
                self.edge_rest = (self.com_measured.copy(), self.base_rotation.copy(), third)
        return self.edge_stage == "down" or self.edge_stage in ("approach", "touch") and t < edge.end

    def _line_balance(self) -> Optional[LineBalance]:
        """With two walking feet left and the body's state measured, the balance over their
        line (:mod:`.line_balance`) if the measured CoM and its capture point are within
        ``balance_landing`` of the line through the feet down and the landing feet's targets
        (judged again, by ``balance_offset``, on the measured feet once both are down,
        :meth:`_balance_holds`); otherwise None, the body sits down free to tilt."""
        if len(self.walking) != 2 or self.base_rotation is None or self.com_measured is None \
                or self.com_velocity is None:
            return None
        feet = [self.landing[f][1][:2] if f in self.landing else self.feet_pos[f][:2]
                for f in (self.frame_of[leg] for leg in self.walking)]
        if np.linalg.norm(feet[1] - feet[0]) < 1e-3:
            return None
        R = _yaw_rot(self.N[2])
        line = LineBalance.of(feet, self.mass, R @ self.inertia @ R.T)
        com = self._com_now()
        near = max(abs(line.offset(com)), abs(line.offset(self._capture_point(com, self.com_velocity))))
        return line if near <= self.config.balance_landing else None

    def _com_now(self) -> np.ndarray:
        """The measured CoM, moved as the CoM of the body left moves at a morphology change the
        estimate has not yet seen (:attr:`com_shift`)."""
        com = self.com_measured.copy()
        com[:2] += self.com_shift
        return com

    def _stand_still(self, t: float) -> None:
        """Give up walking from ``t``: every walking foot stays (or lands) where it is and
        the body shifts (minimum jerk) to put the CoM inside their polygon."""
        self.pattern = gaits.stand(self.walking)
        self.scheduler = GaitScheduler(self.pattern, t)
        self.body_plan = None
        self._slot_seen = None
        self._plan_offset(t, t + 0.5, exclude=None)

    def _held_feet(self, model, q0: np.ndarray, legs: Sequence[str], mmap) -> Dict[str, np.ndarray]:
        """Base-frame targets of the feet of legs that do not walk (a joint locked), each
        *reachable* with the leg's free joints: the tuck point (under the hip, ``tuck`` above
        the standing foot) is approached by damped least squares on the free joints within
        their limits (0.15 rad inside), and the point reached is the target. An unreachable target would make
        the swing-foot task move the body instead (a locked femur: the body rose 3 cm and
        shifted 5 cm). ``q0`` is updated in place to that posture (the CoM offset uses it)."""
        held: Dict[str, np.ndarray] = {}
        if mmap is None:
            return held
        data = model.createData()
        locked = set(mmap.locked_joints)
        for leg in self.robot.legs:
            frame = leg.contact_frame
            if leg.name in legs or frame not in {c.frame for c in mmap.contacts}:
                continue
            fid = model.getFrameId(frame)
            nominal = self.nominal0[frame]
            goal = np.array([0.85 * nominal[0], 0.85 * nominal[1], nominal[2] + self.config.tuck])
            free = [j for j in leg.joints if j not in locked and model.joints[j].nv == 1]
            iq = [model.joints[j].idx_q for j in free]
            iv = [model.joints[j].idx_v for j in free]
            # 0.15 rad inside the limits: a target on a limit leaves the QP's joint-limit
            # bounds no room while the foot is tracked (an infeasible solve)
            lo, hi = model.lowerPositionLimit[iq] + 0.15, model.upperPositionLimit[iq] - 0.15
            for _ in range(50):
                pin.framesForwardKinematics(model, data, q0)
                err = goal - data.oMf[fid].translation
                if np.linalg.norm(err) < 1e-5 or not free:
                    break
                J = pin.computeFrameJacobian(model, data, q0, fid, pin.LOCAL_WORLD_ALIGNED)[:3, iv]
                dq = J.T @ np.linalg.solve(J @ J.T + 1e-4 * np.eye(3), err)
                q0[iq] = np.clip(q0[iq] + dq, lo, hi)
            pin.framesForwardKinematics(model, data, q0)
            held[frame] = data.oMf[fid].translation.copy()
        return held

    def _hip_yaw_reach(self, q0: np.ndarray) -> Dict[str, Tuple[float, float]]:
        """Per leg whose first joint turns the foot about a vertical axis through the hip
        (the hexapods' coxa): the directions (base-frame yaw, ascending) of the foot seen
        from the hip with that joint on its lower and upper stop, found by turning the joint
        at the standing pose ``q0``; other legs are left out."""
        model, data = self.robot.model, self.robot.model.createData()
        out, eps = {}, 1e-4
        for leg in self.robot.legs:
            if leg.name not in self.hips or model.joints[leg.joints[0]].nq != 1:
                continue
            iq = model.joints[leg.joints[0]].idx_q
            fid = model.getFrameId(leg.contact_frame)
            feet = []
            for dq in (0.0, eps):
                q = q0.copy()
                q[iq] += dq
                pin.framesForwardKinematics(model, data, q)
                feet.append(data.oMf[fid].translation - np.append(self.hips[leg.name], 0.0))
            turn = (np.arctan2(feet[1][1], feet[1][0]) - np.arctan2(feet[0][1], feet[0][0])) / eps
            if abs(abs(turn) - 1.0) < 0.05 and abs(feet[1][2] - feet[0][2]) < 1e-3 * eps:
                yaw = np.arctan2(feet[0][1], feet[0][0])
                ends = yaw + turn * (model.lowerPositionLimit[iq] - q0[iq]), yaw + turn * (model.upperPositionLimit[iq] - q0[iq])
                if abs(ends[1] - ends[0]) < np.pi:         # a convex wedge
                    out[leg.name] = (float(min(ends)), float(max(ends)))
        return out

    def _redistribute(self, legs: Sequence[str], pattern: GaitPattern) -> None:
        """Footholds for a static gait: turn each walking leg about its hip by one of a few
        angles (a grid search over |delta| <= max_splay) so that the CoM, body at rest, is as
        far as possible inside the support polygon left when any one leg swings: with a leg
        missing, the neighbours spread to cover its place and the body needs small shifts."""
        self.nominal = {f: p.copy() for f, p in self.nominal0.items()}
        if not pattern.static or len(legs) < 4:
            return
        grid = np.linspace(-self.config.max_splay, self.config.max_splay, 5 if len(legs) <= 4 else 3)
        frames = [self.frame_of[leg] for leg in legs]
        hips = [np.append(self.hips[leg], 0.0) for leg in legs]
        rel = [self.nominal0[f] - h for f, h in zip(frames, hips)]
        com = self.com_offset
        best, best_score = None, -np.inf
        for deltas in itertools.product(grid, repeat=len(legs)):
            pts = [h[:2] + _yaw_rot(d)[:2, :2] @ r[:2] for h, r, d in zip(hips, rel, deltas)]
            score = min(_margin(com, [p for j, p in enumerate(pts) if j != k]) for k in range(len(pts)))
            score -= 0.005 * float(np.abs(deltas).sum())
            if score > best_score:
                best, best_score = deltas, score
        for f, h, r, d in zip(frames, hips, rel, best):
            self.nominal[f] = h + _yaw_rot(d) @ r

    # ------------------------------------------------------------------ geometry
    def _frame_point(self, N: np.ndarray, p_nominal: np.ndarray) -> np.ndarray:
        return np.array([N[0], N[1], 0.0]) + _yaw_rot(N[2]) @ p_nominal

    def _predict_N(self, dt: float) -> np.ndarray:
        vx, vy, wz = self._effective_cmd()
        yaw = self.N[2]
        v_world = _yaw_rot(yaw)[:2, :2] @ np.array([vx, vy])
        return np.array([self.N[0] + v_world[0] * dt, self.N[1] + v_world[1] * dt, yaw + wz * dt])

    def _effective_cmd(self) -> np.ndarray:
        if self.pattern.name == "stand":
            return np.zeros(3)
        cmd = self.cmd_ramped.copy()
        speed = float(np.linalg.norm(cmd[:2]))
        if speed > self.speed_limit:
            cmd[:2] *= self.speed_limit / speed
        return cmd

    def _foothold_now(self, frame: str) -> np.ndarray:
        p = self._frame_point(self.N, self.nominal[frame])
        p[2] = self.ground
        return p

    def _foothold(self, frame: str, t_touchdown: float) -> np.ndarray:
        ahead = t_touchdown + 0.5 * self.pattern.stance_time - self.t
        p = self._frame_point(self._predict_N(ahead), self.nominal[frame])
        p[2] = self.ground
        return p

    def _com_xy(self, base_xy: np.ndarray, yaw: float) -> np.ndarray:
        return base_xy + _yaw_rot(yaw)[:2, :2] @ self.com_offset

    def _plan_offset(self, t_from: float, t_to: float, exclude: Optional[str], swing_end: Optional[float] = None) -> None:
        """Offset target: CoM inside the polygon of the walking feet other than ``exclude``,
        from ``t_to`` until ``swing_end`` (the body keeps moving at the command meanwhile)."""
        support = [self.feet_pos[self.frame_of[leg]][:2] for leg in self.walking if leg != exclude]
        hull = convex_hull(support)
        if len(hull) < 3:
            return
        A, b = halfplanes(hull)
        yaw = self.N[2]
        com_rel = _yaw_rot(yaw)[:2, :2] @ self.com_offset
        times = [t_to] + ([swing_end] if swing_end is not None else [])
        rows_A, rows_b = [], []
        for margin in (self.config.stability_margin, 0.5 * self.config.stability_margin, 0.0):
            rows_A, rows_b = [], []
            for tt in times:
                base = self._predict_N(tt - self.t)[:2]
                rows_A.append(A)
                rows_b.append(b - margin - A @ (base + com_rel))
            Aa, bb = np.vstack(rows_A), np.concatenate(rows_b)
            target = project(np.zeros(2), Aa, bb)
            if np.all(Aa @ target <= bb + 1e-6):
                break
        norm = float(np.linalg.norm(target))
        if norm > self.config.max_shift:
            target = target * (self.config.max_shift / norm)
        self.offset_from = self.offset.copy()
        self.offset_to = target
        self.offset_window = (t_from, t_to)

    def _down_feet(self, t_a: float, t_b: float) -> List[np.ndarray]:
        """World xy of the walking feet that are down over all of ``[t_a, t_b]`` (now or later):
        where they stand now, or the foothold predicted for their last touchdown before ``t_a``."""
        sched, pts = self.scheduler, []
        for leg in self.walking:
            frame = self.frame_of[leg]
            ph = sched.phase(t_a, leg)
            if not ph.stance or ph.end < t_b:
                continue
            if frame in self.landing:           # landing after a morphology change
                p0, p1, _, t_land = self.landing[frame]
                if t_a >= t_land:
                    pts.append(p1[:2].copy())
                continue
            if ph.start > self.t + 1e-6 and ph.start > sched.t0 + 1e-9:
                pts.append(self._foothold(frame, ph.start)[:2])
            elif frame in self.lift_from:
                pts.append(self.touchdown[frame][:2].copy())
            else:
                pts.append(self.feet_pos[frame][:2].copy())
        return pts

    def _plan_body(self, t: float, p0: np.ndarray, v0: np.ndarray) -> Optional[ComPath]:
        """The CoM path of :mod:`.body` from ``t`` (see the module docstring)."""
        cfg = self.config
        h = min(cfg.body_step, self.pattern.swing_time / 4.0)
        K = max(int(np.ceil(cfg.body_horizon * self.pattern.period / h)), 4)
        p_ref, polys = np.zeros((K, 2)), []
        t_walk = max(self.t, self.scheduler.t0)      # the nominal frame moves from the gait start
        for i in range(K):
            ti = t + (i + 1) * h
            N = self._predict_N(max(ti - t_walk, 0.0))
            p_ref[i] = N[:2] + _yaw_rot(N[2])[:2, :2] @ self.com_offset
            hull = convex_hull(self._down_feet(ti - h, ti + h))
            polys.append(halfplanes(hull) if len(hull) >= 3 else None)
        m, a = cfg.stability_margin, cfg.body_max_accel
        for margin, a_max in ((m, a), (0.5 * m, a), (0.5 * m, 2 * a), (0.0, 4 * a)):
            plan = plan_com_path(t, h, p0, v0, p_ref, polys, margin=margin, a_max=a_max,
                                 max_shift=cfg.max_shift, omega=cfg.body_bandwidth)
            if plan is not None:
                return plan
        return None

    # ------------------------------------------------------------------ the cycle
    def set_command(self, vx: float, vy: float = 0.0, wz: float = 0.0) -> None:
        cfg = self.config
        v = np.array([vx, vy], float)
        speed = np.linalg.norm(v)
        if speed > cfg.max_speed:
            v *= cfg.max_speed / speed
        self.cmd = np.array([v[0], v[1], float(np.clip(wz, -cfg.max_yaw_rate, cfg.max_yaw_rate))])

    def update(self, t: float, feet_measured: Optional[Mapping[str, np.ndarray]] = None,
               com_measured: Optional[np.ndarray] = None,
               com_velocity: Optional[np.ndarray] = None,
               base_rotation: Optional[np.ndarray] = None,
               base_angular_velocity: Optional[np.ndarray] = None,
               base_position: Optional[np.ndarray] = None) -> LocomotionReference:
        """The references at ``t``: the body (ramped command, static-gait body offset or
        planned CoM path), then every surviving foot (held, landing, stance or swing).
        ``feet_measured`` (world positions of the contact frames, from the estimate) confirm
        the touch-down of landing feet; without them a landing ends on time. ``com_measured``
        (world CoM of the estimate) lets a static gait abort a swing under which the body
        sinks (:meth:`_swing_aborted`) and a body sitting down follow it horizontally; with
        ``com_velocity`` (world, of the estimate) a falling body sits down (:meth:`_falling`);
        with ``base_rotation`` (3 x 3) and ``base_angular_velocity`` (world) too, a body left with
        two feet near whose line the CoM is comes down balanced over it (:meth:`_balance_holds`);
        with ``base_position`` (world, of the estimate) too, a body falling over an edge of its
        three feet lands on it (:meth:`_edge_landing_step`)."""
        if self.t is None:
            raise RuntimeError("LocomotionPlanner.reset(t, q) must be called first")
        t = float(t)
        self.com_measured = None if com_measured is None else np.asarray(com_measured, float).copy()
        self.com_shift = np.zeros(2)
        self.com_velocity = None if com_velocity is None else np.asarray(com_velocity, float).copy()
        self.base_rotation = None if base_rotation is None else np.asarray(base_rotation, float).copy()
        self.feet_measured = feet_measured
        self.base_angular_velocity = None if base_angular_velocity is None else np.asarray(base_angular_velocity, float).copy()
        self.base_measured = None if base_position is None else np.asarray(base_position, float).copy()
        if com_measured is not None:
            self._swing_aborted(t, com_measured)
        # after the abort: a swing foot it sends down counts where it lands (the robot stood
        # on it before, 5 pair runs sat down and 2 of them tipped when it did not count, campaign)
        if self.sitting is None and self._falling(t):
            self._sit_down(t)
        if com_measured is not None and self.sitting is not None:
            self.sitting[2] = np.asarray(com_measured[:2], float).copy()
        standing, cmd = self._advance(t)
        if self.pattern.static and not standing and self.pattern.swing_fraction > 0.0:
            self._plan_slot(t)
        R = _yaw_rot(self.N[2])
        moving = 0.0 if standing else 1.0
        w, dw = np.array([0.0, 0.0, moving * cmd[2]]), None
        if self.sitting is None:
            base, quat, v_lin, a_lin, com = self._body_reference(t, R, moving, cmd)
        else:
            base, quat, v_lin, a_lin, com, w, dw = self._sit_reference(t, R)
        kept = None if self.morphology_map is None else {c.frame for c in self.morphology_map.contacts}
        # whether any walking foot was down at the start of this cycle (_touchdown_search)
        self.foot_down = any(self.frame_of[leg] not in self.landing for leg in self.walking)
        feet: Dict[str, FootReference] = {}
        for frame, nominal in self.nominal.items():
            if kept is None or frame in kept:
                feet[frame] = self._foot_reference(frame, nominal, t, base, R, v_lin, a_lin, feet_measured)
        return LocomotionReference(t, base, quat, v_lin, w, a_lin, com, feet, self.pattern.name,
                                   list(self.walking), dw)

    def _swing_aborted(self, t: float, com: np.ndarray) -> bool:
        """Static gaits: while a foot swings, the measured CoM more than ``abort_drop`` below
        its reference height means the feet left down cannot carry the body (the CoM is
        outside their polygon, or they are at a joint or torque limit): the swing is
        aborted, the foot lands straight down within ``landing_time`` and the robot stands on
        every foot (:meth:`_stand_still`) rather than walk a gait it cannot follow."""
        if not self.pattern.static or self.pattern.swing_fraction <= 0.0 or t < self.scheduler.t0:
            return False
        if float(com[2]) > self.height + self.com_dz - self.config.abort_drop:
            return False
        if all(self.scheduler.phase(t, leg).stance or self.frame_of[leg] in self.landing for leg in self.walking):
            return False
        self._land_swinging(t)
        self._stand_still(t)
        return True

    def _falling(self, t: float) -> bool:
        """The measured CoM more than ``fall_drop`` below its reference height, sinking faster
        than ``fall_sink``, and its capture point outside the polygon of the walking feet that
        are down or landing (a landing foot at its target, a foot down where the estimate
        measures it): no force of those feet can stop the CoM over them, and the body is
        coming down (after a pair of legs lost while the other tripod swung, campaign). A foot
        down is not always where it was sent: a foot landing after a loss touches the floor on
        its way when the body falls onto it (legs 2+3+5 lost, hidden: foot 1 down 6 cm from
        its target; counted there, the capture point was judged outside while the CoM stood
        2-4 cm inside the measured feet, and the body sat down onto its edge, campaign). The capture point of the linear inverted pendulum at
        the CoM's height ``h`` above the ground: ``x_cp = x + v / omega``, ``omega = sqrt(g / h)``.
        A body that dips with its capture point inside (a leg lost, the others catch it) is
        not falling."""
        com, v = self.com_measured, self.com_velocity
        if com is None or v is None:
            return False
        if float(com[2]) > self.height + self.com_dz - self.config.fall_drop or float(v[2]) > -self.config.fall_sink:
            return False
        support = []
        for leg in self.walking:
            frame = self.frame_of[leg]
            if frame in self.landing:
                support.append(self.landing[frame][1][:2])
            elif self.scheduler.phase(t, leg).stance:
                measured = None if self.feet_measured is None else self.feet_measured.get(frame)
                support.append(np.asarray(self.feet_pos[frame] if measured is None else measured, float)[:2])
        return _margin(self._capture_point(com, v), support) < 0.0

    def _capture_point(self, com: np.ndarray, v: np.ndarray) -> np.ndarray:
        """World xy of the linear inverted pendulum's capture point at the CoM's height ``h``
        above the ground: ``x_cp = x + v / omega``, ``omega = sqrt(g / h)``."""
        omega = np.sqrt(GRAVITY / max(float(com[2]) - self.ground, 1e-3))
        return com[:2] + v[:2] / omega

    def _advance(self, t: float):
        """Ramp the velocity command and integrate the nominal body pose ``N`` to ``t``;
        returns (standing, effective command)."""
        dt = max(t - self.t, 0.0)
        standing = self.pattern.swing_fraction <= 0.0 or t < self.scheduler.t0
        if not standing:
            step = self.config.max_accel * dt
            self.cmd_ramped += np.clip(self.cmd - self.cmd_ramped, -step, step)
        cmd = self._effective_cmd()
        if not standing:
            v_world = _yaw_rot(self.N[2])[:2, :2] @ cmd[:2]
            self.N = self.N + np.array([v_world[0], v_world[1], cmd[2]]) * dt
        self.t = t
        return standing, cmd

    def _touchdown_search(self, frame: str, p1: np.ndarray, late: float,
                          feet_measured: Optional[Mapping[str, np.ndarray]]) -> Optional[FootReference]:
        """A landing foot measured above the ground ``late`` s after its landing should have
        ended keeps descending at ``search_speed`` (down to ``search_depth`` below the
        ground), rather than being declared in stance in the air: the QP would then hold it
        there with zero acceleration and lean on a force the ground never gives (a pair of
        legs lost while the other tripod swung: the body sank onto two feet, campaign).
        Not while no walking foot is down: the estimate then has no foot on the ground to
        place the body by, a foot measured high may be a body estimated high, and a foot on
        the floor sent on down lifts the body (legs 2+3+6 lost as they carried it, hidden:
        found 75 ms later with the estimate 3.3 cm high, the three landing feet searched
        downwards while on the floor, the estimate drifted up with them, and the legs threw
        the base up to 0.25 m, campaign)."""
        cfg = self.config
        if not self.foot_down:
            return None
        p = None if feet_measured is None else feet_measured.get(frame)
        z = None if p is None else float(p[2])
        depth = cfg.search_speed * late
        if z is None or not np.isfinite(z) or z <= self.ground + cfg.touch_tolerance or depth > cfg.search_depth:
            return None
        pos = p1 - np.array([0.0, 0.0, depth])
        self.feet_pos[frame] = pos
        return FootReference(pos, np.array([0.0, 0.0, -cfg.search_speed]), np.zeros(3), False)

    def _plan_slot(self, t: float) -> None:
        """Static gaits: a new body target at the start of every slot, a CoM path that
        continues the current one exactly (C1), or else a min-jerk body offset."""
        pattern = self.pattern
        k, start, end = self.scheduler.slot(t)
        if self._slot_seen == (k, start):
            return
        self._slot_seen = (k, start)
        if self.body_plan is not None:
            p0, v0, _ = self.body_plan.sample(t)
        else:
            p0 = self.N[:2] + self.offset + _yaw_rot(self.N[2])[:2, :2] @ self.com_offset
            v0 = self.last_com_v
        self.body_plan = self._plan_body(t, p0, v0)
        if self.body_plan is not None:
            self.plans.append(self.body_plan)
        else:
            swing_start = start + pattern.shift_fraction * (end - start)
            self._plan_offset(start, swing_start, exclude=pattern.legs[k], swing_end=end)

    def _body_reference(self, t: float, R: np.ndarray, moving: float, cmd: np.ndarray):
        """Base position, orientation (xyzw), linear velocity and acceleration, and CoM at
        ``t`` (``R`` the nominal yaw rotation, ``moving`` 0 while standing else 1): the nominal
        pose plus the body offset (min-jerk window) or the planned path."""
        planned = self.body_plan is not None and self.pattern.static and self.pattern.swing_fraction > 0.0
        if planned:
            com_xy, com_v, com_a = self.body_plan.sample(t)
            self.offset = com_xy - R[:2, :2] @ self.com_offset - self.N[:2]
        t0, t1 = self.offset_window
        u = (t - t0) / (t1 - t0) if t1 > t0 else 1.0
        b, db, ddb = min_jerk(u)
        span = self.offset_to - self.offset_from
        if not planned:
            self.offset = self.offset_from + b * span
        inside = t1 > t0 and 0 <= u <= 1
        d_offset = db * span / (t1 - t0) if inside else np.zeros(2)
        dd_offset = ddb * span / (t1 - t0) ** 2 if inside else np.zeros(2)
        base = np.array([self.N[0] + self.offset[0], self.N[1] + self.offset[1], self.height])
        v_lin, a_lin = np.zeros(3), np.zeros(3)
        if planned:
            v_lin[:2], a_lin[:2] = com_v, com_a
        else:
            v_lin[:2] = moving * (R[:2, :2] @ cmd[:2]) + d_offset
            a_lin[:2] = dd_offset
        self.last_com_v = v_lin[:2].copy()
        com = base.copy()
        com[:2] = self._com_xy(base[:2], self.N[2])
        com[2] = self.height + self.com_dz
        return base, pin.Quaternion(R).coeffs().copy(), v_lin, a_lin, com

    def _sit_reference(self, t: float, R: np.ndarray):
        """The body while it sits down (:meth:`_sit_down`): its height descending at
        ``sit_speed`` to the ground. Balanced over two feet's line (:meth:`_balance_reference`):
        across the line the CoM and the body's roll follow :meth:`.LineBalance.reference`,
        along it the CoM stays between the feet. Otherwise the CoM at the measured
        horizontal position with zero horizontal velocity (the QP damps a sliding body rather
        than pulling it back over feet that cannot carry it) and the orientation left free
        (:attr:`LocomotionReference.base_orientation` None). Returns base, orientation,
        CoM velocity and acceleration, CoM, angular velocity and acceleration."""
        landing = any(self.frame_of[leg] in self.landing for leg in self.walking)
        if self.balance is not None and landing:
            # a foot still landing: one foot carries the body, there is no line yet; held
            # level and not lowered (the descent starts once both feet are down, from the
            # measured height if the body sank meanwhile: a reference above it, the two feet
            # lifted the body onto its edge and over, legs 2+3+5+6 lost, campaign)
            self.sitting[0], self.sitting[1] = t, min(self.sitting[1], float(self.com_measured[2]))
        if self.edge_stage is not None and self._edge_landing_step(t):
            if self.edge_stage == "down":
                # landed on the edge: held where it came to rest; with the sit-down's descent
                # instead the bodies that fell rolled on further after touching (legs 4+5+6
                # lost, undeclared: tilt 29.2 -> 31.0 deg; 1+2+4 declared 27.3 -> 29.1;
                # jethexa_tripod). (What tipped 3+5+6 over was the third foot, below.)
                com, R_ref, _ = self.edge_rest
                v_lin = a_lin = w = dw = np.zeros(3)
            else:
                com, v_lin, a_lin, R_ref, w, dw = self.edge_landing.reference(t)
            self.sitting[0], self.sitting[1] = t, float(self.com_measured[2])
            base = com - R_ref @ np.append(self.com_offset, self.com_dz)
            self.offset = base[:2] - self.N[:2]
            self.last_com_v = np.zeros(2)
            return base, pin.Quaternion(R_ref).coeffs().copy(), v_lin, a_lin, com, w, dw
        t0, z0, xy = self.sitting
        z = max(z0 - self.config.sit_speed * (t - t0), self.ground)
        com = np.array([xy[0], xy[1], z])
        v_lin, a_lin = np.zeros(3), np.zeros(3)
        if z > self.ground and not (self.balance is not None and landing):
            v_lin[2] = -self.config.sit_speed
        quat, w, dw = None, np.zeros(3), None
        if self.balance is not None and landing:
            quat = pin.Quaternion(R).coeffs().copy()
        elif self.balance is not None and self._balance_holds(t):
            com[:2], v_lin[:2], a_lin[:2], quat, w, dw = self._balance_reference(t)
        base = com.copy()
        base[:2] = com[:2] - R[:2, :2] @ self.com_offset
        base[2] = z - self.com_dz
        self.offset = base[:2] - self.N[:2]
        self.last_com_v = np.zeros(2)
        return base, quat, v_lin, a_lin, com, w, dw

    def _balance_holds(self, t: float) -> bool:
        """Once both feet are down, whether the body comes down balanced over their line (the
        line through the measured feet): the measured CoM and its capture point both within
        ``balance_offset`` of it. The roll about that line is governed by the CoM's offset
        alone (``dH_L/dt = m g e``, :mod:`.line_balance`): the body can keep a CoM that is on
        the line over it, but bringing back one that has left it costs about 4 deg of roll
        per millimetre (the JetHexa's diagonal feet, :data:`.line_balance.WEIGHTS`). Judged
        once; if not, the body sits down free to tilt (``self.balance`` None)."""
        if self.com_measured is None or self.com_velocity is None or self.base_rotation is None \
                or self.base_angular_velocity is None or self.feet_measured is None:
            return False
        self.balance.place([self.feet_measured[self.frame_of[leg]][:2] for leg in self.walking])
        if self.balance_from is None:
            com = self.com_measured
            e = self.balance.offset(com)
            near = max(abs(e), abs(self.balance.offset(self._capture_point(com, self.com_velocity))))
            if near > self.config.balance_offset:
                self.balance = None
                return False
            self.balance_from = (t, 1.0 if e >= 0.0 else -1.0)
        return True

    def _balance_reference(self, t: float):
        """CoM xy, its velocity and acceleration, orientation (xyzw), angular velocity and
        acceleration of the balanced descent (:meth:`.LineBalance.reference`), the body turned
        about the feet's line towards the side the CoM was on at ``balance_roll_rate`` up to
        ``balance_roll``, so that one edge of the body meets the floor first, slowly, as the
        body comes down (held level, legs 2+3+4+5 lost: the tibias reach their stops with the
        body 1 cm above the floor, and it stays balanced on two feet there)."""
        cfg = self.config
        ta, side = self.balance_from
        turned = cfg.balance_roll_rate * (t - ta)
        roll = side * min(turned, cfg.balance_roll)
        roll_rate = side * cfg.balance_roll_rate if turned < cfg.balance_roll else 0.0
        com_xy, v_xy, a_xy, R_ref, w, dw = self.balance.reference(
            self.com_measured, self.com_velocity, self.base_rotation, self.base_angular_velocity,
            max(float(self.com_measured[2]) - self.ground, 0.0), cfg.stability_margin, roll, roll_rate)
        return com_xy, v_xy, a_xy, pin.Quaternion(R_ref).coeffs().copy(), w, dw

    def _foot_reference(self, frame: str, nominal: np.ndarray, t: float, base: np.ndarray, R: np.ndarray,
                        v_lin: np.ndarray, a_lin: np.ndarray,
                        feet_measured: Optional[Mapping[str, np.ndarray]] = None) -> FootReference:
        """One foot at ``t``: held up with the body (a leg out of the gait), landing, in
        stance where it touched down, or on its swing arc towards the next foothold."""
        leg = self.leg_of[frame]
        if leg not in self.walking:       # held up, tucked towards the hip
            rel = self.held.get(frame)
            if rel is None:
                rel = np.array([0.85 * nominal[0], 0.85 * nominal[1], nominal[2] + self.config.tuck])
            p = base + R @ rel
            self.feet_pos[frame] = p
            # it moves with the body: the body's acceleration too (a held foot with a zero
            # acceleration feed-forward holds the body back while it shifts)
            return FootReference(p, v_lin.copy(), a_lin.copy(), False)
        if self.edge_stage in ("approach", "touch") and frame == self.edge_landing.third and t < self.edge_landing.end:
            # the third foot, unloaded by the landing's plan: held where it is, just off the floor
            p = self.feet_pos[frame] + np.array([0.0, 0.0, 0.005])
            return FootReference(p, np.zeros(3), np.zeros(3), False)
        if self.edge_stage == "down" and frame == self.edge_landing.third:
            # the body at rest on its edge, turned away from the third foot: that foot held
            # where it was measured then, in the air (taken as a stance foot below the hip the
            # body had turned up, it pushed the legs against their limits: 26 cycles of softened
            # joint limits, and the body tipped over, legs 3+5+6 lost, campaign)
            return FootReference(self.edge_rest[2].copy(), np.zeros(3), np.zeros(3), False)
        if frame in self.landing:
            p0, p1, ta, tb = self.landing[frame]
            if t < tb:
                bb, dbb, ddbb = min_jerk((t - ta) / (tb - ta))
                pos = p0 + bb * (p1 - p0)
                self.feet_pos[frame] = pos
                return FootReference(pos, dbb * (p1 - p0) / (tb - ta), ddbb * (p1 - p0) / (tb - ta) ** 2, False)
            search = self._touchdown_search(frame, p1, t - tb, feet_measured)
            if search is not None:
                return search
            self.feet_pos[frame] = p1.copy()
            del self.landing[frame]
        phase = self.scheduler.phase(t, leg)
        if phase.stance:
            if self.lift_from.pop(frame, None) is not None:
                self.feet_pos[frame] = self.touchdown.pop(frame)     # landed exactly there
            return FootReference(self.feet_pos[frame].copy(), np.zeros(3), np.zeros(3), True)
        if frame not in self.lift_from:
            self.lift_from[frame] = self.feet_pos[frame].copy()
        p1 = self._foothold(frame, phase.end)
        self.touchdown[frame] = p1
        pos, vel, acc = swing_point(self.lift_from[frame], p1, phase.progress, self.pattern.swing_time,
                                    self.config.step_height)
        self.feet_pos[frame] = pos
        return FootReference(pos, vel, acc, False)

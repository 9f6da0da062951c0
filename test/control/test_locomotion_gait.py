"""Gait scheduling and body planning, checked geometrically: stance sets of the tripod (paper
000's groups), one swing at a time in the wave gait with the CoM inside the support polygon
of the feet that stay down, continuous swing trajectories landing where they aimed."""
import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial import ConvexHull

from hybrid_dynamics.control.locomotion import LocomotionPlanner, tripod, wave
from hybrid_dynamics.control.locomotion.gait import GaitScheduler, wave_order
from hybrid_dynamics.control.locomotion.swing import convex_hull, margin, swing_point
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.robot import load_robot


@pytest.fixture(scope="module")
def robot():
    return load_robot("jethexa")


def standing_q(robot):
    q = robot.q_stand.copy()
    q[2] = 0.114
    return q


def test_tripod_alternates_paper_groups(robot):
    sched = GaitScheduler(tripod(robot.gait_groups, 1.3), t0=0.0)
    for t in np.linspace(0.01, 2.6, 80):
        stance = sched.stance(t)
        down = {leg for leg, s in stance.items() if s}
        assert down in ({"leg2", "leg3", "leg6"}, {"leg1", "leg4", "leg5"})
    assert {l for l, s in sched.stance(0.3).items() if not s} == {"leg1", "leg4", "leg5"}


@pytest.mark.parametrize("start", [0.004, 0.31, 0.6499, 0.65, 0.66, 0.97, 2.0])
def test_a_planner_steps_in_the_phase_of_the_clock_whenever_it_starts(robot, start):
    """Two controllers started at different instants on one clock (one process, or one
    process per node) plan the same stance at the same time once both step; before its first
    swing every foot is down (a slot begun less than 2 % of a swing ago is joined). Reference:
    the tripod's definition on the clock, leg group 1
    swinging in [k T, (k + 1/2) T), group 2 in [(k + 1/2) T, (k + 1) T), independent of
    the scheduler's arithmetic."""
    T = 1.3
    group1, group2 = (set(g) for g in robot.gait_groups)
    planner = LocomotionPlanner(robot, {"tripod_period": T})
    planner.reset(start, standing_q(robot))
    t0 = planner.scheduler.t0
    assert start - 0.02 * T / 2 - 1e-9 <= t0 < start + T / 2 + 1e-9    # the next half-period boundary
    assert abs(t0 / (T / 2) - round(t0 / (T / 2))) < 1e-9
    swung = set()
    for t in start + 0.005 * np.arange(int((4.0 - start) / 0.005)):
        up = {planner.leg_of[f] for f, r in planner.update(t).feet.items() if not r.stance}
        if t < t0 - 1e-9:
            assert up == set(), (t, up)
            continue
        u = (t / T) % 1.0
        if min(u, abs(u - 0.5), 1.0 - u) < 1e-6:                # at a boundary (k * 5 ms rounded):
            assert up in (group1, group2), (t, up)              # one tripod or the other, never both
        else:
            assert up == (group1 if u < 0.5 else group2), (t, up)
        swung |= up
    assert swung == group1 | group2                              # non-vacuous: both tripods stepped


def test_wave_order_is_a_crawl_for_four_legs():
    hips = {"leg1": (0.09, -0.05), "leg2": (0.09, 0.05), "leg5": (-0.09, -0.05), "leg6": (-0.09, 0.05)}
    assert wave_order(hips) == ["leg6", "leg2", "leg5", "leg1"]
    pattern = wave(hips, slot=0.35)
    sched = GaitScheduler(pattern, 0.0)
    for t in np.linspace(0.0, 2 * pattern.period, 400):
        assert sum(not s for s in sched.stance(t).values()) <= 1


def test_swing_point_is_continuous_and_lands(robot):
    p0, p1 = np.array([0.0, 0.0, 0.01]), np.array([0.06, 0.01, 0.01])
    pos0, vel0, _ = swing_point(p0, p1, 0.0, 0.5, 0.025)
    pos1, vel1, _ = swing_point(p0, p1, 1.0, 0.5, 0.025)
    mid, _, _ = swing_point(p0, p1, 0.5, 0.5, 0.025)
    assert np.allclose(pos0, p0) and np.allclose(pos1, p1)
    assert np.allclose(vel0, 0) and np.allclose(vel1, 0)
    assert mid[2] == pytest.approx(0.01 + 0.025)
    # velocity is the derivative of position
    h = 1e-6
    a, _, _ = swing_point(p0, p1, 0.3, 0.5, 0.025)
    b, v, _ = swing_point(p0, p1, 0.3 + h, 0.5, 0.025)
    assert np.allclose((b - a) / (h * 0.5), v, atol=1e-4)


def run_planner(robot, morphology, duration=7.0, speed=0.1, dt=0.005):
    planner = LocomotionPlanner(robot)
    planner.reset(0.0, standing_q(robot))
    mmap = MorphologyMap(robot, morphology) if morphology is not None else None
    if mmap is not None:
        planner.set_morphology(mmap, 0.0)
    planner.set_command(speed)
    refs = [planner.update(t) for t in np.arange(0.0, duration, dt)]
    return planner, refs


@pytest.mark.parametrize("damage", ["s1", "s2", "locked"])
def test_damaged_gait_keeps_the_com_inside_the_stance_polygon(robot, damage):
    morph = Morphology.healthy(robot)
    morph = {"s1": morph.remove_leg("leg3").remove_leg("leg4"),
             "s2": morph.remove_links("leg4", 2).remove_links("leg5", 2),
             "locked": morph.lock_joint("leg1_femur_joint", -0.25)}[damage]
    planner, refs = run_planner(robot, morph)
    assert planner.pattern.name == "wave"
    worst = np.inf
    for ref in refs:
        if ref.t < planner.scheduler.t0:       # the feet in the air at the change land first
            continue
        down = [r.position[:2] for f, r in ref.feet.items() if r.stance and planner.leg_of[f] in ref.walking_legs]
        assert len(down) >= 3
        worst = min(worst, margin(ref.com_position[:2], convex_hull(down)))
    assert worst > 0.005, worst
    # and it walks: at least half of the healthy command
    assert (refs[-1].base_position[0] - refs[-int(2 * planner.pattern.period / 0.005)].base_position[0]) / (refs[-1].t - refs[-int(2 * planner.pattern.period / 0.005)].t) > 0.05


def test_stance_feet_do_not_move_and_tripod_follows_cmd_vel(robot):
    planner, refs = run_planner(robot, None, duration=4.0, speed=0.1)
    assert planner.pattern.name == "tripod"
    for a, b in zip(refs, refs[1:]):
        for f in a.feet:
            if a.feet[f].stance and b.feet[f].stance:
                assert np.allclose(a.feet[f].position, b.feet[f].position)
    speed = (refs[-1].base_position[0] - refs[-200].base_position[0]) / (refs[-1].t - refs[-200].t)
    assert speed == pytest.approx(0.1, rel=0.02)
    # feet stay within reach: never more than the stride from their nominal place
    for ref in refs:
        R = pin.Quaternion(ref.base_orientation[3], *ref.base_orientation[:3]).toRotationMatrix()
        for f, r in ref.feet.items():
            rel = R.T @ (r.position - ref.base_position)
            assert np.linalg.norm(rel[:2] - planner.nominal[f][:2]) < 0.05


def test_three_legs_stand_still_with_com_centred(robot):
    morph = Morphology.healthy(robot).remove_leg("leg2").remove_leg("leg3").remove_leg("leg5")
    planner, refs = run_planner(robot, morph, duration=2.0)
    assert planner.pattern.name == "stand"
    down = [r.position[:2] for r in refs[-1].feet.values() if r.stance]
    assert len(down) == 3 and margin(refs[-1].com_position[:2], convex_hull(down)) > 0.01
    assert np.allclose(refs[-1].base_position[:2], refs[-40].base_position[:2])


def test_a_landing_foot_not_down_keeps_descending_until_measured_down(robot):
    """Legs lost while the other tripod swings: the swinging feet land within
    ``landing_time``. One measured still 8 mm up when its landing ends keeps descending at
    ``search_speed`` (down to ``search_depth``) instead of being declared in stance in the air;
    measured down, it is in stance at once; without measurements the landing ends on time."""
    planner = LocomotionPlanner(robot)
    planner.reset(0.0, standing_q(robot))
    planner.set_command(0.1)
    for t in np.arange(0.0, 0.3, 0.005):          # tripod {1, 4, 5} in the air at 0.3 s
        planner.update(t)
    t_loss = 0.3
    planner.set_morphology(MorphologyMap(robot, Morphology.healthy(robot).remove_leg("leg1").remove_leg("leg2")), t_loss)
    cfg, ground = planner.config, planner.ground
    landing = set(planner.landing)
    assert landing == {"leg4_foot", "leg5_foot"}
    late = t_loss + cfg.landing_time + 0.01
    up = {f: np.array([0.0, 0.0, ground + 0.008]) for f in landing}
    ref = planner.update(late, up)
    for f in landing:
        foot = ref.feet[f]
        assert not foot.stance and foot.velocity[2] == pytest.approx(-cfg.search_speed)
        assert foot.position[2] == pytest.approx(ground - cfg.search_speed * (late - t_loss - cfg.landing_time))
    down = dict(up, leg4_foot=np.array([0.0, 0.0, ground + 0.5 * cfg.touch_tolerance]))
    ref = planner.update(late + 0.005, down)
    assert ref.feet["leg4_foot"].stance and not ref.feet["leg5_foot"].stance
    # the search gives up at search_depth: the foot is then taken as down
    ref = planner.update(t_loss + cfg.landing_time + cfg.search_depth / cfg.search_speed + 0.01, down)
    assert ref.feet["leg5_foot"].stance


def test_feet_landing_with_no_foot_down_land_on_time(robot):
    """The tripod that carried the body lost (legs 2, 3, 6 while {1, 4, 5} swing): every foot
    left is landing, none is down. Measured 8 mm up when their landing ends, they do not
    search downwards (the estimate has no foot on the ground to place the body by: a foot
    measured high may be a body estimated high): they are in stance at once, where a foot
    landing beside one that is down keeps descending (the test above)."""
    planner, _, _ = lose_legs_while_walking(robot, ("leg2", "leg3", "leg6"), 0.3)
    cfg, ground = planner.config, planner.ground
    assert set(planner.landing) == {"leg1_foot", "leg4_foot", "leg5_foot"}
    late = 0.3 + cfg.landing_time + 0.01
    up = {f: np.array([0.0, 0.0, ground + 0.008]) for f in planner.landing}
    ref = planner.update(late, up)
    assert all(ref.feet[f].stance for f in up) and not planner.landing


def lose_legs_while_walking(robot, legs, t_loss):
    """A planner walking the tripod at 0.1 m/s that loses ``legs`` at ``t_loss``; with the
    footholds feet 4 and 5 were heading for before the loss."""
    planner = LocomotionPlanner(robot)
    planner.reset(0.0, standing_q(robot))
    planner.set_command(0.1)
    for t in np.arange(0.0, t_loss, 0.005):
        planner.update(t)
    old = {f: planner._foothold_now(f) for f in ("leg4_foot", "leg5_foot")}
    morphology = Morphology.healthy(robot)
    for leg in legs:
        morphology = morphology.remove_leg(leg)
    mmap = MorphologyMap(robot, morphology)
    planner.set_morphology(mmap, t_loss)
    return planner, mmap, old


def lose_front_pair_mid_swing(robot):
    """A planner walking the tripod that loses legs 1 and 2 at 0.3 s, while {1, 4, 5} swing."""
    return lose_legs_while_walking(robot, ("leg1", "leg2"), 0.3)


def test_feet_in_the_air_at_a_loss_land_on_the_new_gaits_footholds(robot):
    """Legs 1 and 2 lost while leg 4 swings: the CoM of what is left (Pinocchio) lies just
    behind the middle feet's line if leg 4 lands where the tripod had it; it lands on the
    wave gait's foothold (its leg turned forward to cover the lost front pair), which moves
    the front edge of the four feet's polygon (scipy's Qhull) away from the CoM."""
    planner, mmap, old = lose_front_pair_mid_swing(robot)
    q = mmap.expand_q(mmap.reduce_q(standing_q(robot)))
    q[:2] = planner.N[:2]
    com = pin.centerOfMass(mmap.model, mmap.model.createData(), q)[:2]
    stance = [planner.feet_pos[f] for f in ("leg3_foot", "leg6_foot")]

    def inside(points):
        hull = ConvexHull(np.array([p[:2] for p in points]))
        return float(np.min(-(hull.equations[:, :2] @ com + hull.equations[:, 2])))

    landed = [planner.landing[f][1] for f in ("leg4_foot", "leg5_foot")]
    assert landed[0][0] - old["leg4_foot"][0] > 0.03                       # turned forward
    assert np.allclose(landed[0][:2], planner._foothold_now("leg4_foot")[:2])
    assert inside(stance + landed) > inside(stance + list(old.values())) + 0.02


def until_a_foot_swings(planner, t):
    """Step the planner from ``t`` (5 ms steps) until a foot of the new gait is in the air:
    the time, the reference and the swinging feet."""
    while True:
        t += 0.005
        ref = planner.update(t)
        swinging = [f for f, x in ref.feet.items() if not x.stance and f not in planner.landing
                    and x.position[2] > planner.ground + 0.01]
        if swinging and t > planner.scheduler.t0:
            return t, ref, swinging


def test_a_swing_under_which_the_body_sinks_is_aborted_and_the_robot_stands(robot):
    """Wave gait on the four legs left: during a swing, a measured CoM less than
    ``abort_drop`` below its reference changes nothing; more than that, the swinging foot
    lands straight down where it is and every foot stays down from then on ('stand')."""
    planner, _, _ = lose_front_pair_mid_swing(robot)
    cfg = planner.config
    t, ref, swinging = until_a_foot_swings(planner, 0.3)
    com_ref = ref.com_position.copy()
    t += 0.005
    ref = planner.update(t, com_measured=com_ref - [0.0, 0.0, 0.5 * cfg.abort_drop])
    assert ref.gait == "wave" and not ref.feet[swinging[0]].stance
    t += 0.005
    ref = planner.update(t, com_measured=com_ref - [0.0, 0.0, 1.5 * cfg.abort_drop])
    assert ref.gait == "stand"
    p0, p1, _, t_land = planner.landing[swinging[0]]
    assert np.allclose(p1[:2], p0[:2]) and p1[2] == pytest.approx(planner.ground)
    assert t_land == pytest.approx(t + cfg.landing_time)
    for t in np.arange(t + 0.005, t + 2.0, 0.005):
        ref = planner.update(t)
    assert all(x.stance for x in ref.feet.values()) and ref.gait == "stand"
    assert ref.feet[swinging[0]].position[2] == pytest.approx(planner.ground)


def test_two_feet_left_sit_down_at_once(robot):
    """Four legs lost while a tripod swings (no standing posture: static feasibility says so
    for two feet): the planner sits down at the morphology change. The foot in the air lands
    within ``landing_time`` and both feet stay down (gait 'sit'); the CoM height reference
    descends at ``sit_speed`` (finite differences of the references) to the ground and then
    stays; its horizontal reference follows the measured CoM with zero horizontal velocity;
    the orientation is left free; a later morphology change does not stand it up again.
    Three feet left stand instead (test_three_legs_stand_still_with_com_centred)."""
    planner = LocomotionPlanner(robot)
    planner.reset(0.0, standing_q(robot))
    planner.set_command(0.1)
    for t in np.arange(0.0, 0.3, 0.005):
        ref = planner.update(t)
    assert not ref.feet["leg1_foot"].stance and ref.feet["leg2_foot"].stance
    cfg = planner.config
    morph = Morphology.healthy(robot)
    for leg in ("leg3", "leg4", "leg5", "leg6"):
        morph = morph.remove_leg(leg)
    t = 0.3
    planner.set_morphology(MorphologyMap(robot, morph), t)
    p0, p1, _, t_land = planner.landing["leg1_foot"]
    assert p1[2] == pytest.approx(planner.ground) and t_land == pytest.approx(t + cfg.landing_time)
    com = ref.com_position.copy()
    samples = []
    for k in range(1, 41):
        moved = com + [0.002 * k, -0.001 * k, -0.01]
        ref = planner.update(t + 0.005 * k, com_measured=moved)
        samples.append((t + 0.005 * k, ref.com_position.copy(), ref.base_linear_velocity.copy()))
        assert ref.gait == "sit" and set(ref.feet) == {"leg1_foot", "leg2_foot"}
        assert ref.base_orientation is None
        assert np.allclose(ref.com_position[:2], moved[:2])             # follows the measured CoM
    (ta, ca, va), (tb, cb, _) = samples[10], samples[30]
    assert (cb[2] - ca[2]) / (tb - ta) == pytest.approx(-cfg.sit_speed)
    assert np.allclose(va, [0.0, 0.0, -cfg.sit_speed])
    assert all(x.stance for x in ref.feet.values())
    planner.set_morphology(MorphologyMap(robot, morph.remove_leg("leg2")), t + 0.3)
    late = t + (com[2] - planner.ground) / cfg.sit_speed + 0.5
    ref = planner.update(late, com_measured=com)
    assert ref.gait == "sit" and ref.com_position[2] == pytest.approx(planner.ground)
    assert np.allclose(ref.base_linear_velocity, 0.0)


@pytest.mark.parametrize("drop, sink, cp_outside, sits", [
    (2.0, 3.0, 0.01, True),      # low, sinking, capture point 1 cm outside the feet down: falling
    (2.0, 3.0, -0.01, False),    # the same with the capture point 1 cm inside (the CoM as close to the edge)
    (2.0, 3.0, None, False),     # a dip straight down (no horizontal velocity): the legs catch it
    (2.0, 0.5, 0.01, False),     # low and outside but hardly sinking
    (0.5, 3.0, 0.01, False),     # sinking and outside but still near its reference height
])
def test_a_falling_body_sits_down_a_dipping_one_does_not(robot, drop, sink, cp_outside, sits):
    """Legs 1 and 2 lost while {1, 4, 5} swing; the feet down or landing are 3 and 6 (stance)
    and 4 and 5 (their landing targets). The measured CoM ``drop`` x ``fall_drop`` below its
    reference, sinking at ``sink`` x ``fall_sink``, moving horizontally towards the nearest
    edge of those feet's polygon (scipy's Qhull) so that its capture point
    x + v sqrt(h / g) lies ``cp_outside`` beyond it: only low, sinking and outside sits down
    (gait 'sit', orientation free, the descent from the measured height, not lifted first)."""
    planner, _, _ = lose_front_pair_mid_swing(robot)
    cfg = planner.config
    t = 0.3
    for t in np.arange(0.305, 0.33, 0.005):
        ref = planner.update(t)
    feet = [planner.feet_pos["leg3_foot"], planner.feet_pos["leg6_foot"]] + \
        [planner.landing[f][1] for f in ("leg4_foot", "leg5_foot")]
    hull = ConvexHull(np.array([p[:2] for p in feet]))
    com = ref.com_position - [0.0, 0.0, drop * cfg.fall_drop]
    inside = -(hull.equations[:, :2] @ com[:2] + hull.equations[:, 2])
    assert inside.min() > 0.02                                   # the CoM itself is inside
    edge = int(np.argmin(inside))
    omega = np.sqrt(9.81 / (com[2] - planner.ground))
    v = np.array([0.0, 0.0, -sink * cfg.fall_sink])
    if cp_outside is not None:
        v[:2] = hull.equations[edge, :2] * (inside[edge] + cp_outside) * omega
    t += 0.005
    ref = planner.update(t, com_measured=com, com_velocity=v)
    assert (ref.gait == "sit") == sits, (ref.gait, v)
    if sits:
        assert ref.base_orientation is None and ref.com_position[2] <= com[2] + 1e-12
        assert all(x.stance for f, x in ref.feet.items() if f not in planner.landing)
    else:
        assert ref.gait == "wave" and ref.base_orientation is not None


def test_a_swing_foot_sent_down_counts_before_the_body_is_taken_as_falling(robot):
    """Wave gait on the four legs left, a foot swinging: the measured CoM low and sinking with
    its capture point 1 cm outside the three feet down, towards the swinging foot, but inside
    once that foot is down where it is (scipy's Qhull). The swing is aborted (the foot lands
    straight down) and the robot stands: that foot counts, the body is not falling
    (checked before the abort, the campaign sat down 5 pair runs that stand upright)."""
    planner, _, _ = lose_front_pair_mid_swing(robot)
    cfg = planner.config
    t, ref, swinging = until_a_foot_swings(planner, 0.3)
    down = [x.position[:2] for f, x in ref.feet.items() if x.stance]
    foot = ref.feet[swinging[0]].position[:2]
    com = ref.com_position - [0.0, 0.0, 1.5 * max(cfg.abort_drop, cfg.fall_drop)]
    three = ConvexHull(np.array(down))
    inside = -(three.equations[:, :2] @ com[:2] + three.equations[:, 2])
    edge = int(np.argmax(three.equations[:, :2] @ (foot - com[:2])))   # the edge facing the swing foot
    omega = np.sqrt(9.81 / (com[2] - planner.ground))
    cp = com[:2] + three.equations[edge, :2] * (inside[edge] + 0.01)
    four = ConvexHull(np.array(down + [foot]))
    assert np.min(-(four.equations[:, :2] @ cp + four.equations[:, 2])) > 0.0
    v = np.append((cp - com[:2]) * omega, -3.0 * cfg.fall_sink)
    ref = planner.update(t + 0.005, com_measured=com, com_velocity=v)
    assert ref.gait == "stand" and ref.base_orientation is not None
    assert swinging[0] in planner.landing


def coxa_angle_reaching(robot, leg, foot):
    """The leg's first joint angle when its foot reaches ``foot`` (base frame, base at the
    origin, level): Pinocchio's forward kinematics inverted by damped least squares over the
    leg's joints, no joint limit applied."""
    model, data = robot.model, robot.model.createData()
    leg = next(l for l in robot.legs if l.name == leg)
    q = robot.q_stand.copy()
    q[:7] = (0, 0, 0, 0, 0, 0, 1)
    iq = [model.joints[j].idx_q for j in leg.joints]
    iv = [model.joints[j].idx_v for j in leg.joints]
    fid = model.getFrameId(leg.contact_frame)
    for _ in range(200):
        pin.framesForwardKinematics(model, data, q)
        err = foot - data.oMf[fid].translation
        if np.linalg.norm(err) < 1e-9:
            break
        J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[:3, iv]
        q[iq] += J.T @ np.linalg.solve(J @ J.T + 1e-8 * np.eye(3), err)
    assert np.linalg.norm(err) < 1e-6
    return float(q[iq[0]]), model.lowerPositionLimit[iq[0]], model.upperPositionLimit[iq[0]]



def walk_to_the_stop(robot, leg, foot, heading):
    """How far the body walks along ``heading`` (base frame, unit) before the leg's coxa,
    holding its foot at ``foot`` (base frame), reaches a stop: bisection on the angle
    :func:`coxa_angle_reaching` finds (inf if not within 0.12 m, more than a stride and a
    body shift)."""
    def outside(d):
        coxa, lo, hi = coxa_angle_reaching(robot, leg, foot - d * heading)
        return not lo <= coxa <= hi
    if not outside(0.12):
        return np.inf
    a, b = 0.0, 0.12
    for _ in range(40):
        a, b = (a, 0.5 * (a + b)) if outside(0.5 * (a + b)) else (0.5 * (a + b), b)
    return a


@pytest.mark.parametrize("t_loss, reordered", [(3.0, True), (3.0 + 2 * 1.3 / 3, False)])
def test_after_a_loss_a_leg_that_would_stand_onto_its_coxa_stop_steps_first(robot, t_loss, reordered):
    """Legs 5 and 6 lost while walking the tripod at 0.1 m/s (the campaign's phases 0 and 2).
    For each leg left, how far the body can walk before its coxa reaches a stop with the foot
    held where it stands (a landing foot at its target), by Pinocchio's kinematics inverted
    (:func:`walk_to_the_stop`), against the walk until that leg's first swing at the wave
    gait's speed. At phase 0, in the crawl order (4, 2, 3, 1), leg 1 would stand onto its stop
    3.7 cm of walk before its swing, and the body, held back, came down (campaign): the first
    foot to lift is that of the crawl order's start leaving the most walk to spare. At phase 2
    no leg runs short by more than the stability margin: the crawl order's own first lifts."""
    planner = LocomotionPlanner(robot)
    planner.reset(0.0, standing_q(robot))
    planner.set_command(0.1)
    for t in np.arange(0.0, t_loss, 0.005):
        planner.update(t)
    planner.set_morphology(MorphologyMap(robot, Morphology.healthy(robot).remove_leg("leg5").remove_leg("leg6")), t_loss)
    R = pin.utils.rpyToMatrix(0, 0, planner.N[2])
    base = np.array([*(planner.N[:2] + planner.offset), planner.height])
    pattern, walk = planner.pattern, []
    for leg in pattern.legs:
        frame = planner.frame_of[leg]
        foot = planner.landing[frame][1] if frame in planner.landing else planner.feet_pos[frame]
        walk.append(walk_to_the_stop(robot, leg, R.T @ (foot - base), np.array([1.0, 0.0, 0.0])))
    n, slot = len(walk), pattern.period / len(walk)
    speed = min(0.1, planner.config.max_stride / pattern.stance_time)
    spare = [min(walk[j] - speed * slot * ((j - first) % n + pattern.shift_fraction) for j in range(n)) for first in range(n)]
    assert (spare[0] < -planner.config.stability_margin) == reordered, spare
    t, lifted = t_loss, []
    while not lifted:            # the first swing of the new gait (feet landing from the old one aside)
        t += 0.005
        ref = planner.update(t)
        lifted = [leg for leg in planner.walking
                  if not ref.feet[planner.frame_of[leg]].stance and planner.frame_of[leg] not in planner.landing]
    first = int(np.argmax(spare)) if reordered else 0
    assert lifted == [pattern.legs[first]], (lifted, walk, spare)
    assert (first != 0) == reordered


def test_feet_in_the_air_at_a_loss_land_where_they_catch_the_body(robot):
    """Legs 1 and 3 lost while walking the tripod at 0.1 m/s (the campaign's phase 0: feet 4
    and 5 in the air, feet 2 and 6 down on the left). On the wave gait's footholds the four
    feet's polygon (scipy's Qhull) holds the CoM of what is left (Pinocchio) only 2.9 cm
    inside its diagonal 2-5, and in MuJoCo the body, carried by two feet until the others
    landed, crossed it and came down (campaign). Foot 5 lands turned forward about its hip,
    at the same distance from it, with its coxa within its stops (Pinocchio's kinematics
    inverted), and the polygon holds the CoM at least 2 cm further inside."""
    planner, mmap, gait = lose_legs_while_walking(robot, ("leg1", "leg3"), 3.0)
    assert set(planner.landing) == {"leg4_foot", "leg5_foot"}
    q = mmap.expand_q(mmap.reduce_q(standing_q(robot)))
    q[:2] = planner.N[:2] + planner.offset
    com = pin.centerOfMass(mmap.model, mmap.model.createData(), q)[:2]
    down = [planner.feet_pos[f][:2] for f in ("leg2_foot", "leg6_foot")]

    def inside(points):
        hull = ConvexHull(np.array([p[:2] for p in points]))
        return float(np.min(-(hull.equations[:, :2] @ com + hull.equations[:, 2])))

    landed = {f: planner.landing[f][1] for f in gait}
    assert inside(down + list(landed.values())) > inside(down + list(gait.values())) + 0.02
    assert landed["leg5_foot"][0] > gait["leg5_foot"][0] + 0.02             # turned forward
    base = np.array([*(planner.N[:2] + planner.offset), planner.height])
    R = pin.utils.rpyToMatrix(0, 0, planner.N[2])
    for f, p in landed.items():
        leg = planner.leg_of[f]
        hip = base[:2] + R[:2, :2] @ planner.hips[leg]
        assert abs(np.linalg.norm(p[:2] - hip) - np.linalg.norm(gait[f][:2] - hip)) < 1e-9
        coxa, lo, hi = coxa_angle_reaching(robot, leg, R.T @ (p - base))
        assert lo < coxa < hi, (f, coxa)

"""The balance over two feet's line (control/locomotion/line_balance.py): the law it rests on
(no contact force at the line has a moment about it) against Pinocchio's dynamics of the
damaged JetHexa, its inertia against Pinocchio's centroidal inertia, and the feedback closed on
a planar rigid body pushed at the line (integrated here), against the same body left alone."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control.locomotion.line_balance import GRAVITY, LineBalance, line_through
from hybrid_dynamics.control.locomotion.planar_landing import standing_with
from hybrid_dynamics.model.robot import load_robot

LEFT = ("leg1", "leg6")          # a diagonal: the line passes under the CoM


@pytest.fixture(scope="module")
def two_feet():
    robot = load_robot("jethexa")
    return (robot,) + standing_with(robot, LEFT)


def momentum_rate(model, data, q, v, tau, pushes):
    """CoM and the rate of the centroidal momentum (linear, angular about the CoM; world axes)
    of Pinocchio's forward dynamics with world forces ``f`` at world points ``p`` of joints
    ``j`` (``pushes``: (j, p, f))."""
    pin.forwardKinematics(model, data, q)
    fext = pin.StdVec_Force()
    for _ in range(model.njoints):
        fext.append(pin.Force.Zero())
    for j, p, f in pushes:                   # in the joint's frame, about its origin
        oMj = data.oMi[j]
        fext[j] += pin.Force(oMj.rotation.T @ f, oMj.rotation.T @ np.cross(p - oMj.translation, f))
    a = pin.aba(model, data, q, v, tau, fext)
    pin.computeCentroidalMomentumTimeVariation(model, data, q, v, a)
    return data.com[0].copy(), np.asarray(data.dhg.linear).copy(), np.asarray(data.dhg.angular).copy()


def test_no_force_of_the_feet_turns_the_body_about_their_line(two_feet):
    """Pinocchio's forward dynamics of the JetHexa (whole: the lost legs of the damaged
    model are massless, which its forward dynamics cannot take) on feet 1 and 6 only, with
    random joint torques, velocities and forces at the two feet (any direction: friction
    included): the rate of the angular momentum about the line through the feet is gravity's
    moment about it alone, ``m g e`` at the standing pose (``e`` the CoM's distance from the
    line: the module's law); a force at a point off the line changes it."""
    robot, _, q0 = two_feet
    model, data = robot.model, robot.model.createData()
    rng = np.random.default_rng(4)
    fids = [model.getFrameId(f"{leg}_foot") for leg in LEFT]
    m = pin.computeTotalMass(model)
    for trial in range(6):
        q = q0.copy()
        if trial >= 3:                        # any posture: the line through the feet in 3D
            q[7:] += rng.uniform(-0.2, 0.2, model.nq - 7)
            q[3:7] = pin.Quaternion(pin.exp3(rng.uniform(-0.2, 0.2, 3))).coeffs()
        v = rng.uniform(-0.5, 0.5, model.nv)
        tau = np.concatenate([np.zeros(6), rng.uniform(-2, 2, model.nv - 6)])
        pin.framesForwardKinematics(model, data, q)
        feet = [data.oMf[f].translation.copy() for f in fids]
        pushes = [(model.frames[f].parentJoint, p, rng.uniform(-5, 5, 3) + [0, 0, 8]) for f, p in zip(fids, feet)]
        com, dl, dk = momentum_rate(model, data, q, v, tau, pushes)
        u = (feet[1] - feet[0]) / np.linalg.norm(feet[1] - feet[0])
        dH = u @ (dk + np.cross(com - feet[0], dl))            # about the line through the feet
        gravity = u @ np.cross(com - feet[0], [0.0, 0.0, -m * GRAVITY])
        assert dH == pytest.approx(gravity, abs=1e-9)
        if trial < 3:                         # feet at one height: the horizontal line's law
            line = LineBalance.of([p[:2] for p in feet], m, np.eye(3))
            a = line.axis                     # about which the roll phi counts (= -u)
            assert a @ (dk + np.cross(com - feet[0], dl)) == pytest.approx(m * GRAVITY * line.offset(com), abs=1e-9)
            assert abs(line.offset(com)) < 0.02
        # a force at the base's origin, off the line, does turn the body about it
        _, dl2, dk2 = momentum_rate(model, data, q, v, tau, pushes + [(1, q[:3].copy(), np.array([0.0, 3.0, 3.0]))])
        assert abs(u @ (dk2 + np.cross(com - feet[0], dl2)) - gravity) > 1e-3


def line_of(two_feet):
    """(Pinocchio's data at the standing pose, with its centroidal inertia; the balance over
    the line of the two feet left, the mass and inertia those of the model left)."""
    _, mmap, q0 = two_feet
    model, data = mmap.model, mmap.model.createData()
    pin.ccrba(model, data, q0, np.zeros(model.nv))
    pin.framesForwardKinematics(model, data, q0)
    feet = [data.oMf[model.getFrameId(f"{leg}_foot")].translation[:2] for leg in LEFT]
    return data, LineBalance.of(feet, pin.computeTotalMass(model), data.Ig.inertia)


def test_its_inertia_is_pinocchios_about_the_line(two_feet):
    data, line = line_of(two_feet)
    a = line.axis
    assert line.inertia == pytest.approx(a @ data.Ig.inertia @ a, rel=1e-12)
    # the roll about the line, from a rotation about it after a yaw (the yaw is read as
    # Z-Y-X's, which a turn about a horizontal axis moves at higher order: 1e-5 rad at 0.4 rad)
    for phi in (-0.3, 0.05, 0.4):
        R = pin.exp3(phi * a) @ pin.exp3(np.array([0.0, 0.0, 0.7]))
        w = 1.3 * a + np.array([0.0, 0.0, 0.2])
        assert line.roll(R, w) == pytest.approx((phi, 1.3), abs=3e-5)


def planar(line, e0, de0, balance, seconds=1.5, dt=1e-4, roll=0.0):
    """A rigid body of the line's mass and inertia, its CoM ``e`` from the line at height
    ``h``, pushed at the line by ``(m u, m g)`` (``u`` from the balance, or 0) and tilted by
    ``phi`` about it (``I phi'' = e F_z - h F_s``: the moment of that force about the CoM).
    Returns the states (e, e', phi, phi') every step."""
    m, I, h = line.mass, line.inertia, 0.1
    x = np.array([e0, de0, 0.0, 0.0])
    n3 = np.append(line.normal, 0.0)
    out = []
    for _ in range(int(seconds / dt)):
        e, de, phi, dphi = x
        com = np.append(line.feet[0] + e * line.normal, h)
        R = pin.exp3(phi * line.axis)
        u = 0.0
        if balance:
            _, _, acc, _, _, _ = line.reference(com, de * n3, R, dphi * line.axis, h, 0.0, roll=roll)
            u = float(line.normal @ acc)
        Fs, Fz = m * u, m * GRAVITY
        x = x + dt * np.array([de, Fs / m, dphi, (e * Fz - h * Fs) / I])
        out.append(x.copy())
    return np.array(out)


def test_the_balance_brings_the_com_back_over_the_line_and_holds_the_roll_asked(two_feet):
    """The JetHexa's diagonal feet (mass and inertia of the model left): the CoM 3 mm off the
    line and moving away at 2 cm/s is brought back over it (under 0.1 mm, the body level to 0.5
    deg after 1.5 s, never more than 20 deg of roll on the way). The CoM held still 3 mm off
    the line instead (what the sit-down asks, ``u`` = 0), the body rolls past 30 deg within
    0.5 s (``I phi'' = m g e``). Asked for a roll of 0.17 rad, it holds it with the
    CoM over the line (a body turned about its CoM needs no moment)."""
    _, line = line_of(two_feet)
    kept = planar(line, 0.003, 0.02, True)
    assert abs(kept[-1, 0]) < 1e-4 and abs(kept[-1, 2]) < np.radians(0.5)
    assert np.abs(kept[:, 2]).max() < np.radians(20.0)
    held = planar(line, 0.003, 0.0, False, seconds=0.5)       # the CoM held where it is instead
    assert abs(held[-1, 0] - 0.003) < 1e-9 and held[-1, 2] > np.radians(30.0)
    turned = planar(line, 0.0, 0.0, True, roll=0.17)
    assert turned[-1, 2] == pytest.approx(0.17, abs=1e-3) and abs(turned[-1, 0]) < 1e-4


def test_line_through_measures_each_pair_of_feet_as_the_balance_does():
    """``line_through`` (every pair of candidate feet at once, the planner's landing search)
    against :meth:`LineBalance.offset` of the line through each pair, one pair at a time: the
    largest distance of the points from it, and +inf where a point is not between the two feet
    along the line with the margin to spare (projected by hand)."""
    rng = np.random.default_rng(3)
    first, second, points = rng.uniform(-0.2, 0.2, (7, 2)), rng.uniform(-0.2, 0.2, (5, 2)), rng.uniform(-0.05, 0.05, (2, 2))
    worst = line_through(first, second, points, 0.02)
    finite = 0
    for i, a in enumerate(first):
        for j, b in enumerate(second):
            line = LineBalance(np.array([a, b]), 1.0, 1.0)
            length = np.linalg.norm(b - a)
            along = [(p - a) @ (b - a) / length for p in points]
            expected = max(abs(line.offset(p)) for p in points) if all(0.02 <= s <= length - 0.02 for s in along) else np.inf
            assert worst[i, j] == pytest.approx(expected, abs=1e-12)
            finite += np.isfinite(expected)
    assert 0 < finite < worst.size                 # both cases met

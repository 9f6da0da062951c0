"""Each task of the whole-body QP on its own (control/tasks/), against its meaning computed
with Pinocchio, not with the controller's model update.

A task contributes ``1/2 x^T H x + g^T x`` to the cost over ``x = (dv, f)``; for a task
``w/2 ||e(x)||^2`` that is ``w/2 ||e(x)||^2`` up to a constant, so between two points

    cost(x1) - cost(x2) = w/2 (||e(x1)||^2 - ||e(x2)||^2).

The points are random states of the floating-base dynamics (joint accelerations and contact
forces drawn at random, the base acceleration solved from Pinocchio's CRBA / RNEA base rows),
where the tasks written on the forces (CoM, momentum) mean what they say. ``e`` is the task's
error computed here from the textbook quantities: classical frame accelerations, the CoM
acceleration, the centroidal momentum rate (``computeCentroidalMomentumTimeVariation``), the
sole wrench by the SE(3) action on each corner force, and the feedback laws of
control/references.py. Each task is checked on a state where its error is not zero.
"""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control import WholeBodyController
from hybrid_dynamics.control.references import OrientationTarget, References, Target
from hybrid_dynamics.model.robot import load_robot

LWA = pin.LOCAL_WORLD_ALIGNED


class Case:
    """A robot at a random state with a stance pattern, references for every task, the
    controller's QP layout for it, and Pinocchio data of its own."""

    def __init__(self, name, stance_of, seed, config=None):
        self.robot = r = load_robot(name)
        self.model = m = r.model
        self.rng = rng = np.random.default_rng(seed)
        q = r.q_stand.copy()
        q[:3] += 0.02 * rng.standard_normal(3)
        q[3:7] = pin.Quaternion(pin.exp3(0.1 * rng.standard_normal(3))).coeffs()
        q[7:] += 0.05 * rng.standard_normal(m.nq - 7)
        self.q, self.v = q, 0.3 * rng.standard_normal(m.nv)
        self.ctrl = WholeBodyController(r, config)
        frames = [c.frame for c in r.contacts]
        self.stance = {f: stance_of(k) for k, f in enumerate(frames)}
        self.refs = self._references(frames)
        self.ctrl.update(self.q, self.v, self.stance, self.refs)
        form = self.ctrl.formulation
        self.form, self.st = form, form.state
        self.lay = form.layout(form.stance_tuple(self.stance))
        self.d = m.createData()
        pin.forwardKinematics(m, self.d, q, self.v)
        pin.updateFramePlacements(m, self.d)
        pin.computeJointJacobians(m, self.d, q)
        self.M = pin.crba(m, self.d, q)
        self.M = np.triu(self.M) + np.triu(self.M, 1).T
        self.h = pin.rnea(m, m.createData(), q, self.v, np.zeros(m.nv))

    def _references(self, frames):
        rng, m, d = self.rng, self.model, self.model.createData()
        pin.framesForwardKinematics(m, d, self.q)
        com = pin.centerOfMass(m, d, self.q)
        r3 = lambda s: s * rng.standard_normal(3)
        swing = {f: Target(d.oMf[m.getFrameId(f)].translation + r3(0.02), r3(0.1), r3(1.0))
                 for f in frames if not self.stance[f]}
        joints = [n for n in self.robot.actuated_joints][:4]
        return References(com=Target(com + r3(0.02), r3(0.05), r3(0.5)),
                          base_position=Target(self.q[:3] + r3(0.02), r3(0.05), r3(0.5)),
                          base_orientation=OrientationTarget(
                              pin.Quaternion(pin.exp3(r3(0.1))).coeffs(), r3(0.2), r3(1.0)),
                          swing_feet=swing,
                          posture={n: float(rng.uniform(-0.3, 0.3)) for n in joints},
                          momentum=r3(0.5).tolist() + r3(0.1).tolist(),
                          forces={f: np.array([0.0, 0.0, 5.0]) + r3(1.0) for f in frames[:1] if self.stance[f]})

    # ------------------------------------------------------------------ the contacts, from Pinocchio
    def points(self, i):
        """(world position, 3 x nv world point Jacobian) of every point of contact ``i``."""
        c = self.form.contacts[i]
        fid = self.model.getFrameId(c.frame)
        oMf = self.d.oMf[fid]
        J = pin.getFrameJacobian(self.model, self.d, fid, LWA)
        out = []
        for p in np.asarray(c.points, float).reshape(-1, 3):
            r = oMf.rotation @ p
            out.append((oMf.translation + r, J[:3] - pin.skew(r) @ J[3:]))
        return out

    def random_point(self):
        """x = (dv, f) with random joint accelerations and stance forces, the base rows of
        M dv + h = sum J^T f solved for the base acceleration (CRBA, RNEA)."""
        lay, nv = self.lay, self.model.nv
        x = np.zeros(lay.nx)
        x[6:nv] = self.rng.standard_normal(nv - 6)
        wrench = np.zeros(nv)
        for i in lay.stance_contacts:
            sl = lay.force_slice(i)
            f = self.rng.standard_normal(sl.stop - sl.start) + np.tile([0, 0, 20.0], (sl.stop - sl.start) // 3)
            x[sl] = f
            for (_, J), fp in zip(self.points(i), f.reshape(-1, 3)):
                wrench += J.T @ fp
        rhs = wrench[:6] - self.h[:6] - self.M[:6, 6:] @ x[6:nv]
        x[:6] = np.linalg.solve(self.M[:6, :6], rhs)
        return x

    def forces(self, x, i):
        return x[self.lay.force_slice(i)].reshape(-1, 3)

    # ------------------------------------------------------------------ a task's cost
    def task(self, name):
        return next(t for t in self.form.tasks if t.name == name)

    def cost(self, task):
        lay = self.lay
        H, g = np.zeros((lay.nx, lay.nx)), np.zeros(lay.nx)
        assert task.active(self.refs)
        if task.constant_hessian:
            task.add_hessian(H, lay)
            task.add_gradient(g, self.st, lay, self.refs)
        else:
            task.add(H, g, self.st, lay, self.refs)
        return lambda x: 0.5 * x @ H @ x + g @ x

    def check(self, name, error, n_pairs=4, weight=None):
        """cost differences = w/2 differences of ||error||^2 over random point pairs; the
        error is not zero (the check is not vacuous)."""
        task = self.task(name)
        cost = self.cost(task)
        w = task.weight if weight is None else weight
        assert w > 0
        for _ in range(n_pairs):
            x1, x2 = self.random_point(), self.random_point()
            e1, e2 = error(x1), error(x2)
            assert np.linalg.norm(e1) > 1e-3 and np.linalg.norm(e2) > 1e-3
            lhs = cost(x1) - cost(x2)
            rhs = 0.5 * w * (e1 @ e1 - e2 @ e2)
            assert abs(lhs - rhs) <= 1e-8 * max(1.0, abs(cost(x1)), abs(cost(x2))), (name, lhs, rhs)

    # ------------------------------------------------------------------ Pinocchio's accelerations
    def accelerations(self, x):
        m = self.model
        d = m.createData()
        pin.forwardKinematics(m, d, self.q, self.v, x[:m.nv])
        pin.updateFramePlacements(m, d)
        return d

    def pd(self, task, target, position, velocity):
        return target.acceleration + task.kp * (target.position - position) + task.kd * (target.velocity - velocity)


def hexapod_tripod(k):
    return k % 2 == 0


@pytest.fixture(scope="module")
def jethexa():
    return Case("jethexa", hexapod_tripod, seed=3, config={"tasks": {"momentum": {"weight": 0.5, "kd": 3.0}}})


def test_com_task_is_the_com_acceleration_error(jethexa):
    c = jethexa
    task, t = c.task("com"), c.refs.com
    m = c.model
    d0 = m.createData()
    pin.centerOfMass(m, d0, c.q, c.v)
    a_des = c.pd(task, t, d0.com[0], d0.vcom[0])

    def error(x):
        d = m.createData()
        pin.centerOfMass(m, d, c.q, c.v, x[:m.nv])
        return d.acom[0] - a_des
    c.check("com", error)


def test_base_tasks_are_the_base_frame_acceleration_errors(jethexa):
    c = jethexa
    m = c.model
    oMb = c.d.oMi[1]
    R = oMb.rotation
    pos_task, t = c.task("base_position"), c.refs.base_position
    a_des = c.pd(pos_task, t, oMb.translation, R @ c.v[:3])

    def position_error(x):
        return _classical_origin_acceleration(c.accelerations(x), 1) - a_des
    c.check("base_position", position_error)

    ori_task, o = c.task("base_orientation"), c.refs.base_orientation
    w_des = o.angular_acceleration + ori_task.kp * pin.log3(o.rotation() @ R.T) \
        + ori_task.kd * (o.angular_velocity - R @ c.v[3:6])

    def orientation_error(x):
        d = c.accelerations(x)
        return R @ d.a[1].angular - w_des
    c.check("base_orientation", orientation_error)


def _classical_origin_acceleration(d, joint):
    """World classical acceleration of a joint frame's origin: R (a + w x v) (spatial ->
    classical), from Pinocchio's body-frame motion of the joint."""
    R = d.oMi[joint].rotation
    a, v = d.a[joint], d.v[joint]
    return R @ (a.linear + np.cross(v.angular, v.linear))


def test_posture_task_is_the_joint_acceleration_error(jethexa):
    c = jethexa
    task = c.task("posture")
    r, m = c.robot, c.model
    names = c.ctrl.formulation.joints.names
    q_ref = np.array([c.refs.posture.get(n, r.q_stand[m.joints[m.getJointId(n)].idx_q]) for n in names])
    qi = np.array([m.joints[m.getJointId(n)].idx_q for n in names])
    vi = np.array([m.joints[m.getJointId(n)].idx_v for n in names])
    a_des = task.kp * (q_ref - c.q[qi]) - task.kd * c.v[vi]
    c.check("posture", lambda x: x[vi] - a_des)


def test_swing_foot_task_is_the_swing_feet_acceleration_error(jethexa):
    c = jethexa
    task, m = c.task("swing_foot"), c.model
    swing = [(i, con) for i, con in enumerate(c.form.contacts) if not c.stance[con.frame]]
    assert swing
    targets = []
    for i, con in swing:
        fid = m.getFrameId(con.frame)
        vel = pin.getFrameVelocity(m, c.d, fid, LWA).linear
        targets.append((fid, c.pd(task, c.refs.swing_feet[con.frame], c.d.oMf[fid].translation, vel)))

    def error(x):
        d = c.accelerations(x)
        return np.concatenate([pin.getFrameClassicalAcceleration(m, d, fid, LWA).linear - a for fid, a in targets])
    c.check("swing_foot", error)


def test_momentum_task_is_the_centroidal_momentum_rate_error(jethexa):
    c = jethexa
    task, m = c.task("momentum"), c.model
    d0 = m.createData()
    pin.computeCentroidalMomentum(m, d0, c.q, c.v)
    dh_des = -task.kd * (d0.hg.vector - np.asarray(c.refs.momentum))

    def error(x):
        d = m.createData()
        pin.computeCentroidalMomentumTimeVariation(m, d, c.q, c.v, x[:m.nv])
        return d.dhg.vector - dh_des
    c.check("momentum", error)


def test_force_regularization_is_the_distance_to_the_weight_share(jethexa):
    c = jethexa
    task = c.task("force_regularization")
    lay = c.lay
    stance = lay.stance_contacts
    n_points = sum(len(c.points(i)) for i in stance)
    share = pin.computeTotalMass(c.model) * 9.81 / n_points
    W = np.sqrt(task.W2)

    def error(x):
        rows = []
        for i in stance:
            frame = c.form.contacts[i].frame
            ref = c.refs.forces.get(frame, np.array([0.0, 0.0, share]))
            rows.append(((c.forces(x, i) - ref) * W).ravel())
        return np.concatenate(rows)
    assert task.eps == 0.0
    c.check("force_regularization", error)


@pytest.fixture(scope="module")
def talos():
    config = {"tasks": {"force_regularization": {"weight": 1e-3, "surface_wrench_weights": [1, 1, 1e-3, 2, 2, 2],
                                                 "hessian_regularization": 0.0}}}
    return Case("talos", lambda k: k == 0, seed=5, config=config)


def test_sole_wrench_regularization_and_swinging_sole(talos):
    """A sole (four corner points): the wrench form on the stance sole (SE(3) action of each
    corner force to the sole frame), the 6-D swing task on the other sole (its angular
    velocity damped)."""
    c = talos
    m = c.model
    task = c.task("force_regularization")
    stance = c.lay.stance_contacts
    assert len(stance) == 1 and c.form.contacts[stance[0]].kind == "surface"
    i = stance[0]
    con = c.form.contacts[i]
    oMs = c.d.oMf[m.getFrameId(con.frame)]
    n_points = len(c.points(i))
    share = pin.computeTotalMass(c.model) * 9.81 / n_points

    def wrench_error(x):
        total = pin.Force.Zero()
        for (p, _), f in zip(c.points(i), c.forces(x, i)):
            total += oMs.actInv(pin.SE3(np.eye(3), p)).act(pin.Force(f, np.zeros(3)))
        ref = np.array([0, 0, n_points * share, 0, 0, 0])
        return task.wrench_weights * (total.vector - ref)
    c.check("force_regularization", wrench_error)

    swing_task = c.task("swing_foot")
    j, sole = next((j, s) for j, s in enumerate(c.form.contacts) if not c.stance[s.frame])
    fid = m.getFrameId(sole.frame)
    vel = pin.getFrameVelocity(m, c.d, fid, LWA)
    a_des = c.pd(swing_task, c.refs.swing_feet[sole.frame], c.d.oMf[fid].translation, vel.linear)

    def swing_error(x):
        d = c.accelerations(x)
        a = pin.getFrameClassicalAcceleration(m, d, fid, LWA)
        return np.concatenate([a.linear - a_des, a.angular + swing_task.kd * vel.angular])
    c.check("swing_foot", swing_error)

"""The formulation's one compiled call per cycle (control/assembly.py) against the sum of the
tasks' and constraints' own methods (``add_hessian``, ``add_gradient``, ``add``, ``setup``,
``fill``: each held to Pinocchio in test_qp_tasks.py and test_qp_constraints.py), written into
fresh arrays here: the same ``H, g, A, b, C, l, u`` to 1e-12. States: the benchmark's walking
workload (swing feet, torque limits) of solo12, jethexa, TALOS (soles: the wrench
regularisation is the call's, the sole Jacobians stay the model update's), hybrid_biped (closed
chains), a jethexa with legs 4 and 5 damaged, and references the walk does not set (base
position, posture, force references, momentum)."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control import WholeBodyController
from hybrid_dynamics.control import tsid_peer as tp
from hybrid_dynamics.control import assembly
from hybrid_dynamics.control.references import References, Target
from hybrid_dynamics.control.solvers import dual_active_set as das
from hybrid_dynamics.control.tsid_peer import workloads as wl
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.robot import load_robot

TOL = 1e-12


def by_terms(form, lay, refs):
    """The QP of the cycle the model update holds, from every active task's and constraint's
    own methods."""
    st = form.state
    H, g = lay.H_fix.copy(), np.zeros(lay.nx)
    A, b_lo, b_hi = np.zeros_like(lay.A), np.zeros(lay.neq), np.zeros(lay.neq)
    C, l, u = np.zeros_like(lay.C), np.zeros(lay.nin), np.zeros(lay.nin)
    for task in form.tasks:
        if task.active(refs):
            task.add(H, g, st, lay, refs)
    for con, s in lay.eq_blocks:
        con.setup(A[s], b_lo[s], b_hi[s], lay)
        con.fill(A[s], b_lo[s], b_hi[s], st, lay)
    for con, s in lay.in_blocks:
        con.setup(C[s], l[s], u[s], lay)
        con.fill(C[s], l[s], u[s], st, lay)
    return H, g, A, b_lo, b_hi, C, l, u


def same(a, b):
    assert a.shape == b.shape
    assert np.abs(a - b).max() <= TOL * max(1.0, np.abs(b).max()), np.abs(a - b).max()


def check(ctrl, samples, refs_of=tp.references_for):
    """Each sample's cycle built by the controller, then by the methods; returns how much the
    gradient varied (the check is not vacuous)."""
    form = ctrl.formulation
    frames = [c.frame for c in form.contacts]
    gs = []
    for s in samples:
        refs = refs_of(s)
        lay = form.build(s.q, s.v, form.stance_tuple(dict(zip(frames, s.stance))), refs)
        ours = (lay.H, lay.g, lay.A, lay.b_lo, lay.b_hi, lay.C, lay.l, lay.u)
        # the methods' Jf: the stance points' Jacobians stacked (the call wrote lay.Jf)
        Jf = np.concatenate([form.state.Jp[i] for i in lay.included]) if lay.nf else lay.Jf
        same(lay.Jf, Jf)
        for a, b in zip(ours, by_terms(form, lay, refs)):
            same(a, b)
        assert np.abs(lay.C).max() > 0 and np.abs(lay.A).max() > 0
        gs.append(lay.g[:lay.n].copy())
    spread = max(np.abs(a - gs[0]).max() for a in gs[1:])
    assert spread > 1e-3
    return spread


@pytest.mark.parametrize("name", ["solo12", "jethexa", "talos", "hybrid_biped"])
def test_one_call_equals_the_methods_on_the_walk(name):
    robot = load_robot(name)
    samples = wl.workload(robot, "walk", 80)[::8]
    ctrl = WholeBodyController(robot, dict(tp.SAME_PROBLEM, solver="goldfarb_idnani",
                                           limits={"torque_scale": 0.3}))
    assert any(not all(s.stance) for s in samples)
    check(ctrl, samples)


def test_one_call_on_a_damaged_robot_and_every_reference():
    robot = load_robot("jethexa")
    mmap = MorphologyMap(robot, Morphology.healthy(robot).remove_links("leg4", 2).remove_links("leg5", 2))
    ctrl = WholeBodyController(robot, {"solver": "goldfarb_idnani", "tasks": {"momentum": {"weight": 1.0}}},
                               morphology_map=mmap)
    rng = np.random.default_rng(3)
    frames = [c.frame for c in ctrl.formulation.contacts]
    joints = list(ctrl.joint_names)[:3]

    def refs_of(s):
        r = tp.references_for(s)
        r.base_position = Target(s.q[:3] + 0.01 * rng.standard_normal(3), rng.standard_normal(3))
        r.posture = {j: float(rng.uniform(-0.3, 0.3)) for j in joints}
        r.momentum = rng.standard_normal(6)
        r.forces = {frames[0]: np.array([0.0, 0.0, 3.0])}
        r.swing_feet = {f: Target(rng.standard_normal(3)) for f in frames[1::2]}
        return r

    q0 = mmap.reduce_q(robot.q_stand)
    samples = []
    for k in range(6):
        q = q0.copy()
        q[7:] += 0.05 * rng.standard_normal(len(q) - 7)
        q[3:7] = pin.Quaternion(pin.exp3(0.05 * rng.standard_normal(3))).coeffs()
        stance = tuple(bool(x) for x in rng.integers(0, 2, len(frames)))
        samples.append(wl.Sample(q, 0.3 * rng.standard_normal(len(mmap.v_index)),
                                 (np.zeros(3), np.zeros(3), np.zeros(3)), stance))
    check(ctrl, samples, refs_of)


def test_one_call_when_the_references_set_change_from_cycle_to_cycle(monkeypatch):
    """One controller whose references name a posture, force references, a base position or
    none of them in turn (a plan per set of fields, ``References.presence``; on a rigid robot
    the plan keeps the model update's arrays in its call's arguments): each cycle the methods'
    QP to 1e-12; once every plan is made, no task is asked whether it is active."""
    robot = load_robot("solo12")
    samples = wl.workload(robot, "walk", 80)[::4]
    ctrl = WholeBodyController(robot, dict(tp.SAME_PROBLEM, solver="goldfarb_idnani"))
    form = ctrl.formulation
    frames = [c.frame for c in form.contacts]
    joints = list(ctrl.joint_names)[:4]
    rng = np.random.default_rng(5)
    kinds = iter(range(10 ** 6))

    def refs_of(s):
        r, k = tp.references_for(s), next(kinds) % 4
        if k in (1, 3):
            r.posture = {j: float(rng.uniform(-0.2, 0.2)) for j in joints}
        if k in (2, 3):
            r.forces = {f: np.array([0.0, 0.0, 20.0]) for f in frames[:2]}
        if k == 3:
            r.base_position = Target(s.q[:3] + 0.01 * rng.standard_normal(3))
        return r

    assert form.state.same_arrays
    check(ctrl, samples, refs_of)
    assert max(len(lay.plans) for lay in form.layouts.values()) == 4
    asked = []
    for task in form.tasks:
        monkeypatch.setattr(task, "active", lambda refs, t=task, f=task.active: asked.append(t) or f(refs))
    for s in samples:
        out = ctrl.update(s.q, s.v, dict(zip(frames, s.stance)), refs_of(s))
        assert not out.fallback
    assert not asked
    # a damaged robot's (sliced) and a closed chain's model updates make new arrays: no kept ones
    mmap = MorphologyMap(load_robot("jethexa"), Morphology.healthy(load_robot("jethexa")).remove_links("leg4", 2))
    assert not WholeBodyController(load_robot("jethexa"), {}, morphology_map=mmap).formulation.state.same_arrays
    assert not WholeBodyController(load_robot("hybrid_biped"), {}).formulation.state.same_arrays


def test_soles_wrench_form_with_and_without_force_references_is_one_call():
    """TALOS's soles: the wrench regularisation (its Hessian moves with the soles' rotations)
    is written by the call, with force references on a sole and on none in turn (the gradient
    made each cycle, or kept per plan): the methods' QP to 1e-12 each cycle, and every plan
    covers its whole cycle (nothing added after the call)."""
    robot = load_robot("talos")
    samples = wl.workload(robot, "walk", 120)[::6]
    ctrl = WholeBodyController(robot, dict(tp.SAME_PROBLEM, solver="goldfarb_idnani",
                                           limits={"torque_scale": 0.3}))
    form = ctrl.formulation
    frames = [c.frame for c in form.contacts]
    assert any(c.kind == "surface" for c in form.contacts)
    kinds = iter(range(10 ** 6))

    def refs_of(s):
        r = tp.references_for(s)
        if next(kinds) % 2:
            r.forces = {frames[0]: np.array([5.0, -3.0, 400.0])}
        return r

    check(ctrl, samples, refs_of)
    plans = [p for lay in form.layouts.values() for p in lay.plans.values()]
    assert len(plans) >= 2 and all(p.whole and p.wrench is not None for p in plans)
    assert any(p.wrench_forces for p in plans) and not all(p.wrench_forces for p in plans)


@pytest.mark.parametrize("name", ["solo12", "jethexa", "talos", "hybrid_biped"])
def test_fill_solve_and_torques_in_one_call(name):
    """The goldfarb_idnani backend's cycle in one call (assembly.fill_and_solve): the problem
    it wrote is the methods' (1e-12), its solution the dual active-set kernel's on that problem
    from the backend's warm start (1e-9; the biped's sole internal forces rest on the 1e-8
    regularisation, so another start may end 1e-6 away on them), its torques the actuated rows
    of the dynamics at that solution (numpy, 1e-12); every sample took that path and some had
    an active inequality. TALOS and hybrid_biped: the soles' wrench regularisation in the call;
    the biped's closed chains."""
    robot = load_robot(name)
    samples = wl.workload(robot, "walk", 400)
    config = dict(tp.SAME_PROBLEM, solver="goldfarb_idnani")
    config["limits"] = {"torque_scale": tp.binding_torque_scale(robot, samples, config)}   # the bench's
    ctrl = WholeBodyController(robot, config)
    form = ctrl.formulation
    frames = [c.frame for c in form.contacts]
    active = 0
    for s in samples[::10]:
        refs = tp.references_for(s)
        warm = {key: work[0].copy() for key, work in ctrl.solver._work.items()}
        out = ctrl.update(s.q, s.v, dict(zip(frames, s.stance)), refs)
        lay, x = ctrl.last_problem, ctrl.last_solution
        assert not out.fallback and lay.fill_call is not None
        for a, b in zip((lay.H, lay.g, lay.A, lay.b_lo, lay.b_hi, lay.C, lay.l, lay.u), by_terms(form, lay, refs)):
            same(a, b)
        n = lay.nx
        x_ref, sides = np.empty(n), np.zeros(n, np.intp)
        k = das.solve(lay.H, lay.g, lay.A, lay.b, lay.C, lay.l, lay.u, warm.get(lay.key, np.zeros(0, np.intp)),
                      1000, 1e-9, x_ref,
                      sides, np.full((n, n), np.nan), np.zeros((n, n)))[0]
        assert np.abs(x - x_ref).max() <= 1e-9 * max(1.0, np.abs(x_ref).max())
        active += k > 0
        st, dv, f = form.state, x[:lay.n], x[lay.n:]
        tau = st.M[lay.act] @ dv + st.h[lay.act] - lay.Jf[:, lay.act].T @ f
        assert np.abs(out.tau_vector - tau).max() <= 1e-12 * max(1.0, np.abs(tau).max())
    assert active > 0


@pytest.mark.parametrize("name", ["solo12", "talos"])
def test_entry_point_call_is_the_dispatchers(name):
    """The cycle calls the compiled entry points (no type check): every argument it passed is
    of the signature's types (the dispatcher, given them again, raises otherwise) and the
    dispatcher's call writes the same numbers to the bit (TALOS: with the soles' arrays)."""
    robot = load_robot(name)
    samples = wl.workload(robot, "walk", 200)[::20]
    ctrl = WholeBodyController(robot, dict(tp.SAME_PROBLEM, solver="goldfarb_idnani"))
    frames = [c.frame for c in ctrl.formulation.contacts]
    swinging = 0
    for s in samples:
        ctrl.update(s.q, s.v, dict(zip(frames, s.stance)), tp.references_for(s))
        lay = ctrl.last_problem
        kernel, args = lay.fill_call
        assert kernel is assembly.FILL_AND_SOLVE
        ours = [a.copy() for a in (lay.H, lay.g, lay.A, lay.b_lo, lay.b_hi, lay.C, lay.l, lay.u, lay.Jf)]
        lay.H[...] = lay.g[...] = np.nan        # rewritten whole (the rows: their blocks only)
        assembly.fill_cycle(*args)
        for a, b in zip(ours, (lay.H, lay.g, lay.A, lay.b_lo, lay.b_hi, lay.C, lay.l, lay.u, lay.Jf)):
            assert np.array_equal(a, b) and np.isfinite(a).all()
        assert np.abs(ours[1]).max() > 0 and np.abs(ours[5]).max() > 0
        swinging += len(args[-4]) > 0            # swing feet in the call
    assert swinging > 0


def test_reference_vectors_are_float_arrays_whenever_set():
    """What the compiled cycle reads unchecked: a target's vectors and an orientation's rates
    become float (3,) arrays when set after construction too; any other shape is refused."""
    t = Target([1, 2, 3])
    t.velocity = [4, 5, 6]
    t.acceleration = np.array([[1], [2], [3]], np.int32)
    o = References.hold().base_orientation
    o.angular_velocity = (1, 0, 0)
    for a in (t.position, t.velocity, t.acceleration, o.angular_velocity, o.angular_acceleration):
        assert a.dtype == np.float64 and a.shape == (3,)
    assert t.velocity.tolist() == [4.0, 5.0, 6.0] and o.angular_velocity.tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError):
        t.position = np.zeros((2, 3))
    with pytest.raises(ValueError):
        o.angular_acceleration = [1.0, 2.0]

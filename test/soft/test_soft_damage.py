"""Soft modules on a damaged robot: a lost leg takes its pad with it (soft/leaves.py,
``SoftLeaves.for_morphology``; control/soft_model_update.py) and the QP goes on.

The references know nothing of morphology maps: the damaged robot is Pinocchio's parse of the
URDF with the lost links deleted from the XML (dynamics/reference.py) and a manifest keeping
only the pads of the surviving links, then

* fixed base: the Euler-Lagrange equations by automatic differentiation of the kinetic and
  potential energy of every quadrature point of that robot (no recursion), 1e-9 relative;
* floating base: one soft recursion of that whole robot [Pustina 2024, Alg. 3] (every rigid
  body a module, the pads on their tibias), 1e-9 relative, and the QP's output on it: every
  row of ``M dv + h = S^T tau + J_c^T f`` of the damaged soft robot.

Coordinates are matched by joint name and pad name, never by position.

In MuJoCo (the library loop of ``demo --library``, scenario ``jethexa_soft_damage``): legs 3
and 4 lost at t = 3 s while walking on the pads; the plant's pads of those legs lose their mass
and contacts with the legs, the controller drops them and walks on the four left.
"""
import numpy as np
import pinocchio as pin
import pytest
import yaml

from hybrid_dynamics.sim.plant import Plant
from hybrid_dynamics.sim.runner import ScenarioRun
from hybrid_dynamics.sim.scenario import load_scenario

from hybrid_dynamics.control.controller import WholeBodyController
from hybrid_dynamics.control.soft_model_update import SoftModelUpdate
from hybrid_dynamics.dynamics.reference import damaged_urdf
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.robot import load_robot
from hybrid_dynamics.soft.coordinates import coordinate_names
from hybrid_dynamics.soft.kinematics import MaterialPoints
from hybrid_dynamics.soft.lagrange import LagrangeReference
from hybrid_dynamics.soft.leaves import SoftLeaves
from test_soft_leaves import MANIFEST, rel, whole_tree
from test_soft_qp import hold

LOSSES = {"legs 3 and 4": lambda m: m.remove_leg("leg3").remove_leg("leg4"),
          "leg 2 loses its tibia, leg 5 a locked femur": lambda m: m.remove_links("leg2", 3)
          .lock_joint("leg5_femur_joint", -0.4)}


def reference_robot(robot, morphology, tmp_path, base):
    """The damaged robot written out: URDF without the lost links, the pads of the links left."""
    urdf = tmp_path / "damaged.urdf"
    urdf.write_text(damaged_urdf(robot, morphology))
    doc = yaml.safe_load(MANIFEST.read_text())
    frames = {f.name for f in pin.buildModelFromXML(urdf.read_text()).frames}
    doc.update(urdf=str(urdf), name="damaged")
    for key in ("mjcf", "gait_groups"):
        doc.pop(key, None)
    doc["contacts"] = [c for c in doc["contacts"] if c["frame"] in frames]
    doc["soft_modules"] = [s for s in doc["soft_modules"] if s["frame"] in frames]
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_robot(path, base=base)


def permutation(robot, mmap, leaves, ref):
    """Positions in the controller's v (morphology's rigid coordinates, then the surviving
    pads') of each coordinate of the reference robot's v (its joints, then its pads')."""
    m, names = robot.model, mmap.model.names
    ours = [names[j] for j in mmap.active_joints for _ in range(m.joints[j].nv)]
    mine = {n: i for i, n in enumerate(ours) if n != "root_joint"}
    base = [i for i, n in enumerate(ours) if n == "root_joint"]
    theirs = [ref.model.names[j] for j in range(1, ref.model.njoints)]
    rigid = base + [mine[n] for n in theirs if n != "root_joint"]
    soft = {n: k for k, n in enumerate(np.array(coordinate_names(robot))[leaves.kept])}
    return np.array(rigid + [len(ours) + soft[n] for n in coordinate_names(ref)])


def controller_state(rng, robot, mmap, leaves):
    q_full = robot.q_stand + 0.3 * rng.standard_normal(robot.nq) * np.r_[np.zeros(7), np.ones(robot.nq - 7)] \
        if robot.floating else robot.q_stand + 0.3 * rng.standard_normal(robot.nq)
    if robot.floating:
        q_full[:3] = rng.standard_normal(3)
        q_full[3:7] = pin.Quaternion(pin.exp3(rng.standard_normal(3))).coeffs()
    q = np.concatenate([mmap.reduce_q(q_full), 0.2 * rng.standard_normal(leaves.ns)])
    return q, rng.standard_normal(mmap.nv + leaves.ns)


def reference_state(robot, mmap, leaves, ref, q, v, perm):
    """The same state in the reference robot's coordinates (q by joint name, v permuted)."""
    q_full = mmap.expand_q(q[:mmap.nq])
    m = robot.model
    q_ref = [q_full[m.joints[m.getJointId(ref.model.names[j])].idx_q:][:ref.model.joints[j].nq]
             for j in range(1, ref.model.njoints)]
    return np.concatenate(q_ref + [q[mmap.nq:][perm[ref.nv:] - mmap.nv]]), v[perm]


@pytest.mark.parametrize("loss", LOSSES)
def test_fixed_base_damaged_model_equals_euler_lagrange(loss, tmp_path):
    robot = load_robot(MANIFEST, base="fixed")
    morph = LOSSES[loss](Morphology.healthy(robot))
    mmap = MorphologyMap(robot, morph)
    ref = reference_robot(robot, morph, tmp_path, "fixed")
    state = SoftModelUpdate(robot, [], SoftLeaves(robot), "dynamic", mmap)
    leaves = state.leaves
    assert len(leaves.roots) == len(ref.soft_modules) < len(robot.soft_modules)    # a pad left with its leg
    tree = whole_tree(ref)
    el = LagrangeReference(tree)
    perm = permutation(robot, mmap, leaves, ref)
    rng = np.random.default_rng(4)
    for _ in range(2):
        q, v = controller_state(rng, robot, mmap, leaves)
        state.update(q, v)
        q_ref, v_ref = reference_state(robot, mmap, leaves, ref, q, v, perm)
        M_el, Q_el = el(q_ref, v_ref, np.zeros(len(perm)))
        s = tree.elastic_force(q_ref, v_ref)                      # visco-elastic forces are outside EL
        assert np.abs(s).max() > 0
        M, h = state.M[np.ix_(perm, perm)], state.h[perm]
        print(f"{loss}: n = {len(perm)}, |M - M_EL| {rel(M, M_el):.1e}, |h - h_EL| {rel(h - s, Q_el):.1e}")
        assert rel(M, M_el) < 1e-9 and rel(h - s, Q_el) < 1e-9


@pytest.fixture(scope="module")
def floating(tmp_path_factory):
    robot = load_robot("jethexa_soft")
    healthy = SoftLeaves(robot)
    return robot, healthy, tmp_path_factory


@pytest.mark.parametrize("loss", LOSSES)
def test_floating_base_damaged_model_and_qp_equal_the_whole_robot_recursion(loss, floating):
    robot, healthy, factory = floating
    morph = LOSSES[loss](Morphology.healthy(robot))
    mmap = MorphologyMap(robot, morph)
    ref = reference_robot(robot, morph, factory.mktemp("ref"), None)
    tree = whole_tree(ref)
    ctrl = WholeBodyController(robot, {"soft": {"condensation": "dynamic", "horizon": 0.0, "machine_code": False}})
    ctrl.set_morphology(mmap)
    leaves = ctrl.active_leaves
    assert healthy.ns - leaves.ns == 3 * (len(robot.soft_modules) - len(ref.soft_modules)) > 0
    perm = permutation(robot, mmap, leaves, ref)
    rng = np.random.default_rng(9)
    q, v = controller_state(rng, robot, mmap, leaves)
    q_ref, v_ref = reference_state(robot, mmap, leaves, ref, q, v, perm)
    state = ctrl.formulation.state
    state.update(q, v)
    M_ref, h_ref = tree.mid(q_ref, v_ref)
    assert rel(state.M[np.ix_(perm, perm)], M_ref) < 1e-9 and rel(state.h[perm], h_ref) < 1e-9
    # the QP on the damaged robot, standing on the feet left (joints near the standing pose,
    # pads bent, small velocities): every row of the reference's M dv + h = S^T tau + J_c^T f
    # (base and pad rows without torque), the contact material points not accelerating
    q[:mmap.nq] = mmap.reduce_q(robot.q_stand)
    q[7:mmap.nq] += 0.02 * rng.standard_normal(mmap.nq - 7)
    q[mmap.nq:] *= 0.01
    v *= 0.02
    q_ref, v_ref = reference_state(robot, mmap, leaves, ref, q, v, perm)
    out = ctrl.update(q, v, {c.frame: True for c in mmap.contacts}, hold(robot, mmap.expand_q(q[:mmap.nq])))
    assert not out.fallback and set(out.contact_forces) == {c.frame for c in ref.contacts}
    points = MaterialPoints(tree, [(s.name, s.contact) for s in ref.soft_modules])
    _, J, bias = points(q_ref, v_ref)
    f = np.concatenate([out.contact_forces[s.frame] for s in ref.soft_modules])
    tau_gen = tree.inverse_dynamics(q_ref, v_ref, out.dv[perm])         # M dv + h (+ K q + D qdot)
    residual = tau_gen - J.T @ f
    idx = [ref.model.joints[ref.model.getJointId(n)].idx_v for n in ctrl.joint_names]
    residual[idx] -= out.tau_vector
    scale = np.abs(tau_gen).max()
    acc = np.abs(J @ out.dv[perm] + bias).max()
    print(f"{loss}: QP {out.status}, max row residual {np.abs(residual).max() / scale:.1e}, contact acc {acc:.1e}")
    assert min(f[2] for f in out.contact_forces.values()) > 1.0 and np.abs(out.dv[mmap.nv:]).max() > 1e-3
    assert np.abs(residual).max() < 1e-8 * scale and acc < 1e-6 * max(1.0, np.abs(out.dv).max())


def test_walks_on_after_losing_a_leg_pair_with_their_pads_in_mujoco(tmp_path):
    sc = load_scenario("jethexa_soft_damage")
    sc.controller = {"soft": {"machine_code": False}}          # no C compile in the test
    run = ScenarioRun(sc, tmp_path, duration=5.5, bag=False, plots=False, progress=False)
    forces = []                                                 # MuJoCo's contact forces, per sample
    read = Plant.joint_states

    def recorded(plant):
        forces.append((plant.time, plant.contact_forces()))
        return read(plant)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Plant, "joint_states", recorded)
        s = run.run()
    print({k: s[k] for k in ("speed_before_damage_mps", "speed_after_damage_mps", "max_abs_roll_deg",
                             "max_abs_pitch_deg", "min_base_height_m", "fallbacks", "infeasible")})
    assert s["completed"] and not s["fell"] and s["damage_at_s"] == pytest.approx(3.0, abs=0.01)
    assert s["fallbacks"] == 0 and s["infeasible"] == 0
    assert s["speed_after_damage_mps"] > 0.04 and max(s["max_abs_roll_deg"], s["max_abs_pitch_deg"]) < 10.0
    lost = ("leg3_foot", "leg4_foot")
    leaves = run.pipeline.control.controller.active_leaves
    assert set(leaves.roots) == {f"leg{k}_foot" for k in (1, 2, 5, 6)} and leaves.ns == 12
    m = run.plant.model
    for s_ in run.robot.soft_modules:                           # the plant dropped the lost pads
        mass = sum(m.body(f"{s_.name}_{part}").mass[0] for part in ("root", "tip"))
        assert (mass == 0.0) == (s_.root in lost), s_.name
    before = [f for t, f in forces if 1.0 < t < 3.0]
    after = [f for t, f in forces if t > 3.1]
    assert all(any(f.get(frame, np.zeros(3))[2] > 1.0 for f in before) for frame in lost)   # they carried load
    assert not any(frame in f for f in after for frame in lost)

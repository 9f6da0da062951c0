"""Morphology changes in the engines: index maps, state transfer, bad input, restore."""
import numpy as np
import pytest

from hybrid_dynamics.dynamics.denoc import DeNOC
from hybrid_dynamics.dynamics.hamel import HamelDirect, HamelFast
from hybrid_dynamics.errors import InputError
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.robot import load_robot

ENGINES = [HamelDirect, HamelFast, DeNOC]


@pytest.fixture(scope="module")
def jethexa():
    return load_robot("jethexa")


@pytest.mark.parametrize("cls", ENGINES)
def test_index_maps_and_transfer_follow_morphology_map(jethexa, cls):
    r = jethexa
    healthy = Morphology.healthy(r)
    steps = [healthy.remove_leg("leg3"),
             healthy.remove_leg("leg3").remove_links("leg5", 2),
             healthy.remove_leg("leg3").remove_links("leg5", 2).lock_joint("leg1_femur_joint", -0.3),
             healthy.remove_leg("leg3").lock_joint("leg1_femur_joint", -0.3),
             healthy]
    e = cls(r)
    old_map = MorphologyMap(r, healthy)
    rng = np.random.default_rng(0)
    q = r.q_stand.copy()
    q[7:] += rng.uniform(-0.2, 0.2, r.nq - 7)
    v = rng.normal(size=r.nv)
    for m in steps:
        new_map = MorphologyMap(r, m)
        out = e.set_morphology(m, q, v)
        for kind in ("q", "v"):
            expected = old_map.index_map(new_map, kind)
            got = out.q_map if kind == "q" else out.v_map
            assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
        q_exp, v_exp = old_map.transfer(new_map, q, v)
        assert np.array_equal(out.q, q_exp) and np.array_equal(out.v, v_exp)
        assert np.array_equal(e.q_index, new_map.q_index) and np.array_equal(e.v_index, new_map.v_index)
        assert e.joint_names == new_map.joint_names
        q, v, old_map = out.q, out.v, new_map


@pytest.mark.parametrize("cls", ENGINES)
def test_bad_morphologies_leave_the_engine_intact(jethexa, cls):
    r = jethexa
    s1 = Morphology.healthy(r).remove_leg("leg3").remove_leg("leg4")
    e = cls(r, s1)
    M = e.mass_matrix(np.concatenate([[0, 0, 0, 0, 0, 0, 1], np.full(e.nq - 7, 0.1)]))
    none_left = Morphology(links_kept=tuple((leg, 0) for leg, _ in s1.leg_sizes), leg_sizes=s1.leg_sizes)
    with pytest.raises(InputError, match="no legs"):
        e.set_morphology(none_left)
    too_many = Morphology(links_kept=(("leg1", 7),) + s1.links_kept[1:], leg_sizes=s1.leg_sizes)
    with pytest.raises(InputError, match="leg1.*out of range"):
        e.set_morphology(too_many)
    unknown = Morphology(links_kept=s1.links_kept, leg_sizes=s1.leg_sizes, locked=(("hip_x", 0.1),))
    with pytest.raises(InputError, match="hip_x"):
        e.set_morphology(unknown)
    lost = Morphology(links_kept=s1.links_kept, leg_sizes=s1.leg_sizes, locked=(("leg3_femur_joint", 0.1),))
    with pytest.raises(InputError, match="leg3_femur_joint"):
        e.set_morphology(lost)
    assert e.morphology == s1 and e.nv == 18
    q = np.concatenate([[0, 0, 0, 0, 0, 0, 1], np.full(e.nq - 7, 0.1)])
    assert np.array_equal(e.mass_matrix(q), M)


def test_morphology_operations_reject_bad_input(jethexa):
    m = Morphology.healthy(jethexa)
    with pytest.raises(InputError, match="out of range"):
        m.remove_links("leg2", 4)
    with pytest.raises(InputError, match="unknown joint 'knee'"):
        m.lock_joint("knee", 0.2)
    with pytest.raises(InputError, match="no legs"):
        for i in range(1, 7):
            m = m.remove_leg(f"leg{i}")


@pytest.mark.parametrize("cls", ENGINES)
def test_non_unit_quaternion_is_named(jethexa, cls):
    e = cls(jethexa)
    q = jethexa.q_stand.copy()
    q[3:7] = (0, 0, 0.5, 0.5)
    with pytest.raises(InputError, match="quaternion"):
        e.mass_matrix(q)


@pytest.mark.parametrize("cls", ENGINES)
def test_restore_gives_back_the_healthy_model(jethexa, cls):
    r = jethexa
    e = cls(r)
    rng = np.random.default_rng(2)
    q = r.q_stand.copy()
    q[7:] += rng.uniform(-0.3, 0.3, r.nq - 7)
    v = rng.normal(size=r.nv)
    h0 = e.nle(q, v)
    damaged = Morphology.healthy(r).remove_leg("leg2").lock_joint("leg6_coxa_joint", 0.2)
    out = e.set_morphology(damaged, q, v)
    back = e.set_morphology(damaged.restore(), out.q, out.v)
    assert e.nv == r.nv
    q2 = back.q.copy()
    q2[7:] = q[7:]                                  # restored joints start at stand / lock angle
    assert back.q[6 + 4] == r.q_stand[6 + 4]        # leg2 coxa back at the standing pose
    assert back.q[7 + 15] == pytest.approx(0.2)     # leg6 coxa at its lock angle
    assert np.allclose(e.nle(q2, v), h0, atol=1e-12)


@pytest.mark.parametrize("cls", ENGINES)
def test_reused_structures_follow_the_lock_angle(jethexa, cls):
    """A structure seen before (same removed links and locked joints) is reused across
    changes, but a different lock angle must give that angle's dynamics: checked against
    Pinocchio on MorphologyMap's model ([Farghdani 2025] Algorithm 1) at each angle, and the cached
    index maps cannot be written through."""
    import pinocchio as pin
    r = jethexa
    healthy = Morphology.healthy(r)
    e = cls(r)
    rng = np.random.default_rng(5)
    for angle in (0.4, -0.25, 0.4, -0.25):
        m = healthy.remove_links("leg3", 2).lock_joint("leg1_femur_joint", angle)
        e.set_morphology(healthy)
        out = e.set_morphology(m)
        mmap = MorphologyMap(r, m)
        q = mmap.reduce_q(r.q_stand.copy())
        q[7:] += rng.uniform(-0.3, 0.3, len(q) - 7)
        data = mmap.model.createData()
        M_ref = pin.crba(mmap.model, data, mmap.expand_q(q))
        M_ref = np.triu(M_ref) + np.triu(M_ref, 1).T
        M_ref = M_ref[np.ix_(mmap.v_index, mmap.v_index)]
        M = e.mass_matrix(q)
        assert np.max(np.abs(M - M_ref)) < 1e-9 * np.max(np.abs(M_ref))
        with pytest.raises(ValueError):
            out.v_map[0][0] = 3

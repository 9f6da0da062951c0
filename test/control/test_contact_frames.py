"""The contact frames' terms of the controller's model update (one compiled call after
``computeAllTerms``: kernels.contact_frames) against Pinocchio's own frame functions at the
same state: ``getFrameJacobian`` and ``getFrameClassicalAcceleration`` (LOCAL_WORLD_ALIGNED)
and ``updateFramePlacement``, sliced for a damaged robot and projected on the independent
coordinates for a closed chain as before (1e-12). States: the benchmark's walking workload
(swing feet moving) of jethexa, solo12, TALOS (soles) and hybrid_biped (closed chains), and a
random state of jethexa with legs 4 and 5 damaged."""
import numpy as np
import pinocchio as pin
import pytest

from hybrid_dynamics.control import WholeBodyController
from hybrid_dynamics.control.tsid_peer import workloads as wl
from hybrid_dynamics.model.morphology import Morphology, MorphologyMap
from hybrid_dynamics.model.robot import load_robot

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
TOL = 1e-12


def pinocchio_terms(st, i):
    """Frame i's Jacobian and drift by Pinocchio, in the controller's coordinates, and its
    placement (the model update has run at the state)."""
    m, d = st.model, st.data
    q = st.mmap.expand_q(st.q) if st.sliced else st.q
    v = st.v_full
    d2 = m.createData()
    pin.computeAllTerms(m, d2, q, v)
    fid = st.contacts[i].frame_id
    J = pin.getFrameJacobian(m, d2, fid, LWA)
    a = pin.getFrameClassicalAcceleration(m, d2, fid, LWA).vector
    M = pin.updateFramePlacement(m, d2, fid)
    if st.projection is not None:
        J, a = J @ st.G, a + J @ st.d
    elif st.sliced:
        J = J[:, st.v_index]
    return J, a, M


def check(st):
    moved = 0.0
    for i in range(len(st.contacts)):
        J, a, M = pinocchio_terms(st, i)
        assert np.abs(st.J6[i] - J).max() <= TOL * max(1.0, np.abs(J).max())
        assert np.abs(st.drift[i] - a).max() <= TOL * max(1.0, np.abs(a).max())
        assert np.abs(st.frame_rotation(i) - M.rotation).max() <= TOL
        assert np.abs(st.frame_position(i) - M.translation).max() <= TOL
        c = st.contacts[i]
        points = M.translation + c.points @ M.rotation.T
        assert np.abs(st.point_positions(i) - points).max() <= TOL
        moved = max(moved, np.abs(a).max())
    return moved


@pytest.mark.parametrize("name", ["jethexa", "solo12", "talos", "hybrid_biped"])
def test_contact_frames_equal_pinocchio(name):
    robot = load_robot(name)
    st = WholeBodyController(robot, {"solver": "daqp"}).formulation.state
    drift = 0.0
    for s in wl.workload(robot, "walk", 60)[::15]:
        st.update(s.q, s.v)
        drift = max(drift, check(st))
    assert drift > 1e-3                   # the feet accelerate: the drift was compared


def test_contact_frames_of_a_damaged_robot():
    robot = load_robot("jethexa")
    s2 = Morphology.healthy(robot).remove_links("leg4", 2).remove_links("leg5", 2)
    mmap = MorphologyMap(robot, s2)
    ctrl = WholeBodyController(robot, {"solver": "daqp"})
    ctrl.set_morphology(mmap)
    st = ctrl.formulation.state
    assert st.sliced
    rng = np.random.default_rng(4)
    q = mmap.reduce_q(pin.integrate(robot.model, robot.q_stand, 0.1 * rng.standard_normal(robot.model.nv)))
    st.update(q, rng.standard_normal(mmap.nv))
    assert check(st) > 1e-3


def test_contact_frames_entry_point_takes_strided_float64_and_refuses_other_dtypes():
    """The model update calls the kernel's compiled entry point (no dispatcher): a strided
    float64 ``v`` gives Pinocchio's terms; a float32 ``v`` (which Pinocchio itself accepts) is
    refused with a TypeError, as the dispatcher refused it, not read as float64 bytes."""
    robot = load_robot("solo12")
    st = WholeBodyController(robot, {"solver": "daqp"}).formulation.state
    s = wl.workload(robot, "walk", 60)[30]
    v_strided = np.repeat(s.v, 2)[::2]
    assert not v_strided.flags.c_contiguous
    st.update(s.q, v_strided)
    assert check(st) > 1e-3
    with pytest.raises(TypeError):
        st.update(s.q, s.v.astype(np.float32))

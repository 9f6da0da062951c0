"""Tendon and pressure actuation A(q) [Pustina 2024, Sec. 7.1]: the tendon length against the
closed-form chords of a constant-curvature rod and A against central differences of that
closed form; the chamber volume of an LVP gripper (stretch + source, Table 5) against its
closed form and A against its central differences; A u entering forward dynamics (the work of
a constant tension equals the change of energy of an undamped rod) and statics; bad
actuator blocks rejected naming the tendon or chamber and the field."""
import math

import numpy as np
import pytest
import yaml

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.soft import bodies as B
from hybrid_dynamics.soft.actuation import Actuation, Chamber, Tendon
from hybrid_dynamics.soft.joints import FixedJoint
from hybrid_dynamics.soft.lvp import LVPBody
from hybrid_dynamics.soft.module import Module
from hybrid_dynamics.soft.motion import Statics, simulate
from hybrid_dynamics.soft.spec import load_soft
from hybrid_dynamics.soft.tree import SoftTree

L, RADIUS, OFFSET, VIA = 0.3, 0.02, 0.015, 7


def rod(damping_time=0.1):
    body = B.constant_curvature(L, RADIUS, 1070.0, planar=False, elongation=True, youngs_modulus=1.07e6,
                                poisson=0.5, damping_time=damping_time, n_axial=4)
    return SoftTree([Module("rod", FixedJoint(), body)])


def tendons(n=3):
    angles = 2 * np.pi * np.arange(n) / n
    return [Tendon(f"t{k}", tuple(("rod", (OFFSET * np.cos(a), OFFSET * np.sin(a), s))
                                  for s in np.linspace(0, L, VIA))) for k, a in enumerate(angles)]


def chord_length(q, angle):
    """A constant strain (kx, ky, 0, 0, 0, 1 + e) turns each section about an axis at
    c = w x v / |w|^2 from the backbone: a material line at offset r lies on a circle of radius
    |rho - r.n| (n = w x e3 / |w|) and consecutive via points subtend |w| ds."""
    kx, ky, e = q[0] / L, q[1] / L, q[2] / L
    kappa = math.hypot(kx, ky)
    rho = (1 + e) / kappa
    r_n = OFFSET * (math.cos(angle) * ky - math.sin(angle) * kx) / kappa
    ds = L / (VIA - 1)
    return (VIA - 1) * 2 * abs(rho - r_n) * math.sin(kappa * ds / 2)


def test_tendon_matrix_equals_differences_of_the_closed_form_length():
    tree = rod()
    act = Actuation(tree, tendons())
    rng = np.random.default_rng(3)
    for _ in range(4):
        q = np.concatenate([rng.uniform(0.2, 0.8, 2) * rng.choice([-1, 1], 2), rng.uniform(-0.02, 0.02, 1)])
        y, J, _ = act.coordinates(q, np.zeros(3))
        lengths = np.array([chord_length(q, 2 * np.pi * k / 3) for k in range(3)])
        assert np.allclose(y, L - lengths, atol=1e-12, rtol=0)          # contraction from the rest length
        h = 1e-6
        dl = np.array([[(chord_length(q + h * np.eye(3)[j], 2 * np.pi * k / 3)
                         - chord_length(q - h * np.eye(3)[j], 2 * np.pi * k / 3)) / (2 * h) for k in range(3)]
                       for j in range(3)])
        A = act.matrix(q)
        assert np.abs(A).max() > 1e-3
        assert np.allclose(A, -dl, atol=1e-8, rtol=0), np.abs(A + dl).max()
        assert np.allclose(J, A.T)


def test_constant_tension_work_equals_energy_change_of_undamped_rod():
    tree = rod(damping_time=0.0)
    act = Actuation(tree, tendons())
    u = np.array([4.0, 0.0, 1.0])
    q0, v0 = np.zeros(3), np.zeros(3)
    _, qs, vs = simulate(tree, q0, v0, 0.05, tau=lambda t, q, v: act.force(q, u), samples=6)
    energy = [sum(tree.energy(q, v)) for q, v in zip(qs, vs)]
    work = [u @ act.coordinates(q, v)[0] for q, v in zip(qs, vs)]
    assert abs(energy[-1] - energy[0]) > 1e-5, "the tendons did no work"
    assert np.allclose(np.array(energy) - energy[0], np.array(work) - work[0], rtol=0, atol=1e-9 * max(map(abs, energy)))


def test_statics_balances_gravity_elasticity_and_tendons():
    tree = rod()
    act = Actuation(tree, tendons())
    u = np.array([6.0, 1.0, 0.5])
    q = Statics(tree, range(3), act).solve(np.zeros(3), u=u)
    assert np.abs(q[:2]).max() > 1e-3
    _, h = tree.mid(q, np.zeros(3))
    assert np.allclose(h, act.force(q, u), atol=1e-9)


def gripper_tree():
    body = LVPBody(0.06, 0.02, 960.0, ["stretch_tip", "source"], 22.2e6, 0.05, n_axial=4, relax_face=True)
    return SoftTree([Module("gripper", FixedJoint(), body)])


def cavity_volume(q, length=0.06, wall=0.004):
    """The material tube inside the wall keeps its volume; the source opens pi c(z) at height z,
    c = (z/L)^2 q11, up to the stretched tip z = L + q10."""
    return math.pi * wall ** 2 * length + math.pi * q[1] * (length + q[0]) ** 3 / (3 * length ** 2)


def test_chamber_matrix_equals_differences_of_the_closed_form_volume():
    tree = gripper_tree()
    act = Actuation(tree, chambers=[Chamber("cavity", "gripper", 0.004, 0.0, 0.06)])
    rng = np.random.default_rng(5)
    for _ in range(4):
        q = np.array([rng.uniform(-0.004, 0.004), rng.uniform(0.0, 4e-5)])
        y, _, _ = act.coordinates(q, np.zeros(2))
        assert math.isclose(y[0], cavity_volume(q) - cavity_volume(np.zeros(2)), rel_tol=1e-7, abs_tol=1e-15)
        h = np.array([1e-6, 1e-9])
        dV = np.array([(cavity_volume(q + h[j] * np.eye(2)[j]) - cavity_volume(q - h[j] * np.eye(2)[j])) / (2 * h[j])
                       for j in range(2)])
        A = act.matrix(q)[:, 0]
        assert abs(A[1]) > 1e-3
        assert np.allclose(A, dV, rtol=1e-6, atol=0), (A, dV)


def test_surfaces_reading_puts_the_top_on_the_stretch_and_the_wall_on_the_source():
    """[Pustina 2024, Sec. 7.2]'s pressure "projected ... using the top and lateral surface
    area", read per primitive: the stretch coordinate takes the pressure's work on the chamber's
    top, its deformed area ``pi r^2 / (1 + u'(L))`` (the stretch scales sections by
    ``1 / sqrt(1 + u')``, u'(L) = 2 q10 / L; the source keeps each section's area), the source
    coordinate its work on the lateral wall, which is all of ``dV/dq11`` (the caps' points move
    in their planes). The volume reading's stretch column is zero at rest: the LVP stretch keeps
    the chamber's volume."""
    tree = gripper_tree()
    act = Actuation(tree, chambers=[Chamber("cavity", "gripper", 0.004, 0.0, 0.06, reading="surfaces")])
    volume = Actuation(tree, chambers=[Chamber("cavity", "gripper", 0.004, 0.0, 0.06)])
    rng = np.random.default_rng(7)
    for _ in range(4):
        q = np.array([rng.uniform(-0.004, 0.004), rng.uniform(0.0, 4e-5)])
        top = math.pi * 0.004 ** 2 / (1 + 2 * q[0] / 0.06)
        wall = math.pi * (0.06 + q[0]) ** 3 / (3 * 0.06 ** 2)
        assert np.allclose(act.matrix(q)[:, 0], [top, wall], rtol=1e-7, atol=0), (act.matrix(q)[:, 0], top, wall)
    assert abs(volume.matrix(np.zeros(2))[0, 0]) < 1e-9 * math.pi * 0.004 ** 2
    link = B.ModalBody(0.3, 0.02, 1070.0, 1, 1e6, 0.0)            # a map symbolic in x, but no primitives
    with pytest.raises(ValueError, match="surfaces reading takes the primitives"):
        Actuation(SoftTree([Module("link", FixedJoint(), link)]),
                  chambers=[Chamber("c", "link", 0.004, 0.0, 0.3, reading="surfaces")])


VALID = {
    "modules": [{"name": "rod", "body": {"type": "cc", "length": 0.3, "radius": 0.02, "density": 1070,
                                         "elongation": True, "youngs_modulus": 1.0e6, "n_axial": 4}},
                {"name": "gripper", "parent": "rod",
                 "body": {"type": "lvp", "length": 0.06, "radius": 0.02, "density": 960,
                          "primitives": ["stretch_tip", "source"], "relax_face": True}}],
    "tendons": [{"name": "t0", "points": [["rod", [0.015, 0, 0]], ["rod", [0.015, 0, 0.15]], ["rod", [0.015, 0, 0.3]]]}],
    "chambers": [{"name": "cavity", "module": "gripper", "radius": 0.004, "start": 0.0, "end": 0.06}],
}


def write(tmp_path, doc):
    path = tmp_path / "soft.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_declared_actuators_build_the_matrix(tmp_path):
    tree, act = load_soft(write(tmp_path, VALID))
    assert act.names == ["t0", "cavity"] and act.matrix(np.zeros(tree.nq)).shape == (tree.nv, 2)


def mutate(keys, value):
    doc = yaml.safe_load(yaml.safe_dump(VALID))
    node = doc
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    return doc


BAD = [
    (("tendons", 0, "points"), [["rod", [0.015, 0, 0]]], "t0", "tendons.points"),
    (("tendons", 0, "points", 1, 0), "knee", "t0", "tendons.points"),
    (("tendons", 0, "points", 1, 1), [0.015, math.nan, 0.1], "t0", "tendons.points"),
    (("tendons", 0, "route"), "outer", "t0", "tendons.route"),
    (("chambers", 0, "module"), "hand", "cavity", "chambers.module"),
    (("chambers", 0, "radius"), -0.004, "cavity", "chambers.radius"),
    (("chambers", 0, "end"), 0.0, "cavity", "chambers.end"),
    (("chambers", 0, "start"), math.nan, "cavity", "chambers.start"),
    (("chambers", 0, "module"), "rod", "rod", "chambers"),
    (("chambers", 0, "name"), "t0", "t0", "chambers.name"),
    (("chambers", 0, "reading"), "surface", "cavity", "chambers.reading"),
]


@pytest.mark.parametrize("keys,value,named,field", BAD)
def test_bad_actuator_rejected_naming_it_and_the_field(tmp_path, keys, value, named, field):
    path = write(tmp_path, mutate(keys, value))
    with pytest.raises(InputError) as err:
        load_soft(path)
    message = str(err.value)
    assert named in message and str(path) in message and f"field {field}" in message.replace("'", ""), message

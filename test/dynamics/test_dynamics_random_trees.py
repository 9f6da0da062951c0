"""Property-based: random floating trees (revolute and prismatic joints, arbitrary axes,
placements and full inertia tensors, branching anywhere), random damage (removed links,
locked joints), every engine against Pinocchio on an independently parsed damaged URDF."""
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid_dynamics.dynamics.validation import validate
from hybrid_dynamics.model.description import Description, Inertial, Joint, Link, Pose, rpy_to_matrix
from hybrid_dynamics.model.morphology import Morphology
from hybrid_dynamics.model.robot import load_robot

unit = st.floats(-1.0, 1.0, allow_nan=False)
angle = st.floats(-math.pi, math.pi, allow_nan=False)


@st.composite
def inertials(draw):
    m = draw(st.floats(0.05, 3.0))
    a, b, c = (draw(st.floats(0.02, 0.4)) for _ in range(3))
    principal = np.array([b * b + c * c, a * a + c * c, a * a + b * b]) * m / 12
    R = rpy_to_matrix([draw(angle), draw(angle), draw(angle)])
    I = R @ np.diag(principal) @ R.T
    com = tuple(0.2 * draw(unit) for _ in range(3))
    return Inertial(m, com, (I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]))


@st.composite
def trees(draw):
    n = draw(st.integers(1, 9))
    d = Description(name="random_tree", base="base")
    d.add_link(Link("base", draw(inertials())))
    parents = [None] + [draw(st.integers(0, i - 1)) if i > 1 else 0 for i in range(1, n + 1)]
    for i in range(1, n + 1):
        d.add_link(Link(f"l{i}", draw(inertials())))
        axis = np.array([draw(unit), draw(unit), draw(unit)]) + np.array([0, 0, 1e-3])
        axis /= np.linalg.norm(axis)
        kind = draw(st.sampled_from(["revolute", "revolute", "revolute", "prismatic"]))
        parent = "base" if parents[i] == 0 else f"l{parents[i]}"
        origin = Pose(tuple(0.3 * draw(unit) for _ in range(3)), (draw(angle), draw(angle), draw(angle)))
        lim = (-0.3, 0.3) if kind == "prismatic" else (-2.5, 2.5)
        d.add_joint(Joint(f"j{i}", kind, parent, f"l{i}", origin, tuple(axis), *lim, 10.0, 5.0))
    leaves = [i for i in range(1, n + 1) if i not in parents[1:]]
    for i in leaves:
        d.add_link(Link(f"foot{i}"))
        d.add_joint(Joint(f"foot{i}_joint", "fixed", f"l{i}", f"foot{i}",
                          Pose(tuple(0.2 * draw(unit) for _ in range(3)), (draw(angle), 0.0, 0.0))))
    return d


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees(), data=st.data())
def test_random_trees_and_damage(tmp_path, tree, data):
    path = tmp_path / "random_tree.urdf"
    path.write_text(tree.to_urdf())
    robot = load_robot(path)
    m = Morphology.healthy(robot)
    legs = [leg for leg in robot.legs if leg.joints]
    keep = data.draw(st.integers(0, len(legs) - 1))
    for i, leg in enumerate(legs):
        if i != keep and data.draw(st.booleans()):
            m = m.remove_links(leg.name, data.draw(st.integers(1, len(leg.joints))))
    gone = set()
    for leg in robot.legs:
        for j in leg.joints[m.kept[leg.name]:]:
            gone.update(robot.model.subtrees[j])
    alive = [robot.model.names[j] for j in range(2, robot.model.njoints) if j not in gone]
    for name in data.draw(st.lists(st.sampled_from(alive), max_size=2, unique=True)) if alive else []:
        m = m.lock_joint(name, data.draw(st.floats(-0.25, 0.25)))
    errors = validate(robot, m, samples=2, seed=data.draw(st.integers(0, 1000)))
    bad = {k: v for k, v in errors.items() if not v <= 1e-9}
    assert not bad, (m.describe(), bad)

"""Soft-module YAML: a valid file builds the tree it describes; every kind of bad input is
an InputError naming the file, the module and the field, and nothing is returned."""
import math

import numpy as np
import pytest
import yaml

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.soft.spec import load_soft_tree

VALID = {
    "gravity": [0, 0, -9.81],
    "modules": [
        {"name": "hip", "joint": {"type": "revolute", "axis": [0, 1, 0]},
         "body": {"type": "rigid", "mass": 1.0, "com": [0, 0, 0.05], "inertia": [0.002, 0.002, 0.001]}},
        {"name": "pad", "parent": "hip", "joint": {"type": "fixed", "xyz": [0, 0, 0.1]},
         "body": {"type": "cc", "length": 0.05, "radius": 0.01, "density": 1100, "elongation": True,
                  "youngs_modulus": 1e6, "n_axial": 3}},
    ],
}


PCS = {"type": "pcs", "length": 0.05, "radius": 0.01, "density": 1100, "segments": 2, "strains": [0, 1],
       "youngs_modulus": 1e6}


def write(tmp_path, doc):
    path = tmp_path / "soft.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_valid_file_builds_the_tree(tmp_path):
    tree = load_soft_tree(write(tmp_path, VALID))
    assert [m.name for m in tree.modules] == ["hip", "pad"] and tree.nv == 1 + 3
    M, h = tree.mid(np.zeros(tree.nq), np.zeros(tree.nv))
    assert np.linalg.eigvalsh(M).min() > 0 and np.abs(h).max() > 0


def mutate(path_keys, value):
    doc = yaml.safe_load(yaml.safe_dump(VALID))
    node = doc
    for k in path_keys[:-1]:
        node = node[k]
    if value is KeyError:
        del node[path_keys[-1]]
    else:
        node[path_keys[-1]] = value
    return doc


BAD = [
    ("missing field", ("modules", 1, "body", "radius"), KeyError, "radius"),
    ("unknown body type", ("modules", 1, "body", "type"), "jelly", "type"),
    ("negative density", ("modules", 1, "body", "density"), -5.0, "density"),
    ("negative length", ("modules", 1, "body", "length"), -0.1, "length"),
    ("NaN parameter", ("modules", 1, "body", "youngs_modulus"), math.nan, "youngs_modulus"),
    ("non-orthogonal face", ("modules", 1, "body", "face"), [[0, 0, 0.05], [0.01, 0, 0.05], [0.01, 0.01, 0.05]], "face"),
    ("degenerate face", ("modules", 1, "body", "face"), [[0, 0, 0.05], [0, 0, 0.05], [0, 0.01, 0.05]], "face"),
    ("NaN axis", ("modules", 0, "joint", "axis"), [0, math.nan, 1], "axis"),
    ("unknown parent", ("modules", 1, "parent"), "knee", "parent"),
    # G = E / (2 (1 + nu)) divided by zero at nu = -1 (a ZeroDivisionError), and took any other nu
    ("Poisson ratio -1", ("modules", 1, "body", "poisson"), -1.0, "poisson"),
    ("Poisson ratio above 1/2", ("modules", 1, "body", "poisson"), 0.7, "poisson"),
    # an index past the six strain components was an IndexError, a fraction a TypeError
    ("strain component out of range", ("modules", 1, "body"), {**PCS, "strains": [1, 7]}, "strains"),
    ("strain component not an integer", ("modules", 1, "body"), {**PCS, "strains": [1.5]}, "strains"),
    ("strain component twice", ("modules", 1, "body"), {**PCS, "strains": [1, 1]}, "strains"),
    ("fractional quadrature order", ("modules", 1, "body", "n_axial"), 2.5, "n_axial"),
    ("fractional segment count", ("modules", 1, "body"), {**PCS, "segments": 1.5}, "segments"),
    # bool("no") is True: a flag given as a string was taken as set
    ("flag as a string", ("modules", 1, "body", "planar"), "no", "planar"),
    # a number given as a list was a TypeError at build
    ("length as a list", ("modules", 1, "body", "length"), [0.05], "length"),
    ("modulus as a list", ("modules", 1, "body", "youngs_modulus"), [1e6], "youngs_modulus"),
]


@pytest.mark.parametrize("what,keys,value,field", BAD, ids=[b[0] for b in BAD])
def test_bad_module_yaml_is_rejected_naming_file_module_field(tmp_path, what, keys, value, field):
    path = write(tmp_path, mutate(keys, value))
    with pytest.raises(InputError) as err:
        load_soft_tree(path)
    message = str(err.value)
    assert str(path) in message and ("'pad'" in message or "'hip'" in message)
    assert field in (err.value.field or "") and err.value.line is not None


def test_deforming_face_on_an_inner_body_is_rejected(tmp_path):
    doc = mutate(("modules", 0, "body"), {"type": "lvp", "length": 0.1, "radius": 0.02, "density": 960,
                                           "primitives": ["stretch", "bend_x"], "n_axial": 2})
    with pytest.raises(InputError, match="Assumption 2"):
        load_soft_tree(write(tmp_path, doc))


def test_strain_basis_the_quadrature_cannot_see_is_rejected(tmp_path):
    """A GVS rod of order 7 (Legendre degree 6) on 6 axial Gauss points: degree 6 vanishes at
    all six, so one coordinate would have no stiffness and no mass (a Newton statics then
    "converges" with it at 1e18). One more point resolves it."""
    body = {"type": "gvs", "length": 0.1, "radius": 0.005, "density": 1000, "order": 7, "strains": [1],
            "steps": 8, "youngs_modulus": 6e5, "n_axial": 6}
    doc = mutate(("modules", 1, "body"), body)
    path = write(tmp_path, doc)
    with pytest.raises(InputError) as err:
        load_soft_tree(path)
    assert str(path) in str(err.value) and "'pad'" in str(err.value)
    assert err.value.field == "modules.body.n_axial" and err.value.line is not None
    body["n_axial"] = 7
    tree = load_soft_tree(write(tmp_path, mutate(("modules", 1, "body"), body)))
    M, _ = tree.mid(np.zeros(tree.nq), np.zeros(tree.nv))
    assert np.linalg.eigvalsh(M).min() > 0

"""Geometry read from MuJoCo's own poses (not its contact list), for tests that check what
touches the floor."""
import mujoco
import numpy as np


def body_box_corner_heights(plant) -> np.ndarray:
    """Heights of the eight corners of the floating body's box (MuJoCo's geom pose)."""
    m, d = plant.model, plant.data
    box = next(g for g in range(m.ngeom) if m.geom_bodyid[g] == plant._free_body
               and m.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX)
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * m.geom_size[box]
    return (d.geom_xpos[box] + corners @ d.geom_xmat[box].reshape(3, 3).T)[:, 2]


def body_box_bottom(plant) -> float:
    """Height of the lowest corner of the floating body's box (MuJoCo's geom pose)."""
    return float(body_box_corner_heights(plant).min())

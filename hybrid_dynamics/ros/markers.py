"""The controller's rviz markers: contact forces (arrows), friction cones (line lists), the
CoM (sphere), the support polygon of the stance feet and, for soft modules, one line strip per
soft body along its deformed centreline."""
from __future__ import annotations

from typing import List

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import Point
from visualization_msgs.msg import Marker, MarkerArray

from ..control.locomotion.swing import convex_hull


def build_markers(frame: str, stamp, robot, mmap, est, stance, out, data, soft_shapes=None) -> MarkerArray:
    """The markers of one estimate ``est`` (feet, q) of the morphology ``mmap``, with the
    controller output ``out`` (or None), in ``frame`` at ``stamp``; ``data`` is a Pinocchio
    data of ``mmap.model`` (reused); ``soft_shapes``: soft body name -> world points (k, 3)
    (soft.leaves.SoftLeaves.shapes)."""
    forces = out.contact_forces if out is not None else {}
    mu = robot.friction
    markers: List[Marker] = []

    def marker(ns, mid, mtype, rgba, scale):
        m = Marker()
        m.header.frame_id = frame
        m.header.stamp = stamp
        m.ns, m.id, m.type, m.action = ns, mid, mtype, Marker.ADD
        m.pose.orientation.w = 1.0
        m.color.r, m.color.g, m.color.b, m.color.a = rgba
        m.scale.x, m.scale.y, m.scale.z = scale
        return m

    stance_points = []
    for i, c in enumerate(mmap.contacts):
        p = est.feet.get(c.frame)
        if p is None:
            continue
        on = stance.get(c.frame, False)
        if on:
            stance_points.append(p)
        f = np.asarray(forces.get(c.frame, np.zeros(3)), dtype=float)
        if f.shape == (3,) and np.all(np.isfinite(f)):
            a = marker("contact_forces", i, Marker.ARROW, (0.9, 0.2, 0.1, 1.0), (0.01, 0.02, 0.02))
            a.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                        Point(x=float(p[0] + 0.005 * f[0]), y=float(p[1] + 0.005 * f[1]),
                              z=float(p[2] + 0.005 * f[2]))]
            markers.append(a)
        cone = marker("friction_cones", i, Marker.LINE_LIST, (0.2, 0.6, 1.0, 0.6 if on else 0.15), (0.003, 0, 0))
        h = 0.05
        for k in range(8):
            ang = 2 * np.pi * k / 8
            cone.points += [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                            Point(x=float(p[0] + mu * h * np.cos(ang)), y=float(p[1] + mu * h * np.sin(ang)),
                                  z=float(p[2] + h))]
        markers.append(cone)
    com = pin.centerOfMass(mmap.model, data, mmap.expand_q(mmap.reduce_q(est.q)))
    markers.append(marker("com", 0, Marker.SPHERE, (1.0, 0.8, 0.0, 1.0), (0.03, 0.03, 0.03)))
    markers[-1].pose.position.x, markers[-1].pose.position.y, markers[-1].pose.position.z = map(float, com)
    poly = marker("support_polygon", 0, Marker.LINE_STRIP, (0.1, 0.9, 0.3, 1.0), (0.004, 0, 0))
    if len(stance_points):
        ground = float(np.min(np.asarray(stance_points)[:, 2]))
        for x, y in convex_hull(np.asarray(stance_points)[:, :2]):
            poly.points.append(Point(x=float(x), y=float(y), z=ground))
    if poly.points:
        poly.points.append(poly.points[0])
    markers.append(poly)
    for k, (name, points) in enumerate(sorted((soft_shapes or {}).items())):
        body = marker("soft_bodies", k, Marker.LINE_STRIP, (0.2, 0.6, 0.9, 1.0), (0.012, 0, 0))
        body.text = name
        body.points = [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in points]
        markers.append(body)
    return MarkerArray(markers=markers)

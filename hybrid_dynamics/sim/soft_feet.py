"""MuJoCo's equivalent of soft feet: each constant-curvature pad of ``soft_modules`` as a
pseudo-rigid-body (PRB) model, a compliant beam made of rigid halves joined by springs, added
to the rigid robot's MJCF at load.

Per pad of length L, radius r, Young's modulus E, damping time eta (its manifest block):

* a proximal rigid half (mass m/2) fixed at the pad's root, then at mid-length two hinges about
  the rod's x and y axes (the two bending coordinates) and a slide along its axis (the change of
  length), carrying the distal half (mass m/2) and the contact sphere at the tip;
* hinge stiffness ``E I / L`` (I = pi r^4 / 4) and slide stiffness ``E A / L``: a tip moment
  gives the CC rod's tip angle exactly, a tip force gives its tip angle exactly and its tip
  deflection to first order (the CC tip moves L theta / 2 sideways, the PRB tip likewise with
  the hinge at L / 2); axial loads exactly; damping ``eta`` times each stiffness (Kelvin-Voigt
  as in the soft model); zero spring reference (the pad at rest is straight).

Why not MuJoCo's flex or cable: a cable composite gives a chain of many small bodies whose
bending stiffness and contact are tuned by MuJoCo's own parameters, with no one-to-one map to
the three coordinates the controller's model has; the PRB model has exactly those three
coordinates (joint ``<module>_q0..q2``, reported in /joint_states like encoders would report
them) and stays stable at the 1 ms step. The mismatch with the CC model is second order in the
bending angle (tip height L theta^2 / 4 against L theta^2 / 6).
"""
from __future__ import annotations

import mujoco
import numpy as np
import pinocchio as pin

from ..errors import InputError


def _quat_wxyz(R: np.ndarray) -> list:
    x, y, z, w = pin.Quaternion(R).coeffs()
    return [w, x, y, z]


def add_equivalent_pads(spec: "mujoco.MjSpec", robot) -> list:
    """Add every pad of ``robot.soft_modules`` to ``spec``; the names of the joints added (the
    soft coordinates, in the order of soft.coordinates.coordinate_names). A module hung from
    another soft module (``parent:``) hangs from that pad's distal half, at its distal face
    (the tip: ``L / 2`` from the mid-length joints along the half's axis, plus the change of
    length), as the soft tree hangs it from the parent's distal frame."""
    added = []
    tips: dict = {}                 # module name -> (its distal half, the face's offset in it)
    roots = list(dict.fromkeys(s.root for s in robot.soft_modules))
    for root in roots:
        for s in (s for s in robot.soft_modules if s.root == root):
            added.extend(_add_pad(spec, robot, s, tips))
    return added


def _add_pad(spec, robot, s, tips: dict) -> list:
    body = s.block["body"]
    if body.get("type") != "cc" or s.joint["type"] != "fixed":
        raise InputError(f"soft module '{s.name}': MuJoCo's equivalent model covers constant-curvature "
                         "pads on a fixed joint", file=str(robot.manifest), field="soft_modules")
    L, r, rho = float(body["length"]), float(body["radius"]), float(body["density"])
    E, eta = float(body.get("youngs_modulus", 0.0)), float(body.get("damping_time", 0.0))
    area, second = np.pi * r ** 2, np.pi * r ** 4 / 4
    half = rho * area * L / 2
    k_bend, k_axial = E * second / L, E * area / L
    P = pin.SE3(pin.rpy.rpyToMatrix(*s.joint.get("rpy", [0, 0, 0])), np.array(s.joint.get("xyz", [0, 0, 0]), float))
    if s.parent is not None:        # the parent pad's distal face, then the module's joint placement
        parent, face = tips[s.parent]
        placed = pin.SE3(np.eye(3), face) * P
    else:                           # the site's pose in its body, then the module's joint placement
        site = spec.site(s.frame)
        if site is None:
            raise InputError(f"soft module '{s.name}': no site '{s.frame}' in the MJCF {robot.mjcf}",
                             file=str(robot.manifest), field="soft_modules")
        R_site = pin.Quaternion(site.quat[0], *site.quat[1:]).toRotationMatrix()
        placed = pin.SE3(R_site, np.array(site.pos, float)) * P
        parent = site.parent
    root = parent.add_body(name=f"{s.name}_root", pos=placed.translation.tolist(), quat=_quat_wxyz(placed.rotation))
    inertia = [half * (3 * r ** 2 + (L / 2) ** 2) / 12] * 2 + [half * r ** 2 / 2]
    root.add_geom(type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[0.8 * r, L / 4, 0], pos=[0, 0, L / 4],
                  contype=0, conaffinity=0, rgba=[0.2, 0.6, 0.9, 1], mass=0)
    root.explicitinertial = True
    root.mass, root.ipos, root.inertia = half, [0, 0, L / 4], inertia
    tip = root.add_body(name=f"{s.name}_tip", pos=[0, 0, L / 2])
    tip.explicitinertial = True
    tip.mass, tip.ipos, tip.inertia = half, [0, 0, L / 4], inertia
    planar, elong = bool(body.get("planar", False)), bool(body.get("elongation", False))
    axes = [([0, -1, 0], "hinge")] if planar else [([1, 0, 0], "hinge"), ([0, 1, 0], "hinge")]
    if elong:
        axes.append(([0, 0, 1], "slide"))
    names = []
    for k, (axis, kind) in enumerate(axes):
        stiff = k_axial if kind == "slide" else k_bend
        name = f"{s.name}_q{k}"
        tip.add_joint(name=name, axis=axis, stiffness=stiff, damping=eta * stiff, springref=0.0,
                      type=mujoco.mjtJoint.mjJNT_SLIDE if kind == "slide" else mujoco.mjtJoint.mjJNT_HINGE)
        names.append(name)
    tip.add_geom(type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[0.8 * r, L / 4, 0], pos=[0, 0, L / 4],
                 contype=0, conaffinity=0, rgba=[0.2, 0.6, 0.9, 1], mass=0)
    tips[s.name] = (tip, np.array([0.0, 0.0, L / 2]))
    # the contact sphere moves from the rigid foot to the tip of the pad that carries the
    # contact (same name: contact forces stay keyed by the foot)
    foot = spec.geom(s.root) if s.has_contact else None
    if foot is not None:
        size, rgba, contype, conaff = list(foot.size), list(foot.rgba), foot.contype, foot.conaffinity
        spec.delete(foot)
        tip.add_geom(name=s.root, type=mujoco.mjtGeom.mjGEOM_SPHERE, size=size, pos=[0, 0, L / 2],
                     rgba=rgba, contype=contype, conaffinity=conaff)
    tip.add_site(name=f"{s.name}_contact", pos=[0, 0, L / 2])
    return names

"""The ``soft_modules`` block of a robot manifest: soft-rigid modules [Pustina 2024] attached
as leaves of the rigid Pinocchio tree (soft feet, compliant shanks)::

    soft_modules:
      - name: leg1_pad
        frame: leg1_foot                 # a frame of the URDF (or parent: an earlier module)
        joint: {type: fixed, xyz: [-0.03, 0, 0], rpy: [0, 1.5707963, 0]}   # placement in it
        body: {type: cc, length: 0.03, radius: 0.01, density: 1100, elongation: true,
               youngs_modulus: 3.0e5, damping_time: 0.01}
        contact: [0, 0, 0.03]            # optional: the material point that touches the ground;
                                         # it replaces the contact of the root frame

Joint and body fields are those of the soft-module YAML (docs/soft.md) and are checked at
load; an :class:`InputError` names the manifest, line, module and field. The modules are built
(CasADi) by ``soft.leaves.SoftLeaves``, above this layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pinocchio as pin

from .soft_fields import body_params, finite_triple, joint_fields
from .yamlio import YamlDocument


@dataclass(frozen=True)
class SoftModuleSpec:
    """One checked ``soft_modules`` entry; ``root`` is the rigid frame its chain hangs from."""
    name: str
    frame: Optional[str]            # rigid frame the joint is placed in (None: see parent)
    parent: Optional[str]           # earlier soft module (None: see frame)
    root: str
    block: Dict[str, Any]           # the YAML block (for soft.spec.build_module)
    joint: Dict[str, Any]           # checked joint fields
    contact: Optional[np.ndarray]   # material point (reference coordinates) or None
    where: Tuple                    # key path of the block in doc

    @property
    def has_contact(self) -> bool:
        return self.contact is not None


def load_soft_modules(doc: YamlDocument, model: pin.Model, contact_frames: List[str]) -> List[SoftModuleSpec]:
    """Check the manifest's ``soft_modules`` list (empty when absent)."""
    entries = doc.data.get("soft_modules")
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise doc.error("expected a list of soft-module blocks (name, frame, joint, body)", "soft_modules")
    specs: List[SoftModuleSpec] = []
    roots: Dict[str, str] = {}
    touching: Dict[str, str] = {}
    for i, entry in enumerate(entries):
        where = ("soft_modules", i)
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise doc.error("each soft module is a mapping with a 'name'", *where, "name")
        name = entry["name"]
        if name in roots:
            raise doc.error(f"soft module '{name}' is declared twice", *where, "name")
        unknown = set(entry) - {"name", "frame", "parent", "joint", "body", "contact"}
        if unknown:
            raise doc.error(f"soft module '{name}': unknown field(s) {sorted(unknown)}", *where, sorted(unknown)[0])
        frame, parent = entry.get("frame"), entry.get("parent")
        if (frame is None) == (parent is None):
            raise doc.error(f"soft module '{name}': give exactly one of 'frame' (a URDF frame) "
                            "or 'parent' (an earlier soft module)", *where, "frame")
        if frame is not None and not (isinstance(frame, str) and model.existFrame(frame)):
            raise doc.error(f"soft module '{name}': frame {frame!r} is not in the URDF", *where, "frame")
        if parent is not None and parent not in roots:
            raise doc.error(f"soft module '{name}': parent {parent!r} is not an earlier soft module",
                            *where, "parent")
        body_params(doc, where + ("body",), name, entry.get("body"))
        joint = joint_fields(doc, where + ("joint",), name, entry.get("joint"))
        if joint["type"] == "free_flyer":
            raise doc.error(f"soft module '{name}': a leaf of the rigid tree cannot have a free-flyer "
                            "joint", *where, "joint", "type")
        root = frame if frame is not None else roots[parent]
        contact = entry.get("contact")
        if contact is not None:
            if not finite_triple(contact):
                raise doc.error(f"soft module '{name}': contact must be a material point [x1, x2, x3]",
                                *where, "contact")
            if root not in contact_frames:
                raise doc.error(f"soft module '{name}': its root frame {root!r} is not a contact of the "
                                f"manifest ({', '.join(contact_frames)})", *where, "contact")
            if root in touching:
                raise doc.error(f"soft module '{name}': the contact of {root!r} is already on "
                                f"'{touching[root]}'", *where, "contact")
            touching[root] = name
            contact = np.asarray(contact, float)
        roots[name] = root
        specs.append(SoftModuleSpec(name, frame, parent, root, entry, joint, contact, where))
    return specs

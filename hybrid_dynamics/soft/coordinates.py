"""Names of the soft modules' own coordinates in a robot with ``soft_modules``, in the order of
``SoftLeaves`` (grouped by root frame, each group in manifest order): ``<module>_q<k>``, k over
the module's joint then body coordinates. These are the names under which a plant (MuJoCo's
equivalent model, or deformation sensors) reports them in ``/joint_states``."""
from __future__ import annotations

from typing import List

from hybrid_dynamics.soft.spec import build_module


def coordinate_names(robot) -> List[str]:
    specs = robot.soft_modules
    roots = list(dict.fromkeys(s.root for s in specs))
    names: List[str] = []
    for root in roots:
        for s in (s for s in specs if s.root == root):
            module = build_module(robot.soft_doc, s.where, s.block, None, s.joint)
            names.extend(f"{s.name}_q{k}" for k in range(module.nv))
    return names

"""Where the package's data (robots/, config/, launch/) lives: the source tree when run from
a checkout or an editable install, ``share/hybrid_dynamics`` when installed by colcon/pip."""
from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

PACKAGE = "hybrid_dynamics"


@lru_cache(maxsize=None)
def share_dir() -> Path:
    source = Path(__file__).resolve().parent.parent
    if (source / "robots").is_dir() and (source / "package.xml").is_file():
        return source
    try:
        from ament_index_python.packages import get_package_share_directory  # optional: outside ROS
        return Path(get_package_share_directory(PACKAGE))
    except Exception:     # not in an ament index: fall back to the interpreter prefix
        return Path(sys.prefix) / "share" / PACKAGE


def robots_dir() -> Path:
    return share_dir() / "robots"


def config_dir() -> Path:
    return share_dir() / "config"


@lru_cache(maxsize=None)
def example_robot_data_dir() -> Path:
    """The ``robots/`` directory of the example-robot-data wheel (or of a ROS install)."""
    candidates = [Path(p) / "cmeel.prefix" / "share" / "example-robot-data" / "robots" for p in sys.path if p]
    try:
        from ament_index_python.packages import get_package_share_directory  # optional: outside ROS
        candidates.append(Path(get_package_share_directory("example-robot-data")) / "robots")
    except Exception:     # no ament index, or the package is not in it
        pass
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError("example-robot-data is not installed (pip install example-robot-data)")

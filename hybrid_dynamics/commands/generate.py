"""``hybrid-dynamics generate``: write the built-in robots' URDF and MJCF from their source."""
from __future__ import annotations

from ..model.builtin import BUILTIN_DESCRIPTIONS, write_description
from ..paths import robots_dir

COMMAND = ("generate",)
HELP = "regenerate robots/<name>/ (URDF, MJCF, loop YAML) from the Python descriptions"


def add_arguments(parser) -> None:
    parser.add_argument("--out", default=None, help="robots directory (default: the package's)")


def run(args) -> int:
    out = args.out or robots_dir()
    for name, build in BUILTIN_DESCRIPTIONS.items():
        for path in write_description(build(), out):
            print(path)
    return 0

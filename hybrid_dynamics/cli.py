"""The ``hybrid-dynamics`` command.

Each sub-command lives in its own module under :mod:`hybrid_dynamics.commands`, which
declares ``COMMAND`` (a tuple of words, e.g. ``("validate", "dynamics")``), ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; the module is named after its words
(``validate closed-loop`` -> ``validate_closed_loop``), so that a command line loads only its
own module (and the libraries it needs); ``--help`` loads them all. This file only assembles them.
A user's mistake (:class:`InputError`) prints one line and exits with status 2.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import warnings
from typing import Dict, List, Optional

from . import commands
from .errors import DescriptionWarning, InputError


def module_names(argv: Optional[List[str]] = None) -> List[str]:
    """The command modules a command line needs: the one its leading words name, else all."""
    names = sorted(m.name for m in pkgutil.iter_modules(commands.__path__))
    words = []
    for word in argv or []:
        if word.startswith("-"):
            break
        words.append(word.replace("-", "_"))
    for k in (2, 1):
        if len(words) >= k and "_".join(words[:k]) in names:
            return ["_".join(words[:k])]
    return names


def build_parser(argv: Optional[List[str]] = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hybrid-dynamics",
                                     description="Dynamics, estimation and control of hybrid "
                                                 "floating-base robots.")
    groups: Dict[tuple, argparse._SubParsersAction] = {(): parser.add_subparsers(dest="command", metavar="COMMAND")}
    modules = [importlib.import_module(f"{commands.__name__}.{name}") for name in module_names(argv)]
    for module in sorted(modules, key=lambda m: m.COMMAND):
        words = module.COMMAND
        for depth in range(1, len(words)):
            prefix = words[:depth]
            if prefix not in groups:
                group = groups[prefix[:-1]].add_parser(prefix[-1], help=f"{prefix[-1]} commands")
                groups[prefix] = group.add_subparsers(dest=f"command_{depth}", metavar="WHAT", required=True)
        sub = groups[words[:-1]].add_parser(words[-1], help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(handler=module.run)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None):
    if issubclass(category, DescriptionWarning):
        print(f"hybrid-dynamics: warning: {message}", file=sys.stderr)
    else:
        _default_show(message, category, filename, lineno, file, line)


_default_show = warnings.showwarning


def main(argv: Optional[List[str]] = None) -> int:
    warnings.showwarning = _show_warning       # a description's warnings as one line each
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except InputError as err:
        print(f"hybrid-dynamics: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

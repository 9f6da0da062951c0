"""Errors caused by what a user gave us (a file, a name, a message), as opposed to bugs.

Every user-facing entry point (the CLI, the ROS nodes) catches :class:`InputError`, prints
its one-line message and carries on or exits with status 2; it never shows a traceback.
"""
from __future__ import annotations

from typing import Optional


class InputError(ValueError):
    """Bad input, with where it came from: a file, a line, a field or a joint name.

    ``str(err)`` is the one line shown to the user, e.g.
    ``robots/foo.yaml:12: field 'name_mot': joint 'knee_x' is not in the URDF``.
    """

    def __init__(self, message: str, *, file: Optional[str] = None,
                 line: Optional[int] = None, field: Optional[str] = None):
        self.file = file
        self.line = line
        self.field = field
        self.detail = message
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.file:
            where = str(self.file) + (f":{self.line}" if self.line else "") + ": "
        what = f"field '{self.field}': " if self.field else ""
        return f"{where}{what}{self.detail}"


class DescriptionWarning(UserWarning):
    """A description that loads, with something its user should know: a limit assumed, a
    reference pose found, internal motions left free. The CLI prints it as one line."""


def reject_unknown_settings(config_class, data, what: str, field: str) -> None:
    """An :class:`InputError` naming every key of ``data`` that is not a field of the
    dataclass ``config_class`` (a misspelt setting is an error, not silently ignored)."""
    unknown = set(data) - set(config_class.__dataclass_fields__)
    if unknown:
        raise InputError(f"unknown {what} setting(s): {', '.join(sorted(unknown))}", field=field)

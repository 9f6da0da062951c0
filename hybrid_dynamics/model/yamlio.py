"""YAML loading that remembers where each field came from, for one-line error messages."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Tuple

import yaml

from ..errors import InputError

KeyPath = Tuple[Any, ...]


class YamlDocument:
    """A parsed YAML file: ``data`` (plain Python) and the line of every key path.

    ``doc.error("msg", "contacts", 2, "frame")`` builds an :class:`InputError` pointing at
    the line of ``contacts[2].frame`` (or its nearest parent that has a line).
    """

    def __init__(self, path: Path, data: Any, lines: Dict[KeyPath, int]):
        self.path = path
        self.data = data
        self.lines = lines

    def line(self, *keys) -> int | None:
        keys = tuple(keys)
        while keys:
            if keys in self.lines:
                return self.lines[keys]
            keys = keys[:-1]
        return None

    def error(self, message: str, *keys) -> InputError:
        field = ".".join(str(k) for k in keys if not isinstance(k, int)) or None
        return InputError(message, file=str(self.path), line=self.line(*keys), field=field)


def load_yaml(path: str | Path) -> YamlDocument:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=str(path)) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"malformed YAML: {problem}", file=str(path),
                         line=mark.line + 1 if mark else None) from None
    lines: Dict[KeyPath, int] = {}
    _collect_lines(node, (), lines)
    return YamlDocument(path, data, lines)


def _collect_lines(node, prefix: KeyPath, lines: Dict[KeyPath, int]) -> None:
    if node is None:
        return
    lines[prefix] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            k = key.value
            lines[prefix + (k,)] = key.start_mark.line + 1
            _collect_lines(value, prefix + (k,), lines)
            lines[prefix + (k,)] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _collect_lines(item, prefix + (i,), lines)


def load_mapping(path: str | Path, fields, what: str) -> YamlDocument:
    """A YAML file whose top level is a mapping with keys among ``fields`` (an InputError
    naming the line of the first unknown key; ``what`` lists the main keys for the message)."""
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise doc.error(f"expected a mapping ({what}, ...)")
    for key in doc.data:
        if key not in fields:
            raise doc.error(f"unknown field (expected one of {', '.join(sorted(fields))})", key)
    return doc


def named_file(name_or_path: str, folder: Path, what: str) -> Path:
    """``folder/<name>.yaml`` for a bare name, else the path given (an InputError listing the
    names in ``folder`` when the name is unknown)."""
    text = str(name_or_path)
    path = Path(text)
    if path.suffix in (".yaml", ".yml"):
        return path
    path = Path(folder) / f"{text}.yaml"
    if "/" in text or not path.is_file():
        names = sorted(p.stem for p in Path(folder).glob("*.yaml"))
        raise InputError(f"unknown {what} '{text}': {what}s are {', '.join(names)}, "
                         f"or give a path to a {what} .yaml")
    return path

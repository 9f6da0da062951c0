"""CasADi functions compiled to machine code, once per function, cached on disk.

CasADi's virtual machine runs a traced graph at about 3 ns per instruction; the MID of one
soft pad is ~50 000 instructions (150 us), too slow for a 1 kHz whole-body cycle. The same
graph generated as C (CasADi's code generator) and compiled with the system's C compiler
(``cc -O1``, 10-30 s once) runs 5-6x faster. The shared object is kept under
``$XDG_CACHE_HOME/hybrid_dynamics/casadi`` (default ``~/.cache``), named by a hash of the
generated source, so a second process loads it at once. Without a C compiler, or when it fails,
the interpreted function is returned and :func:`compiled` says so.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Tuple

import casadi as ca


def cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "hybrid_dynamics" / "casadi"


def compiled(fn: ca.Function) -> Tuple[ca.Function, bool]:
    """(``fn`` as compiled machine code, True), or (``fn``, False) without a working compiler."""
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        return fn, False
    with tempfile.TemporaryDirectory() as tmp:
        gen = ca.CodeGenerator(f"{fn.name()}.c", {"with_header": False})
        gen.add(fn)
        gen.generate(tmp + os.sep)
        source = Path(tmp) / f"{fn.name()}.c"
        digest = hashlib.sha256(source.read_bytes()).hexdigest()[:20]
        target = cache_dir() / f"{fn.name()}_{digest}.so"
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = Path(tmp) / target.name
            try:
                subprocess.run([compiler, "-O1", "-fPIC", "-shared", str(source), "-o", str(partial), "-lm"],
                               check=True, capture_output=True, timeout=600)
            except (subprocess.SubprocessError, OSError):
                return fn, False
            shutil.move(str(partial), str(target))      # whole file or none: no half-written .so
    return ca.external(fn.name(), str(target)), True

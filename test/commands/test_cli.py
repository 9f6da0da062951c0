"""The command line loads only the module of the command it runs (cli.module_names)."""
import importlib
import pkgutil

from hybrid_dynamics import commands
from hybrid_dynamics.cli import module_names


def test_each_command_module_is_named_after_its_words():
    names = [m.name for m in pkgutil.iter_modules(commands.__path__)]
    assert len(names) > 10
    for name in names:
        words = importlib.import_module(f"{commands.__name__}.{name}").COMMAND
        assert "_".join(words).replace("-", "_") == name


def test_a_command_line_selects_its_own_module():
    assert module_names(["validate", "closed-loop", "--robot", "x"]) == ["validate_closed_loop"]
    assert module_names(["demo", "--scenario", "s"]) == ["demo"]
    everything = module_names(["--help"])
    assert len(everything) > 10 and module_names(["no-such-command"]) == everything

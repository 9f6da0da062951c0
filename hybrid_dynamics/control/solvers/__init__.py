"""QP backends behind one interface (:class:`.base.QPSolver`), chosen by the ``solver``
parameter: ``goldfarb_idnani`` (default: the whole problem in one compiled dual active-set
call, warm-started from the last active set), ``proxsuite`` (null-space elimination and KKT
shortcut, then ProxQP), ``daqp`` (the same elimination and shortcut, then DAQP's dual active
set, hot-started) or ``osqp`` (sparse, fixed pattern). ``bench controller --solver`` compares
them; docs/qp.md has the table."""
from .base import QPSolver, SlackProblem, SolveResult
from .daqp_solver import DaqpSolver
from .goldfarb_idnani_solver import GoldfarbIdnaniSolver
from .osqp_solver import OsqpSolver
from .proxsuite_solver import ProxsuiteSolver

BACKENDS = {"daqp": DaqpSolver, "proxsuite": ProxsuiteSolver, "osqp": OsqpSolver,
            "goldfarb_idnani": GoldfarbIdnaniSolver}
SOLVERS = tuple(BACKENDS)


def make_solver(name: str, settings: dict) -> QPSolver:
    return BACKENDS[name](settings)


__all__ = ["QPSolver", "SolveResult", "SlackProblem", "SOLVERS", "make_solver"]

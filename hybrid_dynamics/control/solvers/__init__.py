"""QP backends behind one interface (:class:`.base.QPSolver`), chosen by the ``solver``
parameter: ``proxsuite`` (dense: null-space elimination, KKT shortcut, ProxQP), ``daqp``
(dense dual active set, hot-started) or ``osqp`` (sparse, fixed pattern). ``bench controller
--solver`` compares them."""
from .base import QPSolver, SlackProblem, SolveResult


SOLVERS = ("proxsuite", "daqp", "osqp")


def make_solver(name: str, settings: dict) -> QPSolver:
    if name == "daqp":
        from .daqp_solver import DaqpSolver
        return DaqpSolver(settings)
    if name == "osqp":
        from .osqp_solver import OsqpSolver
        return OsqpSolver(settings)
    from .proxsuite_solver import ProxsuiteSolver
    return ProxsuiteSolver(settings)


__all__ = ["QPSolver", "SolveResult", "SlackProblem", "make_solver"]

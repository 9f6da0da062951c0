"""QP backends behind one interface (:class:`.base.QPSolver`), chosen by the ``solver``
parameter: ``proxsuite`` (dense, default) or ``osqp`` (sparse, fixed pattern)."""
from .base import QPSolver, SlackProblem, SolveResult


def make_solver(name: str, settings: dict) -> QPSolver:
    if name == "osqp":
        from .osqp_solver import OsqpSolver
        return OsqpSolver(settings)
    from .proxsuite_solver import ProxsuiteSolver
    return ProxsuiteSolver(settings)


__all__ = ["QPSolver", "SolveResult", "SlackProblem", "make_solver"]

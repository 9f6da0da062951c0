"""CVODES through CasADi callbacks (hybrid_dynamics/soft/cvodes.py) against the matrix
exponential of a stiff linear system (scipy.linalg.expm), with the exact Jacobian and with an
approximate one, fresh at every request or reused (the Jacobian sets the Newton iteration, not
the answer)."""
import numpy as np
import pytest
from scipy.linalg import expm

from hybrid_dynamics.soft import cvodes
from hybrid_dynamics.soft.motion import simulate
from hybrid_dynamics.soft.tree import SoftTree


def stiff_system():
    """Eigenvalues -2e4, -300 and -0.5 +- 3i, mixed by a random orthogonal basis."""
    rng = np.random.default_rng(7)
    Q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    D = np.array([[-2e4, 0, 0, 0], [0, -300.0, 0, 0], [0, 0, -0.5, 3.0], [0, 0, -3.0, -0.5]])
    return Q @ D @ Q.T, rng.standard_normal(4)


@pytest.mark.parametrize("approximate, reuse", [(False, 0), (True, 0), (True, 20)])
def test_cvodes_equals_the_matrix_exponential_of_a_stiff_linear_system(approximate, reuse):
    A, x0 = stiff_system()
    J = A + (0.05 * np.diag(np.diag(A)) if approximate else 0.0)
    times = np.linspace(0.0, 2.0, 9)
    xs, counts = cvodes.integrate(lambda t, x: A @ x, lambda t, x: J, x0, times, rtol=1e-9, atol=1e-12,
                                  reuse=reuse)
    print(counts)
    exact = np.array([expm(A * t) @ x0 for t in times])
    assert np.abs(xs - exact).max() < 1e-7 * np.abs(x0).max(), np.abs(xs - exact).max()
    assert np.abs(exact[-1]).max() > 0.1 * np.abs(x0).max()          # the slow pair still moves
    assert counts["jacobians"] > 0 and counts["right_hand_sides"] > counts["jacobians"]
    # stiff: an explicit method would need |h lambda| < ~3, 1.3e4 steps for 2 s at -2e4
    assert counts["steps"] < 2000, counts


def test_cvodes_needs_a_jacobian():
    with pytest.raises(ValueError, match="Jacobian"):
        simulate(SoftTree([]), [], [], 0.1, method="CVODES")

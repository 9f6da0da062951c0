"""The base estimator's Kalman step compiled (numba): predict, correct, health.

The filter is :mod:`.base_estimator`'s (its module docstring gives the model). In numpy its
step was about 60 array operations on 24 x 24 and 27 x 24 blocks, each a microsecond or two
of interpreter and dispatch for a few hundred flops: 85 us of a 1 kHz cycle. Here the same
arithmetic runs as one compiled call (numba, cached on disk after the first process):

- predict: ``x`` with the IMU acceleration, ``P <- A P A^T + Q`` with ``A = [[I, dt I], [0, I]]``
  on the base block, ``Q`` diagonal;
- correct: ``C`` is never formed, its rows are differences and copies of the state's rows
  (:func:`measure_rows`), so ``C P`` and ``C P C^T`` are gathers; ``S`` by Cholesky, one solve
  for ``K^T = S^-1 C P`` and ``S^-1 nu``; ``x += K nu``, ``P -= K C P``, symmetrised;
- health: the normalised innovation squared per measured row against the gate before the
  correction is applied, and the state's own check (:func:`state_fault`) after.

Checked against the textbook filter with C formed, in numpy, in
test/estimation/test_kalman_step.py (1e-10).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

# the noise variances, packed once by BaseEstimator (``variances``)
POSITION, ACCEL, STANCE_FOOT, SWING_FOOT, KINEMATICS, VELOCITY, HEIGHT, UNMEASURED = range(8)

# health codes (BaseEstimator turns them into sentences with the numbers)
HEALTHY = 0
NOT_FINITE = 1
COVARIANCE_TOO_LARGE = 2
COVARIANCE_NOT_POSITIVE = 3
BASE_NOT_POSITIVE_DEFINITE = 4
INNOVATION_BEYOND_GATE = 5
INNOVATION_NOT_POSITIVE_DEFINITE = 6


@njit(cache=True)
def measure_rows(X, out):
    """``out = C X`` for the state's rows X (nx, m) of [p, v, p_f1 .. p_fn]: each foot's
    position minus the base's (3n rows), the base velocity (3), each foot's height (n)."""
    nc = (X.shape[0] - 6) // 3
    for c in range(X.shape[1]):
        for i in range(nc):
            for k in range(3):
                out[3 * i + k, c] = X[6 + 3 * i + k, c] - X[k, c]
        for k in range(3):
            out[3 * nc + k, c] = X[3 + k, c]
        for i in range(nc):
            out[3 * nc + 3 + i, c] = X[8 + 3 * i, c]


@njit(cache=True, fastmath={"reassoc", "contract"})
def _cholesky_in_place(S):
    """Lower Cholesky factor of S in its lower triangle; False if S is not positive definite.
    Its dot products may be summed in any order (``reassoc``: they vectorise); NaN and inf
    keep their meaning (no ``nnan``/``ninf``), so a NaN still fails the test."""
    n = S.shape[0]
    for j in range(n):
        d = S[j, j]
        for k in range(j):
            d -= S[j, k] * S[j, k]
        if not d > 0.0:
            return False
        d = math.sqrt(d)
        S[j, j] = d
        for i in range(j + 1, n):
            s = S[i, j]
            for k in range(j):
                s -= S[i, k] * S[j, k]
            S[i, j] = s / d
    return True


@njit(cache=True)
def _cholesky_solve(L, B):
    """B <- S^-1 B with S = L L^T (L in the lower triangle). Both sweeps update whole rows of
    B, so that the innermost loop runs along B's contiguous rows (it vectorises; a dot
    product per entry would wait on its own sum)."""
    n, m = B.shape
    for i in range(n):                            # L y = B: row i takes the rows above
        for k in range(i):
            f = L[i, k]
            for c in range(m):
                B[i, c] -= f * B[k, c]
        d = 1.0 / L[i, i]
        for c in range(m):
            B[i, c] *= d
    for i in range(n - 1, -1, -1):                # L^T x = y: row i, once solved, leaves the rows above
        d = 1.0 / L[i, i]
        for c in range(m):
            B[i, c] *= d
        for r in range(i):
            f = L[i, r]
            for c in range(m):
                B[r, c] -= f * B[i, c]


@njit(cache=True)
def state_fault(x, P, max_covariance):
    """Health of (x, P): a code of this module (HEALTHY if none)."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
    for i in range(P.shape[0]):
        for j in range(P.shape[1]):
            total += P[i, j]
    if not math.isfinite(total):
        return NOT_FINITE
    for i in range(6):
        if P[i, i] > max_covariance:
            return COVARIANCE_TOO_LARGE
    for i in range(P.shape[0]):
        if not P[i, i] > 0.0:
            return COVARIANCE_NOT_POSITIVE
    base = P[0:6, 0:6].copy()
    if not _cholesky_in_place(base):
        return BASE_NOT_POSITIVE_DEFINITE
    return HEALTHY


@njit(cache=True)
def _predict(x, P, dt, a_w, q_diag):
    """x, P <- the process model over dt (in place)."""
    for k in range(3):
        x[k] += dt * x[3 + k] + 0.5 * dt * dt * a_w[k]
        x[3 + k] += dt * a_w[k]
    n = P.shape[0]
    for k in range(3):
        for j in range(n):
            P[k, j] += dt * P[3 + k, j]
    for i in range(n):
        for k in range(3):
            P[i, k] += dt * P[i, 3 + k]
    for i in range(n):
        P[i, i] += q_diag[i]


@njit(cache=True)
def _correct(x, P, z, r_diag, extra_nis, measured, gate, apply_always, max_covariance):
    """Correct (x, P) in place with the measurement z (rows of :func:`measure_rows`, noise
    variances r_diag). The normalised innovation squared per measured row,
    ``(nu^T S^-1 nu + extra_nis) / measured``, is returned with a code: beyond ``gate`` (and
    not ``apply_always``) the correction is not applied; after it, :func:`state_fault`."""
    nx = x.shape[0]
    nz = z.shape[0]
    CP = np.empty((nz, nx))
    measure_rows(P, CP)
    S = np.empty((nz, nz))
    measure_rows(CP.T, S)                         # C P C^T, P symmetric
    for i in range(nz):
        S[i, i] += r_diag[i]
    nu = np.empty((nz, 1))
    measure_rows(x.reshape((nx, 1)), nu)
    for i in range(nz):
        nu[i, 0] = z[i] - nu[i, 0]
    if not _cholesky_in_place(S):
        return math.nan, INNOVATION_NOT_POSITIVE_DEFINITE
    Kt = CP.copy()
    _cholesky_solve(S, Kt)                       # K^T = S^-1 C P
    s_nu = nu.copy()
    _cholesky_solve(S, s_nu)                     # S^-1 nu
    nis = extra_nis
    for i in range(nz):
        nis += nu[i, 0] * s_nu[i, 0]
    nis /= measured
    if not nis <= gate and not apply_always:
        return nis, INNOVATION_BEYOND_GATE
    x += np.dot(Kt.T, nu)[:, 0]
    P -= np.dot(Kt.T, CP)                        # K C P
    for a in range(nx):                          # symmetrised
        for b in range(a + 1, nx):
            v = 0.5 * (P[a, b] + P[b, a])
            P[a, b] = v
            P[b, a] = v
    return nis, state_fault(x, P, max_covariance)


@njit(cache=True)
def step(x, P, dt, a_w, r, rd, r_w, w_b, R, heights, contact, active, variances, use_height, gate,
         apply_always, max_covariance):
    """One predict-correct step of the base filter, in place on (x, P).

    ``r``, ``rd`` (n, 3): feet positions and velocities from the legs in the base frame,
    ``r_w`` the positions turned into the world (rows R r_i); ``w_b`` the base angular rate, ``R`` the base orientation, ``heights`` each stance foot
    centre's height, ``contact`` / ``active`` (n) the feet on the ground / in the morphology,
    ``variances`` packed as this module's indices. Returns (normalised innovation squared
    per measured row, health code)."""
    nc = r.shape[0]
    nx = x.shape[0]
    big = variances[UNMEASURED]
    q_diag = np.empty(nx)
    for k in range(3):
        q_diag[k] = variances[POSITION] * dt
        q_diag[3 + k] = variances[ACCEL] * dt
    foot_dt = max(dt, 1e-4)
    for i in range(nc):
        qf = (variances[STANCE_FOOT] if contact[i] else variances[SWING_FOOT]) * foot_dt
        for k in range(3):
            q_diag[6 + 3 * i + k] = qf
    _predict(x, P, dt, a_w, q_diag)
    # measurements: feet relative to the base in the world, R r_i; the base velocity each
    # stance foot gives, -R (w x r_i + rd_i), merged into their weighted mean (module doc)
    nz = 4 * nc + 3
    z = np.empty(nz)
    r_diag = np.empty(nz)
    v_feet = np.empty((nc, 3))
    w_feet = np.empty(nc)
    w_sum = 0.0
    for i in range(nc):
        c0 = w_b[1] * r[i, 2] - w_b[2] * r[i, 1] + rd[i, 0]        # w x r_i + rd_i
        c1 = w_b[2] * r[i, 0] - w_b[0] * r[i, 2] + rd[i, 1]
        c2 = w_b[0] * r[i, 1] - w_b[1] * r[i, 0] + rd[i, 2]
        for k in range(3):
            z[3 * i + k] = r_w[i, k]
            v_feet[i, k] = -(R[k, 0] * c0 + R[k, 1] * c1 + R[k, 2] * c2)
            r_diag[3 * i + k] = variances[KINEMATICS] if active[i] else big
        w_feet[i] = 1.0 / (variances[VELOCITY] if contact[i] else big)
        w_sum += w_feet[i]
    for k in range(3):
        v_mean = 0.0
        for i in range(nc):
            v_mean += w_feet[i] * v_feet[i, k]
        z[3 * nc + k] = v_mean / w_sum
        r_diag[3 * nc + k] = 1.0 / w_sum
    scatter = 0.0
    for i in range(nc):
        for k in range(3):
            d = v_feet[i, k] - z[3 * nc + k]
            scatter += w_feet[i] * d * d
    measured = 0
    for i in range(nc):
        z[3 * nc + 3 + i] = heights[i]
        r_diag[3 * nc + 3 + i] = variances[HEIGHT] if (contact[i] and use_height) else big
        measured += 3 * active[i] + (3 + use_height) * contact[i]
    return _correct(x, P, z, r_diag, scatter, float(max(measured, 1)), gate, apply_always, max_covariance)

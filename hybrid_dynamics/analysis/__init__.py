"""Analyses and self-checks of closed-chain robots (paper 001): validation checks, estimator
benchmark, equivalent Cartesian inertia and centroidal momentum comparisons."""

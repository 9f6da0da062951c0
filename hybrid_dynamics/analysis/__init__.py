"""Analyses and self-checks of closed-chain robots ([Mingo Hoffman 2024]): validation checks, estimator
benchmark, equivalent Cartesian inertia and centroidal momentum comparisons."""

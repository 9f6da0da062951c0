"""hybrid_dynamics: estimation and control of floating-base robots with hybrid bodies.

One BLAS thread per process unless the user chose otherwise: the control cycle's matrices have
tens of rows, where OpenBLAS's threads only add synchronisation; on a loaded 2-core machine the
hybrid_biped whole cycle took 24 ms at p50 with the default thread count against 0.86 ms with
one (``bench controller``'s whole cycle, same machine and load). The count is fixed when numpy
is first imported, so it is set here, before any module of the package imports numpy; a program
that imported numpy earlier keeps its own setting (set ``OPENBLAS_NUM_THREADS=1`` yourself).
"""
import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

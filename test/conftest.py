"""Test-wide setup: DDS on loopback, a ROS domain per test process, one BLAS thread."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
# a domain of our own for every test process (0..101 are valid with the default ports);
# checkouts testing side by side on one machine give each a disjoint range of domains
_DOMAIN_BASE = int(os.environ.get("HD_TEST_DOMAIN_BASE", "1"))
_DOMAIN_SPAN = int(os.environ.get("HD_TEST_DOMAIN_SPAN", "100"))
os.environ["ROS_DOMAIN_ID"] = str(_DOMAIN_BASE + os.getpid() % _DOMAIN_SPAN)
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args, timeout=600, cwd=None):
    """Run ``hybrid-dynamics ARGS`` in a fresh interpreter; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "hybrid_dynamics.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd or REPO,
                          env=dict(os.environ))


@pytest.fixture
def cli():
    return run_cli

"""colcon conventions: package.xml is a valid format-3 manifest, setup.py installs the share
files, the resource marker and an entry point for every node."""
import os
import subprocess
import sys
from pathlib import Path

from catkin_pkg.package import parse_package

REPO = Path(__file__).resolve().parent.parent
EXEC_DEPENDS = {"rclpy", "std_msgs", "sensor_msgs", "geometry_msgs", "nav_msgs", "visualization_msgs",
                "diagnostic_msgs", "std_srvs", "pinocchio", "python3-numpy", "python3-scipy"}


def test_package_xml_is_valid_format_3():
    warnings = []
    package = parse_package(str(REPO / "package.xml"), warnings=warnings)
    package.validate(warnings=warnings)
    assert package.package_format == 3
    assert warnings == []
    assert EXEC_DEPENDS <= {d.name for d in package.exec_depends}
    assert package.get_build_type() == "ament_python"


def test_setup_installs_share_files_and_entry_points(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--ignore-installed",
                    "--prefix", str(tmp_path), str(REPO)], check=True, capture_output=True)
    share = tmp_path / "share"
    assert (share / "ament_index" / "resource_index" / "packages" / "hybrid_dynamics").is_file()
    pkg = share / "hybrid_dynamics"
    assert (pkg / "package.xml").is_file()
    assert (pkg / "robots" / "jethexa" / "jethexa.urdf").is_file()
    assert (pkg / "robots" / "jethexa" / "robot.yaml").is_file()
    assert any((pkg / "launch").glob("*.launch.py"))
    assert any((pkg / "config").glob("*.yaml"))
    scripts = {p.name for p in (tmp_path / "bin").iterdir()}
    assert {"hybrid-dynamics", "state_estimator", "whole_body_controller", "morphology_manager"} <= scripts


def test_colcon_build_gives_the_ros_install_layout(tmp_path):
    """`colcon build` (colcon-ros's ament_python support, as on a Jazzy install): node
    executables where `ros2 run` looks, share files and the ament index marker."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "hybrid_dynamics").symlink_to(REPO)
    subprocess.run([str(Path(sys.executable).parent / "colcon"), "build", "--packages-select", "hybrid_dynamics",
                    "--build-base", str(tmp_path / "build"), "--install-base", str(tmp_path / "install"),
                    "--base-paths", str(src)],
                   cwd=tmp_path, check=True, capture_output=True, text=True, timeout=300)
    prefix = tmp_path / "install" / "hybrid_dynamics"
    executables = {p.name for p in (prefix / "lib" / "hybrid_dynamics").iterdir()}
    assert {"state_estimator", "whole_body_controller", "morphology_manager", "mujoco_sim"} <= executables
    share = prefix / "share" / "hybrid_dynamics"
    assert (share / "launch" / "bringup.launch.py").is_file() and (share / "launch" / "sim.launch.py").is_file()
    assert (share / "robots" / "jethexa" / "jethexa.urdf").is_file()
    assert (prefix / "share" / "ament_index" / "resource_index" / "packages" / "hybrid_dynamics").is_file()
    # every module of the checkout is installed: a folder without __init__.py is left out by
    # find_packages (runtime/ was: the nodes of an install imported it from the checkout
    # through pip's editable finder, and would not have started from the install alone)
    site = next((prefix / "lib").glob("python3*/site-packages"))
    assert {p.relative_to(REPO) for p in (REPO / "hybrid_dynamics").rglob("*.py")} <= \
        {p.relative_to(site) for p in (site / "hybrid_dynamics").rglob("*.py")}


BLAS_THREADS = """
import ctypes, sys
{imports}
lib = sorted({{line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line.lower()}})[0]
get = [getattr(ctypes.CDLL(lib), s) for s in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                                              "openblas_get_num_threads") if hasattr(ctypes.CDLL(lib), s)][0]
print(get())
"""


def _blas_threads(imports: str, **env) -> int:
    """numpy's OpenBLAS thread count in a fresh interpreter (asked from the library itself) after
    ``imports``, with no thread variable in its environment but ``env``."""
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", BLAS_THREADS.format(imports=imports)], env={**clean, **env},
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_one_blas_thread_unless_the_user_chose():
    """The nodes and commands import the package before numpy: one BLAS thread (the control
    cycle's small matrices lose to thread synchronisation), unless the environment says
    otherwise; numpy imported first keeps OpenBLAS's default (one per core)."""
    assert _blas_threads("import hybrid_dynamics.control, numpy") == 1
    assert _blas_threads("import hybrid_dynamics.control", OPENBLAS_NUM_THREADS="2") == 2
    default = _blas_threads("import numpy, hybrid_dynamics.control")
    assert default == min(os.cpu_count(), default) and (default > 1 or os.cpu_count() == 1)

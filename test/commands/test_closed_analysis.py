"""Analysis commands of [Mingo Hoffman 2024]: chi/gamma against TALOS, limit polygons (PNG plots)."""
import json

import numpy as np


def test_analyze_inertia_chi_gamma_against_talos(cli, tmp_path):
    out = cli("analyze", "inertia", "--out", tmp_path, "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    # the closed chain's light distal legs: every ratio above 1 (Table III: 2..11)
    assert all(v > 1.5 for v in r["chi"].values())
    assert all(v > 1.5 for v in r["gamma_both_legs_serial_coordinates"].values())
    assert "LOCAL_WORLD_ALIGNED" in r["conventions"]
    assert (tmp_path / "inertia.png").stat().st_size > 10_000


def test_analyze_limits_polygons_inside_the_box(cli, tmp_path):
    out = cli("analyze", "limits", "--directions", "8", "--out", tmp_path, "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    for poly in r["polygons"]:
        p = np.array(poly["points"])
        (a0, a1), (b0, b1) = poly["box"]
        assert np.all(p[:, 0] >= a0 - 1e-3) and np.all(p[:, 0] <= a1 + 1e-3)
        assert np.all(p[:, 1] >= b0 - 1e-3) and np.all(p[:, 1] <= b1 + 1e-3)
        assert np.ptp(p[:, 0]) > 0.5 and np.ptp(p[:, 1]) > 0.5      # a real 2-D set
    assert (tmp_path / "limits.png").stat().st_size > 10_000
    bad = cli("analyze", "limits", "--pairs", "l_hip_roll,l_elbow", "--out", tmp_path)
    assert bad.returncode == 2 and "l_elbow" in bad.stderr

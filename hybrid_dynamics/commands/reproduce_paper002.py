"""``hybrid-dynamics reproduce paper002 --out DIR [--json]``: Simulation 3 of [Pustina 2024,
Sec. 7.3, Fig. 11].

Planar chains of N constant-curvature bodies: build time and per-call median of M qdd =
IID(q, 0, qdd), c = IID(q, qd, 0) and MID against N on a log plot, beside the Euler-Lagrange
model (built up to N = 6, as in the paper), and the relative difference of ID and EL over 100
random samples (q in [-pi, pi], qd in [-10, 10], qdd in [-100, 100]). The choices the paper
leaves out are stated in hybrid_dynamics/soft/paper002.py. Simulations 1 and 2 are not
reproduced (docs/soft.md says why).
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt

from ..errors import InputError
from ..soft.paper002 import EL_MAX_BODIES, accuracy, body_counts, fitted_exponent, timing_row

COMMAND = ("reproduce", "paper002")
HELP = "Pustina et al. (2024) Simulation 3: recursive ID against Euler-Lagrange on planar CC chains (plots to --out)"


def add_arguments(parser) -> None:
    parser.add_argument("--out", default="paper002_output", help="directory for the plots (default paper002_output)")
    parser.add_argument("--bodies", default="1,2,3,4,5,6,8,10,12,14,16,18,20", help="chain sizes")
    parser.add_argument("--samples", type=int, default=20, help="timed calls per figure (default 20)")
    parser.add_argument("--accuracy-samples", type=int, default=100, help="random states per N for Fig. 11d")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _plot(rows, acc, out: Path):
    matplotlib.use("Agg")
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    ns = [r["bodies"] for r in rows]
    el = [r for r in rows if "el_us" in r]
    axes[0].semilogy(ns, [r["build_s"] for r in rows], "o-", label="recursive (ours)")
    axes[0].semilogy([r["bodies"] for r in el], [r["el_build_s"] for r in el], "s--", label="Euler-Lagrange")
    axes[0].set_title("(a) model build time [s]")
    for ax, key, title in ((axes[1], "iid_Mqdd_us", "(b) M qdd [us]"), (axes[2], "iid_c_us", "(c) c(q, qd) [us]")):
        ax.loglog(ns, [r[key] for r in rows], "o-", label="IID (ours)")
        ax.loglog(ns, [r["mid_us"] for r in rows], "^:", label="MID: M and h (ours)")
        ax.loglog([r["bodies"] for r in el], [r["el_us"] for r in el], "s--", label="Euler-Lagrange (M, Q)")
        ax.set_title(title)
    axes[3].errorbar([a["bodies"] for a in acc], [a["mean_rel_error"] for a in acc],
                     yerr=[a["std_rel_error"] for a in acc], fmt="o-")
    axes[3].set_yscale("log")
    axes[3].set_title("(d) |ID - EL| / |EL| (mean, std)")
    for ax in axes:
        ax.set_xlabel("bodies N")
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend()
    axes[0].legend()
    fig.tight_layout()
    path = out / "paper002_sim3.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def run(args) -> int:
    ns = body_counts(args.bodies)
    if not ns or ns[0] < 1 or args.samples < 1 or args.accuracy_samples < 1:
        raise InputError("--bodies must be positive, --samples and --accuracy-samples at least 1", field="bodies")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [timing_row(n, args.samples, with_el=n <= EL_MAX_BODIES) for n in ns]
    acc = [accuracy(n, args.accuracy_samples) for n in ns if n <= EL_MAX_BODIES]
    result = {"rows": rows, "accuracy": acc, "plot": _plot(rows, acc, out)}
    if len(ns) >= 2:
        result["iid_exponent"] = fitted_exponent(ns, [r["iid_Mqdd_us"] for r in rows])
    (out / "paper002_sim3.json").write_text(json.dumps(result, indent=2))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for r in rows:
            print(f"N={r['bodies']:2d} IID(M qdd) {r['iid_Mqdd_us']:8.1f} us  c {r['iid_c_us']:8.1f} us  "
                  f"MID {r['mid_us']:8.1f} us" + (f"  EL {r['el_us']:8.1f} us" if "el_us" in r else ""))
        for a in acc:
            print(f"N={a['bodies']:2d} |ID - EL|/|EL| mean {a['mean_rel_error']:.1e} std {a['std_rel_error']:.1e}")
        print(f"plot: {result['plot']}")
    return 0

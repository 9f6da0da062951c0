"""``hybrid-dynamics bench soft [--json]``.

Per-call median time of ID and MID of planar constant-curvature chains of N bodies (the
workload of [Pustina 2024, Sec. 7.3]), the fitted exponent of time against N (1 = linear)
and the ratio to the Euler-Lagrange reference timed in the same run where it is built
(N <= 6). Figures measured on a shared machine are noisy; the ratios are what to compare.
"""
from __future__ import annotations

import json

from ..errors import InputError
from ..soft.paper002 import EL_MAX_BODIES, fitted_exponent, timing_row

COMMAND = ("bench", "soft")
HELP = "time ID/MID of planar CC chains against N (fitted exponent) and against the Euler-Lagrange model"


def add_arguments(parser) -> None:
    parser.add_argument("--bodies", default="1,2,4,8,12,16,20", help="chain sizes (default 1,2,4,8,12,16,20)")
    parser.add_argument("--samples", type=int, default=50, help="calls per figure (default 50)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    try:
        ns = sorted({int(n) for n in args.bodies.split(",") if n.strip()})
    except ValueError:
        raise InputError(f"--bodies must be comma-separated integers, got {args.bodies!r}", field="bodies") from None
    if not ns or ns[0] < 1 or args.samples < 1:
        raise InputError("--bodies must be positive and --samples at least 1", field="bodies")
    rows = [timing_row(n, args.samples, with_el=n <= EL_MAX_BODIES) for n in ns]
    for r in rows:
        if "el_us" in r:
            r["el_over_id"] = r["el_us"] / r["id_us"]
    result = {"rows": rows}
    if len(ns) >= 2:
        result["id_exponent"] = fitted_exponent(ns, [r["id_us"] for r in rows])
        result["mid_exponent"] = fitted_exponent(ns, [r["mid_us"] for r in rows])
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for r in rows:
            el = f"  EL {r['el_us']:9.1f} us (EL/ID {r['el_over_id']:.2f})" if "el_us" in r else ""
            print(f"N={r['bodies']:2d}  ID {r['id_us']:9.1f} us  MID {r['mid_us']:9.1f} us  build {r['build_s']:.2f} s{el}")
        if "id_exponent" in result:
            print(f"fitted exponent of time vs N: ID {result['id_exponent']:.2f}, MID {result['mid_exponent']:.2f}")
    return 0

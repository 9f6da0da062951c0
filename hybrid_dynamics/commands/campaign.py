"""``hybrid-dynamics campaign SPEC [--out DIR] [--workers N | --cluster ADDRESS]``.

Runs every scenario of a campaign spec (config/campaigns/SPEC.yaml or a path: faults x speeds x
damage phases x declared x seeds) through the library scenario loop of ``demo --library``, on a
local Dask cluster of worker processes (every core by default) or on the Dask cluster at
ADDRESS, with a progress bar over runs. Writes DIR/results.csv (one row per run, appended as
runs finish; a restarted campaign skips the runs already in it), DIR/report.md,
DIR/survival.csv, DIR/heatmap.png and the plots of the worst runs under DIR/runs/. Exit status
0 when every run finished (none crashed or timed out), 1 otherwise, 2 for bad input.
"""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ..campaign.execute import run_campaign
from ..campaign.report import write_report
from ..campaign.spec import load_campaign
from ..errors import InputError

COMMAND = ("campaign",)
HELP = "run a grid of damage scenarios on a Dask cluster: results table, survival report, heat map"


def add_arguments(parser) -> None:
    parser.add_argument("spec", help="a name in config/campaigns/ or a path to a campaign .yaml")
    parser.add_argument("--out", default="campaign_output", help="output directory (default: campaign_output)")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes of the local cluster (default: every core)")
    parser.add_argument("--cluster", default=None,
                        help="address of a running Dask scheduler (e.g. tcp://10.0.0.5:8786) instead of a local cluster")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args) -> int:
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers must be at least 1, got {args.workers}", field="workers")
    if args.workers is not None and args.cluster:
        raise InputError("--workers is for the local cluster; the cluster at --cluster has its own", field="workers")
    spec = load_campaign(args.spec)
    out = Path(args.out)
    result = run_campaign(spec, out, workers=args.workers, cluster=args.cluster, progress=not args.quiet)
    command = "hybrid-dynamics campaign " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 2 else ""
    report = write_report(result.rows, out, f"Campaign {spec.name}: {spec.description}", command)
    print(f"{result.ran} runs in {result.wall_s:.1f} s on {result.workers} workers "
          f"({result.skipped} already in {result.table}); report: {report}")
    bad = [r for r in result.rows if r["outcome"] in ("crashed", "timeout")]
    return 0 if not bad else 1

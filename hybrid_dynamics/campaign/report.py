"""The summary of a campaign's results table, written to ``--out``.

- ``survival.csv`` and the table in ``report.md``: per fault class (kind x declared), the
  number of runs, of each outcome, and the survival rate (walked, stood or safe landing, over
  the runs that finished: crashed and timed-out runs are counted apart);
- the same split by static feasibility: statically feasible faults that fell are listed
  apart from infeasible ones;
- ``heatmap.png``: outcome over fault (rows) x damage phase and declared (columns), the worst
  outcome of a cell when several runs fall in it (speeds, seeds);
- the worst cases (fell first, then the lowest base, the largest tilt) with their plots.
"""
from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path
from typing import Dict, List

import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap

from .outcome import OUTCOMES, SURVIVED

SEVERITY = {"walked": 0, "stood": 1, "safe landing": 2, "timeout": 3, "crashed": 4, "fell": 5}
COLOURS = {"walked": "#2ca02c", "stood": "#98df8a", "safe landing": "#ffbb78", "timeout": "#c7c7c7",
           "crashed": "#7f7f7f", "fell": "#d62728"}
WORST = 8


def _float(value, default=0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def survival_rows(rows: List[dict], key) -> List[dict]:
    """One row per group of ``key(row)``: counts of each outcome and the survival rate."""
    groups: Dict[str, List[dict]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    table = []
    for name in sorted(groups):
        members = groups[name]
        counts = {o: sum(1 for r in members if r["outcome"] == o) for o in OUTCOMES}
        finished = len(members) - counts["crashed"] - counts["timeout"]
        survived = sum(counts[o] for o in SURVIVED)
        table.append({"class": name, "runs": len(members), **counts,
                      "survival_%": round(100.0 * survived / finished, 1) if finished else None})
    return table


def fault_class(row: dict) -> str:
    return f"{row['kind']}, {'declared' if row['declared'] == 'True' else 'undeclared'}"


def feasibility_class(row: dict) -> str:
    return {"True": "statically feasible", "False": "statically infeasible"}.get(row.get("feasible"), "not computed")


def markdown_table(table: List[dict]) -> str:
    cols = ["class", "runs", *OUTCOMES, "survival_%"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table:
        lines.append("| " + " | ".join("-" if row[c] is None else str(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def heatmap(rows: List[dict], path: Path) -> None:
    faults = list(dict.fromkeys(r["fault"] for r in rows))
    columns = sorted({(int(r["phase"]), r["declared"]) for r in rows}, key=lambda c: (c[1] != "True", c[0]))
    order = sorted(SEVERITY, key=SEVERITY.get)
    grid = [[-1] * len(columns) for _ in faults]
    for r in rows:
        i, j = faults.index(r["fault"]), columns.index((int(r["phase"]), r["declared"]))
        grid[i][j] = max(grid[i][j], SEVERITY.get(r["outcome"], SEVERITY["crashed"]))
    fig, ax = plt.subplots(figsize=(2.0 + 0.9 * len(columns), 1.0 + 0.22 * len(faults)))
    cmap = ListedColormap(["white"] + [COLOURS[o] for o in order])
    ax.imshow([[v + 1 for v in row] for row in grid], cmap=cmap, vmin=0, vmax=len(order), aspect="auto")
    ax.set_yticks(range(len(faults)), faults, fontsize=7)
    ax.set_xticks(range(len(columns)), [f"phase {p}\n{'decl.' if d == 'True' else 'undecl.'}" for p, d in columns],
                  fontsize=7)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[o]) for o in order]
    ax.legend(handles, order, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    ax.set_title("outcome over fault x damage phase (worst of a cell)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def worst_cases(rows: List[dict], n: int = WORST) -> List[dict]:
    return sorted(rows, key=lambda r: (-SEVERITY.get(r["outcome"], 4), _float(r["min_height_m"], 1.0),
                                       -_float(r.get("max_tilt_deg"))))[:n]


def write_report(rows: List[dict], out: Path, title: str, command: str = "") -> Path:
    """report.md, survival.csv and heatmap.png in ``out``; returns the report's path."""
    out = Path(out)
    by_class = survival_rows(rows, fault_class)
    by_feasibility = survival_rows(rows, feasibility_class)
    with (out / "survival.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["class", "runs", *OUTCOMES, "survival_%"])
        writer.writeheader()
        writer.writerows(by_class + by_feasibility)
    if rows:
        heatmap(rows, out / "heatmap.png")
    feasible_fell = sorted({r["fault"] for r in rows if r["outcome"] == "fell" and r.get("feasible") == "True"})
    infeasible = sorted({r["fault"] for r in rows if r.get("feasible") == "False"})
    lines = [f"# {title}", ""]
    if command:
        lines += ["```", command, "```", ""]
    lines += [f"{len(rows)} runs. Survival per fault class:", "", markdown_table(by_class), "",
              "By static feasibility (control/static_feasibility.py):", "", markdown_table(by_feasibility), "",
              f"Statically feasible faults that fell: {', '.join(feasible_fell) or 'none'}.",
              f"Statically infeasible faults: {', '.join(infeasible) or 'none'}.", "",
              "![outcome heat map](heatmap.png)", "", "## Worst cases", ""]
    for r in worst_cases(rows):
        lines.append(f"- `{r['run_id']}`: {r['outcome']} ({r['stopped']}); min height {r['min_height_m']} m, "
                     f"max roll/pitch/tilt {r['max_roll_deg']}/{r['max_pitch_deg']}/{r.get('max_tilt_deg') or '-'} deg, touch-down "
                     f"{r['touchdown_speed_mps'] or '-'} m/s (touching points {r.get('touch_point_speed_mps') or '-'}), QP failures {r['qp_failures'] or 0}")
        if r.get("plots"):
            lines.append(f"  ![{r['run_id']} roll and pitch]({r['plots']}/roll_pitch.png)")
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path

r"""The redirection paper's Fig. 2 comparison, from the results of a campaign.

Faure, Lucarelli, Richard & Trystram, *Online scheduling with redirection for parallel
jobs*, IPDPSW 2020, §IV–V: EASY vs EASY with redirection on loaded weeks of real traces,
for θ × α, on the platform grown to m + ⌈α·m⌉ machines; bounded slowdown with τ = 60 s,
per user job. The runs are made by the product::

    batpolicy campaign bench/campaigns/redirection_fig2.toml
    python bench/papers/redirection_fig2.py bench/campaigns/results/redirection_fig2 \
        -o bench/results/redirection_fig2.txt

This script only reads the campaign's ``results.csv`` and prints, per trace, the ratio
EASY / redirection of the mean and of the max bounded slowdown for every (θ, α) averaged
over the weeks (> 1: redirection is better; the paper's Fig. 2 axis behaves as
redirection / EASY, "lower is better", so both are printed), and the best (θ, α).
Redirection's figures are its user-job ones (``stat.user_jobs.*``: a redirected job
counted once, from its original submission); EASY has no copies, its job metrics are
its user-job metrics.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: The paper's §V-B: mean BSLD with tuned parameters, better than EASY by these factors.
PAPER = {"CEA-Curie": "10 % better", "RICC": "40 % better", "Intrepid": "20 % better"}


def _trace(workload: str) -> str:
    return workload.split(".swf")[0]


def _bsld(row: dict[str, str]) -> tuple[float, float]:
    """(mean, max) bounded slowdown of a row's user jobs."""
    if row.get("stat.user_jobs.mean_bounded_slowdown"):
        return (float(row["stat.user_jobs.mean_bounded_slowdown"]),
                float(row["stat.user_jobs.max_bounded_slowdown"]))
    return float(row["mean_bounded_slowdown"]), float(row["max_bounded_slowdown"])


def ratios(rows: Iterable[dict[str, str]]) -> dict[str, list[dict[str, Any]]]:
    """Per trace, per (θ, α): EASY / redirection of mean and max BSLD, averaged over weeks.

    EASY and redirection runs are paired by trace, week and α (= ``extra_machines``).

    >>> rows = [{"policy": "easy", "workload": "t.swf", "transform.week_index": "0",
    ...          "extra_machines": "0.1", "mean_bounded_slowdown": "4",
    ...          "max_bounded_slowdown": "9", "status": "ok"},
    ...         {"policy": "redirection", "workload": "t.swf", "transform.week_index": "0",
    ...          "extra_machines": "0.1", "param.theta": "5", "param.alpha": "0.1",
    ...          "stat.user_jobs.mean_bounded_slowdown": "2",
    ...          "stat.user_jobs.max_bounded_slowdown": "10", "stat.nb_redirections": "3",
    ...          "status": "ok"}]
    >>> r, = ratios(rows)["t"]
    >>> r["mean_ratio"], r["max_ratio"], r["redirections"], r["weeks"]
    (2.0, 0.9, 3.0, 1)
    """
    easy: dict[tuple[str, str, float], tuple[float, float]] = {}
    ours: dict[tuple[str, float, float], list[tuple[str, tuple[float, float], float]]] = \
        defaultdict(list)
    for row in rows:
        if row.get("status") != "ok":
            continue
        trace, week = _trace(row["workload"]), row["transform.week_index"]
        alpha = float(row["extra_machines"])
        if row["policy"] == "easy":
            easy[trace, week, alpha] = _bsld(row)
        elif row["policy"] == "redirection":
            ours[trace, float(row["param.theta"]), alpha].append(
                (week, _bsld(row), float(row.get("stat.nb_redirections") or 0)))
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (trace, theta, alpha), runs in sorted(ours.items()):
        mean_r, max_r, redir = [], [], []
        for week, (mean, high), nb in runs:
            base = easy.get((trace, week, alpha))
            if base is not None:
                mean_r.append(base[0] / mean)
                max_r.append(base[1] / high)
                redir.append(nb)
        if mean_r:
            out[trace].append({"theta": theta, "alpha": alpha, "weeks": len(mean_r),
                               "mean_ratio": statistics.fmean(mean_r),
                               "max_ratio": statistics.fmean(max_r),
                               "redirections": statistics.fmean(redir)})
    for rows_ in out.values():
        rows_.sort(key=lambda r: (r["alpha"], r["theta"]))
    return dict(out)


def report(trace: str, rows: list[dict[str, Any]]) -> str:
    """The text block of one trace: the (θ, α) table and the best pair."""
    lines = [f"## {trace}  ({rows[0]['weeks']} week(s))",
             "EASY/redir > 1: redirection better (paper's Fig. 2 axis = redir/EASY, lower better)",
             f"{'alpha':>6} {'theta':>6} {'EASY/redir mean':>16} {'EASY/redir max':>15} "
             f"{'redir/EASY mean':>16} {'redir/EASY max':>15} {'redirections':>13}"]
    for r in rows:
        lines.append(f"{r['alpha']:>6.2f} {r['theta']:>6g} {r['mean_ratio']:>16.3f} "
                     f"{r['max_ratio']:>15.3f} {1 / r['mean_ratio']:>16.3f} "
                     f"{1 / r['max_ratio']:>15.3f} {r['redirections']:>13.1f}")
    best = max(rows, key=lambda r: (r["mean_ratio"], r["max_ratio"]))
    both = [r for r in rows if r["mean_ratio"] > 1 and r["max_ratio"] > 1]
    lines.append(f"best (theta, alpha) for mean BSLD: ({best['theta']:g}, {best['alpha']:.2f})"
                 f": EASY/redir mean {best['mean_ratio']:.3f}, max {best['max_ratio']:.3f}")
    if both:
        b = max(both, key=lambda r: min(r["mean_ratio"], r["max_ratio"]))
        lines.append(f"best pair improving both: ({b['theta']:g}, {b['alpha']:.2f}): "
                     f"mean {b['mean_ratio']:.3f}, max {b['max_ratio']:.3f}")
    else:
        lines.append("no pair improves both mean and max BSLD")
    return "\n".join(lines)


def summary(per_trace: dict[str, list[dict[str, Any]]]) -> str:
    """One line per trace: the best (θ, α) for mean BSLD and the paper's Curie pair (10, 0.15).

    >>> text = summary({"t": [{"theta": 10, "alpha": 0.15, "weeks": 2, "mean_ratio": 1.25,
    ...                        "max_ratio": 0.5, "redirections": 3.0}]})
    >>> text.splitlines()[2].split()
    ['t', '2', '(10,', '0.15)', '1.250', '0.500', '1.250', '0.500', '-']
    """
    lines = ["## Summary (EASY/redir, > 1: redirection better; averaged over the weeks)",
             f"{'trace':<36} {'weeks':>5} {'best (theta, alpha)':>20} {'mean':>8} {'max':>8} "
             f"{'at (10, 0.15): mean':>20} {'max':>8}  paper (mean BSLD)"]
    for trace, rows in per_trace.items():
        best = max(rows, key=lambda r: (r["mean_ratio"], r["max_ratio"]))
        ref = next((r for r in rows if r["theta"] == 10 and abs(r["alpha"] - 0.15) < 1e-9), None)
        paper = next((v for k, v in PAPER.items() if trace.startswith(k)), "-")
        pair = f"({best['theta']:g}, {best['alpha']:.2f})"
        lines.append(f"{trace:<36} {best['weeks']:>5} {pair:>20} {best['mean_ratio']:>8.3f} "
                     f"{best['max_ratio']:>8.3f} "
                     + (f"{ref['mean_ratio']:>20.3f} {ref['max_ratio']:>8.3f}" if ref
                        else f"{'-':>20} {'-':>8}") + f"  {paper}")
    return "\n".join(lines)


def _header(results: Path) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip()
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (f"# report made at commit {commit}, {when}, from {results}/results.csv\n"
            "# Redirection (Faure et al. 2020, Fig. 2): EASY vs EASY+redirection, grown "
            "platform, walltime = run time, BSLD tau = 60 s, per user job")


def main(argv: Sequence[str] | None = None) -> int:
    """Print (and with ``-o`` write) the report of a finished redirection_fig2 campaign."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="the campaign's output folder")
    parser.add_argument("-o", "--output", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    table = args.results / "results.csv"
    try:
        with table.open(newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        sys.stderr.write(f"redirection_fig2: cannot read {table}: {exc.strerror or exc}\n")
        return 1
    per_trace = ratios(rows)
    if not per_trace:
        sys.stderr.write(f"redirection_fig2: no paired EASY/redirection runs in {table}\n")
        return 1
    failed = sum(row.get("status") != "ok" for row in rows)
    text = "\n\n".join([_header(args.results),
                        f"{len(rows)} runs in the table ({failed} failed)",
                        summary(per_trace),
                        *(report(trace, r) for trace, r in per_trace.items())]) + "\n"
    sys.stdout.write(text)
    if args.output:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

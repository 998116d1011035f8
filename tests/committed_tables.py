"""Rerun rows of a committed campaign table and list the cells that differ.

Shared by tests/campaign/test_committed_tables.py (a few rows of each table) and by hand
(``python tests/committed_tables.py CAMPAIGN [INDEX ...]``: every row when no index is
given) to check whether the current code still reproduces a table of
``bench/campaigns/results/``.
"""

from __future__ import annotations

import csv
import math
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from batpolicy.app.campaign.runner import _cell
from batpolicy.app.campaign.spec import load_campaign
from batpolicy.app.campaign.task import _is_timing, run_task

CAMPAIGNS = Path(__file__).resolve().parents[1] / "bench" / "campaigns"
#: Columns that depend on where the campaign ran (the run id hashes absolute paths).
WHERE = frozenset({"run_id"})
#: Policy statistics renamed by the one naming scheme (docs/metrics.md): committed name ->
#: today's, so a table written before the rename still compares its values.
RENAMED = {"stat.completed_late": "stat.nb_completed_late",
           "stat.completed_tardiness": "stat.total_completed_tardiness"}


def compared(column: str) -> bool:
    """Whether a column is a result (not a run id, not a wall-clock figure).

    The run id hashes absolute paths; wall-clock figures go to timings.csv in the current
    code (older tables may hold some, in µs too); ``prov.*`` names the commit and the
    input files' digests, which change with every commit, not the results.

    >>> compared("mean_waiting_time"), compared("run_id"), compared("stat.module_time_p99_us")
    (True, False, False)
    >>> compared("prov.commit")
    False
    """
    return (column not in WHERE and not column.startswith("prov.")
            and not column.endswith("_us") and not _is_timing(column))


def same_cell(committed: str, rerun: str) -> bool:
    """Whether a rerun cell reproduces the committed one.

    Text must be equal; numbers equal to 1e-12 relative. Means and sums are exact sums
    (``math.fsum``) since the metrics are gathered as the jobs end (issue 44): the last
    digit of a mean can differ by one unit from numpy's pairwise sum that older tables
    were written with. A different schedule moves a figure by far more than that.

    >>> same_cell("2.393497030532939", "2.3934970305329384"), same_cell("2.39", "2.40")
    (True, False)
    >>> same_cell("easy", "easy"), same_cell("", "0.0")
    (True, False)
    """
    if committed == rerun:
        return True
    try:
        a, b = float(committed), float(rerun)
    except ValueError:
        return False
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


def committed_rows(name: str) -> dict[int, dict[str, str]]:
    """The committed results table of campaign ``name``, by run index."""
    with (CAMPAIGNS / "results" / name / "results.csv").open(newline="") as f:
        return {int(row["index"]): row for row in csv.DictReader(f)}


def differences(name: str, indices: Iterable[int], output: Path) -> dict[int, dict[str, Any]]:
    """Rerun the runs ``indices`` of ``name``; per run, the cells that differ.

    As ``{column: (committed, rerun)}``, over the committed table's columns (a column the
    code added since is not a committed result; one the rerun lacks is a difference); an
    empty dict: every run reproduced its committed row.
    """
    campaign = load_campaign(CAMPAIGNS / f"{name}.toml", output)
    table = committed_rows(name)
    out: dict[int, dict[str, Any]] = {}
    for index in indices:
        spec = campaign.runs[index]
        row = {k: str(_cell(v)) for k, v in run_task(spec, str(output)).items()}
        old = {RENAMED.get(k, k): v for k, v in table[index].items()}
        cols = {c for c, v in old.items() if compared(c) and (v != "" or c in row)}
        diff = {c: (old.get(c, ""), row.get(c, "")) for c in sorted(cols)
                if not same_cell(old.get(c, ""), row.get(c, ""))}
        if diff:
            out[index] = diff
    return out


def main(argv: list[str]) -> int:
    """Print the differing cells of the given runs (all runs when none is given)."""
    name, indices = argv[0], [int(i) for i in argv[1:]]
    with tempfile.TemporaryDirectory() as tmp:
        todo = indices or sorted(committed_rows(name))
        diffs = differences(name, todo, Path(tmp))
    for index, diff in diffs.items():
        print(f"{name} #{index}: {len(diff)} cells differ: "
              + "; ".join(f"{c}: {a} -> {b}" for c, (a, b) in list(diff.items())[:6]))
    print(f"{name}: {len(diffs)} of {len(todo)} rows differ")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

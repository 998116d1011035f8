"""The committed campaign tables are what the current code computes (issue 31, item 1).

Each test reruns a few rows of one table of ``bench/campaigns/results/`` through the
campaign's run task (the rows that take a second or less where the table has them) and
compares every result column with the committed row: the settings, the metrics and the
policy's statistics; not the run id (it hashes absolute paths, so it depends on where
the campaign ran) nor wall-clock figures. A code change that changes a committed result
fails here: regenerate the table (its campaign file's header says how) in the same
change (numbers match to 1e-12 relative, see ``committed_tables.same_cell``).
``python tests/committed_tables.py NAME`` compares every row of a table.

Rows left out, and why: deadline_fig4's tabu rows set a 20 ms wall-clock bound (the
experiment's explicit option, flagged ``stat.reproducible`` = False), so they depend on
the machine; the coalloc figures' runs (8,000-16,000 jobs, 7-50 s each) are marked
``benchmark``, run with ``-m benchmark``; dpsa_fig3_quick and redirection_fig2 read the
Parallel Workloads Archive traces of ``../shared`` and skip without them, as do
energy_tradeoff's rows (whole HPC2N with energy on; its KTH rows take 30 s or more).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batpolicy.app.campaign.spec import load_campaign

from committed_tables import CAMPAIGNS, differences

#: Campaign -> rows (indices) rerun, cheap ones of each policy or mode where possible.
SLICES = {
    "nstep_table1": [87, 10, 103, 110],  # none, step0, hard, soft
    "redirection_demo": [20, 19],  # EASY, redirection
    "deadline_fig4": [129, 262, 417, 525],  # fcfs, easy, edf, mt-edf
    "coalloc_modules": [73],  # ideal
    "dpsa_fig3_quick": [23, 33],  # dpsa-n, dpsa-w (shared traces)
    "redirection_fig2": [955, 476],  # EASY, redirection on a loaded week (shared traces)
    "energy_tradeoff": [29],  # poweroff with -E on whole HPC2N (shared traces)
}
#: Tables whose cheapest runs take several seconds: ``-m benchmark`` only.
SLOW_SLICES = {"coalloc_fig9": [0], "coalloc_fig10": [5], "coalloc_fig11": [7]}


def _check(name: str, indices: list[int], tmp_path: Path) -> None:
    runs = load_campaign(CAMPAIGNS / f"{name}.toml", tmp_path).runs
    for index in indices:
        missing = [w for w in runs[index].workloads if not Path(w).is_file()]
        if missing:
            pytest.skip(f"{name}: input not found: {missing[0]}")
    diffs = differences(name, indices, tmp_path)
    assert not diffs, f"{name}: rows differ from the committed table: {diffs}"


@pytest.mark.parametrize("name", sorted(SLICES))
def test_committed_table_rows_are_reproduced(name: str, tmp_path: Path) -> None:
    _check(name, SLICES[name], tmp_path)


@pytest.mark.benchmark
@pytest.mark.parametrize("name", sorted(SLOW_SLICES))
def test_committed_coalloc_rows_are_reproduced(name: str, tmp_path: Path) -> None:
    _check(name, SLOW_SLICES[name], tmp_path)

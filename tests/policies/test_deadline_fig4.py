"""The committed Fig. 4 campaign (Klusáček et al. 2007, seed 002, §4, Fig. 4 left).

``bench/campaigns/results/deadline_fig4/results.csv`` is what docs/deadline.md and
``bench/results/deadline_fig4.txt`` report: these tests check that it is the table of the
committed campaign file (every run, no failure, the paper's 20 seeds) and that it shows
the ordering the docs state.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

from batpolicy.app.campaign.spec import load_campaign

CAMPAIGNS = Path(__file__).resolve().parents[2] / "bench" / "campaigns"
POLICIES = ("fcfs", "edf", "easy", "mt-edf", "tabu")


def _rows() -> list[dict[str, str]]:
    with (CAMPAIGNS / "results" / "deadline_fig4" / "results.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_the_committed_table_is_the_campaign_files_every_run() -> None:
    """700 runs = 5 policies x 7 loads x 20 seeds, all ``ok``, ids as the file gives them."""
    rows = _rows()
    runs = load_campaign(CAMPAIGNS / "deadline_fig4.toml").runs
    assert len(runs) == 700
    assert sorted(r["run_id"] for r in rows) == sorted(r.run_id for r in runs)
    assert {r["status"] for r in rows} == {"ok"}
    seeds = defaultdict(set)
    for r in rows:
        seeds[(r["policy"], int(r["preset.level"]))].add(int(r["seed"]))
    assert set(seeds) == {(p, level) for p in POLICIES for level in range(1, 8)}
    assert all(s == set(range(1, 21)) for s in seeds.values())


def test_mean_late_jobs_follow_the_papers_ordering_at_every_load() -> None:
    """Fig. 4 left: tabu <= mt-edf < edf < easy < fcfs on the 20-seed means, every load."""
    late = defaultdict(list)
    for r in _rows():
        late[(r["policy"], int(r["preset.level"]))].append(int(r["nb_late_jobs"]))
    for level in range(1, 8):
        mean = {p: statistics.mean(late[(p, level)]) for p in POLICIES}
        assert mean["tabu"] <= mean["mt-edf"] < mean["edf"] < mean["easy"] < mean["fcfs"], \
            (level, mean)

"""The Batsim team's analysis library, evalys, reads our jobs.csv as Batsim's own.

Runs when evalys is installed (``pip install 'batpolicy[evalys]'``).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

evalys_jobset = pytest.importorskip("evalys.jobset")


def test_evalys_reads_a_simulate_run(tmp_path: Path) -> None:
    from batpolicy.app.cli import main

    out = tmp_path / "out"
    assert main(["simulate", "--policy", "easy", "-o", str(out), "--no-progress", "-q"]) == 0
    with (out / "jobs.csv").open() as f:
        ours = list(csv.DictReader(f))
    jobset = evalys_jobset.JobSet.from_csv(str(out / "jobs.csv"))
    assert len(jobset.df) == len(ours) == 250
    assert jobset.MaxProcs == 128  # from the allocations: the bundled 128-machine platform
    by_id = {str(r["jobID"]): r for r in jobset.df.to_dict("records")}
    for row in ours:
        job = by_id[row["job_id"]]
        assert job["starting_time"] == pytest.approx(float(row["starting_time"]))
        assert job["proc_alloc"] == int(row["requested_number_of_resources"])

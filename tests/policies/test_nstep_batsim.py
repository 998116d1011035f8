"""``serve --policy nstep`` beside real Batsim 4.2.1 on a generated rack platform.

Runs when real Batsim is built (outside the repository); skipped otherwise.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from batpolicy.app.cli import main

from clirun import serve_beside_batsim


@pytest.mark.batsim
@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_serve_nstep_runs_to_the_end_beside_batsim(tmp_path: Path, batsim_prefix: Path,
                                                   mode: str) -> None:
    platform, workload = tmp_path / "racks.xml", tmp_path / "w.json"
    assert main(["platform", "racks", "--racks", "4", "--nodes", "6", "--gpu-racks", "1",
                 "-o", str(platform)]) == 0
    assert main(["workload", "synth", "--preset", "nstep-exp2", "--seed", "5", "--param",
                 "nb_jobs=30", "-o", str(workload)]) == 0
    serve_beside_batsim(batsim_prefix, platform, workload, tmp_path / "b",
                        ["--policy", "nstep", "--param", f"mode={mode}", "--param", "prune=true"])
    with (tmp_path / "b_jobs.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 60
    states = {r["final_state"] for r in rows}
    assert states <= {"COMPLETED_SUCCESSFULLY", "REJECTED"} and "COMPLETED_SUCCESSFULLY" in states

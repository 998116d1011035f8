"""Written workloads load in real Batsim 4.2.1 and give the schedule ``simulate`` gives.

A synthetic workload (with deadline fields) and a transformed recorded workload (load x 2)
are run by real Batsim 4.2.1 with batsched 1.4 ``easy_bf``, and by ``batpolicy simulate
--policy easy`` (decision-for-decision batsched's EASY): the two jobs.csv must be the same
bytes. Skipped, before anything starts, when Batsim is not installed (``BATSIM_PREFIX``,
default ``/opt/batsim-4.2.1``).
"""

from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

import pytest

from batpolicy.app import cli

from clirun import free_port, restore_logging  # noqa: F401  (autouse fixture)
from conftest import VENDORED_TRANSCRIPTS

PREFIX = Path(os.environ.get("BATSIM_PREFIX", "/opt/batsim-4.2.1"))
BATSIM, BATSCHED = PREFIX / "bin" / "batsim", PREFIX / "bin" / "batsched"
PLATFORM = VENDORED_TRANSCRIPTS / "inputs" / "zero_lat_cluster32.xml"
pytestmark = pytest.mark.skipif(not (BATSIM.is_file() and BATSCHED.is_file()),
                                reason=f"real Batsim 4.2.1 / batsched not found under {PREFIX}")


def _real_batsim(workload: Path, out: Path) -> list[list[str]]:
    """jobs.csv of Batsim 4.2.1 + batsched easy_bf on ``workload``."""
    out.mkdir()
    port = free_port()
    log = (out / "batsched.log").open("w")  # a pipe nobody reads would block batsched
    sched = subprocess.Popen([str(BATSCHED), "-v", "easy_bf", "-s", f"tcp://*:{port}"],
                             stdout=log, stderr=subprocess.STDOUT)
    try:
        run = subprocess.run([str(BATSIM), "-p", str(PLATFORM), "-w", str(workload), "-e",
                              str(out / "b"), "-s", f"tcp://localhost:{port}"],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-2000:]
        assert sched.wait(timeout=30) == 0
    finally:
        sched.kill()
        sched.wait()
        log.close()
    return _rows(out / "b_jobs.csv")


def _ours(workload: Path, out: Path) -> list[list[str]]:
    """Our jobs.csv, Batsim's 17 columns only.

    Extra job fields such as ``deadline`` come after them in ours; Batsim writes none.
    """
    assert cli.main(["simulate", "--policy", "easy", "-w", str(workload), "-p", str(PLATFORM),
                     "-o", str(out), "--quiet"]) == 0
    return _rows(out / "jobs.csv")


def _rows(path: Path) -> list[list[str]]:
    """jobs.csv rows as fields, Batsim's 17 columns (quoting aside)."""
    with path.open(newline="") as f:
        return [row[:17] for row in csv.reader(f)]


def test_synthetic_workload_runs_in_batsim_as_in_simulate(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    assert cli.main(["workload", "synth", "--preset", "uniform", "--seed", "3", "--param",
                     "nb_jobs=60", "--param", "slack_min=2", "-o", str(path)]) == 0
    assert _real_batsim(path, tmp_path / "batsim") == _ours(path, tmp_path / "sim")


def test_transformed_workload_runs_in_batsim_as_in_simulate(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    source = VENDORED_TRANSCRIPTS / "inputs" / "walltime_mix_120.json"
    assert cli.main(["workload", "transform", str(source), "--load", "2", "-o", str(path)]) == 0
    assert _real_batsim(path, tmp_path / "batsim") == _ours(path, tmp_path / "sim")

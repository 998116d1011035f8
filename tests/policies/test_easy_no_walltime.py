"""EASY and jobs without a walltime: batsched's easy_bf rejects them, and so do we by default.

The recorded reference is real Batsim 4.2.1 + batsched 1.4 easy_bf on Batsim's own
test_walltime.json (tests/data/batsched_walltime); with Batsim built, the test also runs
batsched live.
"""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

from batpolicy.app.cli import main

from clirun import free_port

DATA = Path(__file__).resolve().parents[1] / "data" / "batsched_walltime"
WORKLOAD, PLATFORM = DATA / "test_walltime.json", DATA / "zero_lat_cluster128.xml"


def _rows(path: Path) -> list[str]:
    """jobs.csv rows, sorted; the decisions are what is compared.

    At one instant Batsim reports delay jobs before computing ones (SimGrid's order),
    we report them by id.
    """
    with path.open() as f:
        return sorted(",".join(row) for row in list(csv.reader(f))[1:])


def _simulate(tmp_path: Path, *params: str) -> Path:
    prefix = tmp_path / "ours"
    args = ["simulate", "--policy", "easy", "-w", str(WORKLOAD), "-p", str(PLATFORM),
            "-e", str(prefix), "-q"]
    for p in params:
        args += ["--param", p]
    assert main(args) == 0
    return Path(f"{prefix}_jobs.csv")


def test_easy_rejects_jobs_without_walltime_as_batsched(tmp_path: Path) -> None:
    ours = _simulate(tmp_path)
    assert _rows(ours) == _rows(DATA / "batsched-easy_bf.jobs.csv")
    rejected = [r for r in _rows(ours) if "REJECTED" in r]
    assert len(rejected) == 4 and all(",-1.000000," in r for r in rejected)


def test_no_walltime_run_starts_them(tmp_path: Path) -> None:
    with _simulate(tmp_path, "no_walltime=run").open() as f:
        rows = {r["job_id"]: r for r in csv.DictReader(f)}
    no_walltime = [r for r in rows.values() if r["requested_time"] == "-1.000000"]
    assert len(no_walltime) == 4
    assert all(r["final_state"] == "COMPLETED_SUCCESSFULLY" for r in no_walltime)


def test_live_batsched_agrees(tmp_path: Path, batsim_prefix: Path) -> None:
    port = free_port()
    sched = subprocess.Popen([str(batsim_prefix / "bin" / "batsched"), "-v", "easy_bf", "-s",
                              f"tcp://*:{port}"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        subprocess.run([str(batsim_prefix / "bin" / "batsim"), "-p", str(PLATFORM), "-w",
                        str(WORKLOAD), "-e", str(tmp_path / "bs"), "-s",
                        f"tcp://localhost:{port}"], check=True, timeout=120,
                       capture_output=True)
    finally:
        sched.kill()
        sched.wait()
    assert _rows(tmp_path / "bs_jobs.csv") == _rows(_simulate(tmp_path))

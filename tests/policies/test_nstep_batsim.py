"""``serve --policy nstep`` beside real Batsim 4.2.1 on a generated rack platform.

Runs when Batsim is built (``../shared/batsim/build.sh``); skipped otherwise.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from batpolicy.scheduler.cli import main

from clirun import free_port


@pytest.mark.batsim
@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_serve_nstep_runs_to_the_end_beside_batsim(tmp_path: Path, batsim_prefix: Path,
                                                   mode: str) -> None:
    platform, workload = tmp_path / "racks.xml", tmp_path / "w.json"
    assert main(["platform", "racks", "--racks", "4", "--nodes", "6", "--gpu-racks", "1",
                 "-o", str(platform)]) == 0
    assert main(["workload", "synth", "--preset", "nstep-exp2", "--seed", "5", "--param",
                 "nb_jobs=30", "-o", str(workload)]) == 0
    port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", "--policy", "nstep",
                              "--param", f"mode={mode}", "--param", "prune=true",
                              "--socket-endpoint", f"tcp://127.0.0.1:{port}",
                              "--platform", str(platform), "--timeout", "120"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run = subprocess.run([str(batsim_prefix / "bin" / "batsim"), "-p", str(platform),
                              "-w", str(workload), "-e", str(tmp_path / "b"), "-s",
                              f"tcp://127.0.0.1:{port}"], capture_output=True, text=True,
                             timeout=180)
        assert run.returncode == 0, run.stderr[-2000:]
        assert serve.wait(timeout=60) == 0, serve.stderr.read()[-2000:]
    finally:
        serve.kill()
    with (tmp_path / "b_jobs.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 60
    states = {r["final_state"] for r in rows}
    assert states <= {"COMPLETED_SUCCESSFULLY", "REJECTED"} and "COMPLETED_SUCCESSFULLY" in states

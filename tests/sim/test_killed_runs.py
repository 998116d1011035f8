"""Outputs of a run killed outright (SIGKILL) cannot pass for a complete run's.

Every output is written as ``NAME.part`` and renamed when the run ends, so a killed
``fake-batsim`` or ``simulate`` leaves no ``jobs.csv`` (what Batsim's tools read), and a
complete run leaves no ``.part`` file; a previous run's outputs are removed first.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from batpolicy.app import cli

from clirun import (  # noqa: F401  (restore_logging is an autouse fixture)
    free_port,
    restore_logging,
)


def test_a_sigkilled_fake_batsim_leaves_no_jobs_csv(tmp_path: Path) -> None:
    out = tmp_path / "fake"
    out.mkdir()
    (out / "metrics.json").write_text("{}\n")  # a previous run's: must not stay beside
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    record = tmp_path / "served.msgpack"
    serve = subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", "--policy", "easy",
                              "-s", endpoint, "--record", str(record)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fake = subprocess.Popen([sys.executable, "-m", "batpolicy", "fake-batsim", "-s", endpoint,
                             "-o", str(out), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not record.exists() or record.stat().st_size == 0:  # the run has begun
            assert time.monotonic() < deadline and fake.poll() is None
            time.sleep(0.001)
        fake.send_signal(signal.SIGKILL)
        fake.wait(timeout=10)
        # serve notices that its Batsim is gone, without --timeout
        assert serve.wait(timeout=20) == 3
    finally:
        fake.kill()
        serve.kill()
    names = {path.name for path in out.iterdir()}
    assert "jobs.csv.part" in names
    assert not names & {"jobs.csv", "schedule.csv", "metrics.json", "machine_states.csv"}


def test_a_complete_run_leaves_its_outputs_under_their_names(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    assert cli.main(["simulate", "--policy", "fcfs", "-o", str(out), "--quiet"]) == 0
    assert sorted(path.name for path in out.iterdir()) == \
        ["jobs.csv", "machine_states.csv", "metrics.json", "schedule.csv"]

"""Helpers for the tests that run the ``batpolicy`` commands end to end.

The commands are called in-process through :func:`batpolicy.app.cli.main`, which
installs its own logging handlers on the root logger: :func:`restore_logging` puts the
root logger back after each test (import it into a test module to make it autouse there).
"""

from __future__ import annotations

import csv
import logging
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import TRANSCRIPTS

INPUTS = TRANSCRIPTS / "inputs"

#: Workloads of the recorded runs: name -> (workload, platform), as the transcripts' README
#: lists them (and their SIMULATION_BEGINS confirms: 128 machines for hpc250, else 32).
RECORDED_WORKLOADS = {
    "hpc250": ("example_workload_hpc_seed1_jobs250.json", "zero_lat_cluster128.xml"),
    "paper800": ("test_batsim_paper_workload_seed1.json", "zero_lat_cluster32.xml"),
    "walltime120": ("walltime_mix_120.json", "zero_lat_cluster32.xml"),
}


def recorded_inputs(name: str) -> list[str]:
    """``-w WORKLOAD -p PLATFORM`` of a recorded run; skips when the shared data is absent."""
    workload, platform = RECORDED_WORKLOADS[name]
    if not (INPUTS / workload).is_file():
        pytest.skip(f"shared inputs not found at {INPUTS}")
    return ["-w", str(INPUTS / workload), "-p", str(INPUTS / platform)]


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_beside_batsim(batsim_prefix: Path, platform: Path, workload: Path, out: Path,
                        serve_args: list[str]) -> None:
    """Run ``batpolicy serve SERVE_ARGS`` (a process) against real Batsim to the end.

    Batsim writes its outputs with prefix ``out``; both must exit 0 (their stderr is shown
    otherwise), and the daemon is killed if anything goes wrong.
    """
    port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", *serve_args,
                              "--socket-endpoint", f"tcp://127.0.0.1:{port}",
                              "--platform", str(platform), "--timeout", "120"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run = subprocess.run([str(batsim_prefix / "bin" / "batsim"), "-p", str(platform),
                              "-w", str(workload), "-e", str(out), "-s",
                              f"tcp://127.0.0.1:{port}"], capture_output=True, text=True,
                             timeout=180)
        assert run.returncode == 0, run.stderr[-2000:]
        assert serve.wait(timeout=60) == 0, serve.communicate()[1][-2000:]
    finally:
        serve.kill()
        serve.communicate()


def read_jobs(path: Path) -> dict[str, dict[str, str]]:
    """The rows of a Batsim ``jobs.csv``, by ``job_id``."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    by_id = {row["job_id"]: row for row in rows}
    assert len(by_id) == len(rows), f"{path}: a job_id appears twice"
    return by_id


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Give the root logger its handlers and level back after a test that ran ``main()``."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for handler in root.handlers:
        if handler not in handlers:
            handler.close()
    root.handlers[:] = handlers
    root.setLevel(level)

"""``batpolicy fake-batsim`` + ``batpolicy serve`` against ``batpolicy simulate``.

The two ways differ only in the transport (docs/design.md): ``simulate`` calls the
policy in-process, ``fake-batsim`` plays Batsim on a ZeroMQ REQ socket and ``serve``
(a real subprocess, the command a user starts) answers on its REP socket. Same policy and
inputs must give the same jobs.csv, byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from batpolicy.app import cli

from clirun import (  # noqa: F401  (restore_logging is an autouse fixture)
    free_port,
    read_jobs,
    recorded_inputs,
    restore_logging,
)
from conftest import SHARED_DATA

KTH = SHARED_DATA / "traces" / "KTH-SP2-1996-2.swf.gz"


def _inputs(case: str) -> list[str]:
    if case == "kth3000":  # a real trace: SWF reader, platform size from the header
        if not KTH.is_file():
            pytest.skip(f"trace not found at {KTH}")
        return ["-w", str(KTH), "--max-jobs", "3000"]
    if case == "paper800-events":  # machines going down and up: NOTIFY over the wire
        return [*recorded_inputs("paper800"), "--events",
                str(Path(recorded_inputs("paper800")[1]).parent / "events_unavailable.txt")]
    return recorded_inputs(case)  # walltime120 has walltime kills and simultaneous submissions


def _start_serve(policy: str, endpoint: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", "--policy", policy,
                             "--socket-endpoint", endpoint, "--timeout", "30"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("case", ["hpc250", "walltime120", "paper800-events", "kth3000"])
@pytest.mark.parametrize("policy", ["fcfs", "easy"])
def test_fake_batsim_and_serve_give_the_jobs_csv_of_simulate(
        policy: str, case: str, tmp_path: Path) -> None:
    inputs = _inputs(case)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    serve = _start_serve(policy, endpoint)  # starts while simulate runs
    try:
        assert cli.main(["simulate", "--policy", policy, *inputs, "-o", str(tmp_path / "sim"),
                         "--quiet"]) == 0
        assert cli.main(["fake-batsim", *inputs, "-s", endpoint, "--timeout", "30",
                         "-o", str(tmp_path / "fake"), "--quiet"]) == 0
        status = serve.wait(timeout=30)
        stderr = serve.stderr.read()  # type: ignore[union-attr]
    finally:
        serve.kill()
        serve.communicate()
    assert status == 0, stderr
    assert "Traceback" not in stderr

    simulated = (tmp_path / "sim" / "jobs.csv").read_text()
    served = (tmp_path / "fake" / "jobs.csv").read_text()
    assert simulated == served
    assert len(read_jobs(tmp_path / "sim" / "jobs.csv")) >= 120
    sim_metrics = json.loads((tmp_path / "sim" / "metrics.json").read_text())
    fake_metrics = json.loads((tmp_path / "fake" / "metrics.json").read_text())
    assert sim_metrics["complete"] is fake_metrics["complete"] is True
    for key in ("nb_jobs", "nb_jobs_killed", "nb_jobs_rejected", "makespan",
                "mean_waiting_time", "utilization", "nb_messages"):
        assert sim_metrics[key] == fake_metrics[key], key


def test_fake_batsim_with_no_scheduler_gives_up_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = recorded_inputs("walltime120")
    endpoint = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    began = time.monotonic()
    status = cli.main(["fake-batsim", *inputs, "-s", endpoint, "--timeout", "1",
                       "-o", str(tmp_path / "out"), "--quiet"])
    elapsed = time.monotonic() - began
    err = capsys.readouterr().err
    assert status != 0
    assert elapsed < 4
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("batpolicy: ERROR: ") and endpoint in lines[0]
    assert "1 s" in lines[0]
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["complete"] is False and "PeerTimeout" in metrics["error"]

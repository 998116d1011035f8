"""Redirection from the command line: ``simulate``, and ``serve`` behind ``fake-batsim``.

- ``batpolicy simulate --policy redirection`` enables dynamic jobs by itself, writes the
  copy links in jobs.csv's metadata column, counts each user job once in metrics.json
  and reports nb_redirections and the wasted processor-seconds under ``policy_stats``;
- ``grow=true`` offline: ``--nb-res m+⌈α·m⌉`` with ``original_size=m``, or a one-line
  error naming the size to use;
- ``fake-batsim --enable-dynamic-jobs`` driving ``serve --policy redirection`` over
  ZeroMQ writes the same jobs.csv as ``simulate`` (acknowledgements on and off).
"""

from __future__ import annotations

import csv
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from batpolicy.app.cli import main

#: The hand-made workload of test_redirection_sim.py (see there): w0!0 is redirected at 30.
PROFILES = {"long": {"type": "delay", "delay": 900.0}, "wide": {"type": "delay", "delay": 100.0},
            "short": {"type": "delay", "delay": 50.0}}
JOBS = [("0", 0.0, 2, 1000.0, "long"), ("1", 0.0, 6, 120.0, "wide"),
        ("2", 10.0, 1, 60.0, "short"), ("3", 20.0, 1, 60.0, "short"),
        ("4", 30.0, 1, 60.0, "short")]
REDIRECTION = ["--policy", "redirection", "--param", "theta=2", "--param", "alpha=0.2"]


@pytest.fixture()
def hand_made(tmp_path: Path) -> Path:
    """The hand-made workload of test_redirection_sim as a Batsim JSON file."""
    path = tmp_path / "hand_made.json"
    jobs = [{"id": name, "subtime": sub, "res": res, "walltime": wall, "profile": prof}
            for name, sub, res, wall, prof in JOBS]
    path.write_text(json.dumps({"nb_res": 10, "jobs": jobs, "profiles": PROFILES}))
    return path


def rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open() as f:
        return {row["job_id"]: row for row in csv.DictReader(f)}


def test_simulate_counts_each_user_job_once_and_reports_redirections(
        hand_made: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["simulate", *REDIRECTION, "-w", str(hand_made), "--nb-res", "10",
                 "-o", str(out), "--no-progress"]) == 0  # no --enable-dynamic-jobs needed
    jobs = rows(out / "jobs.csv")
    assert len(jobs) == 6  # the killed run and its copy are both in Batsim's output
    assert jobs["0"]["final_state"] == "COMPLETED_KILLED"
    assert jobs["0"]["metadata"] == "redirected_to=redir!w0.0"
    assert jobs["w0.0"]["workload_name"] == "redir"
    assert jobs["w0.0"]["metadata"] == "parent=w0!0"
    assert float(jobs["w0.0"]["waiting_time"]) == 30.0  # from the original submission
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["complete"] and metrics["nb_job_records"] == 6
    assert metrics["nb_jobs"] == 5 and metrics["nb_jobs_killed"] == 0
    assert metrics["mean_waiting_time"] == pytest.approx((30 + 0 + 20 + 10 + 50) / 5)
    assert metrics["max_turnaround_time"] == 930.0
    stats = metrics["policy_stats"]
    assert stats["nb_redirections"] == 1
    assert stats["wasted_processor_seconds"] == 60.0  # 2 machines killed after 30 s
    assert stats["user_jobs"]["nb_jobs"] == 5


def test_simulate_grow_with_the_grown_size(hand_made: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["simulate", *REDIRECTION, "--param", "grow=true", "--param",
                 "original_size=10", "-w", str(hand_made), "--nb-res", "12", "-o", str(out),
                 "--no-progress"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["nb_machines"] == 12
    assert (metrics["policy_stats"]["principal_group"],
            metrics["policy_stats"]["redirection_group"]) == ("0-9", "10-11")


def test_simulate_grow_on_the_original_platform_names_the_size(
        hand_made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["simulate", *REDIRECTION, "--param", "grow=true", "--param",
                   "original_size=10", "-w", str(hand_made), "--nb-res", "10",
                   "-o", str(tmp_path / "out"), "--no-progress"])
    assert status == 1
    err = capsys.readouterr().err
    assert "must have m + ceil(alpha*m) = 12 machines, it has 10" in err
    assert "--nb-res 12" in err and "Traceback" not in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("ack", [False, True], ids=["no-ack", "ack"])
def test_serve_behind_fake_batsim_matches_simulate(ack: bool, tmp_path: Path) -> None:
    """The bundled 250-job workload on 128 machines: θ=2 gives a few dozen redirections."""
    params = ["--policy", "redirection", "--param", "theta=2", "--param", "alpha=0.15"]
    flags = ["--enable-dynamic-jobs"] + (["--acknowledge-dynamic-jobs"] if ack else [])
    assert main(["simulate", *params, *flags, "-o", str(tmp_path / "sim"),
                 "--no-progress"]) == 0
    port = _free_port()
    serve = subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", *params,
                              "--socket-endpoint", f"tcp://127.0.0.1:{port}",
                              "--timeout", "30"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert main(["fake-batsim", *flags, "-s", f"tcp://127.0.0.1:{port}",
                     "--timeout", "30", "-o", str(tmp_path / "fake"), "--no-progress"]) == 0
        assert serve.wait(timeout=30) == 0, serve.stderr.read()
    finally:
        serve.kill()
    simulated = (tmp_path / "sim" / "jobs.csv").read_text()
    assert (tmp_path / "fake" / "jobs.csv").read_text() == simulated
    redirected = [r for r in rows(tmp_path / "sim" / "jobs.csv").values()
                  if r["metadata"].startswith("parent=")]
    metrics = json.loads((tmp_path / "sim" / "metrics.json").read_text())
    assert len(redirected) == metrics["policy_stats"]["nb_redirections"] >= 10
    assert metrics["nb_jobs"] == 250

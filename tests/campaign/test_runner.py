"""Campaign runs: local pool = Dask cluster, resumable after a kill, one tidy table."""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from batpolicy.app.campaign.executors import LocalPool
from batpolicy.app.campaign.runner import run_campaign
from batpolicy.app.campaign.spec import load_campaign


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_local_campaign_writes_one_row_per_run_with_params_and_metrics(
        small_campaign: Path) -> None:
    campaign = load_campaign(small_campaign)
    report = run_campaign(campaign, LocalPool(2), progress=False)
    assert (report.total, report.skipped, report.ran, report.failed) == (8, 0, 8, 0)
    rows = _rows(report.table)
    assert [r["policy"] for r in rows] == ["fcfs"] * 2 + ["easy"] * 2 + ["redirection"] * 4
    assert [r["param.theta"] for r in rows[4:]] == ["1", "1", "10", "10"]
    assert all(r["status"] == "ok" for r in rows)
    # each row's metrics are the run's own metrics.json
    for row in rows:
        metrics = json.loads((campaign.output / "runs" / row["run_id"] /
                              "metrics.json").read_text())
        assert float(row["mean_bounded_slowdown"]) == metrics["mean_bounded_slowdown"]
        assert int(row["nb_jobs"]) == metrics["nb_jobs"]
    assert [r["nb_jobs"] for r in rows[:4]] == ["60", "120", "60", "120"]
    # wall-clock figures are kept apart, so the table is reproducible
    assert "wall_time_s" not in rows[0] and "wall_time_s" in _rows(
        campaign.output / "timings.csv")[0]
    again = run_campaign(campaign, LocalPool(2), progress=False)
    assert (again.skipped, again.ran) == (8, 0)


def test_a_failing_run_gets_an_error_row_and_the_others_complete(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[[run]]\npolicy = "easy"\nworkload = "missing.json"\nnb_res = 4\n'
                    '[[run]]\npolicy = "fcfs"\nmax_jobs = 20\n')
    report = run_campaign(load_campaign(path), LocalPool(1), progress=False)
    rows = _rows(report.table)
    assert report.failed == 1
    assert rows[0]["status"] == "error" and "missing.json" in rows[0]["error"]
    assert rows[1]["status"] == "ok" and rows[1]["nb_jobs"] == "20"


def _slow_campaign(tmp_path: Path, output: str) -> Path:
    """Ten runs of ~0.3 s each on a generated 1,500-job workload (long enough to kill)."""
    jobs = [{"id": str(i), "subtime": i * 7.0, "res": 1 + (i * 37) % 16,
             "walltime": 400.0, "profile": f"p{i % 5}"} for i in range(1500)]
    profiles = {f"p{k}": {"type": "delay", "delay": 60.0 + 50 * k} for k in range(5)}
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 32, "jobs": jobs, "profiles": profiles}))
    path = tmp_path / f"{output}.toml"
    path.write_text(f'[campaign]\noutput = "{output}"\n[defaults]\nworkload = "w.json"\n'
                    'nb_res = 32\n[[grid]]\npolicy = ["fcfs", "easy"]\n'
                    'max_jobs = [1100, 1200, 1300, 1400, 1500]\n')
    return path


def test_a_campaign_killed_midway_resumes_without_redoing_finished_runs(
        tmp_path: Path) -> None:
    interrupted = _slow_campaign(tmp_path, "killed")
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "batpolicy.app.cli", "campaign", str(interrupted),
           "-j", "1", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(list(out.glob("runs/*/row.json"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(timeout=60)
    finally:
        proc.kill()
    finished = {p: (p.stat().st_mtime_ns, p.read_text()) for p in out.glob("runs/*/row.json")}
    assert status == 130, proc.stderr.read()
    assert 2 <= len(finished) < 10, "the campaign ended before it could be interrupted"
    assert len(_rows(out / "results.csv")) == len(finished)  # the table of what finished

    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    assert f"{len(finished)} already done, {10 - len(finished)} run now" in rerun.stdout
    for path, (mtime, text) in finished.items():  # not redone
        assert (path.stat().st_mtime_ns, path.read_text()) == (mtime, text)

    whole = _slow_campaign(tmp_path, "whole")
    run_campaign(load_campaign(whole), LocalPool(2), progress=False)
    assert (out / "results.csv").read_text() == (tmp_path / "whole" / "results.csv").read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_same_campaign_on_a_dask_cluster_gives_the_identical_table(
        small_campaign: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    from distributed import Client

    from batpolicy.app.campaign.executors import DaskCluster

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                               "--host", "127.0.0.1", "--port", str(port),
                               "--dashboard-address", ":0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address,
                 "--nthreads", "1", "--host", "127.0.0.1", "--dashboard-address", ":0"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        local = load_campaign(small_campaign, tmp_path / "local")
        run_campaign(local, LocalPool(2), progress=False)
        remote = load_campaign(small_campaign, tmp_path / "dask")
        report = run_campaign(remote, DaskCluster(address), progress=False)
        assert report.ran == 8 and report.failed == 0
        assert (tmp_path / "dask" / "results.csv").read_text() == \
            (tmp_path / "local" / "results.csv").read_text()
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_a_campaign_run_writes_the_jobs_csv_of_simulate(tmp_path: Path) -> None:
    """Same inputs, same job model: the run's jobs.csv is `simulate`'s, model columns included."""
    from batpolicy.app.cli import main

    platform, workload = tmp_path / "mc2.xml", tmp_path / "w.json"
    assert main(["platform", "multicluster", "--clusters", "2", "--nodes", "100",
                 "--link-bandwidth", "1Gbps", "-o", str(platform)]) == 0
    assert main(["workload", "synth", "--preset", "coalloc-4.3", "--seed", "1", "--param",
                 "clusters=2", "--param", "jobs=40", "-o", str(workload)]) == 0
    assert main(["simulate", "--policy", "coalloc", "--param", "module=ff", "--job-model",
                 "bandwidth", "-p", str(platform), "-w", str(workload),
                 "-o", str(tmp_path / "sim"), "-q", "--no-progress"]) == 0
    toml = tmp_path / "c.toml"
    toml.write_text(f'[campaign]\nname = "c"\n[[run]]\npolicy = "coalloc"\n'
                    f'params = {{ module = "ff" }}\njob_model = "bandwidth"\n'
                    f'platform = "{platform}"\nworkload = "{workload}"\n')
    campaign = load_campaign(toml)
    report = run_campaign(campaign, LocalPool(1), progress=False)
    assert report.failed == 0
    (run_dir,) = (campaign.output / "runs").iterdir()
    ours = (run_dir / "jobs.csv").read_text()
    assert "coalloc_penalty" in ours.splitlines()[0]
    assert ours == (tmp_path / "sim" / "jobs.csv").read_text()

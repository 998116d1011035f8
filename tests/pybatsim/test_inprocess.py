"""``batpolicy simulate --policy pybatsim:...``: pybatsim schedulers, unmodified, in-process.

The references are real: ``pybatsim-easy-*.jobs.csv`` is what Batsim 4.2.1 wrote beside
pybatsim 3.2.1's ``easyBackfill`` (the shared data's transcripts; walltime120 vendored).
A user's scheduler file (docs/examples/pybatsim/myFcfs.py) must give the same jobs.csv
in-process and over ``batpolicy fake-batsim`` with pybatsim's own launcher on the socket.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from batpolicy.app import cli
from batpolicy.protocol.transcript import read_transcript

from clirun import (  # noqa: F401  (restore_logging is an autouse fixture)
    free_port,
    read_jobs,
    recorded_inputs,
    restore_logging,
)
from conftest import TRANSCRIPTS

#: The user's scheduler of docs/pybatsim.md, written in pybatsim's documented style.
MY_FCFS = Path(__file__).resolve().parents[2] / "docs" / "examples" / "pybatsim" / "myFcfs.py"

pytestmark = pytest.mark.usefixtures("pybatsim")


def _simulate(inputs: list[str], out: Path, *args: str) -> int:
    return cli.main(["simulate", *inputs, "-o", str(out), "--quiet", *args])


@pytest.mark.parametrize("workload", ["walltime120", "hpc250", "paper800"])
def test_easy_backfill_in_process_gives_real_batsims_jobs_csv(workload: str,
                                                               tmp_path: Path) -> None:
    reference = TRANSCRIPTS / f"pybatsim-easy-{workload}.jobs.csv"
    if not reference.is_file():
        pytest.skip(f"reference {reference} not available")
    inputs = recorded_inputs(workload)
    assert _simulate(inputs, tmp_path, "--policy", "pybatsim:easyBackfill") == 0
    assert (tmp_path / "jobs.csv").read_bytes() == reference.read_bytes()
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["complete"] and metrics["policy"] == "pybatsim:easyBackfill"


def test_no_zeromq_context_is_ever_created(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import zmq

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a ZeroMQ context was created")

    monkeypatch.setattr(zmq.Context, "__init__", refuse)  # Context() and Context.instance()
    with pytest.raises(AssertionError):
        zmq.Context()
    assert _simulate(recorded_inputs("walltime120"), tmp_path, "--policy",
                     "pybatsim:easyBackfill") == 0
    assert len(read_jobs(tmp_path / "jobs.csv")) == 120


def test_user_scheduler_runs_the_same_in_process_and_over_fake_batsim(tmp_path: Path) -> None:
    inputs = recorded_inputs("walltime120")
    options = '{"decision_delay": 2.5}'
    inproc = tmp_path / "inproc"
    assert _simulate(inputs, inproc, "--policy", f"pybatsim:{MY_FCFS}",
                     "--param", f"options={options}") == 0

    endpoint = f"tcp://127.0.0.1:{free_port()}"
    log = tmp_path / "pybatsim.log"
    with log.open("w") as said:  # pybatsim's own launcher, as a user starts it
        launcher = subprocess.Popen(
            [sys.executable, "-m", "batsim.cmds.launcher", str(MY_FCFS), "-s", endpoint,
             "-o", options, "-v", "warning", "-t", "30000"],
            cwd=tmp_path, stdout=said, stderr=subprocess.STDOUT, text=True)
        try:
            status = cli.main(["fake-batsim", *inputs, "-s", endpoint, "--timeout", "30",
                               "-o", str(tmp_path / "socket"), "--quiet"])
            assert status == 0, log.read_text()
            assert launcher.wait(timeout=30) == 0, log.read_text()
        finally:
            launcher.kill()
            launcher.wait()
    assert "Scheduler: MyFcfs" in log.read_text()
    ours = (inproc / "jobs.csv").read_bytes()
    assert ours == (tmp_path / "socket" / "jobs.csv").read_bytes()
    # the option reached the scheduler: every start is a decision time + 2.5 s
    rows = read_jobs(inproc / "jobs.csv")
    assert float(rows["1"]["starting_time"]) == 2.5


def test_every_simulate_option_still_applies(tmp_path: Path) -> None:
    record = tmp_path / "run.msgpack"
    prefix = tmp_path / "exp" / "out"
    assert _simulate(recorded_inputs("walltime120"), tmp_path, "--policy", "pybatsim:easyBackfill",
                     "--mmax", "8", "--record", str(record), "-e", str(prefix)) == 0
    rows = read_jobs(Path(f"{prefix}_jobs.csv"))
    assert len(rows) == 120
    used = {int(m) for row in rows.values() for part in row["allocated_resources"].split()
            for m in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)}
    assert used and max(used) < 8
    exchanges = list(read_transcript(record))
    first, last = exchanges[0][0], exchanges[-1][0]
    assert first["events"][0]["type"] == "SIMULATION_BEGINS"
    assert first["events"][0]["data"]["nb_resources"] == 8
    assert last["events"][-1]["type"] == "SIMULATION_ENDS"
    assert os.path.isfile(f"{prefix}_metrics.json")


def test_a_campaign_runs_pybatsim_schedulers_beside_ours(tmp_path: Path) -> None:
    reference = TRANSCRIPTS / "pybatsim-easy-walltime120.jobs.csv"
    workload, platform = recorded_inputs("walltime120")[1::2]
    spec = tmp_path / "c.toml"
    spec.write_text(f"""[campaign]
name = "pybatsim"
[[grid]]
policy = ["pybatsim:easyBackfill", "pybatsim:{MY_FCFS}"]
params = {{options = {{decision_delay = 0}}}}
workload = "{workload}"
platform = "{platform}"
[[grid]]
policy = ["easy"]
workload = "{workload}"
platform = "{platform}"
""")
    assert cli.main(["campaign", str(spec), "-o", str(tmp_path / "out"), "--no-progress"]) == 0
    rows = {r["policy"]: r for r in csv.DictReader((tmp_path / "out" / "results.csv").open())}
    assert rows["easy"]["status"] == "ok"
    assert rows["pybatsim:easyBackfill"]["status"] == "ok"
    assert rows[f"pybatsim:{MY_FCFS}"]["status"] == "ok"
    (easy_run,) = [p for p in (tmp_path / "out" / "runs").iterdir()
                   if json.loads((p / "run.json").read_text())["policy"] == "pybatsim:easyBackfill"]
    if reference.is_file():
        assert (easy_run / "jobs.csv").read_bytes() == reference.read_bytes()

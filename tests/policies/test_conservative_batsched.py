"""Our ``conservative`` makes batsched 1.4's ``conservative_bf`` decisions, message for message.

Recorded references (tests/data/batsched_conservative, see its README): real Batsim 4.2.1
talking to ``batsched -v conservative_bf`` in seven runs (two on platforms with
latencies). Fed the Batsim side of each conversation, the daemon's dispatcher must reply
with the same EXECUTE_JOB / REJECT_JOB decisions (same jobs, same machine ids, same
order) as batsched did. These run on a clone
without ../shared and without Batsim. With Batsim built, the live tests run Batsim +
batsched and Batsim + ``batpolicy serve --policy conservative`` on the same inputs and
compare Batsim's jobs.csv.

The recorded runs discriminate: planning with the walltime alone (``rjms_delay=0``)
departs from batsched on four of them (:func:`test_the_recordings_discriminate`), and so
would float times or re-planning every job from scratch on an early end (measured when
the recordings were made, see the README).
"""

from __future__ import annotations

import csv
import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from batpolicy.app.cli import main
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import reply_from_obj, request_from_obj
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.testing import decision_key

from clirun import free_port
from conftest import SHARED_DATA

DATA = Path(__file__).resolve().parents[1] / "data" / "batsched_conservative"
VENDORED = Path(__file__).resolve().parents[1] / "data"
RECORDED = ["walltime120", "hpc250", "paper800", "g5k800", "test_walltime",
            "walltime120-cluster512", "walltime120res4-small_platform"]


def _exchanges(name: str) -> Iterator[tuple[t.Request, t.Reply]]:
    with gzip.open(DATA / f"conservative_bf-{name}.jsonl.gz", "rt") as f:
        for line in f:
            record = json.loads(line)
            yield request_from_obj(record["batsim"]), reply_from_obj(record["scheduler"])


def _replay(name: str, **params: str) -> tuple[int, int | None]:
    """(messages replayed, first differing message or None)."""
    dispatcher = Dispatcher(make_policy("conservative", params), paranoid=True)
    count = 0
    for count, (request, expected) in enumerate(_exchanges(name), 1):
        ours = dispatcher.handle(request)
        theirs = [decision_key(d) for d in expected.decisions]
        if [decision_key(d) for d in ours.decisions] != theirs:
            return count, count
    assert dispatcher.state.ended
    return count, None


@pytest.mark.parametrize("name", RECORDED)
def test_same_decisions_as_batsched_conservative_bf(name: str) -> None:
    count, differs = _replay(name)
    assert differs is None, f"{name}: message {differs} differs from batsched's"
    assert count > (10 if name == "test_walltime" else 150)


def test_the_recordings_discriminate() -> None:
    """Without batsched's 5 s RJMS delay on every walltime the decisions differ."""
    differing = [name for name in RECORDED if _replay(name, rjms_delay="0")[1] is not None]
    assert differing == ["walltime120", "hpc250", "g5k800", "walltime120res4-small_platform"]


def test_jobs_without_walltime_are_rejected_as_batsched() -> None:
    rejected = [d.job_id for _, reply in _exchanges("test_walltime") for d in reply.decisions
                if isinstance(d, t.RejectJob)]
    with (VENDORED / "batsched_walltime" / "test_walltime.json").open() as f:
        no_walltime = [str(j["id"]) for j in json.load(f)["jobs"] if j.get("walltime", -1) == -1]
    assert sorted(r.split("!")[1] for r in rejected) == sorted(no_walltime)
    assert len(no_walltime) == 4


def _rows(path: Path) -> list[str]:
    """jobs.csv rows, sorted (Batsim lists simultaneous ends in SimGrid's order)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return sorted(",".join(row) for row in list(csv.reader(f))[1:])


#: recorded name -> (workload, platform, where they are)
INPUTS = {
    "walltime120": (VENDORED / "transcripts" / "inputs" / "walltime_mix_120.json",
                    VENDORED / "transcripts" / "inputs" / "zero_lat_cluster32.xml"),
    "test_walltime": (VENDORED / "batsched_walltime" / "test_walltime.json",
                      VENDORED / "batsched_walltime" / "zero_lat_cluster128.xml"),
    "walltime120-cluster512": (VENDORED / "batsim421" / "walltime_mix_120.json",
                               VENDORED / "batsim421" / "cluster512.xml"),
    "walltime120res4-small_platform": (VENDORED / "batsim421" / "walltime_mix_120_res4.json",
                                       VENDORED / "batsim421" / "small_platform.xml"),
    "g5k800": (SHARED_DATA / "batsim" / "workloads"
               / "batsim-experiments_g5k_workload_delay_seed0_size32.json",
               VENDORED / "transcripts" / "inputs" / "zero_lat_cluster32.xml"),
}


@pytest.mark.parametrize("name", list(INPUTS))
def test_simulate_writes_batsched_jobs_csv(tmp_path: Path, name: str) -> None:
    """The embedded simulator + ``conservative`` = Batsim + batsched, jobs.csv row for row."""
    workload, platform = INPUTS[name]
    if not workload.is_file():
        pytest.skip(f"{workload} not found (shared data absent)")
    prefix = tmp_path / "ours"
    assert main(["simulate", "--policy", "conservative", "-w", str(workload), "-p",
                 str(platform), "-e", str(prefix), "-q"]) == 0
    recorded = DATA / f"conservative_bf-{name}.jobs.csv"
    if not recorded.is_file():
        recorded = recorded.with_suffix(".csv.gz")
    assert _rows(Path(f"{prefix}_jobs.csv")) == _rows(recorded)


def _batsim(prefix: Path, workload: Path, platform: Path, out: Path, port: int) -> None:
    run = subprocess.run([str(prefix / "bin" / "batsim"), "-p", str(platform), "-w",
                          str(workload), "-e", str(out), "-s", f"tcp://127.0.0.1:{port}"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


def _starts(path: Path) -> dict[str, tuple[str, str, str]]:
    with path.open() as f:
        return {r["job_id"]: (r["final_state"], r["starting_time"], r["allocated_resources"])
                for r in csv.DictReader(f)}


@pytest.mark.batsim
@pytest.mark.parametrize("name", list(INPUTS))
def test_live_serve_equals_batsched(tmp_path: Path, batsim_prefix: Path, name: str) -> None:
    """Batsim + batsched conservative_bf and Batsim + serve: same starts, same machines."""
    workload, platform = INPUTS[name]
    if not workload.is_file():
        pytest.skip(f"{workload} not found (shared data absent)")
    port = free_port()
    sched = subprocess.Popen([str(batsim_prefix / "bin" / "batsched"), "-v", "conservative_bf",
                              "-s", f"tcp://*:{port}"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        _batsim(batsim_prefix, workload, platform, tmp_path / "bs", port)
    finally:
        sched.kill()
        sched.wait()
    port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", "--policy",
                              "conservative", "--socket-endpoint", f"tcp://127.0.0.1:{port}",
                              "--timeout", "120"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _batsim(batsim_prefix, workload, platform, tmp_path / "ours", port)
        assert serve.wait(timeout=60) == 0, serve.stderr.read()[-2000:]
    finally:
        serve.kill()
        serve.wait()
    theirs, ours = _starts(tmp_path / "bs_jobs.csv"), _starts(tmp_path / "ours_jobs.csv")
    assert len(theirs) > 40
    assert ours == theirs

"""Corner cases of the protocol, against conversations recorded with real Batsim 4.2.1.

The recordings in ``tests/data/batsim421/`` (vendored, so that these tests run without
Batsim and without ``../shared``) were made with ``bench/fidelity/relay.py`` between real
Batsim 4.2.1 and batsched 1.4 on ``zero_lat_cluster32.xml`` and ``walltime_mix_120.json``:

- ``killer2-walltime120``: jobs killed at the very instant they start (issue 17, case 1:
  Batsim writes ``execution_time`` 0 and ``finish_time`` = start);
- ``killer-walltime120``: a KILL_JOB for a job that already ended, answered at the instant
  of a submission (case 3: Batsim sends the submission first, then JOB_KILLED);
- ``submitter-walltime120`` (``--enable-dynamic-jobs --acknowledge-dynamic-jobs``): the
  acknowledgement of a REGISTER_JOB carries the full id and comes after the instant's
  static submissions (case 2).

Each is replayed as ``test_transcript_fidelity`` replays the shared recordings: the
simulator, fed the recorded replies, must send Batsim's events at each instant and write
Batsim's jobs.csv byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batpolicy.platforms.xml import read_platform
from batpolicy.scheduler.io.batsim_json import read_batsim_workload
from batpolicy.scheduler.io.outputs import format_job_row
from batpolicy.scheduler.sim import SimOptions, Simulator

from sim.test_transcript_fidelity import RecordedScheduler

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim421"
#: name -> (workload, platform, Batsim flags as SimOptions)
RUNS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "killer2-walltime120": ("walltime_mix_120.json", "zero_lat_cluster32.xml", {}),
    "killer-walltime120": ("walltime_mix_120.json", "zero_lat_cluster32.xml", {}),
    "submitter-walltime120": ("walltime_mix_120.json", "zero_lat_cluster32.xml",
                              {"dynamic_jobs": True, "acknowledge_dynamic_jobs": True}),
}


def replay(name: str) -> list[str]:
    """Replay recording ``name``; return our jobs.csv rows (checking every message)."""
    workload, platform, flags = RUNS[name]
    sim = Simulator([read_batsim_workload(DATA / workload, "w0")],
                    read_platform(DATA / platform), options=SimOptions(**flags))
    scheduler = RecordedScheduler(DATA / f"{name}.jsonl")
    result = sim.run(scheduler)
    scheduler.check_complete()
    assert result.complete
    return [format_job_row(record) for record in result.records]


def batsim_rows(name: str) -> list[str]:
    """The rows of the jobs.csv Batsim wrote for recording ``name``."""
    return (DATA / f"{name}.jobs.csv").read_text().splitlines(keepends=True)[1:]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_recorded_conversation_replays_with_batsims_messages_and_jobs_csv(name: str) -> None:
    assert replay(name) == batsim_rows(name)

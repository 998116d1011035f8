"""``simulate --job-model speed`` against real Batsim 4.2.1 on a heterogeneous platform.

Batsim runs computation-only parallel profiles (``parallel_homogeneous``,
``parallel_homogeneous_total``, ``parallel`` with ``com`` all 0) on SimGrid hosts of
different speeds; ``batpolicy serve --policy fcfs`` answers it. The embedded simulator
with ``--job-model speed`` must write the same ``jobs.csv``.

The platform is ``heterogeneous_platform.xml`` of the shared data (15 machines: 3 at
10 Gflop/s, 12 at 1 Gflop/s, 0.5 µs links). As shipped it makes Batsim 4.2.1 (SimGrid
3.32) abort at the first message ("There can't be route in an Empty zone": the master
host sits in a ``routing="None"`` zone), so the tests set that zone's routing to
``Full`` and change nothing else. Two runs:

- the same file with every latency set to 0: Batsim's times are exactly the model's,
  and the files are equal byte for byte;
- the file's own 0.5 µs latencies: Batsim delays each submission, start and completion
  message by a few latencies; execution times, states and allocations are still equal,
  start and finish times drift by at most ``LATENCY_DRIFT`` (measured, documented in
  docs/fidelity.md).

Needs real Batsim (``BATSIM`` or ``/opt/batsim-4.2.1/bin/batsim``) and the shared data;
marked ``batsim`` and skipped without them.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from batpolicy.app import cli
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import request_from_obj
from batpolicy.protocol.transcript import read_transcript
from batpolicy.scheduler.state import ClusterState

from clirun import free_port, read_jobs, restore_logging  # noqa: F401
from conftest import SHARED_DATA

pytestmark = pytest.mark.batsim

BATSIM = Path(os.environ.get("BATSIM", "/opt/batsim-4.2.1/bin/batsim"))
PLATFORM = SHARED_DATA / "batsim" / "platforms" / "heterogeneous_platform.xml"
#: Bound on start/finish differences with the file's 0.5 µs latencies (measured: 3.0e-5 s
#: over 40 jobs, growing by about 2 µs per completion that starts the next job).
LATENCY_DRIFT = 1e-4


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not BATSIM.is_file():
        pytest.skip(f"real Batsim not found at {BATSIM} (set BATSIM)")
    if not PLATFORM.is_file():
        pytest.skip(f"shared platform not found at {PLATFORM}")
    folder = tmp_path_factory.mktemp("speed_vs_batsim")
    text = PLATFORM.read_text().replace('<zone id="master" routing="None">',
                                        '<zone id="master" routing="Full">')
    (folder / "latency.xml").write_text(text)
    (folder / "zero.xml").write_text(re.sub(r'latency="[^"]*"', 'latency="0"', text))
    (folder / "w.json").write_text(_workload())
    return folder


def _workload(nb_jobs: int = 40, seed: int = 3) -> str:
    """Computation-only parallel jobs, submitted 1.37 s apart.

    Each job's work carries its own small fraction (``i`` × 1.37 Mflop), so that no two
    events (submissions, completions) fall on one instant: Batsim sometimes splits an
    instant over two messages (Batsim's protocol: batching), which changes FCFS's allocations and
    is not what these tests compare.
    """
    rng = random.Random(seed)
    profiles: dict[str, Any] = {}
    jobs = []
    for i in range(nb_jobs):
        res = rng.choice((1, 1, 2, 3, 4, 6, 8))
        kind = rng.choice(("parallel_homogeneous", "parallel_homogeneous_total", "parallel"))
        name = f"p{i}"
        if kind == "parallel":
            cpu = [rng.randint(1, 30) * 1e9 + i * 1.37e6 for _ in range(res)]
            profiles[name] = {"type": kind, "cpu": cpu, "com": [0.0] * (res * res)}
        else:
            work = (rng.randint(1, 20) * 1e10 + i * 1.37e7) \
                * (res if kind.endswith("total") else 1)
            profiles[name] = {"type": kind, "cpu": work, "com": 0.0}
        job: dict[str, Any] = {"id": i, "subtime": round(1.37 * i, 2), "res": res,
                               "profile": name}
        if i % 5 == 0:
            job["walltime"] = float(rng.randint(2, 25))
        if i % 7 == 0:
            job.update(deadline=round(1.37 * i, 2) + 30.0, job_type="mpi")
        jobs.append(job)
    import json
    return json.dumps({"nb_res": 15, "jobs": jobs, "profiles": profiles}, indent=1)


def _real_batsim(folder: Path, platform: str, prefix: str) -> Path:
    """Run Batsim beside ``batpolicy serve --policy fcfs``; Batsim's jobs.csv."""
    port = free_port()
    record = folder / f"{prefix}.msgpack"
    serve = subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", "--policy", "fcfs",
                              "-s", f"tcp://127.0.0.1:{port}", "--timeout", "60",
                              "--record", str(record)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        (folder / "out").mkdir(exist_ok=True)
        batsim = subprocess.run([str(BATSIM), "-p", str(folder / platform),
                                 "-w", str(folder / "w.json"), "-e", str(folder / "out" / prefix),
                                 "-s", f"tcp://127.0.0.1:{port}"],
                                capture_output=True, text=True, timeout=120)
        assert batsim.returncode == 0, batsim.stderr[-2000:]
        _, err = serve.communicate(timeout=60)
        assert serve.returncode == 0, err[-2000:]
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.communicate()
    return folder / "out" / f"{prefix}_jobs.csv"


def _simulate(folder: Path, platform: str, name: str) -> Path:
    out = folder / name
    assert cli.main(["simulate", "--policy", "fcfs", "--job-model", "speed",
                     "-w", str(folder / "w.json"), "-p", str(folder / platform),
                     "-o", str(out), "--quiet"]) == 0
    return out / "jobs.csv"


_BATSIM_COLUMNS = 17  # our jobs.csv adds the workload's extra fields after Batsim's columns


def _batsim_part(path: Path) -> list[str]:
    """Our jobs.csv lines without the extra columns (no field holds a comma here)."""
    return [",".join(line.split(",")[:_BATSIM_COLUMNS]) for line in path.read_text().splitlines()]


def test_zero_latency_speed_model_is_batsims_jobs_csv_byte_for_byte(inputs: Path) -> None:
    batsim = _real_batsim(inputs, "zero.xml", "zero")
    ours = _simulate(inputs, "zero.xml", "sim_zero")
    lines = ours.read_text().splitlines()
    assert lines[0].endswith(",deadline,job_type")  # the extra fields, after Batsim's
    assert _batsim_part(ours) == batsim.read_text().splitlines()
    states = {row["final_state"] for row in read_jobs(batsim).values()}
    assert {"COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"} <= states


def test_with_latencies_times_drift_by_microseconds_only(inputs: Path) -> None:
    batsim = read_jobs(_real_batsim(inputs, "latency.xml", "latency"))
    ours = read_jobs(_simulate(inputs, "latency.xml", "sim_latency"))
    assert sorted(ours) == sorted(batsim)
    drift = 0.0
    for job_id, theirs in batsim.items():
        mine = ours[job_id]
        for column in ("final_state", "allocated_resources", "execution_time",
                       "requested_time"):
            assert mine[column] == theirs[column], f"job {job_id}: {column}"
        for column in ("starting_time", "finish_time"):
            drift = max(drift, abs(float(mine[column]) - float(theirs[column])))
    # with the latency model (issue 17) Batsim's message timing is reproduced: within 1 us,
    # where the zero-latency simulation drifted by up to LATENCY_DRIFT
    assert drift <= 1e-6 < LATENCY_DRIFT


def test_serve_sees_the_extra_fields_batsim_forwards(inputs: Path) -> None:
    record = inputs / "zero.msgpack"
    if not record.is_file():
        _real_batsim(inputs, "zero.xml", "zero")
    state = ClusterState()
    typed = {}
    for request, _ in read_transcript(record):
        for event in request_from_obj(request).events:
            if isinstance(event, t.JobSubmitted):  # what ClusterState makes of Batsim's job
                job = state.apply(event)
                if job.job_type is not None:
                    typed[job.id] = (job.deadline, job.job_type)
    assert typed["w0!7"] == (round(1.37 * 7, 2) + 30.0, "mpi")
    assert len(typed) == 6

"""``serve --policy coalloc`` beside real Batsim 4.2.1 on a generated multi-cluster.

Needs Batsim (``$BATSIM`` or /opt/batsim-4.2.1/bin/batsim); skipped when absent. For
every module, Batsim runs a small ``coalloc-6.1``-shaped workload (3 clusters of 6
nodes, jobs of 1-8 nodes, so that some are co-allocated) against the daemon in a
thread; the run must end cleanly with every job completed, and Batsim's ``jobs.csv``
must equal the embedded simulator's for the same policy (delay profiles on a
zero-latency platform: Batsim's own model is the ``profile`` job model), so the
policy sees the same clusters from Batsim's SIMULATION_BEGINS as from the file.
"""

from __future__ import annotations

import csv
import os
import subprocess
import threading
from pathlib import Path

import pytest

from batpolicy.platforms import generators as gen
from batpolicy.platforms.xml import read_platform
from batpolicy.policies.registry import make_policy
from batpolicy.scheduler.daemon import ServeOptions, serve
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.io.batsim_json import read_batsim_workload
from batpolicy.scheduler.io.coalloc_traces import coalloc_workload, preset, write_workload_json
from batpolicy.scheduler.sim import Simulator

from clirun import free_port

BATSIM = Path(os.environ.get("BATSIM", "/opt/batsim-4.2.1/bin/batsim"))

pytestmark = [pytest.mark.batsim,
              pytest.mark.skipif(not BATSIM.is_file(), reason=f"no Batsim at {BATSIM}")]


def _rows(path: Path) -> dict[str, tuple[str, str, str, str]]:
    with path.open() as f:
        return {r["job_id"]: (r["starting_time"], r["finish_time"], r["allocated_resources"],
                              r["final_state"]) for r in csv.DictReader(f)}


@pytest.mark.parametrize("module", ["ff", "a1", "b1", "b2", "b3", "b4", "none", "noshare"])
def test_coalloc_runs_to_the_end_beside_real_batsim(module: str, tmp_path: Path) -> None:
    platform_path = gen.write_platform(gen.multicluster(3, 6, link_bandwidth="1Gbps"),
                                       tmp_path / "mc.xml")
    spec = preset("coalloc-6.1", clusters=3, jobs=40, nodes=(1, 8), interarrival=20.0,
                  runtime=60.0, bsbw=50e6)
    workload_path = write_workload_json(coalloc_workload(spec, seed=7), tmp_path / "w.json")
    params = {"module": module, "chunk": "0.6"}
    port = free_port()
    dispatcher = Dispatcher(make_policy("coalloc", params), paranoid=True)
    options = ServeOptions(endpoint=f"tcp://127.0.0.1:{port}", timeout_s=60)
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(serve(dispatcher, options)))
    thread.start()
    try:
        batsim = subprocess.run([str(BATSIM), "-p", str(platform_path), "-w", str(workload_path),
                                 "-e", str(tmp_path / "out"), "-s", f"tcp://127.0.0.1:{port}"],
                                capture_output=True, text=True, timeout=120)
    finally:
        thread.join(timeout=60)
    assert batsim.returncode == 0, batsim.stderr[-2000:]
    assert status == [0]
    real = _rows(tmp_path / "out_jobs.csv")
    assert len(real) == 40
    rejected = {j for j, row in real.items() if row[3] == "REJECTED"}
    assert all(row[3] == "COMPLETED_SUCCESSFULLY" for j, row in real.items() if j not in rejected)
    stats = dispatcher.policy.stats()
    if module not in ("none", "noshare"):
        assert stats["nb_started_coallocated"] > 0
    # the same policy in the embedded simulator makes the same schedule
    policy = make_policy("coalloc", params)
    result = Simulator([read_batsim_workload(workload_path)],
                       read_platform(platform_path)).run(Dispatcher(policy).handle)
    ours = {r.name: (f"{r.start:f}" if r.start is not None else "",
                     f"{r.completion_time:f}" if r.start is not None else "",
                     str(r.alloc) if r.alloc is not None else "", r.final_state.value)
            for r in result.records}
    assert ours == real

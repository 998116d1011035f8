"""Each generated platform loads in real Batsim 4.2.1 and gives a policy the file's view.

The view built from Batsim's own SIMULATION_BEGINS equals the view read from the file.
Needs Batsim (``$BATSIM`` or /opt/batsim-4.2.1/bin/batsim); skipped when absent. Batsim
runs a tiny workload against ``serve`` (``--policy fcfs --record``, in a thread): one parallel
job across every group and one delay job.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from batpolicy.platforms import generators as gen
from batpolicy.platforms.xml import read_platform
from batpolicy.policies.registry import make_policy
from batpolicy.protocol.transcript import read_transcript
from batpolicy.scheduler.daemon import ServeOptions, serve
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.state import ClusterState

from clirun import free_port, read_jobs
from platform_views import summary

BATSIM = Path(os.environ.get("BATSIM", "/opt/batsim-4.2.1/bin/batsim"))

pytestmark = [pytest.mark.batsim,
              pytest.mark.skipif(not BATSIM.is_file(), reason=f"no Batsim at {BATSIM}")]


def _run_batsim(platform: Path, workload: dict, tmp_path: Path) -> tuple[ClusterState, dict]:
    """Batsim on ``platform`` against ``serve --policy fcfs`` (in a thread, to start fast)."""
    (tmp_path / "w.json").write_text(json.dumps(workload))
    port = free_port()
    dispatcher = Dispatcher(make_policy("fcfs", {}))
    options = ServeOptions(endpoint=f"tcp://127.0.0.1:{port}", timeout_s=30,
                           record=tmp_path / "rec.mp")
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(serve(dispatcher, options)))
    thread.start()
    try:
        batsim = subprocess.run([str(BATSIM), "-p", str(platform), "-w", str(tmp_path / "w.json"),
                                 "-e", str(tmp_path / "out"), "-s", f"tcp://127.0.0.1:{port}"],
                                capture_output=True, text=True, timeout=60)
    finally:
        thread.join(timeout=40)
    assert batsim.returncode == 0, batsim.stderr[-2000:]
    assert status == [0]
    first = next(iter(read_transcript(tmp_path / "rec.mp")))[0]
    assert first["events"][0]["type"] == "SIMULATION_BEGINS"
    return dispatcher.state, read_jobs(tmp_path / "out_jobs.csv")


@pytest.mark.parametrize(("groups", "slowest"), [
    (gen.multicluster(3, 4, link_bandwidth="1Gbps"), 1e9),
    (gen.racks(3, 2, gpu_racks=1, speed="2Gf"), 2e9),
    (gen.machines([(None, 2, "4Gf", False), ("gpu", 1, "1e10", True), (None, 3, "500Mf", False)]),
     5e8),
], ids=["multicluster", "racks", "machines"])
def test_generated_platform_in_real_batsim(groups: list[gen.GroupSpec], slowest: float,
                                           tmp_path: Path) -> None:
    path = gen.write_platform(groups, tmp_path / "p.xml")
    from_file = read_platform(path)
    n = from_file.nb_machines
    workload = {"nb_res": n, "jobs": [
        {"id": "all", "subtime": 0, "res": n, "profile": "ptask"},
        {"id": "one", "subtime": 3, "res": 1, "profile": "delay"}],
        "profiles": {"ptask": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0},
                     "delay": {"type": "delay", "delay": 7}}}
    state, jobs = _run_batsim(path, workload, tmp_path)
    from_batsim = state.platform  # what the policy saw, built from Batsim's message
    assert from_batsim == from_file
    assert summary(from_batsim) == summary(from_file)
    assert len(from_batsim.groups) == len(groups)
    # Batsim computes at the speeds the view shows: 1 Gflop on each machine, all at once
    assert float(jobs["all"]["execution_time"]) == pytest.approx(1e9 / slowest, abs=1e-6)
    assert (jobs["one"]["final_state"], float(jobs["one"]["starting_time"]),
            float(jobs["one"]["finish_time"])) == ("COMPLETED_SUCCESSFULLY", 3.0, 10.0)

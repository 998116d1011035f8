"""Each generated platform loads in real Batsim 4.2.1 and gives a policy the file's view.

The view built from Batsim's own SIMULATION_BEGINS equals the view read from the file.
Needs Batsim (``$BATSIM`` or /opt/batsim-4.2.1/bin/batsim); skipped when absent. Batsim
runs a tiny workload against ``serve`` (``--policy fcfs --record``, in a thread): one parallel
job across every group and one delay job.
"""

from __future__ import annotations

import csv
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


def test_generated_power_platform_in_real_batsim_with_energy(tmp_path: Path) -> None:
    """A ``--power`` platform in Batsim -E: its jobs and energy are the embedded simulator's.

    Batsim switches the nodes off and on through the virtual pstates (poweroff, tau = 20 s).
    """
    from batpolicy.io.batsim_json import read_batsim_workload
    from batpolicy.platforms.power_figures import DEFAULT_POWER
    from batpolicy.simulator import SimOptions, Simulator

    path = gen.write_platform(gen.multicluster(2, 4, speed="100Mf"), tmp_path / "p.xml",
                              power=DEFAULT_POWER)
    workload = {"nb_res": 8, "jobs": [
        {"id": "a", "subtime": 0, "res": 8, "walltime": 100, "profile": "ptask"},
        {"id": "b", "subtime": 400, "res": 3, "walltime": 100, "profile": "delay"}],
        "profiles": {"ptask": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0},
                     "delay": {"type": "delay", "delay": 7}}}
    (tmp_path / "w.json").write_text(json.dumps(workload))
    params = {"idle_timeout": 20.0, "keep_awake": 1}
    port = free_port()
    dispatcher = Dispatcher(make_policy("poweroff", params), paranoid=True)
    options = ServeOptions(endpoint=f"tcp://127.0.0.1:{port}", timeout_s=30)
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(serve(dispatcher, options)))
    thread.start()
    try:
        batsim = subprocess.run([str(BATSIM), "-p", str(path), "-w", str(tmp_path / "w.json"),
                                 "-E", "-e", str(tmp_path / "out"),
                                 "-s", f"tcp://127.0.0.1:{port}"],
                                capture_output=True, text=True, timeout=60)
    finally:
        thread.join(timeout=40)
    assert batsim.returncode == 0, batsim.stderr[-2000:]
    assert status == [0]
    platform = read_platform(path)
    ours = Simulator([read_batsim_workload(tmp_path / "w.json", "w0")], platform,
                     options=SimOptions(energy=True)).run(
        Dispatcher(make_policy("poweroff", params), ClusterState(platform_file=platform)).handle)
    theirs = read_jobs(tmp_path / "out_jobs.csv")
    for record in ours.records:
        row = theirs[record.job_id.split("!", 1)[1]]
        assert float(row["starting_time"]) == pytest.approx(record.start, abs=1e-6)
        assert float(row["consumed_energy"]) == pytest.approx(record.consumed_energy, rel=1e-6)
    # job b waited for 2 machines to wake: one switch-on of the default figures
    assert float(theirs["b"]["starting_time"]) == pytest.approx(400 + 151.52, abs=1e-6)
    with open(tmp_path / "out_schedule.csv") as f:
        schedule = next(csv.DictReader(f))
    assert float(schedule["consumed_joules"]) == pytest.approx(ours.consumed_joules, rel=1e-6)
    assert int(schedule["nb_machine_switches"]) == ours.nb_machine_switches > 0

"""``serve --policy coalloc`` beside real Batsim 4.2.1 on a generated multi-cluster.

Needs Batsim (``$BATSIM`` or /opt/batsim-4.2.1/bin/batsim); skipped when absent. For
every module, Batsim runs a small ``coalloc-6.1``-shaped workload (3 clusters of 6
nodes, jobs of 1-8 nodes, so that some are co-allocated) against the daemon in a
thread; the run must end cleanly with every job completed, and Batsim's ``jobs.csv``
must equal the embedded simulator's for the same policy (delay profiles on a
zero-latency platform: Batsim's own model is the ``profile`` job model), so the
policy sees the same clusters from Batsim's SIMULATION_BEGINS as from the file.

With ``profiles=simgrid`` (:mod:`batpolicy.io.coalloc_simgrid`) the jobs are
parallel tasks whose all-to-all traffic crosses the uplinks, and SimGrid's own network
model slows the co-allocated ones: a lone co-allocated job runs exactly eq. 5-7's
``T_P + T_C / sd`` (as the embedded ``bandwidth`` model says), a job inside one cluster
its ``T_E``, and with every module the runs end with co-allocated jobs slowed.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from batpolicy.io.batsim_json import read_batsim_workload, write_batsim_workload
from batpolicy.io.coalloc_simgrid import job_profiles
from batpolicy.io.coalloc_traces import coalloc_workload, preset, write_workload_json
from batpolicy.io.presets import build_workload
from batpolicy.io.presets import preset as workload_preset
from batpolicy.platforms import generators as gen
from batpolicy.platforms.bandwidth import ppbw_from_bsbw
from batpolicy.platforms.xml import read_platform
from batpolicy.policies.registry import make_policy
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.daemon import ServeOptions, serve
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.simulator import SimOptions, Simulator
from batpolicy.simulator.jobmodels.coalloc import profile_runtime

from clirun import free_port

BATSIM = Path(os.environ.get("BATSIM", "/opt/batsim-4.2.1/bin/batsim"))

pytestmark = [pytest.mark.batsim,
              pytest.mark.skipif(not BATSIM.is_file(), reason=f"no Batsim at {BATSIM}")]


def _rows(path: Path) -> dict[str, tuple[str, str, str, str]]:
    with path.open() as f:
        return {r["job_id"]: (r["starting_time"], r["finish_time"], r["allocated_resources"],
                              r["final_state"]) for r in csv.DictReader(f)}


MODULES = ["ff", "a1", "b1", "b2", "b3", "b4", "none", "noshare"]


def _beside_batsim(platform_path: Path, workload_path: Path, params: dict[str, str],
                   out: Path) -> Dispatcher:
    """Run Batsim against ``serve`` (in a thread) to the end; the policy's dispatcher."""
    port = free_port()
    dispatcher = Dispatcher(make_policy("coalloc", params), paranoid=True)
    options = ServeOptions(endpoint=f"tcp://127.0.0.1:{port}", timeout_s=60)
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(serve(dispatcher, options)))
    thread.start()
    try:
        batsim = subprocess.run([str(BATSIM), "-p", str(platform_path), "-w", str(workload_path),
                                 "-e", str(out), "-s", f"tcp://127.0.0.1:{port}"],
                                capture_output=True, text=True, timeout=180)
    finally:
        thread.join(timeout=60)
    assert batsim.returncode == 0, batsim.stderr[-2000:]
    assert status == [0]
    return dispatcher


@pytest.mark.parametrize("module", MODULES)
def test_coalloc_runs_to_the_end_beside_real_batsim(module: str, tmp_path: Path) -> None:
    platform_path = gen.write_platform(gen.multicluster(3, 6, link_bandwidth="1Gbps"),
                                       tmp_path / "mc.xml")
    spec = preset("coalloc-6.1", clusters=3, jobs=40, nodes=(1, 8), interarrival=20.0,
                  runtime=60.0, bsbw=50e6)
    workload_path = write_workload_json(coalloc_workload(spec, seed=7), tmp_path / "w.json")
    params = {"module": module, "chunk": "0.6"}
    dispatcher = _beside_batsim(platform_path, workload_path, params, tmp_path / "out")
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


def _runtimes(path: Path) -> dict[str, tuple[float, str, str]]:
    with path.open() as f:
        return {r["job_id"]: (float(r["execution_time"] or "nan"), r["allocated_resources"],
                              r["final_state"]) for r in csv.DictReader(f)}


@pytest.mark.parametrize(("mean", "expected"), [(False, 130.0), (True, 270.0)])
def test_lone_coallocated_job_is_slowed_by_simgrid_as_eq5_says(mean: bool, expected: float,
                                                               tmp_path: Path) -> None:
    """A lone co-allocated job runs T_P + T_C / sd in SimGrid; a one-cluster job T_E.

    2 clusters of 4 nodes, 1 Gbps uplinks. A (4 nodes) fits cluster0 and runs T_E =
    100 s; B (6 nodes, after A) is co-allocated 4 + 2 by first-fit: eq. 1 on either
    uplink is 4 * PPBW * 2 / 5 with PPBW from BSBW 2250 Mbps (eq. 8) = 2000 Mbps, twice
    the link: sd = 0.5 (eq. 5) and B runs 70 + 30 / 0.5 = 130 s, under SimGrid as under
    the embedded bandwidth model. With ``simgrid-mean`` profiles the phase asks 2000 /
    0.3 Mbps: 70 + 30 * 2000 / 0.3 / 1000 = 270 s.
    """
    platform_path = gen.write_platform(gen.multicluster(2, 4, link_bandwidth="1Gbps"),
                                       tmp_path / "mc.xml")
    bsbw = 2250e6 / 8
    jobs, profiles = [], {}
    for name, sub, res in (("A", 0.0, 4), ("B", 200.0, 6)):
        ppbw = ppbw_from_bsbw(bsbw, res)
        profiles.update(job_profiles(f"p{name}", 100.0, res, 0.7, ppbw, mean=mean))
        jobs.append({"id": name, "subtime": sub, "res": res, "profile": f"p{name}",
                     "walltime": -1, "origin": "cluster0", "comp_share": 0.7, "ppbw": ppbw})
    workload_path = tmp_path / "w.json"
    workload_path.write_text(json.dumps({"nb_res": 6, "jobs": jobs, "profiles": profiles}))
    _beside_batsim(platform_path, workload_path, {"module": "ff"}, tmp_path / "out")
    real = _runtimes(tmp_path / "out_jobs.csv")
    assert real["A"] == (pytest.approx(100.0, abs=1e-5), "0-3", "COMPLETED_SUCCESSFULLY")
    assert real["B"] == (pytest.approx(expected, abs=1e-5), "0-5", "COMPLETED_SUCCESSFULLY")
    if mean:
        return
    sim = Simulator([read_batsim_workload(workload_path)], read_platform(platform_path),
                    options=SimOptions(default_job_model="bandwidth"))
    result = sim.run(Dispatcher(make_policy("coalloc", {"module": "ff"})).handle)
    ours = {r.name: r.completion_time - r.start for r in result.records}
    assert ours == {"A": pytest.approx(100.0), "B": pytest.approx(130.0)}


@pytest.mark.parametrize("module", MODULES)
def test_simgrid_profiles_slow_coallocated_jobs_with_every_module(module: str,
                                                                  tmp_path: Path) -> None:
    """Every module, SimGrid profiles: runs end, co-allocated jobs are slowed.

    Preset coalloc-6.1 with profiles=simgrid on 3 clusters of 6 nodes (1 Gbps), BSBW
    1500 Mbps: every job ends; a job inside one cluster runs its T_E; a co-allocated one
    at least its T_E, and some longer with every module that co-allocates, except A1:
    it keeps eq. 1's demands within the links (LSLT 100 %), and SimGrid's phases never
    ask more than those, so none of its jobs is slowed.
    """
    platform_path = gen.write_platform(gen.multicluster(3, 6, link_bandwidth="1Gbps"),
                                       tmp_path / "mc.xml")
    workload = build_workload(workload_preset(
        "coalloc-6.1", clusters=3, jobs=30, nodes_min=1, nodes_max=8, interarrival=40.0,
        bsbw_mbps=1500.0, profiles="simgrid", comm_phase=5.0), 11)
    workload_path = write_batsim_workload(workload, tmp_path / "w.json")
    _beside_batsim(platform_path, workload_path, {"module": module, "chunk": "0.6"},
                   tmp_path / "out")
    real = _runtimes(tmp_path / "out_jobs.csv")
    assert len(real) == 30
    slowed = coallocated = 0
    for job in workload.jobs:
        runtime, alloc, state = real[job.name]
        if state == "REJECTED":
            continue
        assert state == "COMPLETED_SUCCESSFULLY"
        te = profile_runtime(workload.profiles[job.profile], workload.profiles, job.res, 1e9)
        clusters = {m // 6 for m in MachineSet.parse(alloc)}
        if len(clusters) == 1:
            assert runtime == pytest.approx(te, abs=1e-3), job.name
        else:
            assert runtime >= te - 1e-3, job.name
            coallocated += 1
            slowed += runtime > 1.01 * te
    if module not in ("none", "noshare"):
        assert coallocated > 0
    if module == "a1":
        assert slowed == 0
    elif module not in ("none", "noshare"):
        assert slowed > 0

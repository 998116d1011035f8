"""Batsim's message latencies (issue 17): the simulator against real Batsim 4.2.1.

On platforms whose links take time.

The conversations in ``tests/data/batsim421/`` were recorded (``bench/fidelity/relay.py``)
between real Batsim 4.2.1 and batsched 1.4 ``easy_bf``:

- ``easy_bf-walltime120-cluster512``: ``walltime_mix_120.json`` on Batsim's
  ``cluster512.xml`` with ``--mmax 32`` (50 us private links, 500 us backbones: 0.6 ms a
  message from the master to itself, 1.6 ms from a compute node; walltime kills,
  simultaneous submissions);
- ``easy_bf-walltime120res4-small_platform``: the same jobs, ``res`` capped at 4, on
  ``small_platform.xml`` (explicit routes of 1 to 7 links, each machine its own delay).

Replayed, the simulator must send what Batsim sent, at the same (6-decimal) times, and
write Batsim's jobs.csv byte for byte. The figures for every shared platform are in
docs/fidelity.md (``bench/fidelity/table.py``).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from sim.test_transcript_fidelity import RecordedScheduler

from batpolicy.app import cli
from batpolicy.errors import InvalidDecision
from batpolicy.io.batsim_json import read_batsim_workload
from batpolicy.io.inputs import bundled
from batpolicy.io.outputs import format_job_row
from batpolicy.io.swf import read_swf
from batpolicy.platforms.routes import UnsupportedRoute, read_routes
from batpolicy.platforms.xml import read_platform
from batpolicy.simulator import SimOptions, Simulator
from batpolicy.simulator.latency.driver import LatencySimulator, make_simulator, message_delays

from clirun import free_port

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim421"
RUNS = {"easy_bf-walltime120-cluster512": ("walltime_mix_120.json", "cluster512.xml", 32),
        "easy_bf-walltime120res4-small_platform": ("walltime_mix_120_res4.json",
                                                   "small_platform.xml", 4)}


def build(name: str, *, zero_latency: bool = False) -> Simulator:
    """The simulator of recording ``name``, as Batsim was started for it."""
    workload, platform, mmax = RUNS[name]
    return make_simulator([read_batsim_workload(DATA / workload, "w0")],
                          read_platform(DATA / platform), options=SimOptions(mmax=mmax),
                          zero_latency=zero_latency)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_recorded_latency_conversation_replays_with_batsims_times_and_jobs_csv(name: str
                                                                              ) -> None:
    sim = build(name)
    assert isinstance(sim, LatencySimulator)
    scheduler = RecordedScheduler(DATA / f"{name}.jsonl")
    result = sim.run(scheduler)
    scheduler.check_complete()
    assert result.complete
    expected = (DATA / f"{name}.jobs.csv").read_text().splitlines(keepends=True)[1:]
    assert [format_job_row(r) for r in result.records] == expected


def test_zero_latency_is_the_old_simulator_and_misses_batsims_times() -> None:
    name = "easy_bf-walltime120-cluster512"
    sim = build(name, zero_latency=True)
    assert type(sim) is Simulator
    scheduler = RecordedScheduler(DATA / f"{name}.jsonl")
    with pytest.raises(InvalidDecision, match="never started"):
        sim.run(scheduler)  # submissions at 0, where Batsim sent them at 0.0018
    assert scheduler.position == 1


def test_simulate_uses_the_latency_model_by_default(tmp_path: Path) -> None:
    """Our EASY in-process on cluster512: Batsim + batsched easy_bf's jobs.csv, byte for byte.

    (Both are the same EASY.) With ``--zero-latency``, starts are milliseconds off.
    """
    name = "easy_bf-walltime120-cluster512"
    args = ["simulate", "--policy", "easy", "-p", str(DATA / "cluster512.xml"), "-w",
            str(DATA / "walltime_mix_120.json"), "--mmax", "32", "-q", "--no-progress"]
    expected = (DATA / f"{name}.jobs.csv").read_text()
    assert cli.main([*args, "-e", str(tmp_path / "lat")]) == 0
    assert (tmp_path / "lat_jobs.csv").read_text() == expected
    assert cli.main([*args, "-e", str(tmp_path / "zl"), "--zero-latency"]) == 0
    first = (tmp_path / "zl_jobs.csv").read_text().splitlines()[1].split(",")
    assert first[8] == "0.000000"  # started at its submission, where Batsim says 0.002400


def test_routes_of_cluster512_as_simgrid_computes_them() -> None:
    routes = read_routes(DATA / "cluster512.xml")
    # master to itself: its private link up, the backbone, its link down
    latency, transfer = routes.message_time("master_host0", "master_host0")
    assert latency == pytest.approx(600e-6) and transfer == pytest.approx(1 / 125e6)
    # a node: its link, its cluster's backbone, the backbone link, the master's cluster
    assert routes.message_time("a17", "master_host0")[0] == pytest.approx(1.6e-3)


def test_routes_of_explicit_full_routes_differ_per_machine() -> None:
    delays = message_delays(read_platform(DATA / "small_platform.xml"))
    assert delays is not None and delays.master == "master_host"
    assert delays.from_master[0] == pytest.approx(15e-6)  # its loopback route
    latencies = sorted(delays.from_machine(i)[0] for i in range(4))
    assert latencies == pytest.approx([1.272279e-3, 1.461517e-3, 1.955365e-3, 1.976025e-3])


def test_zero_latency_platform_runs_batsims_jobs_on_simgrids_clock() -> None:
    """A platform without latencies: the latency driver for Batsim's job model only.

    A JSON workload runs on the parallel-task model, whose clock is SimGrid's running
    sum of deltas: the submitters' and the reply's sleeps count down on it as in Batsim
    (``--zero-latency`` opts out). An SWF trace (the profile model) keeps the
    zero-latency driver's exact dates.
    """
    platform = read_platform(DATA / "zero_lat_cluster32.xml")
    delays = message_delays(platform)
    assert delays is not None and not delays.has_latency()
    assert delays.from_master == (0.0, pytest.approx(1e-12))  # 1 byte at 1000 GBps
    workload = read_batsim_workload(DATA / "walltime_mix_120.json", "w0")
    assert type(make_simulator([workload], platform)) is LatencySimulator
    assert type(make_simulator([workload], platform, zero_latency=True)) is Simulator
    swf = read_swf(bundled("KTH-SP2-1996-2-4weeks.swf.gz"))
    assert type(make_simulator([swf], platform, options=SimOptions(mmax=32))) is Simulator


def test_a_routing_not_modelled_falls_back_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    text = (DATA / "cluster512.xml").read_text().replace(
        'id="my_cluster_1"',
        'id="my_cluster_1" topology="FAT_TREE" topo_parameters="2;4,4;1,2;1,2"')
    path = tmp_path / "fat.xml"
    path.write_text(text)
    with pytest.raises(UnsupportedRoute, match="FAT_TREE"):
        read_routes(path)
    with caplog.at_level(logging.WARNING):
        sim = make_simulator([read_batsim_workload(DATA / "walltime_mix_120.json", "w0")],
                             read_platform(path), options=SimOptions(mmax=32))
    assert type(sim) is Simulator
    assert "message latencies not modelled" in caplog.text and "FAT_TREE" in caplog.text


def _tool(env: str, name: str) -> str | None:
    """``$ENV``, else ``name`` on the PATH, else /opt/batsim-4.2.1/bin: the first that exists.

    A variable naming a missing file skips, as the other real-Batsim tests do.
    """
    for found in (os.environ.get(env), shutil.which(name), f"/opt/batsim-4.2.1/bin/{name}"):
        if found and Path(found).is_file():
            return found
    return None


BATSIM, BATSCHED = _tool("BATSIM", "batsim"), _tool("BATSCHED", "batsched")


@pytest.mark.skipif(not (BATSIM and BATSCHED), reason="real Batsim 4.2.1 and batsched not found "
                    "(BATSIM / BATSCHED, PATH or /opt/batsim-4.2.1/bin)")
def test_against_real_batsim_now(tmp_path: Path) -> None:
    """Real Batsim + batsched easy_bf on small_platform.xml, and fake-batsim + batsched."""
    workload, platform = DATA / "walltime_mix_120_res4.json", DATA / "small_platform.xml"
    outputs = []
    for real in (True, False):
        port = free_port()
        sched = subprocess.Popen([BATSCHED, "-v", "easy_bf", "-s", f"tcp://*:{port}"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        prefix = tmp_path / ("batsim" if real else "ours")
        try:
            if real:
                subprocess.run([BATSIM, "-p", str(platform), "-w", str(workload), "-e",
                                str(prefix), "-s", f"tcp://localhost:{port}", "--mmax", "4"],
                               check=True, capture_output=True, timeout=120)
            else:
                assert cli.main(["fake-batsim", "-p", str(platform), "-w", str(workload),
                                 "-e", str(prefix), "-s", f"tcp://localhost:{port}",
                                 "--mmax", "4", "-q", "--no-progress", "--timeout", "60"]) == 0
        finally:
            sched.kill()
            sched.wait()
        outputs.append(Path(f"{prefix}_jobs.csv").read_text())
    assert outputs[0] == outputs[1]

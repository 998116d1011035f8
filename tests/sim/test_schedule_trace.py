"""The simulator's ``_schedule.trace``: Batsim's Pajé trace, from recorded runs and the CLI.

Two cases of Batsim 4.2.1's test suite are replayed message for message
(``tests/sim/test_batsim_suite_recorded.py``'s recordings) with the trace on; the trace
must be the one real Batsim wrote for them (``tests/data/batsim_suite/*.schedule.trace``),
byte for byte once each job's colour is masked (Batsim draws them with an unseeded
``std::random_device``):

- ``submitorder2-samesubmittime-fcfs``: jobs ending and starting at one date, in
  Batsim's order, each job's value defined at its first state;
- ``walltime2-cluster512-fcfs``: 512 machines, jobs killed at their walltime (a ``kk``
  event on the killer and a ``km`` per machine before the machines wait), the end at
  Batsim's clock once SIMULATION_ENDS is acknowledged.

PajeNG's ``pj_dump`` (when installed) reads our trace as Batsim's. Then the commands:
``fake-batsim`` writes the trace unless ``--disable-schedule-tracing``, ``simulate`` only
with ``--schedule-trace``, and jobs.csv is the same either way.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest
from sim.test_batsim_suite_recorded import DATA, RUNS, MessageForMessage

from batpolicy.app import cli
from batpolicy.app.sim_cli import _paths
from batpolicy.io.batsim_json import read_batsim_workload
from batpolicy.io.paje import PajeTraceWriter
from batpolicy.platforms.xml import read_platform
from batpolicy.simulator import SimOptions
from batpolicy.simulator.latency.driver import make_simulator

from batsim_suite import mask_colours
from clirun import read_jobs, recorded_inputs, restore_logging  # noqa: F401

TRACED = ("submitorder2-samesubmittime-fcfs", "walltime2-cluster512-fcfs")


def _reference(name: str) -> str:
    path = DATA / f"{name}.schedule.trace"
    return path.read_text() if path.is_file() else \
        gzip.decompress(path.with_suffix(".trace.gz").read_bytes()).decode()


def _replay(name: str, path: Path) -> None:
    """Replay recording ``name`` with the trace written to ``path``."""
    workload, platform, flags = RUNS[name]
    sim = make_simulator([read_batsim_workload(DATA / workload, "w0")],
                         read_platform(platform), options=SimOptions(**flags))
    trace = PajeTraceWriter(path, sim.machine_names)
    sim.trace_schedule(trace)
    scheduler = MessageForMessage(name)
    assert sim.run(scheduler).complete
    trace.finish(sim.end_clock())


@pytest.mark.parametrize("name", TRACED)
def test_a_replayed_batsim_test_case_writes_batsims_schedule_trace(name: str,
                                                                   tmp_path: Path) -> None:
    path = tmp_path / "out_schedule.trace"
    _replay(name, path)
    ours, batsim = path.read_text(), _reference(name)
    assert mask_colours(ours) == mask_colours(batsim)
    if name.startswith("walltime2"):
        assert ours.count(" kk k ") == 19 and ours.count(" km m") == 19  # 1-machine jobs


def test_pajeng_reads_our_trace_as_batsims(tmp_path: Path) -> None:
    """PajeNG's ``pj_dump`` (a Pajé reader) gives the same containers, states and events."""
    if shutil.which("pj_dump") is None:
        pytest.skip("pj_dump (PajeNG) not installed")
    name = "submitorder2-samesubmittime-fcfs"
    ours = tmp_path / "ours.trace"
    _replay(name, ours)

    def dump(path: Path) -> list[str]:
        """pj_dump's lines, sorted (its order follows its containers' hash map)."""
        out = subprocess.run(["pj_dump", str(path)], capture_output=True, text=True,
                             check=True, timeout=60)
        return sorted(out.stdout.splitlines())

    lines = dump(ours)
    assert lines == dump(DATA / f"{name}.schedule.trace")
    assert sum(line.startswith("State, ") for line in lines) > 18


def test_fake_batsim_and_simulate_write_the_trace_as_asked() -> None:
    """Batsim's default (a trace unless disabled) for fake-batsim; simulate on request."""
    parser = cli.build_parser()
    common = ["-w", "w.json", "-p", "p.xml"]
    fake = parser.parse_args(["fake-batsim", *common, "-e", "x/out"])
    assert _paths(fake).schedule_trace == Path("x/out_schedule.trace")
    off = parser.parse_args(["fake-batsim", *common, "-e", "x/out",
                             "--disable-schedule-tracing"])
    assert _paths(off).schedule_trace is None
    assert _paths(parser.parse_args(["simulate", *common, "-o", "d"])).schedule_trace is None
    on = parser.parse_args(["simulate", *common, "-o", "d", "--schedule-trace"])
    assert _paths(on).schedule_trace == Path("d/schedule.trace")


def test_simulate_with_the_trace_writes_the_same_jobs_csv_and_a_complete_trace(
        tmp_path: Path) -> None:
    inputs = recorded_inputs("walltime120")
    assert cli.main(["simulate", "--policy", "easy", *inputs, "-o", str(tmp_path / "a"),
                     "--quiet"]) == 0
    assert cli.main(["simulate", "--policy", "easy", *inputs, "-o", str(tmp_path / "b"),
                     "--quiet", "--schedule-trace"]) == 0
    assert not (tmp_path / "a" / "schedule.trace").exists()
    assert (tmp_path / "a" / "jobs.csv").read_bytes() == (tmp_path / "b" / "jobs.csv").read_bytes()
    lines = (tmp_path / "b" / "schedule.trace").read_text().splitlines()
    jobs = read_jobs(tmp_path / "b" / "jobs.csv")
    started = [j for j in jobs.values() if j["starting_time"]]
    assert sum(line.startswith("5 j") for line in lines) == len(started)
    killed = [j for j in started if j["final_state"] == "COMPLETED_WALLTIME_REACHED"]
    assert killed and sum(" kk k " in line for line in lines) == len(killed)
    nb_machines = sum(line.startswith("2 0.000000 machine_ct ") for line in lines)
    assert lines[-1].startswith("3 ") and lines[-1].endswith(" root root_ct")
    assert sum(line.startswith("3 ") for line in lines) == nb_machines + 1

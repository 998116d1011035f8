"""Energy as Batsim 4.2.1 computes it with ``-E``, against runs recorded with real Batsim.

The recordings in ``tests/data/batsim421_energy/`` (vendored: these tests need neither
Batsim nor ``../shared``) are four cases of Batsim's own ``test/test_energy.py`` on
``energy_platform_homogeneous_no_net_128.xml`` with batsched 1.4: ``sleeper`` and
``energy_watcher`` (which QUERYs consumed_energy) on ``test_delays.json``, ``sleeper`` on
``test_various_profile_types.json`` (parallel profiles: the hosts' load counts), and
``energy_bf_idle_sleeper`` with test_energy_minimal's variant options on
``test_energy_minimal_load50.json``. Each conversation was taken from Batsim's
``simulator.log`` (``bench/fidelity/log_to_transcript.py``, gzipped) with Batsim's
``out_jobs.csv``, ``out_schedule.csv``, ``out_consumed_energy.csv`` and
``out_pstate_changes.csv``.

Replayed (the simulator fed batsched's recorded replies must send Batsim's messages,
the ANSWER to each energy QUERY and every RESOURCE_STATE_CHANGED included), the run must
write Batsim's jobs.csv rows (consumed_energy included), its ``_pstate_changes.csv`` byte
for byte, its ``_consumed_energy.csv`` rows but for ``epower`` on zero-length intervals
(there Batsim's clock moves by a few ulps between two events of one instant), and its
schedule.csv energy figures.
"""

from __future__ import annotations

import csv
import gzip
import shutil
from pathlib import Path

import pytest
from sim.test_transcript_fidelity import RecordedScheduler

from batpolicy.io.batsim_json import read_batsim_workload
from batpolicy.io.outputs import format_job_row, schedule_fields
from batpolicy.io.result import SimResult
from batpolicy.platforms.xml import read_platform
from batpolicy.simulator import SimOptions, Simulator

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim421_energy"
PLATFORM = "energy_platform_homogeneous_no_net_128.xml"
#: recording -> its workload
RUNS = {
    "sleeper-delays": "test_delays.json",
    "sleeper-mixed": "test_various_profile_types.json",
    "energywatcher-delays": "test_delays.json",
    "idlesleeper-energymini50": "test_energy_minimal_load50.json",
}


def _gunzip(name: str, into: Path) -> Path:
    target = into / name.removesuffix(".gz")
    with gzip.open(DATA / name, "rb") as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return target


@pytest.fixture(scope="module")
def platform_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _gunzip(PLATFORM + ".gz", tmp_path_factory.mktemp("energy"))


def _energy_rows(text: str) -> list[tuple[str, ...]]:
    """consumed_energy.csv rows; epower kept only where the interval is not zero-length."""
    rows = list(csv.reader(text.splitlines()))[1:]
    out, last = [], "0.000000"
    for time, energy, kind, wattmin, epower in rows:
        out.append((time, energy, kind, wattmin, epower if time != last else ""))
        last = time
    return out


@pytest.mark.parametrize("name", sorted(RUNS))
def test_energy_run_writes_batsims_outputs(name: str, platform_path: Path,
                                           tmp_path: Path) -> None:
    workload = read_batsim_workload(DATA / RUNS[name], "w0")
    sim = Simulator([workload], read_platform(platform_path),
                    options=SimOptions(energy=True))
    scheduler = RecordedScheduler(_gunzip(f"{name}.jsonl.gz", tmp_path))
    result = sim.run(scheduler)
    scheduler.check_complete()
    assert result.complete
    batsim_jobs = sorted((DATA / f"{name}.jobs.csv").read_text().splitlines()[1:])
    assert sorted(format_job_row(r).rstrip("\n") for r in result.records) == batsim_jobs
    energy = sim.parts.energy
    assert energy is not None
    energy.write(str(tmp_path / "out_"))
    assert (tmp_path / "out_pstate_changes.csv").read_text() == \
        (DATA / f"{name}.pstate_changes.csv").read_text()
    assert _energy_rows((tmp_path / "out_consumed_energy.csv").read_text()) == \
        _energy_rows((DATA / f"{name}.consumed_energy.csv").read_text())
    assert_energy_schedule(result, DATA / f"{name}.schedule.csv")


def assert_energy_schedule(result: SimResult, batsim_schedule: Path) -> None:
    """schedule.csv's energy and machine-time columns equal real Batsim's, as printed."""
    ours = schedule_fields(result)
    with open(batsim_schedule, newline="") as f:
        theirs = next(csv.DictReader(f))
    for column in ("consumed_joules", "nb_grouped_switches", "nb_machine_switches",
                   "time_switching_off", "time_switching_on", "time_sleeping", "time_idle",
                   "time_computing", "makespan"):
        assert ours[column] == theirs[column], column

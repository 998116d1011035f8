"""Energy on a platform whose links take time, against runs recorded with real Batsim.

Three cases of Batsim 4.2.1's ``test/test_energy.py`` on ``cluster_energy_128.xml`` (128
Grid'5000-like hosts with pstates and a sleep state behind 50 µs links: Batsim's
messages take time, the latency driver runs) with batsched 1.4, recorded in
``tests/data/batsim421_energy/`` (``tests/data/README.md``: the conversation from
Batsim's ``simulator.log``, Batsim's outputs as written):

- ``sleeper-mixed-cluster``: ``test_various_profile_types.json``, jobs that move data
  (parallel tasks sharing links, a sequence): the ``ptask`` model's per-host loads as
  SimGrid's host-energy plugin reads them (:class:`~batpolicy.scheduler.sim.energy.TaskPower`);
- ``idlesleeper-energymini50-cluster``: ``energy_bf_idle_sleeper`` with
  ``test_energy_minimal``'s options: machines switched off, woken, a communicating job
  on them;
- ``sleeper-delaysequences-cluster``: sequences of delays, switches between jobs (the
  sixth decimal of ``epower`` over sub-millisecond intervals);
- ``sleeper-random1-cluster``: ``bench/energy_own_cases.py``'s first random workload
  (communicating tasks, sequences of a communicating task and a delay, walltime
  kills): a sleep's end updates the job actor's host only, so the next task's load is
  charged over the sleep on the job's other hosts.

Replayed message for message (batsched's recorded replies; each of Batsim's messages
must be the recorded one, whole), the run must write Batsim's ``_jobs.csv`` rows,
``_consumed_energy.csv``, ``_pstate_changes.csv`` and ``_machine_states.csv`` byte for
byte and its schedule.csv energy and machine-time figures.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from sim.test_batsim_suite_recorded import MessageForMessage

from batpolicy.platforms.xml import read_platform
from batpolicy.scheduler.io.batsim_json import read_batsim_workload
from batpolicy.scheduler.io.machine_states import HEADER, format_row
from batpolicy.scheduler.io.outputs import format_job_row, schedule_fields
from batpolicy.scheduler.sim import SimOptions
from batpolicy.scheduler.sim.latency import LatencySimulator, make_simulator

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim421_energy"
#: recording -> its workload
RUNS = {
    "sleeper-mixed-cluster": "test_various_profile_types.json",
    "idlesleeper-energymini50-cluster": "test_energy_minimal_load50.json",
    "sleeper-delaysequences-cluster": "test_sequence_delay.json",
    "sleeper-random1-cluster": "random1_128.json",
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_energy_on_a_latency_platform_writes_batsims_outputs(name: str, tmp_path: Path
                                                             ) -> None:
    sim = make_simulator([read_batsim_workload(DATA / RUNS[name], "w0")],
                         read_platform(DATA / "cluster_energy_128.xml"),
                         options=SimOptions(energy=True))
    assert isinstance(sim, LatencySimulator)
    states: list[str] = []
    sim.trace_machine_states(lambda rows: states.extend(format_row(*row) for row in rows))
    scheduler = MessageForMessage(name, DATA)
    result = sim.run(scheduler)
    assert scheduler.position == len(scheduler.recorded)
    assert result.complete
    assert sorted(format_job_row(r) for r in result.records) == \
        sorted((DATA / f"{name}.jobs.csv").read_text().splitlines(keepends=True)[1:])
    assert HEADER + "".join(states) == (DATA / f"{name}.machine_states.csv").read_text()
    energy = sim.parts.energy
    assert energy is not None
    energy.write(str(tmp_path / "out_"))
    for output in ("consumed_energy", "pstate_changes"):
        assert (tmp_path / f"out_{output}.csv").read_text() == \
            (DATA / f"{name}.{output}.csv").read_text(), output
    ours = schedule_fields(result)
    with open(DATA / f"{name}.schedule.csv", newline="") as f:
        theirs = next(csv.DictReader(f))
    for column in ("consumed_joules", "nb_grouped_switches", "nb_machine_switches",
                   "time_switching_off", "time_switching_on", "time_sleeping", "time_idle",
                   "time_computing", "makespan"):
        assert ours[column] == theirs[column], column

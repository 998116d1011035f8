"""Energy on a platform whose links take time, against runs recorded with real Batsim.

Four cases of Batsim 4.2.1's ``test/test_energy.py`` on ``cluster_energy_128.xml`` (128
Grid'5000-like hosts with pstates and a sleep state behind 50 µs links: Batsim's
messages take time, the latency driver runs) with batsched 1.4, recorded in
``tests/data/batsim421_energy/`` (``tests/data/README.md``: the conversation from
Batsim's ``simulator.log``, Batsim's outputs as written):

- ``sleeper-mixed-cluster``: ``test_various_profile_types.json``, jobs that move data
  (parallel tasks sharing links, a sequence): the ``ptask`` model's per-host loads as
  SimGrid's host-energy plugin reads them
  (:class:`~batpolicy.simulator.energy.host_energy.TaskPower`);
- ``idlesleeper-energymini50-cluster``: ``energy_bf_idle_sleeper`` with
  ``test_energy_minimal``'s options: machines switched off, woken, a communicating job
  on them;
- ``sleeper-delaysequences-cluster``: sequences of delays, switches between jobs (the
  sixth decimal of ``epower`` over sub-millisecond intervals);
- ``sleeper-random1-cluster``: ``bench/fidelity/energy_own_cases.py``'s first random workload
  (communicating tasks, sequences of a communicating task and a delay, walltime
  kills): a sleep's end updates the job actor's host only, so the next task's load is
  charged over the sleep on the job's other hosts.

and three cases of ``bench/fidelity/energy_own_cases.py`` (``energy_bf_idle_sleeper``, idle
timeout 0) that need Batsim's own messages inside the parallel-task solver
(:meth:`~batpolicy.simulator.jobmodels.ptask.jobmodel.PtaskModel.message_network`):

- ``idlesleeper-random2-cluster``: SimGrid's host-energy plugin reads a host's load
  when a job's 1-byte JOB_COMPLETED message ends, with that message still sharing the
  backbone with a communicating job (its rate lower for those nanoseconds): jobs 5 and
  17's consumed energy;
- ``idlesleeper-random3-twosleep8``: two sleep pstates; a one-host
  ``parallel_homogeneous_total`` job computing exactly its 30 s walltime completes (the
  task ends at the update its timer does, and is the older action);
- ``idlesleeper-random1-energy128``: zero-latency links of finite bandwidth
  (``bench/campaigns/inputs/energy128.xml``): each message takes its byte over its
  route, shared with the jobs' transfers, so Batsim's clock runs microseconds ahead of
  the instants (job 15 starts at 374.140002, not 374.14);
- ``idlesleeper120-random1-cluster``: ``idle120`` (120 s idle timeout) on
  ``cluster_energy_128.xml``: job 3 ends at 130.0018 as the reply's first EXECUTE_JOB
  reaches the server; under ``-E`` its actor reads the energy of every host not yet
  updated then (one simcall, so one scheduling round, each) before it puts
  JOB_COMPLETED, so the reply's next EXECUTE_JOB goes first and job 7 starts at
  130.0024, not 130.004; every job on the parallel-task model, ending on SimGrid's
  summed clock.

- ``idlesleeper-random3-multicore16``: its ``idle0-multicore16-random3`` case (four-core
  hosts, 10 µs links): job 1's delay ends at the update just before job 2's
  JOB_COMPLETED reaches the server (102.00102002080 against 102.00102002160), so the
  server sees job 1's put waiting and reads it before it talks to the scheduler: both
  completions in one message at 102.00106 and job 4 starts at 102.00108; and a job
  killed at its walltime ends at the update its timer does (the solver's clock, not
  start + walltime a few ulps later).

and two runs of ``usage_trace`` profiles (:mod:`~batpolicy.simulator.jobmodels.ptask.usage_trace`):

- ``usagetrace-fcfs-smallusage``: Batsim's own ``test_usage_trace`` case
  (``test_usage_trace.json`` and its ``usage-trace/`` files on
  ``small_platform_usage_replay.xml``: hosts of 100 cores at two speeds, routes of up to
  7 links): each rank's tasks on ``round(usage x 100)`` cores, the ranks' 4-byte
  messages to the job actor received one after the other;
- ``easybf-usage2-multicore16``: ``bench/fidelity/usage_trace_cases.py``'s
  ``easy_bf-E-multicore16-usage2`` (four-core hosts, up to 8 ranks per job so several
  on one host, ``smpi_ranks_to_hosts_mapping``, a usage trace in a sequence, jobs
  killed at their walltime with their ranks, the reader's quirks in the trace files).

Replayed message for message (batsched's recorded replies; each of Batsim's messages
must be the recorded one, whole), the run must write Batsim's ``_jobs.csv`` rows,
``_consumed_energy.csv`` (but for :data:`CLOCK_APART`), ``_pstate_changes.csv`` and
``_machine_states.csv`` byte for byte and its schedule.csv energy and machine-time
figures.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sim.test_batsim_suite_recorded import MessageForMessage
from sim.test_energy_batsim import assert_energy_schedule

from batpolicy.io.batsim_json import read_batsim_workload
from batpolicy.io.machine_states import HEADER, format_row
from batpolicy.io.outputs import format_job_row
from batpolicy.platforms.xml import read_platform
from batpolicy.simulator import SimOptions
from batpolicy.simulator.latency.driver import LatencySimulator, make_simulator

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim421_energy"
#: recording -> its workload and platform
RUNS = {
    "sleeper-mixed-cluster": ("test_various_profile_types.json", "cluster_energy_128.xml"),
    "idlesleeper-energymini50-cluster": ("test_energy_minimal_load50.json",
                                         "cluster_energy_128.xml"),
    "sleeper-delaysequences-cluster": ("test_sequence_delay.json", "cluster_energy_128.xml"),
    "sleeper-random1-cluster": ("random1_128.json", "cluster_energy_128.xml"),
    "idlesleeper-random2-cluster": ("random2_128.json", "cluster_energy_128.xml"),
    "idlesleeper-random3-twosleep8": ("random3_8.json", "twosleep8.xml"),
    "idlesleeper-random1-energy128": ("random1_128.json", "energy128.xml"),
    "idlesleeper120-random1-cluster": ("random1_128.json", "cluster_energy_128.xml"),
    "idlesleeper-random3-multicore16": ("random3_16.json", "multicore16.xml"),
    "usagetrace-fcfs-smallusage": ("test_usage_trace.json", "small_platform_usage_replay.xml"),
    "easybf-usage2-multicore16": ("usage2_multicore16.json", "multicore16.xml"),
}


#: Recordings whose ``_consumed_energy.csv`` rows are compared as printed but for
#: ``epower`` and the energy's last printed digit: between two events of one printed
#: instant Batsim's clock moves by picoseconds that SimGrid's sleeps and our closed-form
#: dates place differently (``epower`` NA for a zero interval, a value for a tiny one).
CLOCK_APART = {"idlesleeper-random2-cluster", "idlesleeper-random1-energy128"}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_energy_on_a_latency_platform_writes_batsims_outputs(name: str, tmp_path: Path
                                                             ) -> None:
    workload, platform = RUNS[name]
    sim = make_simulator([read_batsim_workload(DATA / workload, "w0")],
                         read_platform(DATA / platform),
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
    assert (tmp_path / "out_pstate_changes.csv").read_text() == \
        (DATA / f"{name}.pstate_changes.csv").read_text()
    ours_rows = (tmp_path / "out_consumed_energy.csv").read_text().splitlines()
    theirs_rows = (DATA / f"{name}.consumed_energy.csv").read_text().splitlines()
    if name not in CLOCK_APART:
        assert ours_rows == theirs_rows
    else:
        assert len(ours_rows) == len(theirs_rows)
        for ours_row, theirs_row in zip(ours_rows[1:], theirs_rows[1:], strict=True):
            a, b = ours_row.split(","), theirs_row.split(",")
            assert (a[0], a[2], a[3]) == (b[0], b[2], b[3]), (ours_row, theirs_row)
            assert float(a[1]) == pytest.approx(float(b[1]), rel=1e-12, abs=2e-6), \
                (ours_row, theirs_row)
    assert_energy_schedule(result, DATA / f"{name}.schedule.csv")

"""Offline unit tests of the pybatsim scheduler myFcfs.py: no Batsim, no socket, no process.

What a pybatsim user writes (docs/pybatsim.md); run with ``pytest`` in this folder.
Jobs are ``(subtime, res, runtime[, walltime])``, ids "0", "1", ... in order.
"""

from pathlib import Path

from batpolicy.testing import simulate

MY_FCFS = f"pybatsim:{Path(__file__).with_name('myFcfs.py')}"


def test_jobs_start_in_submission_order_on_the_lowest_machines():
    s = simulate(MY_FCFS, [(0, 3, 100), (1, 2, 10), (2, 1, 10)], machines=4)
    assert s.start("0") == 0.0 and s.machines("0") == [0, 1, 2]
    assert s.start("1") == 100.0            # FCFS: no backfilling beside job 0
    assert s.start("2") == 100.0 and s.machines("2") == [2]
    assert s.metrics["makespan"] == 110.0


def test_the_decision_delay_option_delays_every_start():
    s = simulate(MY_FCFS, [(0, 1, 10), (5, 1, 10)], machines=1,
                 params={"options": {"decision_delay": 2}})
    assert s.start("0") == 2.0              # bs.consume_time(2) before execute_jobs
    assert s.start("1") == 14.0             # decided when job 0 ends (12), started at 14


def test_a_job_larger_than_the_platform_is_rejected():
    s = simulate(MY_FCFS, [(0, 8, 10)], machines=4)
    assert s.state("0").value == "REJECTED"

"""Issue 6, item 1: every registered policy on random workloads, platforms and failures.

Each example is one whole simulation in the embedded simulator (Batsim 4.2.1's rules:
it aborts where Batsim aborts) with ``Dispatcher(policy, paranoid=True)`` (the decision
checker, plus :meth:`ClusterState.check` after every message). On top of "nothing
aborted", :func:`reliability.helpers.check_run` sweeps the records: every job ends exactly once and
is one row of jobs.csv, start >= submission, finish = start + runtime (or + walltime),
no machine holds two jobs at once, no job starts on an unavailable machine.

The policies come from the registry, so a new policy is covered the day it is
registered. Example counts are multiplied by ``BATPOLICY_FUZZ_SCALE``. Failures are kept
in hypothesis' database (``.hypothesis/reliability``) and replayed first; once
understood, a failure is pinned below as an explicit ``@example``.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reliability.helpers import (
    DATABASE,
    Job,
    Scenario,
    Window,
    check_run,
    scaled,
    scenarios,
    simulate,
)

from batpolicy.errors import ConfigError
from batpolicy.policies.registry import POLICIES
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState

SETTINGS = dict(database=DATABASE, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Policies that plan a reservation for the queue head (EASY's, reused by DPSA).
RESERVING = sorted(name for name in POLICIES if name == "easy" or name.startswith("dpsa"))


@pytest.mark.parametrize("policy", sorted(POLICIES))
@settings(max_examples=scaled(100), **SETTINGS)
@given(scenario=scenarios())
# a machine failing under a running job and coming back while a wide job waits
@example(scenario=Scenario(4, (Job("0", 0, 2, 30, 40), Job("1", 0, 4, 10, None),
                                 Job("2", 5, 1, 0, 5)), (Window(0, 1, 10, 20),)))
# jobs wider than the machines left while some are down; walltime kills at the same instant
@example(scenario=Scenario(3, (Job("0", 0, 3, 20, 10), Job("1", 10, 3, 5, 5),
                                 Job("2", 10, 1, 8, 4)), (Window(2, 2, 0, 15),)))
def test_random_workloads_keep_every_invariant(policy: str, scenario: Scenario) -> None:
    if policy == "redirection" and scenario.nb < 2:  # no machine left for one of its groups
        with pytest.raises(ConfigError, match="no machine to the principal group"):
            simulate(policy, scenario)
        return
    check_run(simulate(policy, scenario))


@pytest.mark.parametrize("policy", RESERVING)
@settings(max_examples=scaled(100), **SETTINGS)
@given(scenario=scenarios(max_machines=24, max_jobs=25, windows=False, exact_walltimes=True))
@example(scenario=Scenario(10, (Job("R1", 0, 4, 2, 2), Job("R2", 0, 6, 7, 7),
                                  Job("J1", 1, 10, 2, 2), Job("J2", 1, 3, 5, 5),
                                  Job("J3", 1, 2, 5, 5), Job("J4", 1, 2, 5, 5))))
def test_head_never_starts_after_its_reservation(policy: str, scenario: Scenario) -> None:
    """Runtimes equal walltimes: every reservation is kept, and never moves later."""
    run = simulate(policy, scenario)
    check_run(run)
    start = {r.job_id: r.start for r in run.records}
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for now, job, shadow in run.reservations:
        if shadow == math.inf:
            continue
        assert shadow >= now
        assert shadow <= last.get(job, math.inf), f"{job}'s reservation moved later at t={now}"
        first.setdefault(job, shadow)
        last[job] = shadow
    for job, shadow in first.items():
        assert start[job] is not None and start[job] <= shadow, \
            f"{job} reserved at {shadow} started at {start[job]}"


@pytest.mark.parametrize("policy", RESERVING)
def test_reserving_policies_expose_their_reservation(policy: str) -> None:
    """The reservation property above is only meaningful if the reservation is visible."""
    scenario = Scenario(3, (Job("0", 0, 2, 10, 10), Job("1", 0, 2, 10, 10)))
    assert simulate(policy, scenario).reservations


@pytest.mark.parametrize("mode", ["kill", "requeue"])
@settings(max_examples=scaled(100), **SETTINGS)
@given(scenario=scenarios(), reuse=st.booleans())
def test_easy_kills_or_requeues_the_jobs_of_failed_machines(mode: str, scenario: Scenario,
                                                           reuse: bool) -> None:
    flags = {}
    if mode == "requeue":
        flags = {"dynamic_jobs": True, "acknowledge_dynamic_jobs": True, "profile_reuse": reuse}
    run = simulate("easy", scenario, {"on_unavailable": mode}, **flags)
    check_run(run)
    for r in run.records:  # nothing runs on past a failure of one of its machines
        for w in scenario.windows:
            if r.alloc is not None and r.alloc & MachineSet.span(w.first, w.last):
                assert not r.start < w.down < r.finish, f"{r.job_id} ran through {w}"
    killed = [r for r in run.records if r.final_state is JobState.COMPLETED_KILLED]
    if mode == "requeue":  # each killed job has exactly one copy, which ran to its end
        parents = sorted(r.metadata.removeprefix("parent=") for r in run.records
                         if r.metadata.startswith("parent="))
        assert parents == sorted(r.job_id for r in killed)
    else:
        assert not run.registered

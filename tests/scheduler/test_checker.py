"""The decision checker names the first rule a refused EXECUTE_JOB breaks, reply by reply.

The checker tests an allocation against the free machines first (the common, accepted
case costs one subset test) and only for a refused one asks which rule it breaks, in
Batsim's order: machines that do not exist, unavailable machines, busy machines.
Decisions of one reply see the effect of the earlier ones.
"""

from __future__ import annotations

import pytest

from batpolicy.errors import InvalidDecision
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.checker import check_decisions
from batpolicy.scheduler.jobs import JobStatus
from batpolicy.scheduler.state import ClusterState

NB = 4


def _state() -> ClusterState:
    """Machines 0-3: 3 unavailable, 0 running job a; jobs b and c (one machine each) wait."""
    state = ClusterState()
    resources = tuple(t.ResourceInfo(i, f"h{i}", "unavailable" if i == 3 else "idle")
                      for i in range(NB))
    state.apply(t.SimulationBegins(0.0, NB, NB, 0, False, True, {}, resources, (),
                                   {"w0": "/w0.json"}, {"w0": {"p": {"type": "delay",
                                                                     "delay": 10.0}}}))
    for name in "abc":
        state.apply(t.JobSubmitted(0.0, f"w0!{name}", {"id": f"w0!{name}", "subtime": 0.0,
                                                        "res": 1, "walltime": 100.0,
                                                        "profile": "p"}))
    check_decisions(state, [t.ExecuteJob("w0!a", MachineSet.of(0))])
    state.apply_decision(t.ExecuteJob("w0!a", MachineSet.of(0)))
    return state


@pytest.mark.parametrize(("alloc", "message"), [
    (MachineSet.of(7), r"machines that do not exist \(7; the platform has 4\)"),
    (MachineSet.of(3), "allocation uses unavailable machines 3"),
    (MachineSet.of(0), "allocation uses machines 0 that are busy"),
    (MachineSet.of(9, 3), "do not exist"),  # the first rule broken is named
    (MachineSet.of(3, 0), "unavailable machines 3"),
])
def test_a_refused_allocation_names_the_first_rule_it_breaks(alloc: MachineSet,
                                                             message: str) -> None:
    state = _state()
    free_before = state.free
    with pytest.raises(InvalidDecision, match=message) as info:
        check_decisions(state, [t.ExecuteJob("w0!b", alloc)], "mine")
    assert info.value.job_id == "w0!b" and "mine" in str(info.value)
    assert state.free == free_before and state.jobs["w0!b"].status is JobStatus.WAITING


def test_decisions_of_one_reply_see_the_earlier_ones() -> None:
    state = _state()
    check_decisions(state, [t.ExecuteJob("w0!b", MachineSet.of(1)),
                            t.ExecuteJob("w0!c", MachineSet.of(2))])
    with pytest.raises(InvalidDecision, match="machines 1 that are busy") as info:
        check_decisions(state, [t.ExecuteJob("w0!b", MachineSet.of(1)),
                                t.ExecuteJob("w0!c", MachineSet.of(1))])
    assert info.value.job_id == "w0!c"
    with pytest.raises(InvalidDecision, match="REJECT_JOB of a job that is running"):
        check_decisions(state, [t.ExecuteJob("w0!b", MachineSet.of(1)), t.RejectJob("w0!b")])
    assert state.free == MachineSet.of(1, 2)  # checking changed nothing


@pytest.mark.parametrize("options", [
    {"mapping": {0: 0}, "storage_mapping": {"pfs": 0}},
    {"mapping": {0: 0}, "additional_io_job": {"alloc": "1", "profile_name": "io"}},
    {"storage_mapping": {"pfs": 0}, "additional_io_job": {"alloc": "1", "profile_name": "io"}},
])
def test_execute_job_with_two_options_is_refused(options: dict) -> None:
    """protocol.cpp handle_execute_job: at most one of mapping, storage_mapping, io job."""
    with pytest.raises(InvalidDecision, match="more than one of mapping"):
        check_decisions(_state(), [t.ExecuteJob("w0!b", MachineSet.of(1), **options)])

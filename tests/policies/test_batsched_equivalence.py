"""Our ``fcfs`` and ``easy`` make batsched's decisions, message for message.

Fed the Batsim side of each recorded batsched-fcfs-* / batsched-easy_bf-* conversation,
the daemon's dispatcher must reply with the same EXECUTE_JOB / REJECT_JOB decisions (same
jobs, same allocations, same order) as batsched did.
"""

from __future__ import annotations

import json

import pytest

from batpolicy.policies.registry import make_policy
from batpolicy.protocol.codec import reply_from_obj, request_from_obj
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.testing import decision_key

from conftest import TRANSCRIPTS

CASES = [(policy, name) for policy, prefix in (("fcfs", "batsched-fcfs"),
                                               ("easy", "batsched-easy_bf"))
         for name in ("paper800", "hpc250", "walltime120")]


@pytest.mark.parametrize("policy,workload", CASES)
def test_same_decisions_as_batsched(policy: str, workload: str) -> None:
    prefix = "batsched-fcfs" if policy == "fcfs" else "batsched-easy_bf"
    path = TRANSCRIPTS / f"{prefix}-{workload}.jsonl"
    if not path.exists():
        pytest.skip(f"transcript {path} not available")
    dispatcher = Dispatcher(make_policy(policy), paranoid=True)
    nb_messages = 0
    with path.open() as f:
        for line_no, line in enumerate(f, 1):
            record = json.loads(line)
            request = request_from_obj(record["batsim"])
            expected = reply_from_obj(record["scheduler"])
            ours = dispatcher.handle(request)
            assert ours.now == request.now
            assert [decision_key(d) for d in ours.decisions] == \
                [decision_key(d) for d in expected.decisions], \
                f"{path.name}: message {line_no} at t={request.now}"
            nb_messages += 1
    assert dispatcher.state.ended
    assert nb_messages > 100

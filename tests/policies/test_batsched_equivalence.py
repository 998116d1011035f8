"""Our ``fcfs`` and ``easy`` make batsched's decisions, message for message.

Fed the Batsim side of each recorded batsched-fcfs-* / batsched-easy_bf-* conversation,
the daemon's dispatcher must reply with the same EXECUTE_JOB / REJECT_JOB decisions (same
jobs, same allocations, same order) as batsched did. The six conversations are vendored
(``tests/data/transcripts``, the 800- and 250-job ones gzipped): every case runs on a clone.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import IO

import pytest

from batpolicy.policies.registry import make_policy
from batpolicy.protocol.codec import reply_from_obj, request_from_obj
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.testing import decision_key

from conftest import VENDORED_TRANSCRIPTS

CASES = [(policy, name) for policy in ("fcfs", "easy")
         for name in ("paper800", "hpc250", "walltime120")]


def transcript(policy: str, workload: str) -> Path:
    """The vendored conversation of batsched's counterpart of ``policy`` on ``workload``."""
    prefix = "batsched-fcfs" if policy == "fcfs" else "batsched-easy_bf"
    plain = VENDORED_TRANSCRIPTS / f"{prefix}-{workload}.jsonl"
    return plain if plain.is_file() else plain.with_name(plain.name + ".gz")


def _open(path: Path) -> IO[str]:
    return gzip.open(path, "rt") if path.suffix == ".gz" else path.open()


@pytest.mark.parametrize("policy,workload", CASES)
def test_same_decisions_as_batsched(policy: str, workload: str) -> None:
    path = transcript(policy, workload)
    dispatcher = Dispatcher(make_policy(policy), paranoid=True)
    nb_messages = 0
    with _open(path) as f:
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

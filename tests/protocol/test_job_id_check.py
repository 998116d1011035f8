"""The job-id check of the two commonest events agrees with ``JobId``'s pattern.

JOB_SUBMITTED and JOB_COMPLETED check their job id with ``str.count`` in
``__post_init__`` (:func:`batpolicy.protocol._wire.check_job_id`) instead of msgspec's
pattern, and a plain reply's ids are checked the same way (``is_job_id``, length bound
included); every other struct keeps the pattern. Both must accept exactly the same
strings, and a message refused for its id must be refused with the same words whichever
event carries it.
"""

from __future__ import annotations

import re

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from batpolicy.errors import ProtocolError
from batpolicy.protocol._wire import JOB_ID_PATTERN, MAX_NAME, FieldError, JobId, check_job_id
from batpolicy.protocol.codec import decode_request, encode_reply, reply_encoder
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import ExecuteJob, RejectJob, Reply

#: strings of '!', newlines and a few other characters, where the pattern's corners are
ids = st.text(alphabet="ab!\n\r é", max_size=8)


@given(ids)
def test_the_count_accepts_what_the_pattern_accepts(job_id: str) -> None:
    try:
        check_job_id(job_id)
        counted = True
    except FieldError:
        counted = False
    assert counted == (re.search(JOB_ID_PATTERN, job_id) is not None)
    by_msgspec = msgspec.convert(job_id, JobId) if counted else None
    assert by_msgspec in (job_id, None)


def _message(kind: str, job_id: str) -> bytes:
    data = ({"job_id": job_id, "job": {"id": job_id, "res": 1, "profile": "p"}}
            if kind == "JOB_SUBMITTED" else
            {"job_id": job_id, "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0,
             "alloc": "0"})
    return msgspec.json.encode({"now": 1.0, "events": [
        {"timestamp": 1.0, "type": kind, "data": data}]})


@pytest.mark.parametrize("kind", ["JOB_SUBMITTED", "JOB_COMPLETED"])
@pytest.mark.parametrize("job_id", ["w0", "w0!1!2", "!!", "a!b\n!"])
def test_a_bad_id_is_named_as_the_pattern_named_it(kind: str, job_id: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        decode_request(_message(kind, job_id))
    assert str(refused.value) == (f"event #0, {kind}, field 'data.job_id': a job id holds "
                                  "exactly one '!' (workload!name)")


@pytest.mark.parametrize("kind", ["JOB_SUBMITTED", "JOB_COMPLETED"])
def test_a_good_id_passes(kind: str) -> None:
    assert decode_request(_message(kind, "w0!a\n")).events[0].job_id == "w0!a\n"


@pytest.mark.parametrize("decision", ["execute", "reject"])
def test_a_reply_with_a_job_id_longer_than_the_schema_allows_is_refused(decision: str) -> None:
    long_id = "w0!" + "x" * (MAX_NAME - 2)  # one past JobId's max_length
    made = (ExecuteJob(long_id, MachineSet.of(0)) if decision == "execute"
            else RejectJob(long_id))
    for encode in (encode_reply, reply_encoder({})):
        with pytest.raises(ProtocolError, match="job_id"):
            encode(Reply(1.0, (made,)))
    fits = (ExecuteJob(long_id[:-1], MachineSet.of(0)) if decision == "execute"
            else RejectJob(long_id[:-1]))
    assert long_id[:-1].encode() in encode_reply(Reply(1.0, (fits,)))

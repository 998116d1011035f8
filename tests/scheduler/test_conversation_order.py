"""The protocol's order across messages, enforced without ``--paranoid`` (issue 49).

Exactly one SIMULATION_BEGINS, first; time never goes back (``now``, and the first
event's timestamp, against the previous message's ``now``); no completion before its
job's start; numbers and names within what Batsim can produce; a NOTIFY of a kind Batsim
does not send itself only with ``--forward-unknown-events``. Each refusal is one
ProtocolError naming the event and the field.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from batpolicy.errors import ProtocolError
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import decode_request, encode_request, request_from_obj
from batpolicy.scheduler.dispatch import Dispatcher

from conftest import VENDORED_TRANSCRIPTS

_LINES = (VENDORED_TRANSCRIPTS / "batsched-fcfs-walltime120.jsonl").read_text().splitlines()
BEGINS: dict[str, Any] = json.loads(_LINES[0])["batsim"]


def _submitted(job: str, at: float, **fields: Any) -> dict[str, Any]:
    desc = {"id": job, "subtime": at, "walltime": 60, "res": 1, "profile": "delay5", **fields}
    return {"timestamp": at, "type": "JOB_SUBMITTED", "data": {"job_id": job, "job": desc}}


def _message(now: float, *events: dict[str, Any]) -> t.Request:
    return request_from_obj({"now": now, "events": list(events)})


def _begun(begins: dict[str, Any] = BEGINS) -> Dispatcher:
    dispatcher = Dispatcher(make_policy("fcfs"))
    dispatcher.handle(request_from_obj(begins))
    return dispatcher


def test_the_first_message_must_begin_with_simulation_begins() -> None:
    dispatcher = Dispatcher(make_policy("fcfs"))
    with pytest.raises(ProtocolError, match=r"event #0, field 'type': the first message must "
                                            r"begin with SIMULATION_BEGINS, got JOB_SUBMITTED"):
        dispatcher.handle(_message(0.0, _submitted("w0!0", 0.0)))
    assert not dispatcher.state.jobs  # nothing changed


def test_a_second_simulation_begins_is_refused() -> None:
    dispatcher = _begun()
    with pytest.raises(ProtocolError, match=r"event #0, SIMULATION_BEGINS, field 'type': a "
                                            r"second SIMULATION_BEGINS"):
        dispatcher.handle(request_from_obj(BEGINS))


def test_now_never_goes_back() -> None:
    dispatcher = _begun()
    dispatcher.handle(_message(100.0, _submitted("w0!0", 100.0)))
    with pytest.raises(ProtocolError, match=r"field 'now': now 50.0 is before the previous "
                                            r"message's now 100.0"):
        dispatcher.handle(_message(50.0, _submitted("w0!1", 50.0)))
    assert "w0!1" not in dispatcher.state.jobs


def test_events_are_not_dated_before_the_previous_message() -> None:
    dispatcher = _begun()
    dispatcher.handle(_message(100.0, _submitted("w0!0", 100.0)))
    with pytest.raises(ProtocolError, match=r"event #0, JOB_COMPLETED, field 'timestamp': 50.0 "
                                            r"is before the previous message's now 100.0"):
        dispatcher.handle(_message(120.0, {
            "timestamp": 50.0, "type": "JOB_COMPLETED",
            "data": {"job_id": "w0!0", "job_state": "COMPLETED_SUCCESSFULLY",
                     "return_code": 0, "alloc": "0"}}))


def test_a_job_does_not_complete_before_it_started() -> None:
    dispatcher = _begun()
    dispatcher.handle(_message(100.0, _submitted("w0!0", 100.0)))
    assert dispatcher.state.jobs["w0!0"].start == 100.0
    completed = t.JobCompleted(50.0, "w0!0", t.JobState.COMPLETED_SUCCESSFULLY, 0,
                               dispatcher.state.jobs["w0!0"].allocation)  # type: ignore[arg-type]
    with pytest.raises(ProtocolError, match=r"JOB_COMPLETED, field 'timestamp': job 'w0!0' "
                                            r"completes at 50.0, before it started at 100.0"):
        dispatcher.state.apply(completed)


@pytest.mark.parametrize("now", ["1208925819614629174706176", "1e308", "-1"])
def test_times_beyond_what_batsim_produces_are_refused(now: str) -> None:
    with pytest.raises(ProtocolError, match="field 'now'"):
        decode_request(f'{{"now": {now}, "events": []}}'.encode())


@pytest.mark.parametrize("walltime", [2 ** 80, 1e308])
def test_walltimes_beyond_what_batsim_produces_are_refused(walltime: float) -> None:
    message = {"now": 1.0, "events": [_submitted("w0!0", 1.0, walltime=walltime)]}
    with pytest.raises(ProtocolError, match=r"event #0, JOB_SUBMITTED, field 'data.job.walltime'"):
        decode_request(json.dumps(message).encode())


def test_names_are_bounded() -> None:
    long_profile = {"now": 1.0, "events": [_submitted("w0!0", 1.0, profile="p" * 10_000)]}
    with pytest.raises(ProtocolError, match=r"field 'data.job.profile': a profile name of 10000 "):
        decode_request(json.dumps(long_profile).encode())
    long_id = {"now": 1.0, "events": [_submitted("w0!" + "9" * 10_000, 1.0)]}
    with pytest.raises(ProtocolError, match=r"event #0, JOB_SUBMITTED, field 'data.job_id'"):
        decode_request(json.dumps(long_id).encode())


def test_an_unknown_notify_is_refused_with_its_index_unless_forwarding_is_on() -> None:
    weird = {"timestamp": 5.0, "type": "NOTIFY", "data": {"type": "weird", "extra": 1}}
    message = _message(5.0, _submitted("w0!0", 5.0), weird)
    dispatcher = _begun()
    with pytest.raises(ProtocolError, match=r"event #1, NOTIFY, field 'data.type': unknown "
                                            r"NOTIFY type 'weird'"):
        dispatcher.handle(message)
    forwarding = copy.deepcopy(BEGINS)
    forwarding["events"][0]["data"]["config"]["forward-unknown-events"] = True
    dispatcher = _begun(forwarding)
    dispatcher.handle(message)  # a forwarded external event: the policy's on_notify gets it
    assert "w0!0" in dispatcher.state.jobs


def test_a_whole_recorded_conversation_still_passes() -> None:
    dispatcher = Dispatcher(make_policy("fcfs"))
    for line in _LINES:
        request = request_from_obj(json.loads(line)["batsim"])
        assert decode_request(encode_request(request)) == request
        dispatcher.handle(request)
    assert dispatcher.state.ended

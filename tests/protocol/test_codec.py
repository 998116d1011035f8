"""The Batsim 4.2.1 JSON codec, checked on every type and malformed message.

Every type both ways, Batsim's documented examples, malformed messages (one
ProtocolError naming index and field), and round-trip properties.
"""

from __future__ import annotations

import json
import string
import typing

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batpolicy.errors import ProtocolError
from batpolicy.protocol import types as t
from batpolicy.protocol._decoders import REPLY_DECODERS, REQUEST_DECODERS
from batpolicy.protocol._encoders import DECISION_ENCODERS, EVENT_ENCODERS
from batpolicy.protocol.codec import (
    EventType,
    decode_reply,
    decode_request,
    encode_reply,
    encode_request,
    reply_from_obj,
    reply_to_obj,
    request_from_obj,
    request_to_obj,
)
from batpolicy.protocol.intervals import MachineSet

# ---------------------------------------------------------------------------------------
# one of everything
# ---------------------------------------------------------------------------------------

RESOURCE = t.ResourceInfo(0, "h0", "idle", {"role": ""}, {})


def sample_events() -> list[t.Event]:
    """One event of every kind Batsim sends (forwarded external events included)."""
    return [
        t.SimulationBegins(0.0, 2, 1, 1, False, True,
                           {"redis-enabled": False, "sched-config": ""},
                           (RESOURCE,), (t.ResourceInfo(1, "pfs", "idle", {"role": "storage"},
                                                        {"zone": "a"}),),
                           {"w0": "/path/to/inputs/w.json"},
                           {"w0": {"delay10": {"type": "delay", "delay": 10}}},
                           extra={"future-field": [1, 2]}),
        t.JobSubmitted(1.0, "w0!1", {"id": "w0!1", "subtime": 1, "res": 1, "profile": "delay10",
                                     "walltime": -1, "user": "alice"}),
        t.JobSubmitted(1.0, "w0!2", {"id": "w0!2", "res": 0, "profile": "delay10"},
                       {"type": "delay", "delay": 10}),
        t.JobSubmitted(1.0, "w0!3"),
        t.JobCompleted(2.0, "w0!1", t.JobState.COMPLETED_SUCCESSFULLY, 0, MachineSet.of((0, 3), 7)),
        t.JobCompleted(2.0, "w0!4", t.JobState.COMPLETED_KILLED, -1, MachineSet.of(5)),
        t.JobKilled(2.0, ("w0!4", "w0!5"),
                    {"w0!4": {"profile_name": "delay10", "progress": 0.25}}),
        t.ResourceStateChanged(3.0, MachineSet.span(1, 5), "42"),
        t.RequestedCall(3.0),
        t.Notify(3.0, "no_more_static_job_to_submit"),
        t.Notify(3.0, "no_more_external_event_to_occur"),
        t.Notify(3.0, "event_machine_unavailable", MachineSet.of(5, 6)),
        t.Notify(3.0, "event_machine_available", MachineSet.span(0, 3)),
        t.Notify(3.0, "maintenance_announced", None,
                 {"timestamp": 3, "type": "maintenance_announced", "window": "02:00-04:00"}),
        t.Query(4.0, {"estimate_waiting_time": {"job_id": "wf0!j", "job": {"res": 1,
                                                                           "walltime": 12.0}}}),
        t.Answer(4.0, {"consumed_energy": 12500.0}),
        t.FromJobMsg(4.0, "w0!1", {"hello": [1, 2]}),
        t.SimulationEnds(5.0),
    ]


def sample_decisions() -> list[t.Decision]:
    """One decision of every kind a scheduler sends, most of them undated."""
    return [
        t.ExecuteJob("w0!1", MachineSet.span(0, 3)),
        t.ExecuteJob("w0!2", MachineSet.of(2, 3), mapping={0: 0, 1: 0, 2: 1, 3: 1}),
        t.ExecuteJob("w0!3", MachineSet.of(4), storage_mapping={"pfs": 2}),
        t.ExecuteJob("w0!4", MachineSet.of(5), additional_io_job={
            "alloc": "2-3 5-6", "profile_name": "io", "profile": {"type": "parallel", "cpu": 0}}),
        t.RejectJob("w0!5"),
        t.KillJob(("w0!1", "w0!2")),
        t.CallMeLater(25.5),
        t.SetResourceState(MachineSet.span(1, 5), "42"),
        t.RegisterProfile("dyn", "delay10", {"type": "delay", "delay": 10}),
        t.RegisterJob("dyn!a", {"id": "dyn!a", "subtime": 10.0, "res": 1, "profile": "delay10",
                                "walltime": 12.0}),
        t.RegisterJob("dyn!b", None),
        t.RegistrationFinished(),
        t.ContinueRegistration(),
        t.SetJobMetadata("w0!1", "started#1"),
        t.ChangeJobState("w0!6", t.JobState.COMPLETED_KILLED, "Sub-jobs were killed."),
        t.ChangeJobState("w0!7", t.JobState.RUNNING),
        t.Query(None, {"consumed_energy": {}}),
        t.Answer(None, {"estimate_waiting_time": {"job_id": "wf0!j",
                                                  "estimated_waiting_time": 56}}),
        t.ToJobMsg("w0!1", "go"),
    ]


def _stamped(decision: t.Decision, now: float) -> t.Decision:
    if decision.timestamp is None:
        return msgspec.structs.replace(decision, timestamp=now)
    return decision


def test_every_wire_type_has_one_decoder_per_direction_it_travels() -> None:
    assert set(REQUEST_DECODERS) | set(REPLY_DECODERS) == {e.value for e in EventType}
    assert set(REQUEST_DECODERS) & set(REPLY_DECODERS) == {"NOTIFY", "QUERY", "ANSWER"}


def test_every_event_and_decision_class_has_an_encoder() -> None:
    assert set(typing.get_args(t.Event)) == set(EVENT_ENCODERS)
    assert set(typing.get_args(t.Decision)) == set(DECISION_ENCODERS)


def test_every_event_type_round_trips() -> None:
    events = sample_events()
    request = t.Request(5.0, tuple(events))
    assert {type(e) for e in events} == set(typing.get_args(t.Event))
    data = encode_request(request)
    assert decode_request(data) == request
    assert decode_request(data.decode()) == request  # str works too
    obj = orjson.loads(data)
    assert request_to_obj(request_from_obj(obj)) == obj


def test_every_decision_type_round_trips_and_is_stamped_with_now() -> None:
    decisions = sample_decisions()
    assert {type(d) for d in decisions} == set(typing.get_args(t.Decision))
    reply = t.Reply(10.0, tuple(decisions))
    data = encode_reply(reply)
    obj = orjson.loads(data)
    assert all(event["timestamp"] == 10.0 for event in obj["events"])
    assert decode_reply(data) == t.Reply(10.0, tuple(_stamped(d, 10.0) for d in decisions))
    assert reply_to_obj(reply_from_obj(obj)) == obj


def test_explicit_decision_timestamps_are_kept() -> None:
    reply = t.Reply(15.0, (t.RejectJob("w!1", timestamp=13.0), t.RejectJob("w!2")))
    assert [e["timestamp"] for e in orjson.loads(encode_reply(reply))["events"]] == [13.0, 15.0]


def test_simulation_begins_keeps_raw_parts_and_unknown_members() -> None:
    event = sample_events()[0]
    obj = request_to_obj(t.Request(0.0, (event,)))
    decoded = request_from_obj(obj).events[0]
    assert decoded.extra == {"future-field": [1, 2]}
    assert decoded.profiles is obj["events"][0]["data"]["profiles"]  # kept, not rebuilt
    assert decoded.config is obj["events"][0]["data"]["config"]


def test_notify_query_answer_decode_by_direction() -> None:
    finished = {"now": 1, "events": [{"timestamp": 1, "type": "NOTIFY",
                                      "data": {"type": "registration_finished"}}]}
    assert reply_from_obj(finished).decisions == (t.RegistrationFinished(timestamp=1.0),)
    static = {"now": 1, "events": [{"timestamp": 1, "type": "NOTIFY",
                                    "data": {"type": "no_more_static_job_to_submit"}}]}
    assert request_from_obj(static).events == (t.Notify(1.0, "no_more_static_job_to_submit"),)
    with pytest.raises(ProtocolError, match=r"field 'data.type'"):
        reply_from_obj(static)
    energy = {"now": 1, "events": [{"timestamp": 1, "type": "QUERY",
                                    "data": {"requests": {"consumed_energy": {}}}}]}
    assert reply_from_obj(energy).decisions == (t.Query(1.0, {"consumed_energy": {}}),)
    with pytest.raises(ProtocolError, match=r"field 'data.requests.consumed_energy'"):
        request_from_obj(energy)


def test_forwarded_external_event_keeps_the_whole_object() -> None:
    data = {"timestamp": 300, "type": "user_specific_type", "some_field": "value",
            "another_field": 36}
    obj = {"now": 300.0, "events": [{"timestamp": 300.0, "type": "NOTIFY", "data": data}]}
    notify = request_from_obj(obj).events[0]
    assert notify.kind == "user_specific_type" and notify.is_forwarded_external_event
    assert notify.data == data
    assert request_to_obj(request_from_obj(obj)) == obj


# ---------------------------------------------------------------------------------------
# the examples of Batsim's protocol documentation (docs/protocol.rst, v4.2)
# ---------------------------------------------------------------------------------------

def _one(event: str, now: float | None = None) -> str:
    stamp = json.loads(event)["timestamp"]
    return f'{{"now": {stamp if now is None else now}, "events": [{event}]}}'


DOC_REQUESTS = {
    "query-estimate-waiting-time": _one('''{"timestamp": 10.0, "type": "QUERY", "data": {
        "requests": {"estimate_waiting_time": {"job_id": "workflow_submitter0!potential_job17",
                                               "job": {"res": 1, "walltime": 12.0}}}}}'''),
    "answer-consumed-energy": _one(
        '{"timestamp": 10.0, "type": "ANSWER", "data": {"consumed_energy": 12500.0}}'),
    "notify-no-more-static-job": _one('{"timestamp": 23.50, "type": "NOTIFY", '
                                      '"data": { "type": "no_more_static_job_to_submit" }}'),
    "simulation-ends": _one('{"timestamp": 100.0, "type": "SIMULATION_ENDS", "data": {}}'),
    "job-submitted": _one('''{"timestamp": 10.0, "type": "JOB_SUBMITTED", "data": {
        "job_id": "dyn!my_new_job", "job": {"profile": "delay_10s", "res": 1,
        "id": "dyn!my_new_job", "walltime": 12.0}}}'''),
    "job-submitted-forwarded-profile": _one('''{"timestamp": 10.0, "type": "JOB_SUBMITTED",
        "data": {"job_id": "dyn!my_new_job", "job": {"profile": "delay_10s", "res": 1,
        "id": "dyn!my_new_job", "walltime": 12.0}, "profile": {"type": "delay", "delay": 10}}}'''),
    "job-submitted-redis": _one(
        '{"timestamp": 10.0, "type": "JOB_SUBMITTED", "data": {"job_id": "w0!1"}}'),
    "job-killed-with-progress": _one('''{"timestamp": 10.0, "type": "JOB_KILLED", "data": {
        "job_ids": ["w0!1", "w0!2", "w0!3"], "job_progress": {
          "w0!1": {"profile": "my_simple_profile", "progress": 0.52},
          "w0!2": {"profile": "my_sequence_profile", "current_task_index": 1,
                   "current_task": {"profile": "my_simple_profile", "progress": 0.2}},
          "w0!3": {"profile": "my_sequence_of_sequences_profile", "current_task_index": 2,
                   "current_task": {"profile": "my_sequential_profile", "current_task_index": 3,
                     "current_task": {"profile": "my_simple_profile", "progress": 0.75}}}}}}'''),
    "resource-state-changed": _one('{"timestamp": 10.0, "type": "RESOURCE_STATE_CHANGED", '
                                   '"data": {"resources": "1 2 3-5", "state": "42"}}'),
    "requested-call": _one('{"timestamp": 25.5, "type": "REQUESTED_CALL", "data": {}}'),
}

DOC_REPLIES = {
    "message-composition": '''{"now": 1024.24, "events": [
        {"timestamp": 1000, "type": "EXECUTE_JOB",
         "data": {"job_id": "workload!job_1234", "alloc": "1 2 4-8"}},
        {"timestamp": 1012, "type": "EXECUTE_JOB",
         "data": {"job_id": "workload!job_1235", "alloc": "12-100"}}]}''',
    "query-consumed-energy": _one('{"timestamp": 10.0, "type": "QUERY", '
                                  '"data": {"requests": {"consumed_energy": {}}}}'),
    "answer-estimate-waiting-time": _one('''{"timestamp": 10.0, "type": "ANSWER", "data": {
        "estimate_waiting_time": {"job_id": "workflow_submitter0!potential_job17",
                                  "estimated_waiting_time": 56}}}'''),
    "notify-registration-finished": _one(
        '{"timestamp": 42.0, "type": "NOTIFY", "data": { "type": "registration_finished" }}'),
    "notify-continue-registration": _one(
        '{"timestamp": 42.0, "type": "NOTIFY", "data": { "type": "continue_registration" }}'),
    "reject-job": _one('{"timestamp": 10.0, "type": "REJECT_JOB", "data": {"job_id": "w12!45"}}'),
    "execute-job-mapping": _one('''{"timestamp": 10.0, "type": "EXECUTE_JOB", "data": {
        "job_id": "w12!45", "alloc": "2-3",
        "mapping": {"0": "0", "1": "0", "2": "1", "3": "1"}}}'''),
    "call-me-later": _one(
        '{"timestamp": 10.0, "type": "CALL_ME_LATER", "data": {"timestamp": 25.5}}'),
    "kill-job": _one(
        '{"timestamp": 10.0, "type": "KILL_JOB", "data": {"job_ids": ["w0!1", "w0!2"]}}'),
    "register-job-redis": _one(
        '{"timestamp": 10.0, "type": "REGISTER_JOB", "data": {"job_id": "w12!45"}}'),
    "register-profile": _one('''{"timestamp": 10.0, "type": "REGISTER_PROFILE", "data": {
        "workload_name": "dyn_wl1", "profile_name": "delay_10s",
        "profile": {"type": "delay", "delay": 10}}}'''),
    "set-resource-state": _one('{"timestamp": 10.0, "type": "SET_RESOURCE_STATE", '
                               '"data": {"resources": "1 2 3-5", "state": "42"}}'),
    "set-job-metadata": _one('''{"timestamp": 13.0, "type": "SET_JOB_METADATA", "data": {
        "job_id": "wload!42", "metadata": "scheduler-defined string"}}'''),
    "change-job-state": _one('''{"timestamp": 42.0, "type": "CHANGE_JOB_STATE", "data": {
        "job_id": "w12!45", "job_state": "COMPLETED_KILLED",
        "kill_reason": "Sub-jobs were killed."}}'''),
}

#: Where Batsim writes a canonical form the documentation did not use.
DOC_NORMALISED = {"1 2 4-8": "1-2 4-8", "1 2 3-5": "1-5"}


def _normalise(obj: typing.Any) -> typing.Any:
    if isinstance(obj, dict):
        return {k: (DOC_NORMALISED.get(v, v) if isinstance(v, str) else _normalise(v))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_normalise(v) for v in obj]
    return obj


@pytest.mark.parametrize("name", sorted(DOC_REQUESTS))
def test_documented_batsim_examples_decode_and_reencode(name: str) -> None:
    text = DOC_REQUESTS[name]
    request = decode_request(text)
    assert request_to_obj(request) == _normalise(json.loads(text))
    assert decode_request(encode_request(request)) == request


@pytest.mark.parametrize("name", sorted(DOC_REPLIES))
def test_documented_scheduler_examples_decode_and_reencode(name: str) -> None:
    text = DOC_REPLIES[name]
    reply = decode_reply(text)
    expected = _normalise(json.loads(text))
    if name == "execute-job-mapping":  # Batsim reads "0" and 0 alike; we write integers
        expected["events"][0]["data"]["mapping"] = {"0": 0, "1": 0, "2": 1, "3": 1}
        assert reply.decisions[0].mapping == {0: 0, 1: 0, 2: 1, 3: 1}
    assert reply_to_obj(reply) == expected
    assert decode_reply(encode_reply(reply)) == reply


#: Documentation examples that Batsim 4.2.1's code does not produce or accept, and why.
DOC_REFUSED = [
    # the docs show the 3.x SIMULATION_BEGINS ("allow_time_sharng", no storage fields)
    ("request", _one('''{"timestamp": 0, "type": "SIMULATION_BEGINS", "data": {
        "nb_resources": 4, "nb_compute_resources": 4, "nb_storage_resources": 0,
        "allow_time_sharng": false, "config": {}, "compute_resources": [], "storage_resources": [],
        "workloads": {}, "profiles": {}}}'''), 0, "data.allow_compute_sharing"),
    # 4.2.1 sends no kill_reason in JOB_COMPLETED
    ("request", _one('''{"timestamp": 80.087881, "type": "JOB_COMPLETED", "data": {
        "job_id": "26dceb!4", "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0,
        "kill_reason": "", "alloc": "0-3"}}'''), 0, "data.kill_reason"),
    # 4.2.1 always sends job_progress (empty when nothing was really killed)
    ("request", _one('{"timestamp": 10.0, "type": "JOB_KILLED", '
                     '"data": {"job_ids": ["w0!1", "w0!2"]}}'), 0, "data.job_progress"),
    # the docs put storage_mapping and additional_io_job outside data
    ("reply", _one('''{"timestamp": 10.0, "type": "EXECUTE_JOB", "data": {
        "job_id": "w12!45", "alloc": "2-3", "mapping": {"0": "0", "1": "0", "2": "1", "3": "1"}},
        "storage_mapping": {"pfs": 2},
        "additional_io_job": {"alloc": "2-3 5-6", "profile_name": "my_io_job"}}'''),
     0, "additional_io_job"),
    # REGISTER_JOB needs the job's subtime in 4.2.1 (Batsim's protocol: decisions)
    ("reply", _one('''{"timestamp": 10.0, "type": "REGISTER_JOB", "data": {
        "job_id": "dyn!my_new_job", "job": {"profile": "delay_10s", "res": 1,
        "id": "dyn!my_new_job", "walltime": 12.0}}}'''), 0, "data.job.subtime"),
]


@pytest.mark.parametrize("direction,text,index,field", DOC_REFUSED)
def test_documented_examples_that_batsim_421_refuses(direction: str, text: str, index: int,
                                                     field: str) -> None:
    decode = decode_request if direction == "request" else decode_reply
    with pytest.raises(ProtocolError) as caught:
        decode(text)
    assert (caught.value.index, caught.value.field) == (index, field)


@pytest.mark.parametrize("text", [
    # the docs' first example and its REGISTER_JOB-with-Redis example have trailing commas
    '{"now": 1024.24, "events": [{"timestamp": 1000, "type": "EXECUTE_JOB", '
    '"data": {"job_id": "workload!job_1234", "alloc": "1 2 4-8",}}]}',
    '{"now": 10, "events": [{"timestamp": 10.0, "type": "REGISTER_JOB", '
    '"data": {"job_id": "w12!45",}}]}',
])
def test_documented_examples_with_trailing_commas_are_not_json(text: str) -> None:
    with pytest.raises(ProtocolError, match=r"not valid JSON: .* at line 1 column \d+ \(char"):
        decode_reply(text)


# ---------------------------------------------------------------------------------------
# malformed messages: exactly one ProtocolError, naming the event index and the field
# ---------------------------------------------------------------------------------------

def _msg(*events: str, now: str = "10") -> bytes:
    return f'{{"now": {now}, "events": [{", ".join(events)}]}}'.encode()


def _ev(kind: str, data: str, ts: str = "10") -> str:
    return f'{{"timestamp": {ts}, "type": "{kind}", "data": {data}}}'


_OK = _ev("REQUESTED_CALL", "{}", "5")
_DONE = '"job_id": "w0!1", "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0'
_RES0 = '{"id": 0, "name": "h0", "state": "idle", "properties": {}}'

MALFORMED = [
    # (id, direction, raw message, index, field)
    ("missing-now", "request", b'{"events": []}', None, "now"),
    ("now-is-bool", "request", b'{"now": true, "events": []}', None, "now"),
    ("now-is-nan", "request", b'{"now": NaN, "events": []}', None, "now"),
    ("events-not-array", "request", b'{"now": 1, "events": {}}', None, "events"),
    ("extra-envelope-member", "reply", b'{"now": 1, "events": [], "extra": 0}', None, "extra"),
    ("event-without-data", "request",
     _msg(_OK, '{"timestamp": 10, "type": "REQUESTED_CALL"}'), 1, "data"),
    ("timestamp-after-now", "request", _msg(_OK, _ev("REQUESTED_CALL", "{}", "11")), 1,
     "timestamp"),
    ("timestamps-decrease", "request", _msg(_ev("REQUESTED_CALL", "{}", "7"), _OK), 1,
     "timestamp"),
    ("timestamp-is-string", "reply", _msg(_ev("REJECT_JOB", '{"job_id": "w!1"}', '"10"')), 0,
     "timestamp"),
    ("unknown-type", "request", _msg(_OK, _ev("JOB_EXPLODED", "{}")), 1, "type"),
    ("decision-in-batsim-message", "request", _msg(_ev("EXECUTE_JOB", '{}')), 0, "type"),
    ("data-not-object", "request", _msg(_ev("REQUESTED_CALL", "[]")), 0, "data"),
    ("unknown-job-state", "request",
     _msg(_ev("JOB_COMPLETED", '{"job_id": "w0!1", "job_state": "DONE", "return_code": 0, '
                               '"alloc": "0"}')), 0, "data.job_state"),
    ("bad-alloc", "request", _msg(_ev("JOB_COMPLETED", '{' + _DONE + ', "alloc": "0-"}')), 0,
     "data.alloc"),
    ("return-code-too-large", "request",
     _msg(_ev("JOB_COMPLETED", '{"job_id": "w0!1", "job_state": "COMPLETED_FAILED", '
                               '"return_code": 99999999999, "alloc": "0"}')), 0,
     "data.return_code"),
    ("job-id-two-bangs", "request", _msg(_ev("JOB_SUBMITTED", '{"job_id": "w0!1!2"}')), 0,
     "data.job_id"),
    ("job-id-no-bang", "reply", _msg(_ev("REJECT_JOB", '{"job_id": "17"}')), 0, "data.job_id"),
    ("res-is-float", "request",
     _msg(_ev("JOB_SUBMITTED", '{"job_id": "w0!1", "job": {"res": 2.0}}')), 0, "data.job.res"),
    ("res-is-bool", "request",
     _msg(_ev("JOB_SUBMITTED", '{"job_id": "w0!1", "job": {"res": true}}')), 0, "data.job.res"),
    ("res-negative", "request",
     _msg(_ev("JOB_SUBMITTED", '{"job_id": "w0!1", "job": {"res": -1}}')), 0, "data.job.res"),
    ("res-overflows-double", "request",
     _msg(_ev("JOB_SUBMITTED", '{"job_id": "w0!1", "job": {"res": 1e400}}')), 0, "data.job.res"),
    ("nan-inside-raw-job", "request",
     _msg(_OK, _ev("JOB_SUBMITTED", '{"job_id": "w0!1", "job": {"res": 1, "x": [NaN]}}')), 1,
     "data.job.x[0]"),
    ("killed-progress-not-object", "request",
     _msg(_ev("JOB_KILLED", '{"job_ids": ["w0!1"], "job_progress": []}')), 0,
     "data.job_progress"),
    ("machine-event-without-resources", "request",
     _msg(_ev("NOTIFY", '{"type": "event_machine_unavailable"}')), 0, "data.resources"),
    ("resource-without-zone-properties", "request",
     _msg(_ev("SIMULATION_BEGINS",
              '{"nb_resources": 1, "nb_compute_resources": 1, "nb_storage_resources": 0, '
              '"allow_compute_sharing": false, "allow_storage_sharing": true, "config": {}, '
              '"compute_resources": [' + _RES0 + '], "storage_resources": [], '
              '"workloads": {}, "profiles": {}}', "0"), now="0"), 0,
     "data.compute_resources[0].zone_properties"),
    ("execute-two-optional-members", "reply",
     _msg(_ev("EXECUTE_JOB", '{"job_id": "w0!1", "alloc": "0-1", "mapping": {"0": 0}, '
                             '"storage_mapping": {"pfs": 2}}')), 0, "data.storage_mapping"),
    ("execute-empty-alloc", "reply", _msg(_ev("EXECUTE_JOB", '{"job_id": "w0!1", "alloc": ""}')),
     0, "data.alloc"),
    ("execute-mapping-outside-alloc", "reply",
     _msg(_ev("EXECUTE_JOB", '{"job_id": "w0!1", "alloc": "3", "mapping": {"0": 1}}')), 0,
     "data.mapping.0"),
    ("reject-extra-member", "reply",
     _msg(_ev("REJECT_JOB", '{"job_id": "w0!1", "reason": "too big"}')), 0, "data.reason"),
    ("kill-nothing", "reply", _msg(_ev("KILL_JOB", '{"job_ids": []}')), 0, "data.job_ids"),
    ("call-me-in-the-past", "reply", _msg(_ev("CALL_ME_LATER", '{"timestamp": 10}')), 0,
     "data.timestamp"),
    ("call-me-later-extra-member", "reply",
     _msg(_ev("CALL_ME_LATER", '{"timestamp": 20, "repeat": true}')), 0, "data.repeat"),
    ("set-resource-state-without-state", "reply",
     _msg(_ev("SET_RESOURCE_STATE", '{"resources": "0-3"}')), 0, "data.state"),
    ("metadata-with-quote", "reply",
     _msg(_ev("SET_JOB_METADATA", '{"job_id": "w0!1", "metadata": "say \\"hi\\""}')), 0,
     "data.metadata"),
    ("scheduler-notify-unknown", "reply",
     _msg(_ev("NOTIFY", '{"type": "no_more_static_job_to_submit"}')), 0, "data.type"),
    ("query-unsupported-request", "reply",
     _msg(_ev("QUERY", '{"requests": {"air_temperature_all": {}}}')), 0,
     "data.requests.air_temperature_all"),
    ("change-to-submitted", "reply",
     _msg(_ev("CHANGE_JOB_STATE", '{"job_id": "w0!1", "job_state": "SUBMITTED"}')), 0,
     "data.job_state"),
    ("lone-surrogate", "request",
     _msg(_ev("FROM_JOB_MSG", '{"job_id": "w0!1", "msg": "\\ud800"}')), 0, "data.msg"),
]


@pytest.mark.parametrize("direction,raw,index,field",
                         [pytest.param(*case[1:], id=case[0]) for case in MALFORMED])
def test_malformed_message_raises_one_protocol_error_naming_index_and_field(
        direction: str, raw: bytes, index: int | None, field: str) -> None:
    decode = decode_request if direction == "request" else decode_reply
    with pytest.raises(ProtocolError) as caught:
        decode(raw)
    error = caught.value
    assert (error.index, error.field) == (index, field), str(error)
    assert f"field '{field}'" in str(error)
    if index is not None:
        assert str(error).startswith(f"event #{index}")


def test_error_names_the_event_type_when_known() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_request(_msg(_ev("JOB_SUBMITTED", '{"job_id": "w0!1", "job": {"res": 1.5}}')))
    assert caught.value.event_type == "JOB_SUBMITTED"
    assert str(caught.value) == ("event #0, JOB_SUBMITTED, field 'data.job.res': "
                                 "expected a JSON integer, got 1.5")


@pytest.mark.parametrize("raw,pattern", [
    (b'\xff{"now": 0, "events": []}', "not valid UTF-8 \\(byte 0"),
    (b'{"now": 0, "events": [', "not valid JSON: .* \\(char 22\\)"),
    (b"", "not valid JSON"),
    (b'[{"now": 0}]', "must be a JSON object, got array"),
    (b'{"now": 0, "events": []} trailing', "not valid JSON"),
    (12, "must be bytes or str, got int"),
])
def test_unparsable_messages_raise_protocol_error(raw: typing.Any, pattern: str) -> None:
    with pytest.raises(ProtocolError, match=pattern):
        decode_request(raw)


def test_every_truncation_of_a_message_is_one_protocol_error() -> None:
    data = encode_request(t.Request(5.0, tuple(sample_events()[1:])))
    for cut in range(len(data)):
        with pytest.raises(ProtocolError):
            decode_request(data[:cut])


def test_encoding_refuses_what_batsim_would_refuse() -> None:
    cases = [
        (t.CallMeLater(10.0), "data.timestamp"),
        (t.ExecuteJob("w!1", MachineSet.of(0, 1), mapping={0: 0}, storage_mapping={"pfs": 1}),
         "data.storage_mapping"),
        (t.ExecuteJob("w!1", MachineSet()), "data.alloc"),
        (t.KillJob(()), "data.job_ids"),
        (t.SetJobMetadata("w!1", 'a"b'), "data.metadata"),
        (t.RegisterJob("dyn!a", {"id": "dyn!a", "subtime": 0, "res": 1, "profile": "p",
                                 "walltime": float("nan")}), "data.job.walltime"),
        (t.ToJobMsg("w!1", {"x": float("inf")}), "data.msg.x"),
        (t.RejectJob("w!1", timestamp=11.0), "timestamp"),
    ]
    for decision, field in cases:
        with pytest.raises(ProtocolError) as caught:
            encode_reply(t.Reply(10.0, (t.RejectJob("w!0"), decision)))
        assert (caught.value.index, caught.value.field) == (1, field), decision


def test_encoding_refuses_objects_of_the_other_direction() -> None:
    with pytest.raises(ProtocolError, match="event #0, RequestedCall: a RequestedCall"):
        encode_reply(t.Reply(1.0, (t.RequestedCall(1.0),)))
    with pytest.raises(ProtocolError, match="event #0, RejectJob"):
        encode_request(t.Request(1.0, (t.RejectJob("w!1"),)))


# ---------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------

_NAME = st.text(string.ascii_letters + string.digits + "_-.#", min_size=1, max_size=8)
JOB_IDS = st.builds(lambda w, n: f"{w}!{n}", _NAME, _NAME)
TIMES = st.floats(0, 1e9, allow_nan=False, allow_infinity=False)
ALLOCS = st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 30)), min_size=1,
                  max_size=5).map(lambda pieces: MachineSet.of(*((a, a + n) for a, n in pieces)))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 63), 2 ** 63 - 1) | TIMES | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8)
CHANGEABLE = [s for s in t.JobState if s.value not in ("SUBMITTED", "COMPLETED_FAILED")]


@st.composite
def executions(draw: st.DrawFn) -> t.ExecuteJob:
    alloc = draw(ALLOCS)
    option = draw(st.sampled_from(["none", "mapping", "storage", "io"]))
    extra: dict[str, typing.Any] = {}
    if option == "mapping":
        ranks = draw(st.integers(1, 6))
        extra["mapping"] = {r: draw(st.integers(0, len(alloc) - 1)) for r in range(ranks)}
    elif option == "storage":
        extra["storage_mapping"] = draw(st.dictionaries(_NAME, st.integers(0, 99), max_size=2))
    elif option == "io":
        extra["additional_io_job"] = {"alloc": str(draw(ALLOCS)), "profile_name": draw(_NAME)}
    return t.ExecuteJob(draw(JOB_IDS), alloc, **extra)


@st.composite
def decisions(draw: st.DrawFn, at: float) -> t.Decision:
    return draw(st.one_of(
        executions(),
        st.builds(t.RejectJob, JOB_IDS),
        st.builds(t.KillJob, st.lists(JOB_IDS, min_size=1, max_size=3).map(tuple)),
        st.builds(t.CallMeLater, st.floats(1, 1e6).map(lambda delta: at + delta)),
        st.builds(t.SetResourceState, ALLOCS, st.integers(0, 20).map(str)),
        st.builds(t.RegisterJob, JOB_IDS, st.none() | st.fixed_dictionaries(
            {"id": JOB_IDS, "subtime": TIMES, "res": st.integers(0, 10 ** 6), "profile": _NAME},
            optional={"walltime": TIMES, "user": JSON})),
        st.builds(t.RegisterProfile, _NAME.filter(lambda s: "!" not in s), _NAME,
                  st.fixed_dictionaries({"type": st.just("delay"), "delay": TIMES})),
        st.just(t.RegistrationFinished()),
        st.just(t.ContinueRegistration()),
        st.builds(t.SetJobMetadata, JOB_IDS, st.text(max_size=20).filter(lambda s: '"' not in s)),
        st.builds(t.ChangeJobState, JOB_IDS, st.sampled_from(CHANGEABLE),
                  st.none() | st.text(max_size=10)),
        st.just(t.Query(None, {"consumed_energy": {}})),
        st.builds(lambda job_id, wait: t.Answer(None, {"estimate_waiting_time": {
            "job_id": job_id, "estimated_waiting_time": wait}}), JOB_IDS, TIMES),
        st.builds(t.ToJobMsg, JOB_IDS, JSON),
    ))


@st.composite
def replies(draw: st.DrawFn) -> t.Reply:
    now = draw(TIMES)
    stamps = sorted(draw(st.lists(st.none() | st.floats(0, now), max_size=6)),
                    key=lambda s: now if s is None else s)
    chosen = []
    for stamp in stamps:
        decision = draw(decisions(now if stamp is None else stamp))
        chosen.append(decision if stamp is None else msgspec.structs.replace(decision,
                                                                         timestamp=stamp))
    return t.Reply(now, tuple(chosen))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies())
def test_random_valid_replies_survive_encode_then_decode(reply: t.Reply) -> None:
    decoded = decode_reply(encode_reply(reply))
    assert decoded == t.Reply(reply.now, tuple(_stamped(d, reply.now) for d in reply.decisions))


_BASE_MESSAGES = [request_to_obj(t.Request(5.0, (e,))) for e in sample_events()]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(_BASE_MESSAGES))), st.data())
def test_any_mutation_decodes_or_raises_protocol_error_only(which: int, data: st.DataObject
                                                            ) -> None:
    message = json.loads(json.dumps(_BASE_MESSAGES[which]))
    event = message["events"][0]
    target = data.draw(st.sampled_from([message, event, event["data"]]))
    if target:
        key = data.draw(st.sampled_from(sorted(target)))
        if data.draw(st.booleans()):
            target[key] = data.draw(JSON)
        else:
            del target[key]
    try:
        decode_request(orjson.dumps(message))
    except ProtocolError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64) | st.text(max_size=64))
def test_garbage_raises_protocol_error_only(raw: bytes | str) -> None:
    for decode in (decode_request, decode_reply):
        try:
            decode(raw)
        except ProtocolError:
            pass


def test_encoding_wraps_every_failure_in_protocol_error() -> None:
    deep: typing.Any = 1
    for _ in range(3000):
        deep = [deep]
    with pytest.raises(ProtocolError, match="nested too deeply"):
        encode_reply(t.Reply(1.0, (t.ToJobMsg("w!1", deep),)))
    for wrong in (None, 5, t.Request(1.0, ())):
        with pytest.raises(ProtocolError, match="expected a Reply"):
            encode_reply(wrong)  # type: ignore[arg-type]
    with pytest.raises(ProtocolError, match="expected a Request"):
        request_to_obj("x")  # type: ignore[arg-type]


def test_deeply_nested_garbage_is_one_protocol_error_with_a_short_field() -> None:
    for depth in (900, 5000):
        nested = "[" * depth + "NaN" + "]" * depth
        with pytest.raises(ProtocolError) as caught:
            decode_request(_msg(_ev("FROM_JOB_MSG", f'{{"job_id": "w!1", "msg": {nested}}}')))
        assert len(str(caught.value)) < 200

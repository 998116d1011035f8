"""The batprotocol codec on single messages: mapping, handshake, and one clear error per fault."""

from __future__ import annotations

import json
import sys

import pytest

from batpolicy.errors import ConfigError, ProtocolError
from batpolicy.protocol import types as t
from batpolicy.protocol.batprotocol.codec import Batsim5Codec, call_time_ms
from batpolicy.protocol.batprotocol.handshake import (
    FORMAT_BINARY,
    FORMAT_JSON,
    EdcIdentity,
    encode_init,
    parse_init,
)
from batpolicy.protocol.batprotocol.wire import Batsim5Wire
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.wires import AutoWire, Batsim4Wire, make_wire

from clirun import restore_logging  # noqa: F401

#: Batsim 5 ed55a974's messages as it logged them (spaces included).
SUBMITTED = (b'{"now": 97.25,"events": [{"timestamp": 97.25,"event_type": "JobSubmittedEvent",'
             b'"event": {"job_id": "w0!10","job": {"resource_request": 16,"walltime": 60.0,'
             b'"extra_data": "","rigid": true,"profile_id": "delay30"},'
             b'"submission_time": 97.25}}]}\x00')
HELLO = (b'{"now": 0.0,"events": [{"timestamp": 0.0,"event_type": "BatsimHelloEvent","event": '
         b'{"batprotocol_version": "0.1.0+unknown-please-define-me-properly",'
         b'"batsim_version": "TODO","batsim_commit": ""}}]}\x00')


def codec(*features: str) -> Batsim5Codec:
    return Batsim5Codec(EdcIdentity.of("batpolicy", "test", features))


def message(*events: tuple[float, str, dict], now: float = 10.0) -> bytes:
    return json.dumps({"now": now, "events": [
        {"timestamp": at, "event_type": kind, "event": body} for at, kind, body in events]}
    ).encode() + b"\0"


def test_a_submission_reads_as_batsim4_s_job_submitted() -> None:
    request = codec().decode_request(SUBMITTED)
    assert request == t.Request(now=97.25, events=(t.JobSubmitted(
        timestamp=97.25, job_id="w0!10",
        job={"id": "w0!10", "subtime": 97.25, "res": 16, "walltime": 60.0,
             "profile": "delay30"}),))


def test_no_walltime_and_user_fields_read_as_in_batsim4() -> None:
    job = {"resource_request": 2, "walltime": -1.0, "extra_data": '{"deadline": 500}',
           "rigid": True, "profile_id": "w0!p"}
    ev = codec().decode_request(message((1.0, "JobSubmittedEvent", {
        "job_id": "w0!1", "job": job, "submission_time": 1.0}))).events[0]
    assert ev.job["walltime"] == -1 and ev.job["deadline"] == 500 and ev.job["profile"] == "p"


def test_completion_carries_the_allocation_we_sent_and_calls_come_back() -> None:
    c = codec()
    data = c.encode_reply(t.Reply(now=5.0, decisions=(
        t.ExecuteJob("w0!1", MachineSet.of((0, 3), 7)), t.CallMeLater(at=12.0015))))
    sent = json.loads(data[:-1])["events"]
    assert sent[0]["event"]["allocation"]["host_allocation"] == "0-3,7"
    assert sent[1]["event"]["when"] == {"time": 12002, "time_unit": "Millisecond"}
    assert sent[1]["event_type"] == "CallMeLaterEvent" and sent[1]["timestamp"] == 5.0
    events = c.decode_request(message(
        (9.0, "JobCompletedEvent", {"job_id": "w0!1", "state": "COMPLETED_WALLTIME_REACHED",
                                    "return_code": 0}),
        (12.002, "RequestedCallEvent", {"call_me_later_id": sent[1]["event"]["call_me_later_id"],
                                        "last_periodic_call": False}),
        (12.002, "AllStaticJobsHaveBeenSubmittedEvent", {}), now=12.002)).events
    assert events == (
        t.JobCompleted(9.0, "w0!1", t.JobState.COMPLETED_WALLTIME_REACHED, 0,
                       MachineSet.of((0, 3), 7)),
        t.RequestedCall(12.002),
        t.Notify(12.002, t.NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value))


def test_replies_read_back_as_the_decisions_written() -> None:
    c = codec()
    reply = t.Reply(now=3.0, decisions=(
        t.ExecuteJob("w0!1", MachineSet.of((2, 5)), timestamp=3.0),
        t.ExecuteJob("w0!2", MachineSet.of(0, 1), mapping={0: 1, 1: 0}, timestamp=3.0),
        t.RejectJob("w0!3", timestamp=3.0), t.KillJob(("w0!0",), timestamp=3.0),
        t.CallMeLater(at=20.0, timestamp=3.0), t.RegistrationFinished(timestamp=3.0)))
    assert c.decode_reply(c.encode_reply(reply)) == reply


def test_simulation_begins_gives_the_machines_and_the_features_as_config() -> None:
    begins = {"host_number": 2, "computation_host_number": 2, "computation_hosts": [
        {"id": i, "name": f"h{i}", "pstate": 0, "pstate_count": 1, "state": "IDLE",
         "properties": [{"key": "role", "value": ""}], "zone_properties": [], "core_count": 1,
         "computation_speed": [1e9]} for i in range(2)], "storage_host_number": 0,
        "storage_hosts": [], "batsim_arguments": [], "batsim_execution_context_json": "{}",
        "workloads": [{"name": "w0", "filename": "/w.json"}]}
    ev = codec("dynamic_registration", "acknowledge_dynamic_jobs").decode_request(
        message((0.0, "SimulationBeginsEvent", begins))).events[0]
    assert [(r.id, r.name, r.state) for r in ev.compute_resources] == [(0, "h0", "idle"),
                                                                       (1, "h1", "idle")]
    assert ev.workloads == {"w0": "/w.json"} and ev.nb_compute_resources == 2
    assert ev.config["dynamic-jobs-enabled"] and ev.config["dynamic-jobs-acknowledged"]
    assert not ev.config["profile-reuse-enabled"]


@pytest.mark.parametrize(("raw", "expected"), [
    (b'{"now": 1.0, "events": [', "not a batprotocol JSON message"),
    (b'{"now": "x", "events": []}\0', "not a batprotocol JSON message"),
    (message((1.0, "ProbeDataEmittedEvent", {})),
     "event #0, ProbeDataEmittedEvent, field 'event_type': event type not supported"),
    (message((1.0, "JobCompletedEvent", {"state": "COMPLETED_SUCCESSFULLY"})),
     "event #0, JobCompletedEvent, field 'event': Object missing required field `job_id`"),
    (message((1.0, "JobCompletedEvent", {"job_id": "w0!1", "state": "DONE"})),
     "unknown final job state 'DONE'"),
])
def test_a_bad_message_gives_one_protocol_error_naming_where(raw: bytes, expected: str) -> None:
    with pytest.raises(ProtocolError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        codec().decode_request(raw)


@pytest.mark.parametrize(("decision", "expected"), [
    (t.SetResourceState(MachineSet.of(0), "1"), "no ChangeHostsPStateEvent"),
    (t.SetJobMetadata("w0!1", "x"), "no SET_JOB_METADATA"),
    (t.ContinueRegistration(), "cannot reopen registration"),
])
def test_a_decision_batsim5_cannot_take_is_refused_by_name(decision: t.Decision,
                                                           expected: str) -> None:
    with pytest.raises(ProtocolError, match=expected) as err:
        codec().encode_reply(t.Reply(now=1.0, decisions=(t.RejectJob("w0!9"), decision)))
    assert err.value.index == 1 and type(decision).__name__ in str(err.value)


def test_host_sets_with_spaces_are_refused_in_replies_read_back() -> None:
    raw = message((1.0, "ExecuteJobEvent", {"job_id": "w0!1", "allocation": {
        "host_allocation": "0-3 7", "executor_placement_type":
        "PredefinedExecutorPlacementStrategyWrapper",
        "executor_placement": {"strategy": "SpreadOverHostsFirst"}},
        "profile_allocation_override": [], "storage_placement": []}))
    with pytest.raises(ProtocolError, match="separates intervals with commas"):
        codec().decode_reply(raw)


def test_call_times_round_up_to_the_millisecond() -> None:
    assert [call_time_ms(x) for x in (1.0, 1.0004, 1.0005, 2.9999999999)] == [
        1000, 1001, 1001, 3000]


def test_handshake_acknowledges_init_answers_hello_then_steps_aside() -> None:
    wire = Batsim5Wire(EdcIdentity.of("batpolicy easy", "1.2"))
    assert wire.greet(encode_init(FORMAT_JSON, b"cfg")) == b"" and wire.init_data == b"cfg"
    hello = json.loads(wire.greet(HELLO)[:-1])["events"]
    assert [e["event_type"] for e in hello] == ["EDCHelloEvent"]
    assert hello[0]["event"]["decision_component_name"] == "batpolicy easy"
    assert wire.started and wire.greet(SUBMITTED) is None


def test_handshake_errors_say_what_to_change() -> None:
    with pytest.raises(ProtocolError, match="FlatBuffers binary"):
        Batsim5Wire(EdcIdentity.of("b", "1")).greet(encode_init(FORMAT_BINARY))
    with pytest.raises(ProtocolError, match=r"serve --batsim 4"):
        Batsim5Wire(EdcIdentity.of("b", "1")).greet(b'{"now":0,"events":[]}')
    wire = Batsim5Wire(EdcIdentity.of("b", "1"))
    wire.greet(encode_init(FORMAT_JSON))
    with pytest.raises(ProtocolError, match="expected one BatsimHelloEvent"):
        wire.greet(SUBMITTED)


def test_features_are_checked_when_the_daemon_starts() -> None:
    hello = EdcIdentity.of("b", "1", ["dynamic_registration", "profile_reuse"]).hello()
    assert hello.requested_simulation_features.dynamic_registration
    assert not hello.requested_simulation_features.acknowledge_dynamic_jobs
    with pytest.raises(ConfigError, match="unknown Batsim 5 feature 'dynamic_jobs'"):
        EdcIdentity.of("b", "1", ["dynamic_jobs"])
    with pytest.raises(ConfigError, match="not implemented"):
        EdcIdentity.of("b", "1", ["forward_profiles_on_job_submission"])
    with pytest.raises(ConfigError, match="no comma"):
        EdcIdentity.of("a,b", "1")
    with pytest.raises(ConfigError, match="for Batsim 5"):
        make_wire("4", features=("profile_reuse",))


def test_the_wire_is_chosen_once_and_batsim4_s_is_the_codec_itself() -> None:
    from batpolicy.protocol import codec as v4

    four = make_wire("4")
    assert isinstance(four, Batsim4Wire) and four.greet is None
    # the codec's own functions, bound (one Python frame each) to the conversation's table
    # of sent allocations
    assert four.decode.__qualname__ == f"{v4.request_decoder.__name__}.<locals>.decode_request"
    assert four.encode.__qualname__ == f"{v4.reply_encoder.__name__}.<locals>.encode"
    auto = make_wire("auto")
    assert isinstance(auto, AutoWire)
    assert auto.greet(encode_init(FORMAT_JSON)) == b"" and auto.chosen.version == 5
    other = make_wire("auto")
    assert other.greet(b'{"now":0,"events":[]}') is None and other.chosen.version == 4
    assert parse_init(b"\x02\x00\x00\x00\x05\x00\x00\x00ab") is None  # size mismatch


def test_serve_refuses_a_batsim5_feature_for_batsim4_before_binding(
        capsys: pytest.CaptureFixture[str]) -> None:
    from batpolicy.app import cli

    from clirun import free_port

    port = free_port()
    assert cli.main(["serve", "--batsim", "4", "--edc-feature", "profile_reuse",
                     "-s", f"tcp://127.0.0.1:{port}"]) == 1
    assert "--edc-feature is for Batsim 5" in capsys.readouterr().err


def test_a_walltime_kill_s_return_code_is_minus_one_as_in_batsim4() -> None:
    c = codec()
    raw = message((9.0, "JobCompletedEvent", {"job_id": "w0!1",
                                              "state": "COMPLETED_WALLTIME_REACHED",
                                              "return_code": 4294967295}))
    request = c.decode_request(raw)
    assert request.events[0].return_code == -1
    assert json.loads(c.encode_request(request)[:-1]) == json.loads(raw[:-1])


def test_rc2_s_shorter_opening_gets_flags_and_hello_then_spaced_host_sets() -> None:
    """v5.0.0-rc2's opening (src/edc.cpp): init is size + data, the answer flags + hello.

    Its src/protocol.cpp reads host sets with spaces again.
    """
    wire = Batsim5Wire(EdcIdentity.of("batpolicy fcfs", "1"))
    answer = wire.greet(b"\x03\x00\x00\x00a=1")
    assert answer[:4] == FORMAT_JSON.to_bytes(4, sys.byteorder) and wire.init_data == b"a=1"
    hello = json.loads(answer[4:-1])["events"][0]
    assert hello["event_type"] == "EDCHelloEvent" and wire.started
    data = wire.encode(t.Reply(now=1.0, decisions=(t.ExecuteJob("w0!1", MachineSet.of(0, 2)),)))
    assert json.loads(data[:-1])["events"][0]["event"]["allocation"]["host_allocation"] == "0 2"

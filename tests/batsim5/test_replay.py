"""Recorded Batsim 5 conversations, replayed through the batprotocol codec (no Batsim 5 needed).

Each recording (``tests/data/batsim5/README.md``) is a whole simulation between real
Batsim 5 and a decision component. Replaying Batsim's side through our codec and a
policy must give, message for message, the replies Batsim got: the decoder read every
event as Batsim meant it and the encoder wrote what Batsim accepted.
"""

from __future__ import annotations

import gzip
import json
import struct
import threading
from pathlib import Path
from typing import Any

import pytest

from batpolicy.policies.registry import make_policy
from batpolicy.protocol.batprotocol.codec import Batsim5Codec
from batpolicy.protocol.batprotocol.handshake import FORMAT_JSON, EdcIdentity, encode_init
from batpolicy.protocol.transport import RequestSocket
from batpolicy.protocol.wires import make_wire
from batpolicy.scheduler.daemon import ServeOptions, serve
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.state import ClusterState

from clirun import free_port

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim5"


def exchanges(name: str) -> list[dict[str, Any]]:
    """The recorded exchanges of ``name`` (hellos included)."""
    path = DATA / f"{name}.jsonl.gz"
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def wire_bytes(message: dict[str, Any]) -> bytes:
    """A message as Batsim 5 sends it: its JSON, NUL-terminated."""
    return json.dumps(message).encode() + b"\0"


def _without_version(message: dict[str, Any]) -> dict[str, Any]:
    hello = json.loads(json.dumps(message))
    for ev in hello["events"]:
        ev["event"].pop("decision_component_version", None)
        ev["event"].pop("decision_component_name", None)
        ev["event"].pop("batprotocol_version", None)
    return hello


@pytest.mark.parametrize(("name", "policy"), [
    ("edc-easy-walltime120", "easy-edc5"),
    ("edc-fcfs-walltime120", "fcfs"),
    ("serve-easy-walltime120", "easy"),
    ("serve-fcfs-samesubmit", "fcfs"),
])
def test_replies_are_the_ones_batsim5_got(name: str, policy: str) -> None:
    recorded = exchanges(name)
    codec = Batsim5Codec(EdcIdentity.of("batpolicy", "test"))
    dispatcher = Dispatcher(make_policy(policy), ClusterState(None))
    hello = recorded[0]
    assert hello["batsim"]["events"][0]["event_type"] == "BatsimHelloEvent"
    ours = json.loads(codec.hello_reply(hello["batsim"]["now"])[:-1])
    assert _without_version(ours) == _without_version(hello["edc"])
    for number, exchange in enumerate(recorded[1:], 2):
        request = codec.decode_request(wire_bytes(exchange["batsim"]))
        data = codec.encode_reply(dispatcher.handle(request))
        assert data.endswith(b"\0") and data.count(b"\0") == 1
        assert json.loads(data[:-1]) == exchange["edc"], f"exchange {number} of {name}"
    assert dispatcher.state.ended
    assert len(recorded) > 20


def test_our_recorded_replies_are_byte_for_byte_the_codec_s() -> None:
    """Batsim logged our replies verbatim: the codec writes those very bytes again."""
    recorded = exchanges("serve-easy-walltime120")
    codec = Batsim5Codec(EdcIdentity.of("batpolicy easy", "test"))
    dispatcher = Dispatcher(make_policy("easy"), ClusterState(None))
    executed = 0
    for exchange in recorded[1:]:
        reply = dispatcher.handle(codec.decode_request(wire_bytes(exchange["batsim"])))
        executed += sum(type(d).__name__ == "ExecuteJob" for d in reply.decisions)
        compact = json.dumps(exchange["edc"], separators=(",", ":")).encode() + b"\0"
        assert codec.encode_reply(reply) == compact
    rejected = sum(1 for line in (DATA / "serve-easy-walltime120.jobs.csv").read_text()
                   .splitlines()[1:] if ",REJECTED," in line)
    assert executed + rejected == 120


def test_serve_batsim5_answers_a_recorded_batsim_over_zeromq() -> None:
    """``serve`` with the Batsim 5 wire, on a real socket, against Batsim's recorded side.

    The initialisation message is acknowledged empty, the hello answered, every reply is
    the one Batsim got, and the daemon exits 0 after SimulationEndsEvent.
    """
    recorded = exchanges("serve-fcfs-samesubmit")
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    options = ServeOptions(endpoint=endpoint, timeout_s=20,
                           wire=make_wire("5", name="batpolicy fcfs", version="test"))
    status: list[int] = []
    daemon = threading.Thread(target=lambda: status.append(
        serve(Dispatcher(make_policy("fcfs"), ClusterState(None)), options)))
    daemon.start()
    try:
        with RequestSocket(endpoint, timeout_s=20) as batsim:
            assert batsim.request(encode_init(FORMAT_JSON)) == b""
            hello = json.loads(batsim.request(wire_bytes(recorded[0]["batsim"]))[:-1])
            assert hello["events"][0]["event"]["decision_component_name"] == "batpolicy fcfs"
            for exchange in recorded[1:]:
                reply = batsim.request(wire_bytes(exchange["batsim"]))
                assert json.loads(reply[:-1]) == exchange["edc"]
    finally:
        daemon.join(timeout=20)
    assert status == [0]


def test_a_binary_batsim5_gets_one_clear_error(caplog: pytest.LogCaptureFixture) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    options = ServeOptions(endpoint=endpoint, timeout_s=5, wire=make_wire("5"))
    status: list[int] = []
    daemon = threading.Thread(target=lambda: status.append(
        serve(Dispatcher(make_policy("fcfs"), ClusterState(None)), options)))
    daemon.start()
    with RequestSocket(endpoint, timeout_s=5) as batsim:  # answered once, then serve exits
        refusal = batsim.request(struct.pack("=II", 1, 0))
    assert b"FlatBuffers binary" in refusal
    daemon.join(timeout=10)
    assert status == [1]
    assert "FlatBuffers binary" in caplog.text and "<json-format-bool>" in caplog.text

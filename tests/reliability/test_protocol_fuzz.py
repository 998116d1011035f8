"""Issue 6, item 2: broken Batsim messages end as one clear ProtocolError, or are valid.

* 10,000 (× ``BATPOLICY_FUZZ_SCALE``) mutants of real Batsim 4.2.1 messages (from the
  recorded transcripts) thrown at :func:`decode_request`: each is accepted (and then
  re-encodes losslessly) or raises :class:`ProtocolError` — one line, short, naming the
  event index and the field when the message was still JSON; never another exception.
  A time budget per message catches hangs. Plus hypothesis-generated garbage.
* 200 (× scale) mutants sent to a live :func:`serve` (in-process, over a real ZeroMQ
  socket, after a valid SIMULATION_BEGINS): the daemon answers, or stops with an error
  status and one error line without a traceback, within its timeout; and a dozen
  through the real ``batpolicy serve`` command, whose stderr must hold no traceback.
* Unknown event types forwarded by Batsim (``--forward-unknown-events``) reach the
  policy's ``on_notify`` hook, from the real transcript and through the simulator.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import zmq
from hypothesis import given, settings
from hypothesis import strategies as st
from reliability.helpers import DATABASE, Job, Scenario, scaled, workload
from reliability.mutations import Mutant, base_messages, mutants

from batpolicy.errors import ProtocolError
from batpolicy.io.events import ExternalEvent
from batpolicy.platforms.model import Platform
from batpolicy.policies.easy import EasyBackfilling
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import (
    REFUSAL_PREFIX,
    decode_reply,
    decode_request,
    encode_request,
    request_to_obj,
)
from batpolicy.scheduler.daemon import EXIT_ERROR, EXIT_OK, ServeOptions, serve
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.simulator import SimOptions, Simulator

from conftest import TRANSCRIPTS

pytestmark = pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason="no shared transcripts")

#: Most CPU a single decode may take (a 1 MB string or 100,000-deep nesting included):
#: this process's CPU time, which other processes on a loaded machine do not inflate.
DECODE_BUDGET_S = 2.0
#: Longest an error message may be: a clear line, not the message echoed back.
MAX_ERROR_CHARS = 400


def _bases() -> list[dict[str, Any]]:
    return base_messages(TRANSCRIPTS)


def test_base_messages_cover_every_batsim_event_type_and_decode() -> None:
    bases = _bases()
    kinds = {e["type"] for m in bases for e in m["events"]}
    assert kinds >= {"SIMULATION_BEGINS", "SIMULATION_ENDS", "JOB_SUBMITTED", "JOB_COMPLETED",
                     "JOB_KILLED", "REQUESTED_CALL", "NOTIFY"}
    for message in bases:
        decode_request(json.dumps(message).encode())  # the unbroken ones are valid


def _check_error(exc: ProtocolError, mutant: Mutant) -> None:
    text = str(exc)
    assert text and "\n" not in text, f"{mutant.how}: {text!r}"
    assert len(text) <= MAX_ERROR_CHARS, f"{mutant.how}: {len(text)} chars"
    if mutant.structural:  # still JSON: the error says where
        assert exc.field is not None or exc.index is not None, f"{mutant.how}: {text}"
        if exc.index is not None:
            assert f"event #{exc.index}" in text


def test_ten_thousand_mutated_messages_decode_or_raise_one_protocol_error() -> None:
    outcomes: Counter[str] = Counter()
    slowest = (0.0, "")
    count = scaled(10_000)
    for mutant in mutants(_bases(), count):
        began = time.process_time()
        try:
            request = decode_request(mutant.raw)
        except ProtocolError as exc:
            _check_error(exc, mutant)
            outcomes["refused"] += 1
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{mutant.how}: {type(exc).__name__}: {exc}"[:2000])
        else:
            # accepted: it is a valid message, so it re-encodes and decodes to itself
            assert decode_request(encode_request(request)) == request, mutant.how
            outcomes["accepted"] += 1
        took = time.process_time() - began
        slowest = max(slowest, (took, mutant.how))
    assert slowest[0] < DECODE_BUDGET_S, f"decoding took {slowest[0]:.2f} s: {slowest[1]}"
    assert sum(outcomes.values()) == count
    assert outcomes["refused"] > count // 2 and outcomes["accepted"] > 0, outcomes


@settings(max_examples=scaled(300), deadline=None, database=DATABASE)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from(["now", "events", "timestamp", "type",
                                                       "data", "job_id", "x"]), inner,
                                      max_size=4), max_leaves=20))
def test_generated_json_values_decode_or_raise_one_protocol_error(value: Any) -> None:
    raw = json.dumps(value, allow_nan=True).encode()
    try:
        decode_request(raw)
    except ProtocolError as exc:
        assert str(exc) and "\n" not in str(exc) and len(str(exc)) <= MAX_ERROR_CHARS


# ------------------------------------------------------------------ a live daemon
_END = json.dumps({"now": 1e7, "events": [{"timestamp": 1e7, "type": "SIMULATION_ENDS",
                                           "data": {}}]}).encode()

def _first_message() -> bytes:
    with (TRANSCRIPTS / "batsched-easy_bf-walltime120.jsonl").open() as f:
        return json.dumps(json.loads(f.readline())["batsim"]).encode()


class LiveServe:
    """``serve`` in a thread on an ipc socket, and a raw REQ peer that sees it stop."""

    def __init__(self, folder: Path, name: str, timeout_s: float = 5.0) -> None:
        self.endpoint = f"ipc://{folder}/{name}.sock"
        self.dispatcher = Dispatcher(make_policy("easy"), paranoid=True)
        self.status: int | None = None
        self.thread = threading.Thread(target=self._run, args=(timeout_s,), daemon=True)
        self.context = zmq.Context()
        self.peer = self.context.socket(zmq.REQ)
        self.peer.setsockopt(zmq.LINGER, 0)
        self.peer.setsockopt(zmq.RECONNECT_IVL, 5)  # serve binds after we connect

    def _run(self, timeout_s: float) -> None:
        self.status = serve(self.dispatcher, ServeOptions(self.endpoint, timeout_s=timeout_s))

    def __enter__(self) -> LiveServe:
        self.thread.start()
        self.peer.connect(self.endpoint)
        return self

    def __exit__(self, *exc: object) -> None:
        self.peer.close(0)
        self.context.term()
        self.thread.join(10)

    def request(self, raw: bytes, limit_s: float = 10.0) -> bytes | None:
        """The reply, or None once the daemon stopped without answering."""
        self.peer.send(raw)
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            if self.peer.poll(20, zmq.POLLIN):
                return self.peer.recv()
            if not self.thread.is_alive():
                return None
        raise AssertionError(f"the daemon neither answered nor stopped within {limit_s} s")


def test_live_daemon_answers_or_stops_with_one_clear_line(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    # mutate messages that follow SIMULATION_BEGINS (it is sent unbroken first)
    bases = [m for m in _bases() if m["events"] and m["events"][0]["type"] != "SIMULATION_BEGINS"]
    begins = _first_message()
    outcomes: Counter[str] = Counter()
    for i, mutant in enumerate(mutants(bases, scaled(200), seed=7)):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="batpolicy"), \
                LiveServe(tmp_path, f"s{i}") as live:
            assert live.request(begins) is not None
            reply = live.request(mutant.raw)
            refused = reply is not None and REFUSAL_PREFIX.encode() in reply
            if reply is not None and not refused:  # accepted: the conversation goes on
                live.request(_END)
            live.thread.join(10)
            assert not live.thread.is_alive(), mutant.how
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert all(r.exc_info is None for r in caplog.records), f"traceback: {mutant.how}"
        if live.status == EXIT_OK:
            outcomes["answered"] += 1
            assert not errors, mutant.how
        else:
            outcomes["stopped"] += 1
            assert live.status == EXIT_ERROR, (mutant.how, live.status)
            assert len(errors) == 1, [r.getMessage() for r in errors]
            assert all("\n" not in r.getMessage() for r in errors)
    assert outcomes["stopped"] > 0, outcomes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_command_never_prints_a_traceback_on_broken_messages() -> None:
    begins = _first_message()
    chosen = list(mutants([m for m in _bases() if m["events"][0]["type"] != "SIMULATION_BEGINS"],
                          scaled(12), seed=11))
    procs = []
    for mutant in chosen:
        port = _free_port()
        proc = subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", "--policy", "easy",
                                 "--socket-endpoint", f"tcp://127.0.0.1:{port}",
                                 "--timeout", "120"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append((mutant, port, proc))
    # the processes start together: on a loaded 2-core machine the last of them may need
    # tens of seconds to import and bind, hence generous first-answer and idle timeouts
    try:
        for mutant, port, proc in procs:
            context = zmq.Context()
            peer = context.socket(zmq.REQ)
            peer.setsockopt(zmq.LINGER, 0)
            peer.connect(f"tcp://127.0.0.1:{port}")
            try:
                peer.send(begins)
                assert peer.poll(90_000, zmq.POLLIN), "no answer to SIMULATION_BEGINS"
                peer.recv()
                peer.send(mutant.raw)
                deadline = time.monotonic() + 10
                while proc.poll() is None and time.monotonic() < deadline:
                    if peer.poll(20, zmq.POLLIN):  # answered: refused, or end the conversation
                        if REFUSAL_PREFIX.encode() in peer.recv():
                            break
                        peer.send(_END)
                        peer.poll(5_000, zmq.POLLIN)
                        break
            finally:
                peer.close(0)
                context.term()
            status = proc.wait(timeout=15)
            stderr = proc.stderr.read()  # type: ignore[union-attr]
            assert "Traceback" not in stderr, f"{mutant.how}:\n{stderr}"
            errors = [line for line in stderr.splitlines() if "ERROR" in line]
            if status == 0:
                assert not errors, f"{mutant.how}: {stderr}"
            else:
                assert len(errors) == 1, f"{mutant.how}: {status} {stderr}"
                assert all(len(line) < 600 for line in errors), stderr
    finally:
        for _, _, proc in procs:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------ forwarded events
class Recording(EasyBackfilling):
    """EASY that keeps every NOTIFY its ``on_notify`` hook receives."""

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self.notified: list[t.Notify] = []

    def on_notify(self, event: t.Notify, view: Any) -> None:
        self.notified.append(event)


def test_forwarded_unknown_events_of_a_real_batsim_run_reach_on_notify() -> None:
    path = TRANSCRIPTS / "chaos-generic-events-walltime120.jsonl"
    policy = Recording()
    dispatcher = Dispatcher(policy, paranoid=True)
    with path.open() as f:
        for line in f:  # our policy answers; the recorded scheduler's decisions are applied
            exchange = json.loads(line)
            request = decode_request(json.dumps(exchange["batsim"]).encode())
            dispatcher.shadow(request, decode_reply(json.dumps(exchange["scheduler"]).encode()))
    kinds = [str(getattr(e.kind, "value", e.kind)) for e in policy.notified]
    assert "user_specific_type" in kinds
    forwarded = next(e for e in policy.notified if e.kind == "user_specific_type")
    assert forwarded.data and forwarded.data.get("type") == "user_specific_type"


def test_forwarded_unknown_events_reach_on_notify_through_the_simulator() -> None:
    events = [ExternalEvent(5.0, "power_cap", None,
                            {"timestamp": 5, "type": "power_cap", "watts": 1200})]
    for forward in (True, False):
        policy = Recording()
        sim = Simulator([workload(Scenario(2, (Job("0", 0, 1, 10, None),)))],
                        Platform.homogeneous(2), events=events,
                        options=SimOptions(forward_unknown_events=forward))
        assert sim.run(Dispatcher(policy, paranoid=True).handle).complete
        custom = [e for e in policy.notified if e.kind == "power_cap"]
        assert len(custom) == (1 if forward else 0)
        if forward:
            assert custom[0].timestamp == 5.0 and custom[0].data["watts"] == 1200
            # and it survives the wire both ways, as the daemon would see it
            wire = encode_request(t.Request(5.0, (custom[0],)))
            assert decode_request(wire) == t.Request(5.0, (custom[0],))
            assert request_to_obj(decode_request(wire))["events"][0]["data"]["watts"] == 1200

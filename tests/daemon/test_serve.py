"""``batpolicy serve`` over a real ZeroMQ socket, driven by a scripted Batsim peer.

The peer replays the Batsim side of a recorded real-Batsim conversation (whose scheduler
was batsched, whose decisions our fcfs/easy reproduce), so the conversation is only valid
if every reply is the one Batsim got.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from batpolicy.policies.registry import make_policy
from batpolicy.protocol.codec import decode_reply, encode_request, reply_from_obj, request_from_obj
from batpolicy.protocol.transcript import read_transcript
from batpolicy.protocol.transport import RequestSocket
from batpolicy.scheduler.dispatch import Dispatcher

from conftest import TRANSCRIPTS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_serve(policy: str, port: int, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", "--policy", policy,
                             "--socket-endpoint", f"tcp://127.0.0.1:{port}", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _decisions(reply) -> list[tuple]:
    return [(type(d).__name__, getattr(d, "job_id", None), str(getattr(d, "alloc", "")))
            for d in reply.decisions]


@pytest.mark.parametrize("policy,transcript", [("fcfs", "batsched-fcfs-walltime120"),
                                               ("easy", "batsched-easy_bf-walltime120")])
def test_serve_runs_a_workload_to_the_end(policy: str, transcript: str, tmp_path: Path) -> None:
    path = TRANSCRIPTS / f"{transcript}.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not available")
    port = _free_port()
    record = tmp_path / "run.msgpack"
    proc = _start_serve(policy, port, "--timeout", "20", "--record", str(record))
    try:
        with RequestSocket(f"tcp://127.0.0.1:{port}", timeout_s=20) as peer:
            for line_no, line in enumerate(path.open(), 1):
                exchange = json.loads(line)
                request = request_from_obj(exchange["batsim"])
                reply = decode_reply(peer.request(encode_request(request)))
                assert reply.now == request.now
                expected = reply_from_obj(exchange["scheduler"])
                assert _decisions(reply) == _decisions(expected), f"message {line_no}"
        assert proc.wait(timeout=20) == 0, proc.stderr.read()
    finally:
        proc.kill()
    # the recorded transcript replays to the same replies
    replay = Dispatcher(make_policy(policy))
    records = list(read_transcript(record))
    assert len(records) == line_no
    for batsim, scheduler in records:
        assert _decisions(replay.handle(request_from_obj(batsim))) == \
            _decisions(reply_from_obj(scheduler))


def test_serve_exits_nonzero_when_the_peer_vanishes(tmp_path: Path) -> None:
    path = TRANSCRIPTS / "batsched-fcfs-walltime120.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not available")
    first = json.loads(path.open().readline())["batsim"]
    port = _free_port()
    proc = _start_serve("fcfs", port, "--timeout", "1.5", "--record", str(tmp_path / "t.mp"))
    try:
        with RequestSocket(f"tcp://127.0.0.1:{port}", timeout_s=10) as peer:
            peer.request(encode_request(request_from_obj(first)))
            began = time.monotonic()  # connected but silent: the timeout ends serve
            status = proc.wait(timeout=15)
            elapsed = time.monotonic() - began
        stderr = proc.stderr.read()
    finally:
        proc.kill()
    assert status != 0
    assert elapsed < 5
    assert "1.5" in stderr and "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) <= 3
    assert len(list(read_transcript(tmp_path / "t.mp"))) == 1  # what was exchanged is kept


def test_serve_rejects_a_malformed_message_with_one_clear_line() -> None:
    port = _free_port()
    proc = _start_serve("easy", port, "--timeout", "10")
    try:
        # wait until it listens: on a loaded machine start-up can outlast the peer's 3 s,
        # and a REQ socket closed on timeout drops the message it still holds
        listening = proc.stderr.readline()
        assert "listening" in listening
        with RequestSocket(f"tcp://127.0.0.1:{port}", timeout_s=3) as peer:
            # the answer makes Batsim 4.2.1 stop with the reason ("Unknown NOTIFY type")
            answer = json.loads(peer.request(b'{"now": 1.0, "events": [{"timestamp": 2.0, '
                                             b'"type": "REQUESTED_CALL", "data": {}}]}'))
        status = proc.wait(timeout=15)
        stderr = listening + proc.stderr.read()
    finally:
        proc.kill()
    assert status != 0
    assert "timestamp" in stderr and "Traceback" not in stderr
    [event] = answer["events"]
    assert event["type"] == "NOTIFY" and "message #1" in event["data"]["type"]
    assert "timestamp" in event["data"]["type"]

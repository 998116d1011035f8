"""``batpolicy serve`` on a network (docs/reliability.md, "A hostile peer").

Loopback by default, one Batsim per run, bounded messages, a dead Batsim noticed without
``--timeout``.

Each test plays a peer the way a user or an intruder would: real subprocesses, real
ZeroMQ sockets.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from batpolicy.app import cli
from batpolicy.errors import PeerTimeout
from batpolicy.protocol.codec import (
    REFUSAL_PREFIX,
    decode_reply,
    encode_request,
    reply_from_obj,
    request_from_obj,
)
from batpolicy.protocol.transcript import read_transcript
from batpolicy.protocol.transport import DEFAULT_MAX_MESSAGE, ReplySocket, RequestSocket
from batpolicy.scheduler.daemon import ServeOptions

from clirun import (  # noqa: F401  (restore_logging is an autouse fixture)
    free_port,
    restore_logging,
)
from conftest import TRANSCRIPTS

WALLTIME120 = TRANSCRIPTS / "batsched-fcfs-walltime120.jsonl"
SIMULATION_ENDS = b'{"now": 0, "events": [{"timestamp": 0, "type": "SIMULATION_ENDS", "data": {}}]}'


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _listening(proc: subprocess.Popen[str]) -> str:
    """Wait until serve has bound its socket; return its first log line."""
    line = proc.stderr.readline()  # type: ignore[union-attr]
    assert "listening" in line, line + proc.stderr.read()  # type: ignore[union-attr]
    return line


def _decisions(reply) -> list[tuple]:
    return [(type(d).__name__, getattr(d, "job_id", None), str(getattr(d, "alloc", "")))
            for d in reply.decisions]


def test_serve_binds_the_loopback_by_default_and_warns_for_other_addresses(
        caplog: pytest.LogCaptureFixture) -> None:
    assert cli.build_parser().parse_args(["serve"]).socket_endpoint == "tcp://127.0.0.1:28000"
    assert ServeOptions().endpoint == "tcp://127.0.0.1:28000"
    port = free_port()
    with caplog.at_level(logging.WARNING):
        with ReplySocket(f"tcp://127.0.0.1:{port}"):
            pass
        assert not caplog.records
        with ReplySocket(f"tcp://*:{port}"):
            pass
    [warning] = caplog.records
    assert f"tcp://*:{port}" in warning.getMessage()
    assert "other hosts" in warning.getMessage()


def test_an_oversized_message_is_refused_without_being_read() -> None:
    # serve runs under a small wrapper that reports its peak RSS (ru_maxrss of its child)
    wrapper = textwrap.dedent("""
        import resource, subprocess, sys
        status = subprocess.run(sys.argv[1:]).returncode
        print(status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True)
    """)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", wrapper, sys.executable, "-m", "batpolicy",
                             "serve", "--socket-endpoint", f"tcp://127.0.0.1:{port}",
                             "--max-message-size", "1M"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _listening(proc)
        payload = b'{"now": 0, "events": [], "x": "' + b"a" * (150 * 2 ** 20) + b'"}'
        first = WALLTIME120.read_text().splitlines()[0]
        with RequestSocket(f"tcp://127.0.0.1:{port}", timeout_s=10) as peer:
            peer.request(json.dumps(json.loads(first)["batsim"]).encode())  # Batsim begins
            began = time.monotonic()
            with pytest.raises(PeerTimeout):  # never answered: ZeroMQ dropped it unread
                peer.request(payload)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    del payload
    status, peak_kib = map(int, out.split())
    assert status == 3, err
    assert time.monotonic() - began < 15
    assert "1048576-byte limit" in err and "Traceback" not in err
    assert peak_kib < 120 * 1024, f"serve's peak RSS {peak_kib} KiB: the message was read"
    assert DEFAULT_MAX_MESSAGE > 9_770_693  # CEA-Curie's whole-trace SIMULATION_BEGINS fits


def test_a_second_peer_cannot_end_or_change_the_run() -> None:
    port = free_port()
    proc = _serve("--policy", "fcfs", "--socket-endpoint", f"tcp://127.0.0.1:{port}",
                  "--timeout", "30")
    try:
        _listening(proc)
        lines = WALLTIME120.read_text().splitlines()
        with RequestSocket(f"tcp://127.0.0.1:{port}", timeout_s=20) as batsim:
            for number, line in enumerate(lines, 1):
                exchange = json.loads(line)
                request = request_from_obj(exchange["batsim"])
                reply = decode_reply(batsim.request(encode_request(request)))
                assert _decisions(reply) == _decisions(reply_from_obj(exchange["scheduler"])), \
                    f"message {number}"
                if number == 3:  # an intruder ends the simulation, then submits a job
                    with RequestSocket(f"tcp://127.0.0.1:{port}", timeout_s=10) as intruder:
                        answer = json.loads(intruder.request(SIMULATION_ENDS))
                    assert answer["events"][0]["data"]["type"].startswith(REFUSAL_PREFIX)
                    assert "already serves another Batsim" in answer["events"][0]["data"]["type"]
                    assert proc.poll() is None  # still serving the real Batsim
        assert proc.wait(timeout=20) == 0
        stderr = proc.stderr.read()  # type: ignore[union-attr]
    finally:
        proc.kill()
    assert "refused a message from another peer" in stderr
    assert f"simulation ended after {len(lines)} messages" in stderr
    assert "1 message(s) from other peers refused" in stderr


def test_a_second_client_during_a_fake_batsim_run_changes_nothing(tmp_path: Path) -> None:
    # the bundled workload (250 jobs, 128 machines): no input files needed
    assert cli.main(["simulate", "--policy", "easy", "-o", str(tmp_path / "sim"),
                     "--quiet"]) == 0
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    record = tmp_path / "served.msgpack"
    serve = _serve("--policy", "easy", "-s", endpoint, "--record", str(record),
                   "--timeout", "60")
    fake = None
    try:
        _listening(serve)
        fake = subprocess.Popen([sys.executable, "-m", "batpolicy", "fake-batsim", "-s", endpoint,
                                 "--timeout", "60", "-o", str(tmp_path / "fake"), "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not record.exists() or record.stat().st_size == 0:
            assert time.monotonic() < deadline and fake.poll() is None
            time.sleep(0.001)
        # the first exchange is on disk: fake-batsim is the pinned peer; hold it mid-run
        # (well within serve's heartbeats) while the intruder speaks
        fake.send_signal(signal.SIGSTOP)
        try:
            assert fake.poll() is None
            with RequestSocket(endpoint, timeout_s=10) as intruder:
                answer = json.loads(intruder.request(SIMULATION_ENDS))
            assert serve.poll() is None
        finally:
            fake.send_signal(signal.SIGCONT)
        assert answer["events"][0]["data"]["type"].startswith(REFUSAL_PREFIX)
        assert fake.wait(timeout=60) == 0, fake.stderr.read()  # type: ignore[union-attr]
        assert serve.wait(timeout=30) == 0
        stderr = serve.stderr.read()  # type: ignore[union-attr]
    finally:
        serve.kill()
        if fake is not None:
            fake.kill()
    assert "refused a message from another peer" in stderr
    assert (tmp_path / "fake" / "jobs.csv").read_text() == \
        (tmp_path / "sim" / "jobs.csv").read_text()


_BATSIM = textwrap.dedent("""
    import json, sys, time
    from batpolicy.protocol.transport import RequestSocket
    lines = open(sys.argv[2]).read().splitlines()[:2]
    with RequestSocket(sys.argv[1], timeout_s=20) as batsim:
        for line in lines:
            batsim.request(json.dumps(json.loads(line)["batsim"]).encode())
        print("waiting", flush=True)
        time.sleep(600)
""")


def test_batsim_killed_mid_run_ends_serve_within_seconds(tmp_path: Path) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    record = tmp_path / "t.msgpack"
    proc = _serve("--policy", "fcfs", "-s", endpoint, "--record", str(record))  # no --timeout
    batsim = subprocess.Popen([sys.executable, "-c", _BATSIM, endpoint, str(WALLTIME120)],
                              stdout=subprocess.PIPE, text=True)
    try:
        _listening(proc)
        assert batsim.stdout.readline().strip() == "waiting"  # type: ignore[union-attr]
        batsim.send_signal(signal.SIGKILL)
        began = time.monotonic()
        status = proc.wait(timeout=20)
        elapsed = time.monotonic() - began
        stderr = proc.stderr.read()  # type: ignore[union-attr]
    finally:
        proc.kill()
        batsim.kill()
    assert status == 3, stderr
    assert elapsed < 5
    assert "Batsim closed its connection" in stderr and "after 2 messages" in stderr
    assert "Traceback" not in stderr
    assert len(list(read_transcript(record))) == 2  # what was exchanged is on disk


def test_an_unwritable_record_path_stops_serve_before_it_binds(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = _serve("--policy", "fcfs", "-s", f"tcp://127.0.0.1:{free_port()}", "--record",
                  str(blocker / "t.msgpack"))
    try:
        status = proc.wait(timeout=20)
        stderr = proc.stderr.read()  # type: ignore[union-attr]
    finally:
        proc.kill()
    assert status == 1
    assert "cannot write transcript" in stderr and "listening" not in stderr
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1


def test_serve_names_the_message_event_and_field_of_a_refused_message() -> None:
    port = free_port()
    proc = _serve("--policy", "fcfs", "--socket-endpoint", f"tcp://127.0.0.1:{port}",
                  "--timeout", "20")
    try:
        _listening(proc)
        with RequestSocket(f"tcp://127.0.0.1:{port}", timeout_s=10) as batsim:
            lines = WALLTIME120.read_text().splitlines()
            for sent, line in enumerate(lines, 1):  # noqa: B007 - read after the loop
                message = json.loads(line)["batsim"]
                batsim.request(json.dumps(message).encode())
                if message["now"] >= 2:
                    break
            back = {"now": message["now"] - 1, "events": []}  # time goes back by a second
            answer = json.loads(batsim.request(json.dumps(back).encode()))
        status = proc.wait(timeout=20)
        stderr = proc.stderr.read()  # type: ignore[union-attr]
    finally:
        proc.kill()
    assert status == 1
    [line] = [x for x in stderr.splitlines() if "ERROR" in x]
    assert f"refused message #{sent + 1}" in line and "field 'now'" in line
    assert "goes back" in line
    assert f"message #{sent + 1}" in answer["events"][0]["data"]["type"]

"""ZeroMQ REP/REQ transport: exchanges, timeouts, clean closing."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from batpolicy.errors import BatpolicyError, ConfigError, PeerTimeout
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import decode_reply, decode_request, encode_reply, encode_request
from batpolicy.protocol.transport import ReplySocket, RequestSocket


@pytest.fixture
def endpoint() -> Iterator[str]:
    """A TCP endpoint on a port that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield f"tcp://127.0.0.1:{port}"


@pytest.fixture(params=["tcp", "ipc"])
def any_endpoint(request: pytest.FixtureRequest, endpoint: str, tmp_path: Path) -> str:
    """TCP as above, or a Unix socket (``ipc://``): the README's choice on one machine."""
    return endpoint if request.param == "tcp" else f"ipc://{tmp_path / 'batsim.sock'}"


def _answer(rep: ReplySocket, count: int) -> threading.Thread:
    def serve() -> None:
        for _ in range(count):
            request = decode_request(rep.recv())
            rep.send(encode_reply(t.Reply(request.now, (t.RejectJob(f"w0!{request.now:g}"),))))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_rep_and_req_exchange_messages_in_turn(any_endpoint: str) -> None:
    with ReplySocket(any_endpoint, timeout_s=5) as rep, \
            RequestSocket(any_endpoint, timeout_s=5) as req:
        server = _answer(rep, 3)
        for now in (0.0, 1.0, 2.5):
            request = t.Request(now, (t.RequestedCall(now),))
            reply = decode_reply(req.request(encode_request(request)))
            assert reply == t.Reply(now, (t.RejectJob(f"w0!{now:g}", timestamp=now),))
        server.join(timeout=5)
        assert not server.is_alive()


def test_rep_recv_times_out_with_peer_timeout(endpoint: str) -> None:
    with ReplySocket(endpoint, timeout_s=0.2) as rep:
        start = time.monotonic()
        with pytest.raises(PeerTimeout, match=rf"no message from Batsim on {endpoint} "
                                              r"within 0.2 s"):
            rep.recv()
        assert 0.15 <= time.monotonic() - start < 1.5


def test_timed_out_req_socket_is_replaced_and_works_again(any_endpoint: str) -> None:
    with RequestSocket(any_endpoint, timeout_s=0.2) as req:
        with pytest.raises(PeerTimeout, match="no reply from the scheduler"):
            req.request(b'{"now": 0, "events": []}')  # nobody is listening yet
        with ReplySocket(any_endpoint, timeout_s=5) as rep:
            server = _answer(rep, 1)
            request = t.Request(1.0, ())
            req.timeout_s = None
            assert decode_reply(req.request(encode_request(request))).now == 1.0
            server.join(timeout=5)


def test_constructors_do_not_touch_the_network(endpoint: str) -> None:
    first, second = ReplySocket(endpoint), ReplySocket(endpoint)  # same port, no bind yet
    assert not first.is_open and not second.is_open
    with pytest.raises(BatpolicyError, match="not open"):
        first.recv()
    first.open()
    try:
        with pytest.raises(ConfigError, match=f"cannot bind {endpoint}"):
            second.open()
    finally:
        first.close()
        first.close()  # closing twice is harmless
    assert not first.is_open


def test_defaults_bind_the_loopback_where_batsim_connects() -> None:
    # serve is safe by default: reachable from this host only (Batsim's own default,
    # tcp://localhost:28000, connects there); pybatsim and batsched bind every interface
    assert ReplySocket().endpoint == "tcp://127.0.0.1:28000"
    assert RequestSocket().endpoint == "tcp://localhost:28000"


def test_negative_timeout_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="timeout"):
        ReplySocket("tcp://127.0.0.1:1", timeout_s=-1)

"""ZeroMQ request/reply transport between Batsim and a scheduler (PROTOCOL.md §1.1).

Batsim owns the REQ socket and connects; the scheduler owns a REP socket and binds.
:class:`ReplySocket` is the scheduler's end, :class:`RequestSocket` the end our fake
Batsim uses. Both move raw bytes only (the codec turns them into typed messages).

Constructors only store their settings; the socket is created in :meth:`open` (or on
entering a ``with`` block) and every socket has linger 0, so closing never blocks on
undelivered messages. Each object owns its own :class:`zmq.Context` (no shared global).
A wait longer than ``timeout_s`` raises :class:`~batpolicy.errors.PeerTimeout`;
``timeout_s=None`` waits forever.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Self

import zmq

from batpolicy.errors import BatpolicyError, ConfigError, PeerTimeout

__all__ = ["ReplySocket", "RequestSocket"]

log = logging.getLogger(__name__)


def _timeout_ms(timeout_s: float | None) -> int | None:
    """Milliseconds for :meth:`zmq.Socket.poll` (None waits forever).

    >>> _timeout_ms(None), _timeout_ms(0.25), _timeout_ms(0)
    (None, 250, 0)
    """
    if timeout_s is None:
        return None
    if timeout_s < 0:
        raise ConfigError(f"timeout must be >= 0 seconds, got {timeout_s}")
    return max(0, round(timeout_s * 1000))


class _Endpoint:
    """A socket of one kind on one endpoint, with a context of its own."""

    _kind: int
    _role: str

    def __init__(self, endpoint: str, timeout_s: float | None) -> None:
        self.endpoint = endpoint
        _timeout_ms(timeout_s)  # refuse a negative timeout early
        self.timeout_s = timeout_s
        self._context: zmq.Context | None = None
        self._socket: zmq.Socket | None = None

    def _attach(self, socket: zmq.Socket) -> None:  # bind or connect
        raise NotImplementedError

    def _new_socket(self) -> zmq.Socket:
        if self._context is None:
            self._context = zmq.Context()
        socket = self._context.socket(self._kind)
        socket.setsockopt(zmq.LINGER, 0)
        try:
            self._attach(socket)
        except zmq.ZMQError as exc:
            socket.close(linger=0)
            raise ConfigError(f"cannot {self._role} {self.endpoint}: {exc}") from exc
        return socket

    @property
    def is_open(self) -> bool:
        """True between :meth:`open` and :meth:`close`."""
        return self._socket is not None

    def _require_socket(self) -> zmq.Socket:
        if self._socket is None:
            raise BatpolicyError(f"socket on {self.endpoint} is not open (call open() first)")
        return self._socket

    def _wait_readable(self, socket: zmq.Socket, waiting_for: str) -> None:
        timeout_ms = _timeout_ms(self.timeout_s)
        if timeout_ms is None:
            return
        if not socket.poll(timeout_ms, zmq.POLLIN):
            raise PeerTimeout(f"no {waiting_for} on {self.endpoint} within {self.timeout_s:g} s")

    def close(self) -> None:
        """Close the socket and its context; safe to call twice."""
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None
        if self._context is not None:
            self._context.term()
            self._context = None

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def open(self) -> Self:
        """Create the socket and bind or connect it; return self."""
        if self._socket is None:
            self._socket = self._new_socket()
            log.debug("%s %s", self._role, self.endpoint)
        return self


class ReplySocket(_Endpoint):
    """The scheduler's REP socket: bind, then alternate :meth:`recv` and :meth:`send`."""

    _kind = zmq.REP
    _role = "bind"

    def __init__(self, endpoint: str = "tcp://*:28000", timeout_s: float | None = None) -> None:
        super().__init__(endpoint, timeout_s)

    def _attach(self, socket: zmq.Socket) -> None:
        socket.bind(self.endpoint)

    def recv(self) -> bytes:
        """Wait for Batsim's next message; raise PeerTimeout after ``timeout_s``."""
        socket = self._require_socket()
        self._wait_readable(socket, "message from Batsim")
        return socket.recv()

    def send(self, data: bytes) -> None:
        """Send the reply to the message just received."""
        self._require_socket().send(data)


class RequestSocket(_Endpoint):
    """A REQ socket as Batsim holds one: connect, then :meth:`request` in turns.

    After a timeout the REQ socket is stuck waiting for a reply that may never come, so
    it is closed at once; the next :meth:`request` connects a fresh one.
    """

    _kind = zmq.REQ
    _role = "connect to"

    def __init__(self, endpoint: str = "tcp://localhost:28000",
                 timeout_s: float | None = None) -> None:
        super().__init__(endpoint, timeout_s)

    def _attach(self, socket: zmq.Socket) -> None:
        socket.connect(self.endpoint)

    def request(self, data: bytes) -> bytes:
        """Send one message and wait for its reply; raise PeerTimeout after ``timeout_s``."""
        socket = self._require_socket()
        socket.send(data)
        try:
            self._wait_readable(socket, "reply from the scheduler")
        except PeerTimeout:
            socket.close(linger=0)
            self._socket = self._new_socket()
            raise
        return socket.recv()

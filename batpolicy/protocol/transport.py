"""ZeroMQ request/reply transport between Batsim and a scheduler (Batsim's protocol: transport).

Batsim owns the REQ socket and connects; the scheduler binds. :class:`ReplySocket` is
the scheduler's end, :class:`RequestSocket` the end our fake Batsim uses. Both move raw
bytes only (the codec turns them into typed messages; the transport knows no protocol
version).

Safe by default (docs/reliability.md, "A hostile peer"):

- :data:`DEFAULT_BIND` is the loopback, where Batsim's own default
  (``tcp://localhost:28000``, Batsim 4.2.1 ``src/batsim.cpp``) connects; binding any other
  address logs one warning (:func:`is_local_endpoint`).
- Every inbound frame is bounded by ZeroMQ's ``MAXMSGSIZE`` (:data:`DEFAULT_MAX_MESSAGE`):
  libzmq's decoder reads the frame's size header and drops the connection before
  allocating the frame, so an oversized message never reaches memory.
- One Batsim per run: the first peer whose message arrives is pinned (the file
  descriptor of its connection, ``ZMQ_SRCFD``); a message from any other peer is
  refused, logged and answered with the ``refusal`` bytes the caller gives (so a second
  Batsim aborts with a reason instead of waiting forever), and never reaches the caller.
  The socket stays a REP (one receive call per message: each pyzmq socket call costs
  about 3,400 instructions, and a ROUTER needs six more per exchange), and the check
  costs nothing while Batsim is the only connection: ZeroMQ's ZAP hook
  (:mod:`~batpolicy.protocol._gate`) holds any second connection in its handshake until
  :class:`ReplySocket` checks the connection of every message.
- A dead peer is noticed without a timeout: ZMTP heartbeats (``HEARTBEAT_IVL`` /
  ``HEARTBEAT_TIMEOUT``, answered by the peer's libzmq I/O thread whatever its
  application does) drop a silent connection, and the socket monitor reports the
  pinned connection's ``DISCONNECTED``: :class:`~batpolicy.errors.PeerLost` is raised.

Constructors only store their settings; the socket is created in :meth:`open` (or on
entering a ``with`` block) and every socket has linger 0, so closing never blocks on
undelivered messages. Each object owns its own :class:`zmq.Context` (no shared global).
A wait longer than ``timeout_s`` raises :class:`~batpolicy.errors.PeerTimeout`;
``timeout_s=None`` waits forever (for a live peer).
"""

from __future__ import annotations

import ipaddress
import logging
import struct
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import zmq
from zmq.backend import zmq_poll

from batpolicy.errors import BatpolicyError, ConfigError, PeerLost, PeerTimeout
from batpolicy.protocol._gate import ConnectionGate
from batpolicy.transport_defaults import (
    DEFAULT_BIND,
    DEFAULT_CONNECT,
    DEFAULT_MAX_MESSAGE,
    HEARTBEAT_IVL_S,
    HEARTBEAT_TIMEOUT_S,
)

__all__ = ["DEFAULT_BIND", "DEFAULT_CONNECT", "DEFAULT_MAX_MESSAGE", "HEARTBEAT_IVL_S",
           "HEARTBEAT_TIMEOUT_S", "ReplySocket", "RequestSocket", "is_local_endpoint"]

log = logging.getLogger(__name__)

#: While nothing comes, a receive wakes this often (ms) to see if the peer is gone.
_WAKE_MS = 250
#: The compiled backend's send, which a socket's own ``send`` calls after a Python-level
#: frame that only handles ``routing_id`` and ``group`` (for radio-dish and server-client
#: sockets, never set here): the same call without that frame, once per reply.
_BACKEND_SEND = zmq.backend.Socket.send
#: How many refused peers are logged one by one before the rest are only counted.
_LOGGED_INTRUDERS = 10


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


def is_local_endpoint(endpoint: str) -> bool:
    """True if binding ``endpoint`` is reachable from this host only.

    ``ipc://`` and ``inproc://`` are local; a ``tcp://`` endpoint is local when its host
    is a loopback address or ``localhost``. ``*``, ``0.0.0.0``, an interface name or any
    other address is reachable from the network.

    >>> is_local_endpoint("tcp://127.0.0.1:28000"), is_local_endpoint("tcp://[::1]:1")
    (True, True)
    >>> is_local_endpoint("tcp://*:28000"), is_local_endpoint("tcp://0.0.0.0:28000")
    (False, False)
    >>> is_local_endpoint("ipc:///tmp/batsim.sock"), is_local_endpoint("tcp://eth0:28000")
    (True, False)
    """
    scheme, _, rest = endpoint.partition("://")
    if scheme in ("ipc", "inproc"):
        return True
    if scheme != "tcp":
        return False
    host = rest.rpartition(":")[0].strip("[]")
    host = host.rpartition(";")[2]  # "source;destination" endpoints name the bound one last
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_max_message(max_message_bytes: int) -> int:
    if type(max_message_bytes) is not int or max_message_bytes <= 0:
        raise ConfigError(f"maximum message size must be a positive number of bytes, got "
                          f"{max_message_bytes!r}")
    return max_message_bytes


#: A monitor event's first frame: a 16-bit event id and a 32-bit value, native order, no
#: padding (libzmq's ``zmq_socket_monitor(3)``).
_MONITOR_FRAME = struct.Struct("=Hi")


def monitor_event(frames: list[bytes]) -> tuple[int, int]:
    """``(event id, value)`` of one message of a ZeroMQ socket monitor.

    What pyzmq's ``zmq.utils.monitor.parse_monitor_message`` reads, without importing that
    module: it imports ``zmq.asyncio`` (asyncio and ssl), a third of ``serve``'s start-up
    instructions, for its async variant. The value of a connection event is the
    connection's file descriptor.

    >>> monitor_event([_MONITOR_FRAME.pack(512, 7), b"tcp://127.0.0.1:28000"])
    (512, 7)
    """
    if len(frames) != 2 or len(frames[0]) != _MONITOR_FRAME.size:
        raise BatpolicyError(f"malformed ZeroMQ monitor event: {frames!r:.120}")
    return _MONITOR_FRAME.unpack(frames[0])  # type: ignore[return-value]


class _Endpoint:
    """A socket of one kind on one endpoint, with a context and a monitor of its own."""

    _kind: int
    _role: str
    _peer: str  # who is at the other end, for messages

    def __init__(self, endpoint: str, timeout_s: float | None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE,
                 heartbeat_s: float | None = HEARTBEAT_TIMEOUT_S) -> None:
        self.endpoint = endpoint
        _timeout_ms(timeout_s)  # refuse a negative timeout early
        self.timeout_s = timeout_s
        self.max_message_bytes = _check_max_message(max_message_bytes)
        if heartbeat_s is not None and heartbeat_s <= 0:
            raise ConfigError(f"heartbeat timeout must be > 0 seconds, got {heartbeat_s}")
        #: no traffic from the peer for this long drops its connection (None: no heartbeats)
        self.heartbeat_s = heartbeat_s
        self._context: zmq.Context | None = None
        self._socket: zmq.Socket | None = None
        self._monitor: zmq.Socket | None = None
        #: the file descriptor of the connection the conversation runs on, once known
        self._peer_fd: int | None = None

    def _attach(self, socket: zmq.Socket) -> None:  # bind or connect
        raise NotImplementedError

    def _new_socket(self) -> zmq.Socket:
        if self._context is None:
            self._context = zmq.Context()
        socket = self._context.socket(self._kind)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        timeout_ms = _timeout_ms(self.timeout_s)  # a blocking recv wakes this often, at most
        socket.setsockopt(zmq.RCVTIMEO, _WAKE_MS if timeout_ms is None
                          else max(1, min(_WAKE_MS, timeout_ms)))
        if self.heartbeat_s is not None:
            socket.setsockopt(zmq.HEARTBEAT_IVL, round(HEARTBEAT_IVL_S * 1000))
            socket.setsockopt(zmq.HEARTBEAT_TIMEOUT, round(self.heartbeat_s * 1000))
        self._configure(socket)
        monitor = socket.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED
                                            | zmq.EVENT_HANDSHAKE_SUCCEEDED)
        try:
            self._attach(socket)
        except zmq.ZMQError as exc:
            socket.disable_monitor()
            monitor.close(linger=0)
            socket.close(linger=0)
            self.close()  # the context, and what else it holds
            raise ConfigError(f"cannot {self._role} {self.endpoint}: {exc}") from exc
        self._monitor = monitor
        self._peer_fd = None
        return socket

    def _configure(self, socket: zmq.Socket) -> None:
        """Options of one socket kind (none by default)."""

    @property
    def is_open(self) -> bool:
        """True between :meth:`open` and :meth:`close`."""
        return self._socket is not None

    def _require_socket(self) -> zmq.Socket:
        if self._socket is None:
            raise BatpolicyError(f"socket on {self.endpoint} is not open (call open() first)")
        return self._socket

    def _recv_first(self, socket: zmq.Socket, waiting_for: str, *, copy: bool,
                    interrupt: Callable[[], bool] | None = None) -> Any:
        """The next message (bytes, or a Frame without ``copy``); raise if the peer is gone.

        A plain blocking receive, as cheap as REP's without checks: the socket's
        ``RCVTIMEO`` wakes it every :data:`_WAKE_MS` while nothing comes, to read the
        monitor (the pinned connection's ``DISCONNECTED``: the peer process ended, its
        host stopped answering heartbeats, or ZeroMQ dropped it for a frame over
        ``MAXMSGSIZE``, raises :class:`PeerLost`), the clock (``timeout_s``:
        :class:`PeerTimeout`) and ``interrupt`` (None is returned when it answers True).
        Polling the monitor before each message instead cost twice an exchange's CPU.
        """
        timeout_s = self.timeout_s
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            try:
                return socket.recv(copy=copy)
            except zmq.Again:
                pass
            self._check_monitor()
            if interrupt is not None and interrupt():
                return None
            if deadline is not None and time.monotonic() >= deadline:
                raise PeerTimeout(f"no {waiting_for} on {self.endpoint} within "
                                  f"{timeout_s:g} s")

    def _check_monitor(self) -> None:
        """Read the connection events that came (without waiting)."""
        monitor = self._monitor
        if monitor is not None:
            self._read_monitor(monitor)

    def _read_monitor(self, monitor: zmq.Socket) -> None:
        while zmq_poll([(monitor, zmq.POLLIN)], 0):
            kind, fd = monitor_event(monitor.recv_multipart())
            if kind == zmq.EVENT_DISCONNECTED and fd == self._peer_fd:
                self._peer_fd = None
                raise PeerLost(self._lost_message())
            self._on_connection(kind, fd)

    def _on_connection(self, kind: int, fd: int) -> None:
        """A connection event other than the pinned peer's disconnection."""

    def _lost_message(self) -> str:
        return (f"{self._peer} closed its connection to {self.endpoint} (it stopped, its host "
                f"missed ZeroMQ heartbeats for {self.heartbeat_s:g} s, or it sent a message "
                f"over the {self.max_message_bytes}-byte limit, which ZeroMQ refuses unread)")

    def close(self) -> None:
        """Close the socket, its monitor and its context; safe to call twice."""
        if self._socket is not None:
            try:
                self._socket.disable_monitor()
            except zmq.ZMQError:
                pass
            self._socket.close(linger=0)
            self._socket = None
        if self._monitor is not None:
            self._monitor.close(linger=0)
            self._monitor = None
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
    """The scheduler's socket: bind, then alternate :meth:`recv` and :meth:`send`.

    A REP socket that talks to one peer: the first whose message arrives is pinned (the
    file descriptor of its connection, ``ZMQ_SRCFD``). While it is the only connection
    (:class:`~batpolicy.protocol._gate.ConnectionGate` holds any other in its handshake),
    messages are received as plain bytes, one call each. Once another peer connects,
    every message's connection is checked: messages from any other peer never leave
    :meth:`recv`; each is logged (the first ``_LOGGED_INTRUDERS`` peers one line each,
    then counted in :attr:`refused`) and answered with ``refusal(reason)`` (an empty
    reply without one).
    """

    _kind = zmq.REP
    _role = "bind"
    _peer = "Batsim"

    def __init__(self, endpoint: str = DEFAULT_BIND, timeout_s: float | None = None, *,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE,
                 heartbeat_s: float | None = HEARTBEAT_TIMEOUT_S,
                 refusal: Callable[[str], bytes] | None = None) -> None:
        super().__init__(endpoint, timeout_s, max_message_bytes, heartbeat_s)
        self.refusal = refusal
        #: the pinned peer's address (``Peer-Address``), once it spoke
        self.peer_address: str | None = None
        #: messages refused from other peers
        self.refused = 0
        self._gate: ConnectionGate | None = None
        self._checking = False  # every message's connection is checked
        self._intruders: set[int] = set()
        self._handshaken: set[int] = set()  # connections that speak ZeroMQ, by fd

    def _on_connection(self, kind: int, fd: int) -> None:
        if kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            self._handshaken.add(fd)
        elif kind == zmq.EVENT_DISCONNECTED and fd in self._handshaken:
            self._handshaken.discard(fd)
            if self._peer_fd is None:  # a ZeroMQ peer left before any message reached us
                log.warning("a peer on %s disconnected before its first message arrived: if "
                            "it was Batsim, that message was over the %d-byte limit "
                            "(--max-message-size), which ZeroMQ refuses unread; still waiting",
                            self.endpoint, self.max_message_bytes)

    def _configure(self, socket: zmq.Socket) -> None:
        assert self._context is not None  # the socket was made in it
        self._gate = ConnectionGate(self._context)
        self._gate.start()
        socket.setsockopt(zmq.ZAP_DOMAIN, b"batpolicy")  # every connection asks the gate

    def _attach(self, socket: zmq.Socket) -> None:
        socket.bind(self.endpoint)
        if not is_local_endpoint(self.endpoint):
            log.warning("binding %s: reachable from other hosts; the first peer to speak is "
                        "taken for Batsim and others are refused (docs/reliability.md)",
                        self.endpoint)

    def _switch_if_crowded(self) -> bool:
        """Check every message from now on if another peer waits at the gate."""
        gate = self._gate
        if self._checking or gate is None or not gate.crowded:
            return False
        self._checking = True
        gate.checking()
        log.debug("another peer connected: checking each message's connection")
        return True

    def recv(self) -> bytes:
        """Wait for Batsim's next message; raise PeerTimeout after ``timeout_s``.

        Raises :class:`PeerLost` when Batsim's connection closes.
        """
        socket = self._socket
        if socket is None:
            raise BatpolicyError(f"socket on {self.endpoint} is not open (call open() first)")
        gate = self._gate
        if self._peer_fd is not None and not self._checking and self.timeout_s is None \
                and gate is not None and not gate.crowded:
            try:  # the common case, inline: Batsim alone, a message within _WAKE_MS
                return socket.recv()  # type: ignore[no-any-return]
            except zmq.Again:
                pass
        while True:
            if self._peer_fd is not None and not self._checking:
                if self._switch_if_crowded():
                    continue
                data = self._recv_first(socket, "message from Batsim", copy=True,
                                        interrupt=self._switch_if_crowded)
                if data is not None:  # the only connection's: Batsim's
                    return data  # type: ignore[no-any-return]
                continue
            frame = self._recv_first(socket, "message from Batsim", copy=False,
                                     interrupt=self._switch_if_crowded)
            if frame is None:
                continue
            fd = frame.get(zmq.SRCFD)
            self._check_monitor()  # the pinned connection's end comes first (fds are reused)
            if self._peer_fd is None:
                self._pin(fd, frame)
            elif fd != self._peer_fd:
                self._refuse(socket, fd, frame, "this scheduler already serves another "
                             f"Batsim (since message 1, from {self.peer_address})")
                continue
            return frame.bytes

    def _pin(self, fd: int, frame: zmq.Frame) -> None:
        self._peer_fd = fd
        self.peer_address = frame.get("Peer-Address") if self.endpoint.startswith("tcp") \
            else self.endpoint
        log.debug("talking to Batsim at %s only", self.peer_address)

    def _refuse(self, socket: zmq.Socket, fd: int, frame: zmq.Frame, why: str) -> None:
        self.refused += 1
        if fd not in self._intruders and len(self._intruders) < _LOGGED_INTRUDERS:
            self._intruders.add(fd)
            address = frame.get("Peer-Address") if self.endpoint.startswith("tcp") else "?"
            log.warning("refused a message from another peer (%s, %d bytes): %s", address,
                        len(frame), why)
        socket.send(self.refusal(why) if self.refusal is not None else b"")

    def send(self, data: bytes) -> None:
        """Send the reply to the message just received."""
        socket = self._socket
        if socket is None:
            raise BatpolicyError(f"socket on {self.endpoint} is not open (call open() first)")
        _BACKEND_SEND(socket, data)

    def close(self) -> None:
        """Close the socket, its monitor, its gate and its context; safe to call twice."""
        if self._gate is not None:
            self._gate.stop()
            self._gate = None
        super().close()


class RequestSocket(_Endpoint):
    """A REQ socket as Batsim holds one: connect, then :meth:`request` in turns.

    After a timeout the REQ socket is stuck waiting for a reply that may never come, so
    it is closed at once; the next :meth:`request` connects a fresh one. Once a reply
    came, the connection is watched: the scheduler closing it (or missing heartbeats)
    during a later request raises :class:`PeerLost`.
    """

    _kind = zmq.REQ
    _role = "connect to"
    _peer = "the scheduler"

    def __init__(self, endpoint: str = DEFAULT_CONNECT,
                 timeout_s: float | None = None, *,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE,
                 heartbeat_s: float | None = HEARTBEAT_TIMEOUT_S) -> None:
        super().__init__(endpoint, timeout_s, max_message_bytes, heartbeat_s)
        self._connected_fd: int | None = None
        self._answered = False

    def _attach(self, socket: zmq.Socket) -> None:
        socket.connect(self.endpoint)

    def _on_connection(self, kind: int, fd: int) -> None:
        if kind == zmq.EVENT_CONNECTED:
            self._connected_fd = fd

    def request(self, data: bytes) -> bytes:
        """Send one message and wait for its reply; raise PeerTimeout after ``timeout_s``.

        Raises :class:`PeerLost` when the scheduler's connection closes mid-run.
        """
        socket = self._require_socket()
        socket.send(data)
        try:
            reply = self._recv_first(socket, "reply from the scheduler", copy=True)
        except PeerLost:
            raise
        except PeerTimeout:
            self.close_socket()
            self._socket = self._new_socket()
            raise
        if not self._answered:  # the conversation runs on this connection from now on
            self._answered = True
            self._check_monitor()
            self._peer_fd = self._connected_fd
        return reply  # type: ignore[no-any-return]

    def close_socket(self) -> None:
        """Close the socket and its monitor, keeping the context (for a fresh socket)."""
        if self._socket is not None:
            self._socket.disable_monitor()
            self._socket.close(linger=0)
            self._socket = None
        if self._monitor is not None:
            self._monitor.close(linger=0)
            self._monitor = None
        self._answered = False
        self._connected_fd = None

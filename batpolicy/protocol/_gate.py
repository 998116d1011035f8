"""The ZAP handler behind ``serve``'s socket: who may connect, and when.

ZeroMQ asks a ZAP handler (ZMTP's authentication protocol, RFC 27, bound at
``inproc://zeromq.zap.01`` in the socket's context) about every connection of a socket
that has a ``ZAP_DOMAIN``, during the handshake, before any of its messages can reach
the socket. :class:`ConnectionGate` answers from a thread of its own:

- the first connection passes at once: while it is the only one, every message comes
  from it, and the socket receives plain bytes (one receive call per message, as cheap
  as a REP socket without any check);
- any later connection (a second Batsim, an intruder, Batsim reconnecting) sets
  :attr:`ConnectionGate.crowded` and is held in its handshake until the socket's owner
  says it now checks which connection each message comes from
  (:meth:`ConnectionGate.checking`); then it passes, and its messages are refused there.

So the per-message check costs nothing until a second peer shows up. Nothing is denied
here: a refused peer gets a reply (a second Batsim then stops with the reason) instead of
a handshake that fails and retries forever.
"""

from __future__ import annotations

import logging
import threading

import zmq

__all__ = ["ZAP_ENDPOINT", "ConnectionGate"]

log = logging.getLogger(__name__)

#: Where libzmq looks for the ZAP handler of a context (RFC 27).
ZAP_ENDPOINT = "inproc://zeromq.zap.01"
#: How often (s) a held connection's handshake looks at the stop flag.
_TICK_S = 0.1


class ConnectionGate:
    """Lets the first connection through at once, later ones once messages are checked."""

    def __init__(self, context: zmq.Context) -> None:
        self._context = context
        #: a later connection waits: the socket must check every message's connection
        self.crowded = False
        #: connections asked about so far
        self.connections = 0
        self._checking = threading.Event()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: Exception | None = None

    def start(self) -> None:
        """Bind the handler (before the guarded socket binds) and answer in a thread."""
        self._thread = threading.Thread(target=self._run, name="batpolicy-zap", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def checking(self) -> None:
        """The socket now checks every message's connection: let the waiting ones in."""
        self._checking.set()

    def stop(self) -> None:
        """End the thread and close its socket (before the context terminates).

        The thread waits on its ZAP socket and on an inproc wake-up socket: a message on
        the latter ends it at once (no polling tick to wait for).
        """
        self._stop.set()
        if self._thread is not None:
            wake = self._context.socket(zmq.PAIR)
            wake.setsockopt(zmq.LINGER, 0)
            try:
                wake.connect(self._wake_endpoint)
                wake.send(b"", zmq.NOBLOCK)
            except zmq.ZMQError:  # the thread never bound it: it has ended already
                pass
            finally:
                wake.close(linger=0)
            self._thread.join()
            self._thread = None

    @property
    def _wake_endpoint(self) -> str:
        return f"inproc://batpolicy-gate-stop-{id(self):x}"

    def _run(self) -> None:
        wake = self._context.socket(zmq.PAIR)
        wake.setsockopt(zmq.LINGER, 0)
        try:
            wake.bind(self._wake_endpoint)
            socket = self._context.socket(zmq.REP)
            socket.setsockopt(zmq.LINGER, 0)
            socket.bind(ZAP_ENDPOINT)
        except zmq.ZMQError as exc:
            wake.close(linger=0)
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        poller = zmq.Poller()
        poller.register(socket, zmq.POLLIN)
        poller.register(wake, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                if socket not in dict(poller.poll()):
                    continue  # woken by stop()
                request = socket.recv_multipart()  # version, id, domain, address, ...
                self.connections += 1
                if self.connections > 1 and not self._checking.is_set():
                    self.crowded = True
                    while not self._checking.wait(_TICK_S) and not self._stop.is_set():
                        pass
                request_id = request[1] if len(request) > 1 else b""
                socket.send_multipart([b"1.0", request_id, b"200", b"OK", b"", b""])
        finally:
            socket.close(linger=0)
            wake.close(linger=0)

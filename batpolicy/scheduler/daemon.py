"""The daemon driver: Batsim asks over ZeroMQ, the dispatcher answers.

Batsim owns the REQ socket and connects; we bind (Batsim's protocol: transport), on the loopback by
default, and talk to the first Batsim that speaks only
(:class:`~batpolicy.protocol.transport.ReplySocket`). Each received message is decoded,
handed to the :class:`~batpolicy.scheduler.dispatch.Dispatcher` and the reply is encoded
with ``now`` equal to the request's ``now``. With ``record``, the transcript file is
created before binding (an unwritable path stops ``serve`` before Batsim connects) and
every exchange is appended (and flushed) as it happens, so a failure leaves the
conversation so far on disk.

A message that is refused (undecodable, out of the protocol's order, or one the policy
fails on) is answered with :func:`~batpolicy.protocol.codec.refusal_reply`, which makes
Batsim 4.2.1 stop at once with the reason in its log instead of waiting for a reply
forever; then ``serve`` exits 1 with one line naming the message, event and field.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from batpolicy import __version__
from batpolicy.errors import BatpolicyError, PeerTimeout
from batpolicy.interpreter import describe
from batpolicy.protocol.codec import refusal_reply
from batpolicy.protocol.transport import (
    DEFAULT_BIND,
    DEFAULT_MAX_MESSAGE,
    HEARTBEAT_TIMEOUT_S,
    ReplySocket,
)
from batpolicy.protocol.wires import Batsim4Wire, Wire
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.steady_gc import steady_gc

if TYPE_CHECKING:  # imported by serve() only with --record (it brings msgpack)
    from batpolicy.protocol.transcript import TranscriptWriter

log = logging.getLogger(__name__)

#: Exit statuses of ``batpolicy serve``.
EXIT_OK, EXIT_ERROR, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 3, 130


@dataclass
class ServeOptions:
    """How the daemon listens and what it keeps."""

    endpoint: str = DEFAULT_BIND
    timeout_s: float | None = None
    record: Path | None = None
    #: largest message accepted, in bytes (ZeroMQ's MAXMSGSIZE: larger ones are not read)
    max_message_bytes: int = DEFAULT_MAX_MESSAGE
    #: Batsim silent (no ZeroMQ heartbeat answered) this long is gone; None: no heartbeats
    heartbeat_s: float | None = HEARTBEAT_TIMEOUT_S
    #: The wire format (:func:`batpolicy.protocol.wires.make_wire`); None: Batsim 4's JSON.
    wire: Wire | None = None


def serve(dispatcher: Dispatcher, options: ServeOptions) -> int:
    """Answer Batsim until SIMULATION_ENDS; return the process exit status.

    Errors are logged as one line naming what and where; the transcript written so far
    stays on disk.
    """
    recorder: TranscriptWriter | None = None
    wire = options.wire if options.wire is not None else Batsim4Wire()
    greet, decode, encode = wire.greet, wire.decode, wire.encode
    exchanged = 0
    sock: ReplySocket | None = None
    try:
        if options.record:  # before binding: Batsim must not connect to a serve that fails
            from batpolicy.protocol.transcript import TranscriptWriter

            recorder = TranscriptWriter(options.record).open()
        sock = ReplySocket(options.endpoint, timeout_s=options.timeout_s,
                           max_message_bytes=options.max_message_bytes,
                           heartbeat_s=options.heartbeat_s, refusal=refusal_reply)
        with sock, steady_gc():
            log.info("policy '%s' listening on %s; batpolicy %s on %s", dispatcher.policy.name,
                     options.endpoint, __version__, describe())
            while True:
                raw = sock.recv()
                number = exchanged + 1
                try:
                    if greet is not None and (answer := greet(raw)) is not None:
                        sock.send(answer)  # the protocol's own opening (Batsim 5's hellos)
                        continue
                    request = decode(raw)
                except BatpolicyError as exc:  # one line: what is wrong, then where
                    log.error("refused message #%d from Batsim: %s (it starts with %r)",
                              number, exc, raw[:120])
                    _send_refusal(sock, f"message #{number}: {exc}")
                    return EXIT_ERROR
                try:
                    reply = dispatcher.handle(request)
                except BatpolicyError as exc:
                    if recorder is not None:
                        recorder.write(*wire.record(raw, request, None, None))
                    log.error("refused message #%d from Batsim (t=%r): %s", number,
                              request.now, exc)
                    _send_refusal(sock, f"message #{number} (t={request.now!r}): {exc}",
                                  request.now)
                    return EXIT_ERROR
                data = encode(reply)  # checked: the dispatcher's checker passed it
                if recorder is not None:
                    recorder.write(*wire.record(raw, request, data, reply))
                sock.send(data)
                exchanged += 1
                if dispatcher.state.ended:
                    log.info("simulation ended after %d messages (%d decisions)%s",
                             exchanged, dispatcher.nb_decisions, _refused(sock))
                    return EXIT_OK
    except PeerTimeout as exc:
        log.error("%s (after %d messages%s)", exc, exchanged, _refused(sock))
        return EXIT_TIMEOUT
    except KeyboardInterrupt:
        log.error("interrupted after %d messages", exchanged)
        return EXIT_INTERRUPTED
    except BatpolicyError as exc:
        log.error("%s (after %d messages)", exc, exchanged)
        return EXIT_ERROR
    finally:
        if recorder is not None:
            recorder.close()


def _send_refusal(sock: ReplySocket, reason: str, now: float = 0.0) -> None:
    """Answer a refused message so that Batsim stops instead of waiting (best effort)."""
    try:
        sock.send(refusal_reply(reason, now))
    except BatpolicyError as exc:  # Batsim already gone: the refusal was logged anyway
        log.debug("refusal not delivered: %s", exc)


def _refused(sock: ReplySocket | None) -> str:
    """``; N messages from other peers refused`` when there were some."""
    if sock is None or not sock.refused:
        return ""
    return f"; {sock.refused} message(s) from other peers refused"

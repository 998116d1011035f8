"""The daemon driver: Batsim asks over ZeroMQ, the dispatcher answers.

Batsim owns the REQ socket and connects; we bind a REP socket (PROTOCOL.md §1.1). Each
received message is decoded, handed to the :class:`~batpolicy.scheduler.dispatch.Dispatcher`
and the reply is encoded with ``now`` equal to the request's ``now``. With ``record``,
every exchange is appended (and flushed) to a msgpack transcript as it happens, so a
failure leaves the conversation so far on disk.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from batpolicy import __version__
from batpolicy.errors import BatpolicyError, PeerTimeout
from batpolicy.interpreter import describe
from batpolicy.protocol.transcript import TranscriptWriter
from batpolicy.protocol.transport import ReplySocket
from batpolicy.protocol.wires import Batsim4Wire, Wire
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.steady_gc import steady_gc

log = logging.getLogger(__name__)

#: Exit statuses of ``batpolicy serve``.
EXIT_OK, EXIT_ERROR, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 3, 130


@dataclass
class ServeOptions:
    """How the daemon listens and what it keeps."""

    endpoint: str = "tcp://*:28000"
    timeout_s: float | None = None
    record: Path | None = None
    #: The wire format (:func:`batpolicy.protocol.wires.make_wire`); None: Batsim 4's JSON.
    wire: Wire | None = None


def serve(dispatcher: Dispatcher, options: ServeOptions) -> int:
    """Answer Batsim until SIMULATION_ENDS; return the process exit status.

    Errors are logged as one line naming what and where; the transcript written so far
    stays on disk.
    """
    recorder = TranscriptWriter(options.record) if options.record else None
    wire = options.wire if options.wire is not None else Batsim4Wire()
    greet, decode, encode = wire.greet, wire.decode, wire.encode
    exchanged = 0
    try:
        with ReplySocket(options.endpoint, timeout_s=options.timeout_s) as sock, steady_gc():
            log.info("policy '%s' listening on %s; batpolicy %s on %s", dispatcher.policy.name,
                     options.endpoint, __version__, describe())
            while True:
                raw = sock.recv()
                if greet is not None and (answer := greet(raw)) is not None:
                    sock.send(answer)  # the protocol's own opening (Batsim 5's hellos)
                    continue
                try:
                    request = decode(raw)
                except BatpolicyError as exc:  # one line: what is wrong, then where
                    log.error("undecodable message #%d from Batsim: %s (it starts with %r)",
                              exchanged + 1, exc, raw[:120])
                    return EXIT_ERROR
                try:
                    reply = dispatcher.handle(request)
                except BatpolicyError:
                    if recorder is not None:
                        recorder.write(*wire.record(raw, request, None, None))
                    raise
                data = encode(reply)  # checked: the dispatcher's checker passed it
                if recorder is not None:
                    recorder.write(*wire.record(raw, request, data, reply))
                sock.send(data)
                exchanged += 1
                if dispatcher.state.ended:
                    log.info("simulation ended after %d messages (%d decisions)",
                             exchanged, dispatcher.nb_decisions)
                    return EXIT_OK
    except PeerTimeout as exc:
        log.error("%s (after %d messages)", exc, exchanged)
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

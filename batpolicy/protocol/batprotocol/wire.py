"""The daemon's side of a Batsim 5 conversation: handshake, then the codec.

:class:`Batsim5Wire` offers what ``batpolicy serve`` needs from a wire format
(:mod:`batpolicy.protocol.wires`): ``greet`` answers the messages that belong to the
protocol itself (Batsim's initialisation message, BatsimHelloEvent) and returns None
once the simulation proper has begun; ``decode`` and ``encode`` turn the rest into
typed requests and replies; ``record`` gives the transcript the messages as Batsim 5
wrote them (JSON objects), so a recorded conversation replays against this codec.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from batpolicy.errors import ProtocolError
from batpolicy.protocol import types as t
from batpolicy.protocol.batprotocol._fields import strip_nul
from batpolicy.protocol.batprotocol.codec import Batsim5Codec
from batpolicy.protocol.batprotocol.handshake import (
    EdcIdentity,
    check_json_format,
    parse_init,
    rc2_hello_prefix,
)

__all__ = ["Batsim5Wire"]

log = logging.getLogger(__name__)


class Batsim5Wire:
    """Batsim 5 over ZeroMQ with batprotocol JSON, for one simulation."""

    version = 5

    def __init__(self, identity: EdcIdentity) -> None:
        self.codec = Batsim5Codec(identity)
        self._stage = "init"  # init -> hello -> run
        self.init_data = b""

    @property
    def started(self) -> bool:
        """True once the hellos have been exchanged."""
        return self._stage == "run"

    def greet(self, raw: bytes) -> bytes | None:
        """The answer to a handshake message, or None for a message of the simulation."""
        if self._stage == "run":
            return None
        if self._stage == "init":
            init = parse_init(raw)
            if init is None:
                raise ProtocolError("expected Batsim 5's initialisation message (flags, size, "
                                    f"data), got {len(raw)} bytes starting {raw[:40]!r}; is "
                                    "the peer Batsim 4? (serve --batsim 4)")
            check_json_format(init)
            self.init_data = init.data
            log.info("Batsim 5 initialisation (%s form): JSON format, %d bytes of init data",
                     "rc2" if init.rc2 else "snapshot", len(init.data))
            if init.rc2:  # rc2: the hello answers the initialisation, with our format flag
                self._stage = "run"
                self.codec.host_separator = " "  # rc2's src/protocol.cpp: spaces again
                return rc2_hello_prefix() + self.codec.hello_reply(0.0)
            self._stage = "hello"
            return b""
        message = self.codec.parse(raw)
        kinds = [ev.event_type for ev in message.events]
        if kinds != ["BatsimHelloEvent"]:
            raise ProtocolError(f"expected one BatsimHelloEvent after initialisation, got {kinds}")
        hello = msgspec.json.decode(message.events[0].event)
        log.info("Batsim %s (batprotocol %s) says hello", hello.get("batsim_version"),
                 hello.get("batprotocol_version"))
        self._stage = "run"
        return self.codec.hello_reply(message.now)

    def decode(self, raw: bytes) -> t.Request:
        """A simulation message as a typed request."""
        return self.codec.decode_request(raw)

    def encode(self, reply: t.Reply) -> bytes:
        """A typed reply as Batsim 5's JSON, NUL-terminated."""
        return self.codec.encode_reply(reply)

    @staticmethod
    def record(raw: bytes, request: t.Request, data: bytes | None,
               reply: t.Reply | None) -> tuple[Any, Any]:
        """The transcript record of one exchange: both messages as Batsim 5's JSON objects."""
        del request, reply
        return (msgspec.json.decode(strip_nul(raw)),
                None if data is None else msgspec.json.decode(strip_nul(data)))

"""Which wire format ``batpolicy serve`` speaks, chosen once when the daemon starts.

Batsim 4's JSON, Batsim 5's batprotocol, or whichever the first message shows.

A wire offers ``greet(raw) -> bytes | None`` (an answer to a message of the protocol's
own opening, or None), ``decode(raw) -> Request``, ``encode(reply) -> bytes`` and
``record(raw, request, data, reply)`` (the transcript's pair of objects). The Batsim 4
wire has no opening (``greet`` is None, so the daemon does not call it) and its other
members are the codec's functions themselves: choosing it adds nothing per message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from batpolicy.errors import ConfigError
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import (
    remembering_decoder,
    reply_encoder,
    reply_to_obj,
    request_decoder,
    request_to_obj,
)
from batpolicy.protocol.intervals import MachineSet

__all__ = ["AutoWire", "Batsim4Wire", "Wire", "make_wire"]


class Wire(Protocol):
    """What the daemon needs from a wire format."""

    version: int | str
    greet: Callable[[bytes], bytes | None] | None
    decode: Callable[[bytes], t.Request]
    encode: Callable[[t.Reply], bytes]

    def record(self, raw: bytes, request: t.Request, data: bytes | None,
               reply: t.Reply | None) -> tuple[Any, Any]:
        """The transcript's pair of objects for one exchange."""


def _record4(raw: bytes, request: t.Request, data: bytes | None,
             reply: t.Reply | None) -> tuple[Any, Any]:
    return request_to_obj(request), None if reply is None else reply_to_obj(reply)


class Batsim4Wire:
    """Batsim 4.2's JSON protocol (:mod:`batpolicy.protocol.codec`), for one conversation.

    ``decode`` and ``encode`` are the codec's :func:`request_decoder` and
    :func:`reply_encoder` (:func:`~batpolicy.protocol.codec.decode_request` and
    :func:`~batpolicy.protocol.codec.encode_reply` in one frame each) bound to one table
    of the allocations this conversation sent: each JOB_COMPLETED takes its allocation
    back from it instead of parsing it (:func:`remembering_decoder`). Same
    messages accepted and refused, same bytes.
    """

    version = 4
    greet = None
    record = staticmethod(_record4)

    def __init__(self) -> None:
        sent: dict[str, MachineSet] = {}
        self.decode = request_decoder(remembering_decoder(sent))
        self.encode = reply_encoder(sent)


class AutoWire:
    """Batsim 4 or 5, told apart by the first message.

    Batsim 5 opens with a binary initialisation message (:func:`~batpolicy.protocol.
    batprotocol.handshake.parse_init`); Batsim 4 with a JSON object.
    """

    version = "auto"

    def __init__(self, make5: Callable[[], Any]) -> None:
        self._make5 = make5
        self.chosen: Any = None

    def greet(self, raw: bytes) -> bytes | None:
        """Pick the wire on the first message, then let it greet."""
        if self.chosen is None:
            from batpolicy.protocol.batprotocol.handshake import parse_init

            self.chosen = self._make5() if parse_init(raw) is not None else Batsim4Wire()
        return None if self.chosen.greet is None else self.chosen.greet(raw)

    def decode(self, raw: bytes) -> t.Request:
        """Decode with the chosen wire."""
        return self.chosen.decode(raw)

    def encode(self, reply: t.Reply) -> bytes:
        """Encode with the chosen wire."""
        return self.chosen.encode(reply)

    def record(self, raw: bytes, request: t.Request, data: bytes | None,
               reply: t.Reply | None) -> tuple[Any, Any]:
        """Record as the chosen wire does."""
        return self.chosen.record(raw, request, data, reply)


def make_wire(batsim: str, *, name: str = "batpolicy", version: str = "0",
              features: tuple[str, ...] = ()) -> Any:
    """The wire for ``serve --batsim {4,5,auto}``.

    ``name``, ``version`` and ``features`` fill Batsim 5's EDC hello (ConfigError for a
    feature Batsim 5 does not know).
    """
    if batsim == "4":
        if features:
            raise ConfigError("--edc-feature is for Batsim 5 (Batsim 4 takes these options "
                              "on its own command line)")
        return Batsim4Wire()
    from batpolicy.protocol.batprotocol.handshake import EdcIdentity
    from batpolicy.protocol.batprotocol.wire import Batsim5Wire

    identity = EdcIdentity.of(name, version, features)
    if batsim == "5":
        return Batsim5Wire(identity)
    if batsim == "auto":
        return AutoWire(lambda: Batsim5Wire(identity))
    raise ConfigError(f"--batsim must be 4, 5 or auto, got {batsim!r}")

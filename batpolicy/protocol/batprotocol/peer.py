"""Batsim 5's side of the socket, for ``batpolicy fake-batsim --batsim 5``.

:class:`Batsim5Peer` connects a REQ socket to an EDC, plays Batsim's opening (the
initialisation message with the JSON flag, then BatsimHelloEvent; Batsim ed55a974
``src/edc.cpp`` and ``src/server.cpp``), keeps the features the EDC's hello requests,
then turns each typed request of the embedded simulator into a batprotocol message and
the EDC's reply back into typed decisions.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from batpolicy.errors import ProtocolError
from batpolicy.protocol import types as t
from batpolicy.protocol.batprotocol import _schema as s
from batpolicy.protocol.batprotocol.codec import Batsim5Codec
from batpolicy.protocol.batprotocol.handshake import (
    BATPROTOCOL_VERSION,
    FORMAT_JSON,
    EdcIdentity,
    encode_init,
)
from batpolicy.protocol.transport import RequestSocket

__all__ = ["Batsim5Peer"]

log = logging.getLogger(__name__)
_ENCODER = msgspec.json.Encoder()


class Batsim5Peer:
    """Batsim 5 over ZeroMQ with batprotocol JSON, as the embedded simulator's scheduler."""

    def __init__(self, endpoint: str, timeout_s: float | None, init_data: bytes = b"") -> None:
        self.socket = RequestSocket(endpoint, timeout_s=timeout_s)
        self.init_data = init_data
        self.codec = Batsim5Codec(EdcIdentity("batsim", "0"))
        self.features: s.Features = s.Features()
        self.edc_name = ""

    def open(self) -> Batsim5Peer:
        """Connect and play the opening; the EDC's requested features are then known.

        On any failure the socket is closed before the error propagates.
        """
        try:
            return self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> Batsim5Peer:
        socket = self.socket.open()
        ack = socket.request(encode_init(FORMAT_JSON, self.init_data))
        if ack:
            raise ProtocolError(f"the EDC answered the initialisation message with "
                                f"{len(ack)} bytes; Batsim 5 expects an empty message")
        hello = s.Message(now=0.0, events=[s.EventAndTimestamp(
            0.0, "BatsimHelloEvent", msgspec.Raw(_ENCODER.encode(
                {"batprotocol_version": BATPROTOCOL_VERSION,
                 "batsim_version": "batpolicy fake-batsim", "batsim_commit": ""})))])
        reply = self.codec.parse(socket.request(_ENCODER.encode(hello) + b"\0"))
        kinds = [ev.event_type for ev in reply.events]
        if kinds != ["EDCHelloEvent"]:
            raise ProtocolError(f"the EDC answered BatsimHelloEvent with {kinds}, not one "
                                "EDCHelloEvent")
        try:
            edc = msgspec.json.decode(reply.events[0].event, type=s.EDCHelloEvent)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ProtocolError(str(exc), index=0, event_type="EDCHelloEvent") from None
        self.features = edc.requested_simulation_features
        self.edc_name = edc.decision_component_name
        log.info("EDC '%s' %s says hello (batprotocol %s)", edc.decision_component_name,
                 edc.decision_component_version, edc.batprotocol_version)
        return self

    def batsim4_flags(self) -> dict[str, Any]:
        """The fake-batsim flags the hello's features stand for."""
        f = self.features
        return {"enable_dynamic_jobs": f.dynamic_registration,
                "acknowledge_dynamic_jobs": f.acknowledge_dynamic_jobs,
                "enable_profile_reuse": f.profile_reuse}

    def __call__(self, request: t.Request) -> t.Reply:
        """One exchange: the typed request out, the EDC's decisions back."""
        return self.codec.decode_reply(self.socket.request(self.codec.encode_request(request)))

    def close(self) -> None:
        """Close the socket."""
        self.socket.close()

"""Batsim 4.2 wire format: typed events and decisions, codec, interval sets, transport.

No scheduling logic lives here. The types and interval sets load with the package; the
codec, the ZeroMQ transport and the transcripts load on first use of one of their names
(``from batpolicy.protocol import decode_request`` works), so that policies importing
the types do not pull in zmq, msgpack or msgspec.
"""

from types import MappingProxyType

from batpolicy.lazy import lazy_getattr
from batpolicy.protocol.intervals import MachineSet, format_intervals, parse_intervals
from batpolicy.protocol.types import *  # noqa: F403
from batpolicy.protocol.types import __all__ as _types_all  # type: ignore[attr-defined]

#: Public name -> submodule that defines it, loaded on first access (PEP 562).
_LAZY = MappingProxyType({
    "decode_request": "codec",
    "decode_reply": "codec",
    "encode_request": "codec",
    "encode_reply": "codec",
    "request_from_obj": "codec",
    "request_to_obj": "codec",
    "reply_from_obj": "codec",
    "reply_to_obj": "codec",
    "ReplySocket": "transport",
    "RequestSocket": "transport",
    "TranscriptWriter": "transcript",
    "read_transcript": "transcript",
})

__all__ = ["MachineSet", "format_intervals", "parse_intervals", *_types_all, *_LAZY]


__getattr__ = lazy_getattr(__name__, _LAZY)

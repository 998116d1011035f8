"""Batsim 4.2 wire format: typed events and decisions, codec, interval sets, transport.

No scheduling logic lives here.
"""

from batpolicy.protocol.intervals import ProcSet, format_intervals, parse_intervals
from batpolicy.protocol.types import *  # noqa: F403
from batpolicy.protocol.types import __all__ as _types_all  # type: ignore[attr-defined]

__all__ = ["ProcSet", "format_intervals", "parse_intervals", *_types_all]

"""Batsim interval sets (PROTOCOL.md §1.12): closed integer intervals such as ``"0-3 7"``.

We use :class:`procset.ProcSet`, whose ``str()`` is Batsim's canonical form.

>>> str(parse_intervals("7 0-3 2"))
'0-3 7'
>>> format_intervals(ProcSet((0, 3), 7))
'0-3 7'
"""

from __future__ import annotations

import re

from procset import ProcSet

from batpolicy.errors import ProtocolError

__all__ = ["ProcSet", "parse_intervals", "format_intervals"]

_INTERVAL_SET = re.compile(r"^\s*\d+(-\d+)?(\s+\d+(-\d+)?)*\s*$", re.ASCII)


def parse_intervals(text: object, *, field: str = "alloc", index: int | None = None) -> ProcSet:
    """Parse a Batsim interval-set string; raise :class:`ProtocolError` naming ``field``.

    Runtime complexity: O(n log n) in the number of intervals.

    >>> len(parse_intervals("0-1 5"))
    3
    """
    if not isinstance(text, str):
        raise ProtocolError("expected an interval-set string such as '0-3 7', got "
                            f"{type(text).__name__}",
                            index=index, field=field)
    if not _INTERVAL_SET.match(text):
        raise ProtocolError(f"malformed interval set {text[:80]!r} (expected e.g. '0-3 7')",
                            index=index, field=field)
    pieces = []
    for token in text.split():
        lo, _, hi = token.partition("-")
        a = int(lo)
        b = int(hi) if hi else a
        if b < a:
            raise ProtocolError(f"interval {token!r} has its bounds reversed",
                                index=index, field=field)
        pieces.append((a, b))
    return ProcSet(*pieces)


def format_intervals(resources: ProcSet) -> str:
    """Canonical Batsim string of an interval set: disjoint, maximal, sorted."""
    return str(resources)

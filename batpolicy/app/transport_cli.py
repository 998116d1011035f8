"""The socket options ``serve`` and ``fake-batsim`` share: message size bound, heartbeats.

Each is given once here, so the two commands spell and explain them alike
(:mod:`batpolicy.protocol.transport` says what ZeroMQ does with them).
"""

from __future__ import annotations

import argparse
import re

from batpolicy.transport_defaults import DEFAULT_MAX_MESSAGE, HEARTBEAT_TIMEOUT_S

__all__ = ["add_transport_options", "heartbeat", "message_size"]

_UNITS = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30}


def message_size(text: str) -> int:
    """A size in bytes: a positive integer, optionally with K, M or G (binary units).

    >>> message_size("64M"), message_size("1000"), message_size("2GiB")
    (67108864, 1000, 2147483648)
    """
    found = re.fullmatch(r"\s*([0-9]+)\s*([KMG]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if found is None or int(found.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"expected a positive size such as 64M or 1000000, "
                                         f"got {text!r}")
    return int(found.group(1)) * _UNITS[found.group(2).upper()]


def heartbeat(text: str) -> float | None:
    """Seconds of silence after which the peer is gone (0: no heartbeats).

    >>> heartbeat("10"), heartbeat("0")
    (10.0, None)
    """
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value or None


def add_transport_options(parser: argparse.ArgumentParser, peer: str) -> None:
    """``--max-message-size`` and ``--heartbeat`` on ``parser``; ``peer`` names the other end."""
    parser.add_argument("--max-message-size", type=message_size, default=DEFAULT_MAX_MESSAGE,
                        metavar="SIZE", help="refuse (unread) any message from the "
                        f"{peer} larger than SIZE bytes, e.g. 512M (default: "
                        f"{DEFAULT_MAX_MESSAGE // 2 ** 20}M)")
    parser.add_argument("--heartbeat", type=heartbeat, default=HEARTBEAT_TIMEOUT_S,
                        metavar="S", help=f"end the run when the {peer} stops answering "
                        f"ZeroMQ heartbeats for S seconds (default: {HEARTBEAT_TIMEOUT_S:g}; "
                        "0 disables them; a closed connection ends it at once anyway)")

"""SimGrid's units: speeds (flop/s), bandwidths (byte/s) and times (s) as in platform files.

The syntax SimGrid 3.32 reads in ``speed``, ``bandwidth``/``bw`` and ``latency``/``lat``
attributes (``"1Gf"``, ``"125MBps"``, ``"1Gbps"``, ``"50us"``); also used for the
properties our generators write and for the options of ``batpolicy platform``.
"""

from __future__ import annotations

import re

__all__ = ["parse_bandwidth", "parse_speed", "parse_time"]

_SI = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
       "Z": 1e21, "Y": 1e24}
_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_SPEED = re.compile(_NUMBER + r"\s*([kMGTPEZY]?)(f|flops)?$")
_BANDWIDTH = re.compile(_NUMBER + r"\s*(k|[kMGTPEZY]?)(i?)(Bps|bps)?$")
_TIME = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12,
         "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_TIME_RE = re.compile(_NUMBER + r"\s*(s|ms|us|ns|ps|m|h|d|w)?$")


def parse_speed(text: str) -> float:
    """A SimGrid speed in flop/s.

    >>> parse_speed("286.087kf"), parse_speed("16.673E9flops"), parse_speed("0")
    (286087.0, 16673000000.0, 0.0)
    """
    match = _SPEED.match(text.strip())
    if match is None:
        raise ValueError(f"not a SimGrid speed: {text!r} (e.g. '1Gf', '286.087kf')")
    return float(match.group(1)) * _SI[match.group(2)]


def parse_bandwidth(text: str) -> float:
    """A SimGrid bandwidth in byte/s (``bps`` is bits, ``Ki``/``Mi``... binary).

    >>> parse_bandwidth("125MBps"), parse_bandwidth("8kbps"), parse_bandwidth("1KiBps")
    (125000000.0, 1000.0, 1024.0)
    """
    match = _BANDWIDTH.match(text.strip().replace("Ki", "ki"))
    if match is None:
        raise ValueError(f"not a SimGrid bandwidth: {text!r} (e.g. '125MBps')")
    value, prefix, binary, unit = match.groups()
    prefix = "k" if prefix == "ki" else prefix
    scale = 1024.0 ** ("kMGTPEZY".index(prefix) + 1) if binary and prefix else _SI[prefix]
    return float(value) * scale / (8.0 if unit == "bps" else 1.0)


def parse_time(text: str) -> float:
    """A SimGrid latency in seconds.

    >>> parse_time("2s"), parse_time("0"), parse_time("1ms")
    (2.0, 0.0, 0.001)
    """
    match = _TIME_RE.match(text.strip())
    if match is None:
        raise ValueError(f"not a SimGrid time: {text!r} (e.g. '50us')")
    return float(match.group(1)) * _TIME[match.group(2) or ""]

"""JSON numbers as Batsim 4.2.1 reads them: rapidjson's normal-precision parse.

Batsim parses its workloads and external events with ``rapidjson::Document::Parse``
and the default flags (``src/workload.cpp``, ``src/events.cpp``), so a number with a
fraction or an exponent goes through ``GenericReader::ParseNumber`` without
``kParseFullPrecisionFlag`` (``rapidjson/reader.h``) and
``internal::StrtodNormalPrecision`` (``rapidjson/internal/strtod.h``):

- the integer part accumulates in a 32-bit, then a 64-bit unsigned integer (a double,
  ``d = d * 10 + digit``, past 2^64);
- the fraction's digits join that integer while it stays below 2^53, then the rest join
  the double ``d = d * 10.0 + digit`` up to 17 significant digits (later ones dropped);
- the exponent adds to the count of fraction digits, ``p``, and the result is
  ``d / 10^-p`` (or ``d * 10^p``) with ``internal::Pow10``'s correctly rounded powers.

Each step rounds, so a number of 16 or 17 significant digits (Python's ``repr`` writes
such numbers) can come out a few ulps from the correctly rounded value Python's
``float`` gives: e.g. ``9933923076.923079`` is ``9933923076.92308`` to Batsim. A
parallel task's flops or bytes that far apart change its rate by an ulp, which can
reorder events. Up to 15 significant digits and no exponent, every step is exact but
the last division, which rounds correctly: the result is Python's.
"""

from __future__ import annotations

__all__ = ["rapidjson_float"]

# the integer part's guards, (bound // 10, largest last digit): unsigned 32 and 64 bits,
# or 2^31 and 2^63 for a negative number
_GUARDS = {False: ((429496729, 5), (0x1999999999999999, 5)),
           True: ((214748364, 8), (0x0CCCCCCCCCCCCCCC, 8))}
_FAST_PATH = (1 << 53) - 1  # 2^53 - 1: the fraction joins the integer up to it


def rapidjson_float(text: str) -> float:
    """The double rapidjson's default ``Parse`` gives for the JSON number ``text``.

    ``text`` is a valid JSON number with a fraction or an exponent (what
    :func:`json.loads` hands its ``parse_float`` hook). Runtime: O(len(text)).
    """
    body = text[1:] if text[0] == "-" else text
    if len(body) <= 16 and "e" not in body and "E" not in body:
        return float(text)  # <= 15 digits and a point: exact steps, one rounding
    minus = body is not text
    n = len(body)
    pos = 0
    # integer part: zero / (digit1-9 *DIGIT), in an unsigned int, then a uint64_t
    value = 0  # the integer accumulated (i, then i64)
    digits = 0  # significandDigit
    double: float | None = None  # d, once the parse moved to a double
    if body[0] != "0":
        value = ord(body[0]) - 48
        pos = 1
        wide = False
        (guard32, last32), (guard64, last64) = _GUARDS[minus]
        while pos < n and body[pos].isdigit():
            digit = ord(body[pos]) - 48
            if not wide and value >= guard32 and (value != guard32 or digit > last32):
                wide = True
            if wide and value >= guard64 and (value != guard64 or digit > last64):
                double = float(value)
                break
            value = value * 10 + digit
            digits += 1
            pos += 1
    else:
        pos = 1
    if double is not None:  # past 2^64: the remaining integer digits join the double
        while pos < n and body[pos].isdigit():
            double = double * 10 + (ord(body[pos]) - 48)
            pos += 1
    exp_frac = 0
    if pos < n and body[pos] == ".":
        pos += 1
        if double is None:
            while pos < n and body[pos].isdigit():
                if value > _FAST_PATH:
                    break
                value = value * 10 + (ord(body[pos]) - 48)
                exp_frac -= 1
                if value != 0:
                    digits += 1
                pos += 1
            double = float(value)  # static_cast<double>(i64): rounds to nearest even
        while pos < n and body[pos].isdigit():
            if digits < 17:
                double = double * 10.0 + (ord(body[pos]) - 48)
                exp_frac -= 1
                if double > 0.0:
                    digits += 1
            pos += 1
    exp = 0
    if pos < n and body[pos] in "eE":
        if double is None:
            double = float(value)
        pos += 1
        negative = body[pos] == "-"
        if body[pos] in "+-":
            pos += 1
        exp = int(body[pos:])
        if negative:
            exp = -exp
    if double is None:  # an integer (json.loads does not call the hook for those)
        return float(-value if minus else value)
    p = exp + exp_frac
    if p < -308:  # StrtodNormalPrecision: two steps, so that Pow10 stays > 0
        double = _fast_path(double, -308)
        p += 308
    double = _fast_path(double, p)
    return -double if minus else double


def _fast_path(significand: float, exp: int) -> float:
    """``internal::FastPath``: ``significand`` times or over an exact-table power of ten."""
    if exp < -308:
        return 0.0
    if exp >= 0:
        return significand * float(10**exp) if exp <= 308 else significand * float("inf")
    return significand / float(10**-exp)

"""The survey pass of a streamed SWF trace, vectorised: numpy over blocks of the file.

:func:`~batpolicy.io.swf_stream.stream_swf` reads a trace twice (survey, then the jobs as
they are submitted); the survey's Python loop (:func:`~batpolicy.io.swf.job_rows`, a
``str.split`` and ten conversions a line) cost KTH's streamed ``simulate`` 5.6 % more
instructions than reading the trace once. :func:`fast_survey` gathers the same aggregates
with numpy over 256 KiB blocks of bytes, for the traces it can prove well-formed:

- a line is a comment when its first non-blank byte (space, tab) is ``;`` (the header is
  read from those lines as :func:`~batpolicy.io.swf.job_rows` reads it);
- every other byte is a space, tab, newline, digit, ``.`` or ``-``; every non-blank line
  has 18 tokens; every token is ``-?[0-9.]+`` with at least one digit and at most one dot
  (so Python's ``float`` reads it, and numpy reads the same double);
- the fields read as integers are whole and within 2**53 (job numbers within 0 ..
  2**32 - 1), the others finite; no job number twice; submit times never decrease.

Anything else (a carriage return, an exponent, a malformed line, a duplicate, a trace
out of order, a window) returns False: the caller runs the Python survey, which raises
the errors with their file, line and field, or counts what ``lenient`` skips. The
aggregates (counts, profiles in Batsim's order with their first job, origin, widest job,
``skipped`` with its keys in order of first occurrence) are those of the Python survey;
``tests/io/test_swf_survey.py`` compares both on generated traces.

Memory: one block's arrays (a few MiB) and the job numbers met (a bitmap), plus the
rows of the last submit time of a block, carried to the next (their order needs the
rows of the same submit time that follow).
"""

from __future__ import annotations

import array
import gzip
from itertools import chain, repeat
from typing import TYPE_CHECKING, Any

import numpy as np
from pyroaring import BitMap

from batpolicy.errors import InputError
from batpolicy.io.swf import _HEADER, delay_profile_name

if TYPE_CHECKING:
    from pathlib import Path

    from batpolicy.io.swf import Scan

__all__ = ["fast_rows", "fast_survey"]

#: Bytes parsed at a time: a block's arrays take about 20 times its size (5 MiB for
#: 256 KiB); the calls a block makes cost a few hundred thousand instructions whatever
#: its size (KTH's parse: 17 M instructions fewer a pass than with 64 KiB blocks).
_BLOCK = 1 << 18

#: The ten fields read (job_rows'), as columns of _parse's array.
_USED = np.array([0, 1, 3, 4, 7, 8, 10, 11, 14, 15])
_JOB, _SUBMIT, _RUN, _ALLOC, _REQ, _REQ_TIME, _STATUS = 0, 1, 2, 3, 4, 5, 6
_INT_COLUMNS = [0, 3, 4, 6, 7, 8, 9]
_POW10 = 10.0 ** np.arange(16)
_POW10_INT = 10 ** np.arange(17, dtype=np.int64)
#: Drop reasons in job_rows' order of tests, with the keep_ counts' names.
_DROPS = ("non_positive_runtime", "non_positive_res", "status_filtered")


def _submission_order(job: np.ndarray, submit: np.ndarray) -> np.ndarray:
    """The rows' order in Batsim's submission order: by submit time, then by full id string.

    The ids share their workload prefix, so the order is that of the job numbers' decimal
    strings: ``np.lexsort((job.astype(np.bytes_), submit))``, without making strings.
    Job numbers are whole, in 0 .. 2**32 - 1 (proven by the survey); their strings
    compare as the numbers padded on the right with zeros to the same number of digits,
    the shorter string first on a tie (``"1" < "10" < "100" < "11" < "9"``). Making the
    strings was 3.9 % of the instructions of 40,000 RICC jobs' ``simulate``.
    Runtime complexity: O(n log n), all in numpy.

    >>> job = np.array([9, 10, 1, 100, 11, 0], dtype=np.int64)
    >>> job[_submission_order(job, np.zeros(6))].tolist()
    [0, 1, 10, 100, 11, 9]
    """
    digits = np.maximum(np.searchsorted(_POW10_INT[:11], job, side="right"), 1)
    padded = job * _POW10_INT[int(digits.max(initial=1)) - digits]
    return np.lexsort((digits, padded, submit))


class _Refused(Exception):
    """A block the fast path cannot prove well-formed: the Python survey decides."""


def _blocks(path: Path) -> Any:
    """The file's bytes (gunzipped) in blocks that end at a line's end."""
    with path.open("rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        binary = gzip.GzipFile(fileobj=raw) if gzipped else raw
        rest = b""
        while block := binary.read(_BLOCK):
            cut = block.rfind(b"\n")
            if cut < 0:
                rest += block
                continue
            yield rest + block[:cut + 1]
            rest = block[cut + 1:]
        if rest:
            yield rest + b"\n"


def _parse(block: bytes, header: dict[str, int]) -> np.ndarray:
    """The ten fields read of the job lines of ``block``, an (n, 10) float array.

    Its columns are :data:`~batpolicy.io.swf._USED`'s; the header lines are read too.
    """
    if b";" in block:  # the header: Python over this block's lines (the first, mostly)
        kept = []
        for line in block.split(b"\n"):
            if line.lstrip(b" \t")[:1] == b";":
                h = _HEADER.match(line.decode("latin-1").strip())
                if h:
                    header[h.group(1)] = int(h.group(2))
                line = b""
            kept.append(line)
        block = b"\n".join(kept)
    b = np.frombuffer(block, np.uint8)
    ws = b <= 32
    # Space, tab and newline only: no other byte below 33, none above 127 (latin-1
    # text: str.split takes \x1c-\x1f, \x85 and \xa0 for whitespace too).
    if np.any(ws & (b != 32) & ((b < 9) | (b > 10))) or int(b.max(initial=0)) > 127:
        raise _Refused
    # Where a token starts or ends (one pass over the bytes for both): the first byte
    # of each token, then the one after its last (a block ends with a newline).
    bounds = np.flatnonzero(ws[1:] != ws[:-1]) + 1
    if b.size and not ws[0]:
        bounds = np.concatenate(((0,), bounds))
    if not bounds.size:
        return np.empty((0, 10))
    # tokens before each newline (bounds up to it: two a token): 0 or 18 a line
    per_line = np.diff(np.searchsorted(bounds, np.flatnonzero(b == 10), "right") // 2,
                       prepend=0)
    if np.any((per_line != 0) & (per_line != 18)):
        raise _Refused
    bounds = bounds.reshape(-1, 36)  # a line's 18 (start, end + 1) pairs
    s = bounds[:, 2 * _USED].ravel()
    e = bounds[:, 2 * _USED + 1].ravel() - 1
    values = _numbers(b, s, e).reshape(-1, 10)
    ints = values[:, _INT_COLUMNS]
    if not np.all(ints == np.floor(ints)):
        raise _Refused
    return values


def _numbers(b: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The numbers of the tokens ``b[s:e + 1]``, as Python's ``float`` reads them.

    A token is ``-?[0-9.]+`` with 1 to 15 digits and at most one dot, else
    :class:`_Refused`. Those of digits only (after a dash) are read 8 bytes at a time
    (:func:`_eight_digits`); the others by :func:`_digits_by_position`.
    """
    negative = b[s] == 45
    n = e - s + 1 - negative  # bytes after the dash
    # Each token's last 16 bytes as two 8-byte words (unaligned reads; 16 bytes of
    # padding before the block so that every read starts inside the array).
    padded = np.concatenate((np.zeros(16, np.uint8), b, np.zeros(8, np.uint8)))
    words = np.ndarray((padded.size - 7,), np.dtype("<u8"), padded, 0, (1,))
    low_n = np.minimum(n, 8)
    low, plain = _eight_digits(words[e + 9], low_n)
    values = low.astype(np.float64)
    if int(n.max()) > 8:
        high, high_plain = _eight_digits(words[e + 1], np.clip(n - 8, 0, 8))
        plain &= high_plain & (n <= 15)
        values += high.astype(np.float64) * 1e8  # both below 2**53: exact
    plain &= n >= 1
    if not plain.all():
        other = np.flatnonzero(~plain)
        values[other] = _digits_by_position(b, s[other], e[other])
    values[negative] = -values[negative]
    return values


#: Per count k of a word's bytes kept (0-8): the mask of its last k bytes (the high
#: ones: little-endian), and ASCII '0' in the others (leading zeros).
_KEEP = np.array([((1 << 64) - 1) ^ ((1 << (64 - 8 * k)) - 1) for k in range(9)], np.uint64)
_ZEROS = np.array([0x3030303030303030 & ~int(keep) for keep in _KEEP], np.uint64)
_ASCII0 = np.uint64(0x3030303030303030)
_HIGH_NIBBLES = np.uint64(0xF0F0F0F0F0F0F0F0)


def _eight_digits(word: np.ndarray, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The integers in the last ``kept`` bytes of 8-byte words, and whether all are digits.

    A word's first byte is its most significant digit: SWAR, a word's 8 digits in 3 steps.
    """
    word = (word & _KEEP[kept]) | _ZEROS[kept]
    digits = ((word & _HIGH_NIBBLES) == _ASCII0) & (
        ((word + np.uint64(0x0606060606060606)) & _HIGH_NIBBLES) == _ASCII0)
    v = word - _ASCII0  # 0-9 in each byte
    v = (v * np.uint64(10) + (v >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    v = (v * np.uint64(100) + (v >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    v = (v * np.uint64(10000) + (v >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
    return v, digits


def _digits_by_position(b: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The numbers of the tokens ``b[s:e + 1]`` whatever their form, without their sign.

    A loop over byte positions from each token's end. An integer below 10**15 over a
    power of ten below 10**16: both exact, so the one division rounds as Python's
    ``float()`` of the text does (Clinger's fast path).
    """
    length = e - s + 1
    if int(length.max()) > 17:
        raise _Refused
    mantissa = np.zeros(e.size, np.int64)
    digits = np.zeros(e.size, np.int64)
    dots = np.zeros(e.size, np.int64)
    after_dot = np.zeros(e.size, np.int64)
    live = np.arange(e.size)
    for j in range(int(length.max())):  # the j-th byte from each token's end
        if j:
            live = live[length[live] > j]
        c = b[e[live] - j].astype(np.int64)
        digit = (c >= 48) & (c <= 57)
        if not np.all(digit):
            dot = c == 46
            dash = c == 45
            if not np.all(digit | dot | dash) or np.any(dash & (length[live] != j + 1)):
                raise _Refused
            if np.any(dot):
                dotted = live[dot]
                dots[dotted] += 1
                after_dot[dotted] = digits[dotted]
            c = np.where(digit, c - 48, 0)
            at = live[digit]
            mantissa[at] += c[digit] * _POW10_INT[digits[at]]
            digits[at] += 1
        else:
            mantissa[live] += (c - 48) * _POW10_INT[digits[live]]
            digits[live] += 1
    if np.any(digits == 0) or np.any(digits > 15) or np.any(dots > 1):
        raise _Refused
    return mantissa / _POW10[after_dot]


class _State:
    """What the survey carries from one block to the next."""

    def __init__(self, name: str, status_filter: set[int] | None,
                 allocated_first: bool) -> None:
        self.prefix = f"{name}!"
        self.status = (None if status_filter is None
                       else np.array(sorted(status_filter, key=float), dtype=float))
        self.allocated_first = allocated_first
        self.seen = BitMap()
        self.last = -np.inf
        self.first_submit = np.inf
        self.rows_before = 0
        self.firsts: dict[str, int] = {}
        self.counts: dict[str, int] = {}

    def take(self, rows: np.ndarray, survey: Any) -> None:
        """Survey ``rows``: every row of their submit times (file order), into ``survey``.

        ``survey`` is :mod:`~batpolicy.io.swf_stream`'s ``_Survey``, not imported: that
        module imports this one.
        """
        if not rows.shape[0]:
            return
        job = rows[:, _JOB]
        if np.any(job < 0) or np.any(job >= 4294967296.0):
            raise _Refused
        jobs = BitMap(array.array("I", job.astype(np.uint32).tobytes()))
        if len(jobs) != job.size or self.seen.intersection_cardinality(jobs):
            raise _Refused
        self.seen |= jobs
        submit = rows[:, _SUBMIT]
        if submit[0] < self.last or np.any(submit[1:] < submit[:-1]):
            raise _Refused
        self.last = submit[-1]
        if self.first_submit == np.inf:
            self.first_submit = float(submit[0])
        run, req_time = rows[:, _RUN], rows[:, _REQ_TIME]
        alloc, req = rows[:, _ALLOC], rows[:, _REQ]
        first, second = (alloc, req) if self.allocated_first else (req, alloc)
        runs_ok = run > 0
        fallback = first <= 0
        res = np.where(fallback, second, first)
        res_ok = res > 0
        drops = [~runs_ok, runs_ok & ~res_ok]
        kept = runs_ok & res_ok
        if self.status is not None:
            filtered = kept & ~np.isin(rows[:, _STATUS], self.status)
            drops.append(filtered)
            kept &= ~filtered
        for reason, mask in zip(_DROPS, drops, strict=False):
            where = np.flatnonzero(mask)
            if where.size:
                self.firsts.setdefault(reason, self.rows_before + int(where[0]))
                self.counts[reason] = self.counts.get(reason, 0) + where.size
        self.rows_before += rows.shape[0]
        if not np.any(kept):
            return
        submit, run, res, req_time = submit[kept], run[kept], res[kept], req_time[kept]
        fallback, job = fallback[kept], job[kept].astype(np.int64)
        from_run = req_time <= 0
        walltime = np.where(from_run, run, req_time)
        if submit.size > 1 and np.any(submit[1:] == submit[:-1]):
            order = _submission_order(job, submit)
            submit, run, res, walltime, job = (submit[order], run[order], res[order],
                                               walltime[order], job[order])
        if not survey.count:
            survey.origin = float(submit[0])
            survey.raw_example = {"id": f"{self.prefix}{int(job[0])}", "subtime": 0.0,
                                  "res": int(res[0]), "walltime": float(walltime[0]),
                                  "swf": {}}
        survey.count += int(submit.size)
        survey.max_res = max(survey.max_res, int(res.max()))
        survey.from_fallback += int(np.count_nonzero(fallback))
        survey.from_run += int(np.count_nonzero(from_run))
        survey.reach += int(np.count_nonzero(run >= walltime))
        distinct, at = np.unique(run, return_index=True)
        at_order = np.argsort(at, kind="stable")
        names, profiles, examples = survey.names, survey.profiles, survey.examples
        prefix = self.prefix
        for value, i in zip(distinct[at_order].tolist(), at[at_order].tolist(), strict=True):
            if value not in names:
                pname = names[value] = delay_profile_name(value)
                profiles[pname] = {"type": "delay",
                                   "delay": int(value) if value.is_integer() else value}
                examples[pname] = f"{prefix}{int(job[i])}"


def fast_survey(path: Path, name: str, status_filter: set[int] | None,
                allocated_first: bool, survey: Any, scan: Scan) -> bool:
    """Fill ``survey`` and ``scan`` as the Python survey (no window, no cut) would.

    False when the trace is not one the fast path proves well-formed and in order (or
    cannot be read): ``survey`` and ``scan`` are then to be thrown away. O(bytes).
    """
    state = _State(name, status_filter, allocated_first)
    carried = np.empty((0, 10))
    try:
        for block in _blocks(path):
            rows = _parse(block, scan.header)
            if not rows.shape[0]:
                continue
            if carried.shape[0]:
                rows = np.concatenate((carried, rows))
            tail = int(np.searchsorted(rows[:, _SUBMIT], rows[-1, _SUBMIT], side="left"))
            if np.any(rows[1:, _SUBMIT] < rows[:-1, _SUBMIT]):
                return False
            state.take(rows[:tail], survey)
            carried = rows[tail:].copy()
        state.take(carried, survey)
    except (_Refused, OSError, EOFError, gzip.BadGzipFile):
        return False
    if state.rows_before:
        scan.first_submit = state.first_submit
    for reason in sorted(state.firsts, key=state.firsts.__getitem__):
        scan.skipped[reason] += state.counts[reason]
    return True


def _ordered_rows(rows: np.ndarray, prefix: str, status: np.ndarray | None,
                  allocated_first: bool) -> Any:
    """The kept rows of ``rows`` (whole submit times), as job_rows' tuples in Batsim's order.

    The columns are made Python lists in C, then zipped.
    """
    run, alloc, req = rows[:, _RUN], rows[:, _ALLOC], rows[:, _REQ]
    first, second = (alloc, req) if allocated_first else (req, alloc)
    fallback = first <= 0
    res = np.where(fallback, second, first)
    kept = (run > 0) & (res > 0)
    if status is not None:
        kept &= np.isin(rows[:, _STATUS], status)
    rows, res, fallback = rows[kept], res[kept], fallback[kept]
    job = rows[:, _JOB].astype(np.int64)
    submit = rows[:, _SUBMIT]
    if submit.size > 1 and np.any(submit[1:] == submit[:-1]):
        order = _submission_order(job, submit)
        rows, res, fallback, job = rows[order], res[order], fallback[order], job[order]
    run, req_time = rows[:, _RUN], rows[:, _REQ_TIME]
    from_run = req_time <= 0
    walltime = np.where(from_run, run, req_time)
    status_user_queue_partition = rows[:, 6:10].astype(np.int64).T.tolist()
    return zip(rows[:, _SUBMIT].tolist(), [f"{prefix}{j}" for j in job.tolist()],
               run.tolist(), res.astype(np.int64).tolist(), walltime.tolist(),
               fallback.tolist(), from_run.tolist(), *status_user_queue_partition,
               repeat(None))


def fast_rows(path: Path, name: str, status_filter: set[int] | None,
              allocated_first: bool) -> Any:
    """The rows :func:`~batpolicy.io.swf.job_rows` keeps, in Batsim's order.

    In ``_grouped``'s order, parsed as :func:`fast_survey` parses: for a trace
    :func:`fast_survey` took. Rows of one block at a time. O(bytes).
    """
    # chained in C: no Python generator resumed per row
    return chain.from_iterable(_row_blocks(path, name, status_filter, allocated_first))


def _row_blocks(path: Path, name: str, status_filter: set[int] | None,
                allocated_first: bool) -> Any:
    """:func:`fast_rows`' rows, an iterator of them per block (whole submit times)."""
    state = _State(name, status_filter, allocated_first)
    header: dict[str, int] = {}
    carried = np.empty((0, 10))
    try:
        for block in _blocks(path):
            rows = _parse(block, header)
            if not rows.shape[0]:
                continue
            if carried.shape[0]:
                rows = np.concatenate((carried, rows))
            tail = int(np.searchsorted(rows[:, _SUBMIT], rows[-1, _SUBMIT], side="left"))
            if tail:
                yield _ordered_rows(rows[:tail], state.prefix, state.status, allocated_first)
            carried = rows[tail:].copy()
        if carried.shape[0]:
            yield _ordered_rows(carried, state.prefix, state.status, allocated_first)
    except (_Refused, OSError, EOFError, gzip.BadGzipFile):
        raise InputError("the trace changed since its survey: run again",
                         path=str(path)) from None

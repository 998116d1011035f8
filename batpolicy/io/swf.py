"""Standard Workload Format traces (Parallel Workloads Archive), plain or gzipped.

Each job line has 18 whitespace-separated fields (see :data:`SWF_FIELDS`); ``;`` starts a
header or comment line. A job becomes a Batsim job ``<name>!<job number>`` with

- ``res`` = requested processors (field 8), or allocated processors (field 5) when the
  request is missing (``-1``) or not positive; with ``size="allocated"`` the other way
  round (field 5 first, as the Parallel Workloads Archive's own analyses and the papers
  reproduced in ``bench/`` use it: the processors the job really held);
- a ``delay`` profile of the run time (field 4): one profile per distinct run time,
  named ``delay_<runtime>``, ``{"type": "delay", "delay": runtime}``. Unlike Batsim's
  ``tools/swf_to_batsim_workload_delay.py`` (Batsim's protocol: its tools) the delay is the run
  time itself, not rounded up to the next whole second plus one;
- ``walltime`` = requested time (field 9), or the run time when the request is missing
  or not positive. A job whose run time is at least its walltime is kept; Batsim then
  stops it at its walltime (COMPLETED_WALLTIME_REACHED);
- ``raw["swf"]``: the fields a policy or an analysis may want and Batsim has no place
  for: ``status``, ``user``, ``queue``, ``partition``, each left out when the trace says
  ``-1``. To keep 448k jobs light (about 460 bytes a job instead of 670), jobs with the
  same four values **share one dict**: treat it as read-only (copy it to change it).
  With ``keep_wait=True`` it also holds ``wait`` (field 3, when not ``-1``), the wait in
  the log's own schedule, so that the log's utilisation can be computed afterwards
  (:func:`batpolicy.io.transform.weeks`); each job then has its own dict.
  Group, executable and memory fields are not kept.

Cleaning, in this order; each dropped job is counted in ``Workload.skipped`` under its
reason: ``malformed_line`` (only with ``lenient``), ``duplicate_id`` (same job number
twice, only with ``lenient``), ``non_positive_runtime``, ``non_positive_res`` (neither
field 8 nor field 5 positive), ``status_filtered`` (``status_filter`` given and field 11
not in it), ``before_start`` / ``after_end`` (window ``start <= submit - first < end``,
where ``first`` is the trace's earliest submit time over all job lines), then
``beyond_max_jobs`` (``max_jobs`` keeps the first N remaining jobs in submission order).
Keys starting with ``kept_`` count jobs that were **kept** but changed or worth knowing
about: ``kept_res_from_allocated`` (``kept_res_from_requested`` with
``size="allocated"``), ``kept_walltime_from_runtime``,
``kept_reaches_walltime`` (run time >= walltime, the walltime fallback included:
Batsim stops such a job at its walltime, i.e. at the same instant, but reports it
COMPLETED_WALLTIME_REACHED) and ``kept_larger_than_platform`` (jobs wider than
``nb_res``: kept, the scheduler rejects them as batsched does). So the number of dropped
jobs is ``sum(n for k, n in skipped.items() if not k.startswith("kept_"))``.

``nb_res`` comes from the header: ``; MaxProcs:`` wins over ``; MaxNodes:``, because the
jobs' processor fields (5 and 8) count processors, so MaxProcs is the platform size they
are consistent with (RICC: MaxProcs 8192, MaxNodes 1024, jobs of 128 procs). MaxNodes is
used only when MaxProcs is absent (synthetic Lublin traces); with neither, ``nb_res`` is
the widest kept job (as Batsim's converter does) and a warning is logged.

Times: submit times are shifted so that the first kept job submits at 0
(``shift_to_zero``); traces not sorted by submit time are sorted in Batsim's order
(subtime, then full id as a string).

Quirks of the shared traces (``data/README.md``), handled as follows:

- every request missing (NASA iPSC, synthetic Lublin: fields 8 and 9 are -1): ``res``
  from field 5, ``walltime`` = run time (counted under ``kept_res_from_allocated`` and
  ``kept_walltime_from_runtime``);
- CEA Curie, allocated procs <= 0 for 10,912 jobs and requested procs <= 0 for 84,604:
  the requested count is used when positive, else the allocated one; jobs with neither
  are dropped (``non_positive_res``); 3 jobs without requested time get their run time;
- RICC, 2 jobs without requested procs/time: same fallbacks; 448k jobs in about 2 s;
- LCG, no requested procs, every job 1 proc, no MaxNodes: ``res`` from field 5,
  ``nb_res`` from MaxProcs;
- HPC2N excerpt, 25 jobs with run time -1: dropped (``non_positive_runtime``); the
  whitespace-only last line is skipped like any blank line; the header describes the
  full log, and only MaxProcs/MaxNodes are read from it (MaxJobs, EndTime are ignored);
- ALCF Theta, minimal header and absolute epoch submit times: shifted to 0 as any trace
  (only the difference to the first job matters; float64 holds epoch seconds exactly);
- ALCF Theta 2023, 2,726 submit times out of order: the jobs are sorted; 8 jobs wider
  than MaxProcs 4360 are kept and counted under ``kept_larger_than_platform``;
- synthetic Lublin, MaxNodes only: ``nb_res`` = MaxNodes (256);
- KTH SP2: clean, read as is.

A broken line (not 18 fields; a non-numeric, infinite or, where SWF has an integer,
fractional value in one of the ten fields read) is an :class:`InputError` naming the
file, the line number and the field; with ``lenient=True`` it is skipped and counted.
The eight fields not read (wait, average CPU time, used and requested memory, group,
executable, preceding job, think time) are not checked: a tight loop over
``str.split`` converts only what it uses (RICC, 448k jobs, about 2 s).
"""

from __future__ import annotations

import gc
import gzip
import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

from pyroaring import BitMap

from batpolicy.errors import InputError
from batpolicy.io.workload import JobSpec, Workload

__all__ = ["SWF_FIELDS", "SIZE_FIELDS", "read_swf", "delay_profile_name"]

log = logging.getLogger(__name__)

#: The 18 SWF fields, in order (field 1 is ``job_number``).
SWF_FIELDS: tuple[str, ...] = (
    "job_number", "submit_time", "wait_time", "run_time", "allocated_processors",
    "average_cpu_time", "used_memory", "requested_processors", "requested_time",
    "requested_memory", "status", "user_id", "group_id", "executable_id", "queue_id",
    "partition_id", "preceding_job", "think_time",
)
_INTEGER_FIELDS = frozenset({0, 4, 7, 10, 11, 12, 13, 14, 15, 16})
#: Fields read: job, submit, run, alloc, req procs, req time, status, user, queue, partition.
_USED = (0, 1, 3, 4, 7, 8, 10, 11, 14, 15)
_SWF_KEYS = ("status", "user", "queue", "partition")
#: ``size`` choices of :func:`read_swf`: which processor count a job's ``res`` is read from first.
SIZE_FIELDS = ("requested", "allocated")
_HEADER = re.compile(r"^;\s*(MaxProcs|MaxNodes)\s*:\s*(-?\d+)\s*$")


def delay_profile_name(runtime: float) -> str:
    """Name of the delay profile of a run time: ``delay_<runtime>``, integers without ``.0``.

    >>> delay_profile_name(100.0), delay_profile_name(12.5)
    ('delay_100', 'delay_12.5')
    """
    return f"delay_{int(runtime)}" if runtime.is_integer() else f"delay_{runtime!r}"


#: Bytes read (and gunzipped) at a time: a few thousand lines.
_BLOCK = 1 << 18


def _read_lines(path: Path) -> Iterator[str]:
    """The trace's lines, read (and gunzipped) as they are asked for: the text is never held.

    An unreadable or truncated file is an :class:`InputError` naming it.
    """
    try:
        with path.open("rb") as raw:
            gzipped = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            binary = gzip.GzipFile(fileobj=raw) if gzipped else raw
            # Read by blocks and split in C: iterating a text wrapper over GzipFile runs
            # its Python ``closed`` property once a line. PWA headers may hold non-ASCII
            # notes; latin-1 never fails and keeps digits as they are.
            rest = ""
            while block := binary.read(_BLOCK):
                lines = (rest + block.decode("latin-1")).split("\n")
                rest = lines.pop()
                yield from lines
            if rest:
                yield rest
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"cannot read the trace: {exc}", path=str(path)) from None


class _BadLine(Exception):
    """A job line that cannot be read: ``field`` names the culprit."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _as_int(token: str, index: int) -> int:
    """Integer field ``index``: accepts ``4`` and ``4.0``, refuses ``4.5`` and ``x``.

    >>> _as_int("4.0", 4)
    4
    >>> try:
    ...     _as_int("4.5", 4)
    ... except _BadLine as bad:
    ...     print(bad.field, bad)
    allocated_processors '4.5' is not an integer
    """
    try:
        return int(token)
    except ValueError:
        value = _as_float(token, index)
        if not value.is_integer():
            raise _BadLine(SWF_FIELDS[index], f"{token!r} is not an integer") from None
        return int(value)


def _as_float(token: str, index: int) -> float:
    """Finite number field ``index``, else :class:`_BadLine` naming the field."""
    try:
        value = float(token)
    except ValueError:
        raise _BadLine(SWF_FIELDS[index], f"{token!r} is not a number") from None
    if not math.isfinite(value):
        raise _BadLine(SWF_FIELDS[index], f"{token!r} is not a finite number")
    return value


def _fields_slow(parts: list[str]) -> tuple[Any, ...]:
    """The used fields of a line the fast path refused, or :class:`_BadLine`.

    The fields read must be numbers (integers where SWF says so); the others are not
    looked at, as on the fast path.

    >>> try:
    ...     _fields_slow(["1", "x"] + ["0"] * 16)
    ... except _BadLine as bad:
    ...     print(bad.field, bad)
    submit_time 'x' is not a number
    """
    if len(parts) != 18:
        raise _BadLine("line", f"{len(parts)} fields, an SWF job line has 18")
    return tuple(_as_int(parts[i], i) if i in _INTEGER_FIELDS else _as_float(parts[i], i)
                 for i in _USED)



def checked_options(path: str | Path, name: str, max_jobs: int | None,
                    size: str) -> tuple[Path, str]:
    """The trace's path and its name in errors, once the reader's options are checked."""
    path = Path(path)
    where = str(path)
    if "!" in name or not name:
        raise InputError(f"workload name {name!r} must be non-empty and hold no '!'", path=where)
    if max_jobs is not None and max_jobs < 0:
        raise InputError(f"max_jobs must be >= 0, got {max_jobs}", path=where)
    if size not in SIZE_FIELDS:
        raise InputError(f"size must be one of {', '.join(SIZE_FIELDS)}, got {size!r}",
                         path=where)
    if not path.is_file():
        raise InputError("cannot read the trace: no such file", path=where)
    return path, where

def read_swf(path: str | Path, name: str = "w0", *, lenient: bool = False,
             status_filter: set[int] | None = None, max_jobs: int | None = None,
             start: float | None = None, end: float | None = None,
             shift_to_zero: bool = True, size: str = "requested",
             keep_wait: bool = False) -> Workload:
    """Read an SWF trace (``.swf`` or ``.swf.gz``) as a Batsim delay workload.

    Runtime complexity: O(n log n) in the number of job lines.
    """
    path, where = checked_options(path, name, max_jobs, size)
    lines = _read_lines(path)

    scan = Scan()
    # Creating ~10^5 containers per second makes the cyclic GC rescan the growing heap
    # over and over (a third of the load time on RICC); nothing here makes cycles.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        rows = list(job_rows(lines, name, where, lenient, status_filter, scan,
                             size == "allocated", keep_wait))
    finally:
        if gc_was_enabled:
            gc.enable()
    skipped, header = scan.skipped, scan.header

    rows = _window(rows, scan.first_submit, start, end, skipped)
    rows.sort(key=itemgetter(0, 1))  # Batsim order: subtime, then full id as a string
    if max_jobs is not None and len(rows) > max_jobs:
        skipped["beyond_max_jobs"] += len(rows) - max_jobs
        del rows[max_jobs:]

    nb_res = platform_size(header, max((r[3] for r in rows), default=None), where)
    gc.disable()
    try:
        jobs, profiles = _build_jobs(rows, shift_to_zero, nb_res, skipped,
                                     "kept_res_from_requested" if size == "allocated"
                                     else "kept_res_from_allocated")
    finally:
        if gc_was_enabled:
            gc.enable()
    log.info("%s: %s", where, kept_summary(len(jobs), skipped))
    return Workload(name, jobs, profiles, nb_res=nb_res, source=where, skipped=skipped)


def kept_summary(kept: int, skipped: Counter[str]) -> str:
    """What the reader kept, dropped (by reason) and adjusted, for the log.

    >>> kept_summary(3, Counter())
    '3 jobs kept, none dropped'
    >>> kept_summary(3, Counter({"non_positive_res": 2, "kept_res_from_allocated": 1}))
    '3 jobs kept, dropped 2 (non_positive_res 2), adjusted: kept_res_from_allocated 1'
    """
    def listed(counts: dict[str, int]) -> str:
        """``reason n, reason n`` in name order."""
        return ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))

    dropped = {k: n for k, n in skipped.items() if n and not k.startswith("kept_")}
    adjusted = {k: n for k, n in skipped.items() if n and k.startswith("kept_")}
    text = f"{kept} jobs kept, " + (f"dropped {sum(dropped.values())} ({listed(dropped)})"
                                    if dropped else "none dropped")
    return text + (f", adjusted: {listed(adjusted)}" if adjusted else "")


class Scan:
    """What one pass over a trace learns besides its job rows.

    ``header``: MaxProcs / MaxNodes as the header says; ``skipped``: the per-line
    cleaning's counts (``Workload.skipped``'s keys); ``first_submit``: the earliest submit
    time over the job lines read (dropped jobs included); ``in_order``: whether those
    lines come by non-decreasing submit time (a trace that can be read as a stream).
    """

    __slots__ = ("header", "skipped", "first_submit", "in_order")

    def __init__(self) -> None:
        self.header: dict[str, int] = {}
        self.skipped: Counter[str] = Counter()
        self.first_submit = math.inf
        self.in_order = True


def job_rows(lines: Iterable[str], name: str, where: str, lenient: bool,
             status_filter: set[int] | None, scan: Scan, allocated_first: bool = False,
             keep_wait: bool = False) -> Iterator[tuple[Any, ...]]:
    """The rows of the jobs that pass the per-job cleaning, in file order, as read.

    A row is ``(submit, full id, run, res, walltime, res_from_fallback, walltime_from_run,
    status, user, queue, partition, wait)``: plain tuples, no per-job objects yet
    (``wait`` is None unless ``keep_wait``). ``scan`` gathers the rest (:class:`Scan`).
    Job numbers already met are a bitmap (numbers outside 0 .. 2**32 - 1: a set), so
    that a pass holds no per-job object.
    """
    header, skipped = scan.header, scan.skipped
    seen = BitMap()
    seen_others: set[int] = set()
    first_submit = math.inf
    last_submit = -math.inf
    isfinite = math.isfinite
    prefix = f"{name}!"
    for lineno, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        if parts[0][0] == ";":
            m = _HEADER.match(line.strip())
            if m:
                header[m.group(1)] = int(m.group(2))
            continue
        try:
            if len(parts) != 18:
                raise ValueError
            job = int(parts[0])
            submit = float(parts[1])
            run = float(parts[3])
            alloc = int(parts[4])
            req = int(parts[7])
            req_time = float(parts[8])
            status = int(parts[10])
            user = int(parts[11])
            queue = int(parts[14])
            partition = int(parts[15])
            if not (isfinite(submit) and isfinite(run) and isfinite(req_time)):
                raise ValueError
            wait = float(parts[2]) if keep_wait else None
            if wait is not None and not isfinite(wait):
                raise ValueError
        except ValueError:
            try:
                (job, submit, run, alloc, req, req_time, status, user, queue,
                 partition) = _fields_slow(parts)
                wait = _as_float(parts[2], 2) if keep_wait else None
            except _BadLine as bad:
                if not lenient:
                    raise InputError(str(bad), path=where, line=lineno, field=bad.field) from None
                skipped["malformed_line"] += 1
                log.debug("%s:%d: skipping malformed line (%s: %s)", where, lineno, bad.field, bad)
                continue
        met = seen if 0 <= job < 4294967296 else seen_others
        if job in met:
            if not lenient:
                raise InputError(f"job number {job} appears twice", path=where, line=lineno,
                                 field="job_number")
            skipped["duplicate_id"] += 1
            continue
        met.add(job)
        if submit < first_submit:
            first_submit = scan.first_submit = submit
        if submit < last_submit:
            scan.in_order = False
        last_submit = submit
        if run <= 0:
            skipped["non_positive_runtime"] += 1
            continue
        first, second = (alloc, req) if allocated_first else (req, alloc)
        if first > 0:
            res, fallback = first, False
        elif second > 0:
            res, fallback = second, True
        else:
            skipped["non_positive_res"] += 1
            continue
        if status_filter is not None and status not in status_filter:
            skipped["status_filtered"] += 1
            continue
        walltime, from_run = (req_time, False) if req_time > 0 else (run, True)
        yield (submit, f"{prefix}{job}", run, res, walltime, fallback, from_run, status,
               user, queue, partition, wait)


def _window(rows: list[tuple[Any, ...]], first: float, start: float | None,
            end: float | None, skipped: Counter[str]) -> list[tuple[Any, ...]]:
    """Keep the rows whose submit time, relative to ``first``, is in ``[start, end)``."""
    if start is None and end is None:
        return rows
    lo = -math.inf if start is None else first + start
    hi = math.inf if end is None else first + end
    kept = [r for r in rows if lo <= r[0] < hi]
    before = sum(1 for r in rows if r[0] < lo)
    if before:
        skipped["before_start"] += before
    if len(rows) - len(kept) - before:
        skipped["after_end"] += len(rows) - len(kept) - before
    return kept


def platform_size(header: dict[str, int], widest: int | None, where: str) -> int | None:
    """The platform size the trace gives: MaxProcs, else MaxNodes, else its widest job."""
    for key in ("MaxProcs", "MaxNodes"):
        if header.get(key, 0) > 0:
            return header[key]
    if widest is None:
        return None
    log.warning("%s: no positive MaxProcs/MaxNodes in the header; nb_res = widest job (%d)",
                where, widest)
    return widest


def _build_jobs(rows: list[tuple[Any, ...]], shift_to_zero: bool, nb_res: int | None,
                skipped: Counter[str], fallback_key: str = "kept_res_from_allocated"
                ) -> tuple[list[JobSpec], dict[str, dict[str, Any]]]:
    """JobSpecs and delay profiles of the selected rows (already in submission order).

    Each row is dropped from ``rows`` once its job is built, so that the rows and the
    jobs are not both held whole (``rows`` is left all None).
    """
    origin = rows[0][0] if rows and shift_to_zero else 0.0
    profiles: dict[str, dict[str, Any]] = {}
    names: dict[float, str] = {}
    shared: dict[tuple[int, ...], dict[str, int]] = {}
    jobs: list[JobSpec] = []
    append = jobs.append
    wide = from_alloc_n = from_run_n = reach_n = 0
    for i, (submit, full, run, res, walltime, from_alloc, from_run, status, user, queue,
            partition, wait) in enumerate(rows):
        rows[i] = None  # type: ignore[call-overload]
        pname = names.get(run)
        if pname is None:
            pname = names[run] = delay_profile_name(run)
            profiles[pname] = {"type": "delay", "delay": int(run) if run.is_integer() else run}
        subtime = submit - origin
        key = (status, user, queue, partition)
        swf = shared.get(key)
        if swf is None:
            swf = shared[key] = {k: v for k, v in zip(_SWF_KEYS, key, strict=True) if v != -1}
        if wait is not None and wait != -1:
            swf = {**swf, "wait": int(wait) if wait.is_integer() else wait}
        append(JobSpec(full, subtime, res, pname, walltime,
                       {"id": full, "subtime": subtime, "res": res, "profile": pname,
                        "walltime": walltime, "swf": swf}))
        if nb_res is not None and res > nb_res:
            wide += 1
        from_alloc_n += from_alloc
        from_run_n += from_run
        if run >= walltime:
            reach_n += 1
    for key, n in (("kept_larger_than_platform", wide), (fallback_key, from_alloc_n),
                   ("kept_walltime_from_runtime", from_run_n), ("kept_reaches_walltime", reach_n)):
        if n:
            skipped[key] += n
    return jobs, profiles

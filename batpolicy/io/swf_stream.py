"""An SWF trace read as a stream: its jobs built as the simulator submits them.

:func:`read_swf` holds every job of a trace before the run (about 570 bytes a job: 255
MiB for RICC-2010's 448k jobs, a gigabyte four times over). Batsim's job submitter only
ever needs the next jobs due (``job_submitter.cpp``: it walks the workload's jobs in
submission order and sleeps until the next one's submit time), so a trace whose lines
come in submit-time order can be read twice instead of held once:

1. a survey pass (:func:`stream_swf`) checks every line (errors name file, line and field
   before the run, as :func:`read_swf`'s), counts what the cleaning drops or adjusts,
   and gathers what the run needs before its first job: the number of jobs kept, the
   delay profiles they use (SIMULATION_BEGINS lists them all), the platform size, the
   widest job;
2. :class:`StreamedJobs` then reads the file again each time it is iterated, yielding the
   same :class:`~batpolicy.io.workload.JobSpec` objects :func:`read_swf` would hold, in
   the same order (Batsim's: subtime, then full id as a string; only the jobs of one
   submit time are held, to sort their ids).

What a run holds of the trace is then its delay profiles (one per distinct run time)
and a bitmap of job numbers (duplicates), not its jobs. A trace out of submit-time order
(ALCF Theta 2023) cannot be streamed: :func:`stream_swf` reads it whole instead.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from batpolicy.io.swf import (
    Scan,
    _read_lines,
    checked_options,
    delay_profile_name,
    job_rows,
    kept_summary,
    platform_size,
    read_swf,
)
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.scheduler.jobfields import EMPTY_FIELDS

__all__ = ["StreamedJobs", "stream_swf"]

log = logging.getLogger(__name__)

_SWF_KEYS = ("status", "user", "queue", "partition")


class _OutOfOrder(Exception):
    """The trace's lines are not in submit-time order: it cannot be streamed."""


class _Selection:
    """How a pass selects and orders the rows: the options of :func:`read_swf`."""

    __slots__ = ("path", "name", "lenient", "status_filter", "max_jobs", "start", "end",
                 "allocated_first", "proven")

    def __init__(self, path: Path, name: str, lenient: bool, status_filter: set[int] | None,
                 max_jobs: int | None, start: float | None, end: float | None,
                 allocated_first: bool) -> None:
        self.path, self.name, self.lenient = path, name, lenient
        self.status_filter, self.max_jobs = status_filter, max_jobs
        self.start, self.end, self.allocated_first = start, end, allocated_first
        #: fast_survey took the trace: each pass parses it with numpy too (fast_rows)
        self.proven = False

    def rows(self, scan: Scan, *, to_the_end: bool) -> Iterator[tuple[Any, ...]]:
        """The kept rows in Batsim's order; ``to_the_end``: read every line (the survey).

        Window (``start <= submit - first < end``), then submission order (the rows of
        one submit time sorted by full id), then the first ``max_jobs``: what
        :func:`read_swf` keeps, as :func:`read_swf` counts it in ``scan.skipped``.
        Raises :class:`_OutOfOrder` on a line submitted before the previous one.
        """
        left = math.inf if self.max_jobs is None else self.max_jobs
        skipped = scan.skipped
        for group in self._groups(scan):
            for kept in group:
                if left > 0:
                    left -= 1
                    yield kept
                else:
                    skipped["beyond_max_jobs"] += 1
            if left <= 0 and not to_the_end:
                return

    def _groups(self, scan: Scan) -> Iterator[list[tuple[Any, ...]]]:
        """The rows in the window, one submit time at a time, each sorted by full id."""
        rows = job_rows(_read_lines(self.path), self.name, str(self.path), self.lenient,
                        self.status_filter, scan, self.allocated_first)
        skipped = scan.skipped
        lo = hi = math.nan  # set at the first row: scan.first_submit is final by then
        group: list[tuple[Any, ...]] = []
        for row in rows:
            if not scan.in_order:
                raise _OutOfOrder
            if lo != lo:  # noqa: PLR0124 (NaN: not set yet)
                first = scan.first_submit
                lo = -math.inf if self.start is None else first + self.start
                hi = math.inf if self.end is None else first + self.end
            submit = row[0]
            if submit < lo:
                skipped["before_start"] += 1
                continue
            if submit >= hi:
                skipped["after_end"] += 1
                continue
            if group and submit != group[0][0]:
                yield _sorted(group)
                group = []
            group.append(row)
        if not scan.in_order:
            raise _OutOfOrder
        if group:
            yield _sorted(group)

    def kept(self, count: int) -> Iterator[tuple[Any, ...]]:
        """The first ``count`` kept rows (the survey's count) in Batsim's order.

        Without a window, :func:`_grouped` over the parsed rows, cut at ``count``
        (what :meth:`rows` keeps, with less work per row); else :meth:`rows`.
        """
        if self.start is not None or self.end is not None:
            return self.rows(Scan(), to_the_end=False)
        if self.proven:
            from batpolicy.io.swf_survey import fast_rows
            return islice(fast_rows(self.path, self.name, self.status_filter,
                                    self.allocated_first), count)
        scan = Scan()
        rows = job_rows(_read_lines(self.path), self.name, str(self.path), self.lenient,
                        self.status_filter, scan, self.allocated_first)
        return islice(_grouped(rows, scan), count)


def _sorted(group: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows of one submit time by full id as a string (Batsim's order)."""
    if len(group) > 1:
        group.sort(key=lambda row: row[1])
    return group



class _Survey:
    """What the survey pass gathers of the kept rows, taken in Batsim's order."""

    __slots__ = ("count", "origin", "max_res", "names", "profiles", "examples",
                 "raw_example", "from_fallback", "from_run", "reach")

    def __init__(self) -> None:
        self.count = 0
        self.origin = 0.0
        self.max_res = 0
        self.names: dict[float, str] = {}
        self.profiles: dict[str, dict[str, Any]] = {}
        self.examples: dict[str, str] = {}
        self.raw_example: dict[str, Any] = {}
        self.from_fallback = self.from_run = self.reach = 0

    def all_rows(self, selection: _Selection, scan: Scan) -> None:
        """Take every row the cleaning keeps (no window, no cut), in Batsim's order.

        The rows come from :func:`~batpolicy.io.swf.job_rows` through :func:`_grouped`
        rather than :meth:`_Selection.rows` (its window and cut cost a quarter of the
        survey on KTH). Raises :class:`_OutOfOrder` as :meth:`_Selection.rows` does.
        """
        self.take(_grouped(job_rows(_read_lines(selection.path), selection.name,
                                    str(selection.path), selection.lenient,
                                    selection.status_filter, scan, selection.allocated_first),
                           scan))

    def take(self, ordered: Iterable[tuple[Any, ...]]) -> None:
        """Take rows already in Batsim's order. O(rows), per row O(1)."""
        names, profiles, examples = self.names, self.profiles, self.examples
        count, max_res = self.count, self.max_res
        from_fallback, from_run, reach = self.from_fallback, self.from_run, self.reach
        for (submit, full, run, res, walltime, fallback, walltime_from_run, *_) in ordered:
            if not count:
                self.origin = submit
                self.raw_example = {"id": full, "subtime": 0.0, "res": res,
                                    "walltime": walltime, "swf": {}}
            count += 1
            if run not in names:
                pname = names[run] = delay_profile_name(run)
                profiles[pname] = {"type": "delay",
                                   "delay": int(run) if run.is_integer() else run}
                examples[pname] = full
            if res > max_res:
                max_res = res
            from_fallback += fallback
            from_run += walltime_from_run
            if run >= walltime:
                reach += 1
        self.count, self.max_res = count, max_res
        self.from_fallback, self.from_run, self.reach = from_fallback, from_run, reach


def _grouped(rows: Iterator[tuple[Any, ...]], scan: Scan) -> Iterator[tuple[Any, ...]]:
    """``rows`` (file order) with each submit time's rows sorted by full id: Batsim's order.

    Raises :class:`_OutOfOrder` once ``scan`` says the submit times decrease.
    """
    group: list[tuple[Any, ...]] = []
    at = math.nan
    for row in rows:
        if row[0] != at:
            if not scan.in_order:
                raise _OutOfOrder
            if len(group) == 1:
                yield group[0]
            elif group:
                yield from _sorted(group)
            group = [row]
            at = row[0]
        else:
            group.append(row)
    if not scan.in_order:
        raise _OutOfOrder
    yield from _sorted(group)

class StreamedJobs:
    """A streamed SWF workload's jobs: a fresh pass over the file at each iteration.

    ``len`` is the number of jobs kept, known from the survey; iterating yields the
    JobSpecs :func:`read_swf` would hold, in the same order, built as they are asked for.
    ``max_res`` is the widest job's ``res``; ``examples`` maps each profile to the
    first job using it (for error messages); ``raw_example`` is one job's raw object: every
    job of an SWF trace has the same keys, none of them None.
    """

    __slots__ = ("_selection", "_count", "_origin", "_names", "max_res", "examples",
                 "raw_example")

    def __init__(self, selection: _Selection, count: int, origin: float,
                 names: dict[float, str], max_res: int, examples: dict[str, str],
                 raw_example: dict[str, Any]) -> None:
        self._selection = selection
        self._count = count
        self._origin = origin
        self._names = names
        self.max_res = max_res
        self.examples = examples
        self.raw_example = raw_example

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self) -> Iterator[JobSpec]:
        """The jobs, in submission order, read again from the file. O(lines) per pass."""
        origin, names = self._origin, self._names
        shared: dict[tuple[int, ...], dict[str, int]] = {}
        for (submit, full, run, res, walltime, _, _, status, user, queue, partition,
             _) in self._selection.kept(self._count):
            pname = names[run]
            subtime = submit - origin
            key = (status, user, queue, partition)
            swf = shared.get(key)
            if swf is None:
                swf = shared[key] = {k: v for k, v in zip(_SWF_KEYS, key, strict=True)
                                     if v != -1}
            spec = JobSpec(full, subtime, res, pname, walltime,
                           {"id": full, "subtime": subtime, "res": res, "profile": pname,
                            "walltime": walltime, "swf": swf})
            # its keys name no job field (jobfields.FIELD_NAMES): parsed now, not at each
            # submission (tests/io/test_swf_stream.py checks it is parse_job_fields')
            spec.parsed = EMPTY_FIELDS
            # integral times (an SWF trace's seconds): nothing for wire_json to round, and
            # the swf object holds integers (tests/io/test_swf_stream.py checks both)
            spec.wired = subtime.is_integer() and walltime.is_integer()
            yield spec


def stream_swf(path: str | Path, name: str = "w0", *, lenient: bool = False,
               status_filter: set[int] | None = None, max_jobs: int | None = None,
               start: float | None = None, end: float | None = None,
               size: str = "requested") -> Workload:
    """The trace as :func:`read_swf` reads it, its jobs streamed (:class:`StreamedJobs`).

    The workload's profiles, ``nb_res``, ``skipped`` and number of jobs are those of
    :func:`read_swf` with the same options; a trace out of submit-time order is read
    whole by :func:`read_swf`. Runtime complexity: O(lines) for the survey, and again
    per iteration of the jobs; memory: O(distinct run times + jobs of one submit time).
    """
    path, where = checked_options(path, name, max_jobs, size)
    allocated_first = size == "allocated"
    selection = _Selection(path, name, lenient, status_filter, max_jobs, start, end,
                           allocated_first)
    fast = start is None and end is None
    from batpolicy.io.swf_survey import fast_survey  # numpy: only for a streamed trace
    survey = _Survey()
    scan = Scan()
    try:
        # Without a window, numpy over the file's blocks when it proves the trace
        # well-formed and in order; else the Python loop (its errors, lenient's counts).
        if fast:
            selection.proven = fast_survey(path, name, status_filter, allocated_first,
                                           survey, scan)
            if not selection.proven:
                survey, scan = _Survey(), Scan()
                survey.all_rows(selection, scan)
        if selection.proven and max_jobs is not None and survey.count > max_jobs:
            # cut: the whole file's counts stand, the figures are the first max_jobs rows'
            beyond = survey.count - max_jobs
            survey = _Survey()
            survey.take(selection.kept(max_jobs))
            scan.skipped["beyond_max_jobs"] += beyond
        elif not fast or (max_jobs is not None and survey.count > max_jobs):
            survey, scan = _Survey(), Scan()
            survey.take(selection.rows(scan, to_the_end=True))
    except _OutOfOrder:
        log.info("%s: submit times out of order: read whole, not streamed", where)
        return read_swf(path, name, lenient=lenient, status_filter=status_filter,
                        max_jobs=max_jobs, start=start, end=end, size=size)
    count, origin, max_res, names = survey.count, survey.origin, survey.max_res, survey.names
    profiles, examples, raw_example = survey.profiles, survey.examples, survey.raw_example
    from_fallback, from_run, reach = survey.from_fallback, survey.from_run, survey.reach
    raw_example["profile"] = next(iter(profiles), "")
    skipped = scan.skipped
    nb_res = platform_size(scan.header, max_res if count else None, where)
    wide = 0
    if nb_res is not None and max_res > nb_res:  # a second survey of res only: rare
        wide = sum(1 for row in selection.rows(Scan(), to_the_end=False) if row[3] > nb_res)
    for key, n in (("kept_larger_than_platform", wide),
                   ("kept_res_from_requested" if allocated_first else "kept_res_from_allocated",
                    from_fallback),
                   ("kept_walltime_from_runtime", from_run), ("kept_reaches_walltime", reach)):
        if n:
            skipped[key] += n
    log.info("%s: %s", where, kept_summary(count, skipped))
    log.debug("%s: streamed (read again as the run submits its jobs)", where)
    jobs = StreamedJobs(selection, count, origin, names, max_res, examples, raw_example)
    return Workload(name, jobs, profiles, nb_res=nb_res, source=where,  # type: ignore[arg-type]
                    skipped=skipped)

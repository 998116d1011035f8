"""Transforms of any workload (Batsim JSON, SWF, synthetic): load, windows, weeks, samples.

Every transform takes a :class:`Workload` and returns a new one (the input is left as
it was): new :class:`JobSpec` objects whose ``raw`` (what Batsim forwards in
JOB_SUBMITTED and what :func:`~batpolicy.io.batsim_json.write_batsim_workload`
writes) follows the change, the profiles still used (composed profiles keep the
profiles of their ``seq``), and ``skipped`` extended with what the transform dropped.
Jobs a transform does not change are shared between input and output (no copy of 448k
jobs to take a sample): treat a :class:`JobSpec` as read-only once read.

- :func:`scale_load`: multiply the offered load by ``F`` by dividing every inter-arrival
  time by ``F`` (``F = 2`` halves each gap between consecutive submissions and keeps every
  job; work and sizes are unchanged, so the load, work per unit of time, doubles). The
  usual way to load a trace harder, e.g. Faure et al., IPDPSW 2020, §IV-A.
- :func:`time_window`: the jobs submitted in ``[start, end)``.
- :func:`weeks`: consecutive blocks of ``length`` weeks (168 h) from the first
  submission whose utilisation is at least ``min_util``, each as its own workload: the
  weekly extraction of Faure et al. 2020, §IV-A ("weeks with a mean utilisation of at
  least 70 %"). Utilisation is measured in the log's own schedule when the jobs carry
  their log wait (SWF read with ``keep_wait=True``: a job ran from submit + wait), else
  in the offered schedule (every job running from its submission).
- :func:`sample`: a seeded random subset, in submission order.
- :func:`head`, :func:`drop_larger`, :func:`shift_to_zero`, :func:`exact_walltime`: the
  first jobs, the jobs that fit a platform, times from 0, walltime = run time (the
  clairvoyant setting of Faure et al. 2020, §IV-B).

Times stay floats: ``scale_load`` computes ``origin + (t - origin) / F`` per job (no
accumulated error), so with ``F = 2`` and integer times every gap is halved exactly.
:class:`TransformSpec` and :func:`apply` are what ``batpolicy workload transform`` and
``batpolicy simulate`` run; their errors name the command-line option at fault.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from batpolicy.errors import ConfigError, InputError
from batpolicy.io.workload import JobSpec, Workload

__all__ = ["WEEK", "TransformSpec", "Week", "apply", "drop_larger", "exact_walltime", "head",
           "sample", "scale_load", "shift_to_zero", "time_window", "weeks"]

#: One week in seconds (168 h).
WEEK = 168 * 3600.0


def _moved(job: JobSpec, subtime: float) -> JobSpec:
    """``job`` submitted at ``subtime`` instead (its ``raw`` too)."""
    if subtime == job.subtime:
        return job
    return replace(job, subtime=subtime, raw={**job.raw, "subtime": subtime})


def _used_profiles(jobs: Iterable[JobSpec],
                   profiles: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The profiles ``jobs`` use, with those composed profiles name, in the input's order."""
    used: set[str] = set()
    todo = [j.profile for j in jobs]
    while todo:
        name = todo.pop()
        if name in used:
            continue
        used.add(name)
        seq = profiles.get(name, {}).get("seq")
        if isinstance(seq, list):
            todo.extend(p for p in seq if isinstance(p, str))
    return {name: p for name, p in profiles.items() if name in used}


def _derived(workload: Workload, jobs: list[JobSpec], dropped: dict[str, int] | None = None,
             name: str | None = None) -> Workload:
    """A new workload of ``jobs`` with the profiles they use and the counts of what was dropped."""
    skipped = Counter(workload.skipped)
    for reason, n in (dropped or {}).items():
        if n:
            skipped[reason] += n
    return Workload(name or workload.name, jobs, _used_profiles(jobs, workload.profiles),
                    nb_res=workload.nb_res, source=workload.source, skipped=skipped)


def shift_to_zero(workload: Workload) -> Workload:
    """The workload with every submit time moved so that the first job submits at 0.

    Runtime complexity: O(n).
    """
    if not workload.jobs:
        return _derived(workload, [])
    origin = min(j.subtime for j in workload.jobs)
    return _derived(workload, [_moved(j, j.subtime - origin) for j in workload.jobs])


def scale_load(workload: Workload, factor: float) -> Workload:
    """Load times ``factor``: every inter-arrival time divided by ``factor``, every job kept.

    The first submission stays where it is; job ``i`` moves to
    ``first + (subtime_i - first) / factor``. Runtime complexity: O(n).

    >>> w = Workload("w0", [JobSpec(f"w0!{i}", t, 1, "p") for i, t in enumerate([0.0, 10.0, 30.0])],
    ...              {"p": {"type": "delay", "delay": 5}})
    >>> [j.subtime for j in scale_load(w, 2).jobs]
    [0.0, 5.0, 15.0]
    """
    if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
        raise ConfigError(f"the load factor must be a finite number > 0, got {factor!r}")
    if not workload.jobs:
        return _derived(workload, [])
    first = min(j.subtime for j in workload.jobs)
    return _derived(workload, [_moved(j, first + (j.subtime - first) / factor)
                               for j in workload.jobs])


def time_window(workload: Workload, start: float | None = None, end: float | None = None, *,
                shift: bool = True) -> Workload:
    """The jobs submitted in ``[start, end)`` (None: unbounded), from 0 if ``shift``.

    Dropped jobs are counted under ``before_start`` and ``after_end``. Runtime
    complexity: O(n).
    """
    lo = -math.inf if start is None else start
    hi = math.inf if end is None else end
    if not lo < hi:
        raise ConfigError(f"the time window [{start}, {end}) is empty: start must be < end")
    kept = [j for j in workload.jobs if lo <= j.subtime < hi]
    before = sum(1 for j in workload.jobs if j.subtime < lo)
    result = _derived(workload, kept, {"before_start": before,
                                       "after_end": len(workload.jobs) - len(kept) - before})
    return shift_to_zero(result) if shift else result


def head(workload: Workload, count: int) -> Workload:
    """The first ``count`` jobs in submission order (the others counted ``beyond_max_jobs``)."""
    if count < 0:
        raise ConfigError(f"the number of jobs to keep must be >= 0, got {count}")
    return _derived(workload, workload.jobs[:count],
                    {"beyond_max_jobs": max(0, len(workload.jobs) - count)})


def drop_larger(workload: Workload, nb_res: int) -> Workload:
    """The jobs of at most ``nb_res`` machines (the others counted ``larger_than_platform``)."""
    kept = [j for j in workload.jobs if j.res <= nb_res]
    result = _derived(workload, kept, {"larger_than_platform": len(workload.jobs) - len(kept)})
    if result.skipped.get("kept_larger_than_platform"):
        del result.skipped["kept_larger_than_platform"]  # they are gone now
    return result


def sample(workload: Workload, *, seed: int, fraction: float | None = None,
           count: int | None = None) -> Workload:
    """A seeded random subset of ``count`` jobs (or ``round(fraction * n)``), in order.

    The same seed on the same workload keeps the same jobs (Python's ``random.Random``,
    whose ``sample`` is stable across versions for integer seeds). Jobs left out are
    counted ``not_sampled``. Runtime complexity: O(n log n).
    """
    n = len(workload.jobs)
    if (fraction is None) == (count is None):
        raise ConfigError("sample: give either a fraction or a count of jobs")
    if fraction is not None:
        if not (math.isfinite(fraction) and 0 < fraction <= 1):
            raise ConfigError(f"the sample fraction must be in (0, 1], got {fraction}")
        count = round(fraction * n)
    elif count is None or count < 0:
        raise ConfigError(f"the sample size must be >= 0 jobs, got {count}")
    chosen = sorted(random.Random(seed).sample(range(n), min(count, n)))
    return _derived(workload, [workload.jobs[i] for i in chosen], {"not_sampled": n - len(chosen)})


def _run_time(job: JobSpec, profiles: dict[str, dict[str, Any]], in_log: bool) -> float:
    """A job's run time: its delay profile's delay; capped at its walltime unless ``in_log``.

    In the log's own schedule the job ran its whole recorded run time (whatever it had
    requested); in the offered schedule Batsim would stop it at its walltime.
    """
    profile = profiles.get(job.profile, {})
    if profile.get("type") == "delay":
        run = float(profile["delay"])
        return min(run, job.walltime) if job.walltime is not None and not in_log else run
    if job.walltime is not None:
        return job.walltime  # an upper bound: only delay profiles say how long a job runs
    raise InputError(f"profile {job.profile!r} is not a delay profile and the job has no "
                     "walltime: its run time, needed for the utilisation, is unknown",
                     job=job.id, field="profile")


def exact_walltime(workload: Workload) -> Workload:
    """Every job's walltime set to its run time (its delay profile's delay).

    Faure et al., IPDPSW 2020, §IV-B: "the jobs' walltimes are their exact run times".
    Runtime complexity: O(n).
    """
    jobs = []
    for job in workload.jobs:
        profile = workload.profiles.get(job.profile, {})
        if profile.get("type") != "delay":
            raise InputError(f"profile {job.profile!r} is not a delay profile: no exact run "
                             "time to use as walltime", path=workload.source, job=job.id,
                             field="profile")
        run = float(profile["delay"])
        jobs.append(replace(job, walltime=run, raw={**job.raw, "walltime": run}))
    return _derived(workload, jobs)


@dataclass(frozen=True, slots=True)
class Week:
    """A block of weeks: its index (0: the first from the first submission), utilisation, jobs."""

    index: int
    utilisation: float
    workload: Workload


def weeks(workload: Workload, *, min_util: float = 0.0, length: int = 1,
          nb_res: int | None = None) -> list[Week]:
    """Every block of ``length`` weeks whose utilisation is at least ``min_util``.

    Blocks are consecutive, ``length`` × 168 h each, from the first submission. A block's
    utilisation is the processor time its jobs' runs overlap (every job, whichever block
    it was submitted in) over ``nb_res`` × the block's length, in the log's schedule for
    jobs that carry their log wait (``raw["swf"]["wait"]``), else from their submission;
    a block holds the jobs
    submitted in it, shifted to start at 0 (named ``<name>`` as the input). ``nb_res``
    defaults to the workload's. Runtime complexity: O(n + number of weeks).

    >>> w = Workload("w0", [JobSpec("w0!1", 0.0, 2, "p"), JobSpec("w0!2", WEEK + 5, 1, "p")],
    ...              {"p": {"type": "delay", "delay": WEEK / 2}}, nb_res=2)
    >>> [(b.index, b.utilisation, len(b.workload.jobs)) for b in weeks(w, min_util=0.3)]
    [(0, 0.5, 1)]
    """
    if length < 1:
        raise ConfigError(f"a block of weeks must be at least 1 week long, got {length}")
    if not 0 <= min_util <= 1:
        raise ConfigError(f"the minimum utilisation must be in [0, 1], got {min_util}")
    nb_res = nb_res or workload.nb_res
    if not nb_res:
        raise InputError("the platform size is unknown (no nb_res): it is needed to compute "
                         "the weeks' utilisation", path=workload.source)
    if not workload.jobs:
        return []
    span = length * WEEK
    origin = min(j.subtime for j in workload.jobs)
    intervals = []
    for job in workload.jobs:
        swf = job.raw.get("swf")
        wait = swf.get("wait") if isinstance(swf, dict) else None
        begin = job.subtime - origin + (max(float(wait), 0.0) if wait is not None else 0.0)
        intervals.append((begin, begin + _run_time(job, workload.profiles, wait is not None),
                          job.res))
    nb_blocks = int(max(end for _, end, _ in intervals) // span) + 1
    busy = [0.0] * nb_blocks
    submitted: list[list[JobSpec]] = [[] for _ in range(nb_blocks)]
    for job, (begin, end, res) in zip(workload.jobs, intervals, strict=True):
        submitted[int((job.subtime - origin) // span)].append(job)
        for b in range(int(begin // span), min(int(end // span), nb_blocks - 1) + 1):
            busy[b] += (min(end, (b + 1) * span) - max(begin, b * span)) * res
    found = []
    for b in range(nb_blocks):
        util = busy[b] / (nb_res * span)
        if util >= min_util and submitted[b]:
            jobs = submitted[b]
            outside = len(workload.jobs) - len(jobs)
            found.append(Week(b, util, shift_to_zero(_derived(workload, jobs,
                                                              {"other_weeks": outside}))))
    return found


@dataclass(frozen=True, slots=True)
class TransformSpec:
    """The transforms of a run, applied in this order: weeks, sample, load, exact walltime.

    Weeks are chosen in the input's own time (where its utilisation was measured), the
    sample from them, the load scaled, and last every walltime set to the job's run time
    when ``exact_walltime``. Each field is named after its option.
    """

    load: float | None = None
    weeks: int | None = None
    min_util: float = 0.0
    week_index: int = 0
    sample: float | None = None
    sample_jobs: int | None = None
    seed: int = 0
    exact_walltime: bool = False

    def check(self) -> None:
        """Raise :class:`ConfigError` naming the option whose value cannot work."""
        if self.load is not None and not (math.isfinite(self.load) and self.load > 0):
            raise ConfigError(f"--load must be a finite number > 0, got {self.load}")
        if self.weeks is not None and self.weeks < 1:
            raise ConfigError(f"--weeks must be >= 1, got {self.weeks}")
        if not 0 <= self.min_util <= 1:
            raise ConfigError(f"--min-util must be in [0, 1], got {self.min_util}")
        if self.week_index < 0:
            raise ConfigError(f"--week-index must be >= 0, got {self.week_index}")
        if self.weeks is None and (self.min_util or self.week_index):
            # both choose among the blocks of --weeks: alone they would be silently ignored
            given = "--min-util" if self.min_util else "--week-index"
            raise ConfigError(f"{given} chooses among the blocks of --weeks N: give --weeks "
                              f"(e.g. --weeks 1) or drop {given}")
        if self.sample is not None and not (math.isfinite(self.sample) and 0 < self.sample <= 1):
            raise ConfigError(f"--sample must be a fraction in (0, 1], got {self.sample}")
        if self.sample_jobs is not None and self.sample_jobs < 0:
            raise ConfigError(f"--sample-jobs must be >= 0, got {self.sample_jobs}")
        if self.sample is not None and self.sample_jobs is not None:
            raise ConfigError("give --sample or --sample-jobs, not both")

    @property
    def active(self) -> bool:
        """True when at least one transform is asked for."""
        return self.exact_walltime or any(
            v is not None for v in (self.load, self.weeks, self.sample, self.sample_jobs))


def apply(workload: Workload, spec: TransformSpec, *, nb_res: int | None = None) -> Workload:
    """``workload`` transformed as ``spec`` says; errors name the option and the file."""
    spec.check()
    if spec.weeks is not None:
        _check_span(workload, spec.weeks)
        found = weeks(workload, min_util=spec.min_util, length=spec.weeks, nb_res=nb_res)
        if spec.week_index >= len(found):
            raise InputError(f"{len(found)} block(s) of {spec.weeks} week(s) with utilisation "
                             f">= {spec.min_util:g} (--weeks, --min-util): --week-index "
                             f"{spec.week_index} does not exist", path=workload.source)
        workload = found[spec.week_index].workload
    if spec.sample is not None or spec.sample_jobs is not None:
        workload = sample(workload, seed=spec.seed, fraction=spec.sample, count=spec.sample_jobs)
    if spec.load is not None:
        workload = scale_load(workload, spec.load)
    if spec.exact_walltime:
        workload = exact_walltime(workload)
    return workload


def _check_span(workload: Workload, length: int) -> None:
    """Refuse ``--weeks N`` when the jobs are submitted over fewer weeks than N.

    The submissions' span is counted in started weeks (27.9 days: 4 weeks; at least 1).
    A block longer than that would be the whole workload: ``--weeks 99`` on a 4-week
    trace kept every job and said nothing.

    >>> w = Workload("w0", [JobSpec("w0!1", 0.0, 1, "p"), JobSpec("w0!2", 1.5 * WEEK, 1, "p")],
    ...              {"p": {"type": "delay", "delay": 1.0}}, nb_res=1)
    >>> _check_span(w, 2)
    >>> _check_span(w, 3)
    Traceback (most recent call last):
    batpolicy.errors.InputError: --weeks 3: the jobs are submitted over 2 weeks (10.5 days), \
fewer than the 3 weeks asked; give --weeks 2 or less, or drop --weeks to keep every job
    """
    if not workload.jobs:
        return
    times = [j.subtime for j in workload.jobs]
    span = max(times) - min(times)
    held = max(1, math.ceil(span / WEEK))
    if length > held:
        raise InputError(f"--weeks {length}: the jobs are submitted over {held} week"
                         f"{'s' if held > 1 else ''} ({span / 86400:.1f} days), fewer than the "
                         f"{length} weeks asked; give --weeks {held} or less, or drop --weeks "
                         "to keep every job", path=workload.source)


def inter_arrival_times(jobs: Sequence[JobSpec]) -> list[float]:
    """Gaps between consecutive submissions, in submission order.

    >>> inter_arrival_times([JobSpec("w0!a", 1.0, 1, "p"), JobSpec("w0!b", 4.0, 1, "p")])
    [3.0]
    """
    return [b.subtime - a.subtime for a, b in zip(jobs, jobs[1:], strict=False)]

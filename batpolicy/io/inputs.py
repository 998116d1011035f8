"""A run's inputs: workloads, platform and external events, as ``simulate`` and campaigns read them.

:func:`load_inputs` reads workloads (Batsim JSON or SWF, named ``w0``, ``w1``, ... in the
order given, as Batsim names its ``-w`` workloads), the platform (SimGrid XML,
``nb_res`` identical machines, or the size an SWF header gives) and ``--events`` files;
with no workload it takes the bundled default (:data:`DEFAULT_WORKLOAD` on
:data:`DEFAULT_PLATFORM`). Bad input gets one error naming file, line, job and field.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from batpolicy.errors import ConfigError, InputError
from batpolicy.io import read_batsim_workload, read_events, read_swf, workload_format
from batpolicy.io.events import ExternalEvent
from batpolicy.io.transform import TransformSpec, apply
from batpolicy.io.workload import Workload
from batpolicy.platforms.model import Platform
from batpolicy.platforms.xml import read_platform
from batpolicy.scheduler.steady_gc import steady_gc

__all__ = ["DEFAULT_PLATFORM", "DEFAULT_WORKLOAD", "InputSpec", "WorkloadReader", "bundled",
           "load_inputs", "read_workload"]

log = logging.getLogger(__name__)

#: Bundled inputs of ``batpolicy simulate`` without arguments (files of ``batpolicy/data``).
DEFAULT_WORKLOAD = "example_workload_hpc_seed1_jobs250.json"
DEFAULT_PLATFORM = "zero_lat_cluster128.xml"
def bundled(name: str) -> Path:
    """Path of a file shipped in ``batpolicy/data`` (installed as package data)."""
    path = Path(str(resources.files("batpolicy") / "data" / name))
    if not path.is_file():
        raise ConfigError(f"bundled file {name!r} is missing from {path.parent}: "
                          "reinstall batpolicy")
    return path


@dataclass(frozen=True, slots=True)
class InputSpec:
    """What to simulate: files and the SWF cleaning options (see :func:`read_swf`)."""

    workloads: tuple[str, ...] = ()
    platform: str | None = None
    nb_res: int | None = None
    events: tuple[str, ...] = ()
    lenient: bool = False
    max_jobs: int | None = None
    start: float | None = None
    end: float | None = None
    status_filter: frozenset[int] | None = None
    transform: TransformSpec = TransformSpec()  # --load, --weeks, --sample: after the above
    size: str = "requested"  # SWF: which processor count is a job's size (read_swf's size)
    extra_machines: float | None = None  # grow N identical machines to N + ceil(F*N)
    #: SWF traces in submit-time order are read as the run submits their jobs
    #: (:mod:`batpolicy.io.swf_stream`) when no transform needs them all at once
    stream: bool = False


def read_workload(path: str, name: str, spec: InputSpec) -> Workload:
    """One workload file read with ``spec``'s selection (SWF options, window, first jobs)."""
    if workload_format(path) == "swf":
        if spec.stream and not _transforms(spec.transform):
            from batpolicy.io.swf_stream import stream_swf

            return stream_swf(path, name, lenient=spec.lenient, max_jobs=spec.max_jobs,
                              start=spec.start, end=spec.end, size=spec.size,
                              status_filter=set(spec.status_filter) if spec.status_filter
                              else None)
        return read_swf(path, name, lenient=spec.lenient, max_jobs=spec.max_jobs,
                        start=spec.start, end=spec.end, keep_wait=spec.transform.weeks is not None,
                        size=spec.size,
                        status_filter=set(spec.status_filter) if spec.status_filter else None)
    workload = read_batsim_workload(path, name, lenient=spec.lenient)
    if spec.start is not None or spec.end is not None:
        lo = -math.inf if spec.start is None else spec.start
        hi = math.inf if spec.end is None else spec.end
        workload.jobs = [j for j in workload.jobs if lo <= j.subtime < hi]
    if spec.max_jobs is not None:
        del workload.jobs[spec.max_jobs:]
    return workload


def _transforms(spec: TransformSpec) -> bool:
    """Whether ``spec`` changes the jobs (every transform needs them all at once).

    >>> _transforms(TransformSpec()), _transforms(TransformSpec(load=1.5))
    (False, True)
    """
    return (spec.load is not None or spec.weeks is not None or spec.sample is not None
            or spec.sample_jobs is not None or spec.exact_walltime)


#: Reads one workload file: ``(path, name, spec) -> Workload``; the result is not mutated.
WorkloadReader = Callable[[str, str, "InputSpec"], Workload]


def load_inputs(spec: InputSpec, read: WorkloadReader | None = None, *,
                allow_empty: bool = False,
                ) -> tuple[list[Workload], Platform, list[ExternalEvent]]:
    """Workloads, platform and external events of a run; errors name file, line, field.

    ``read`` reads one workload file (default: its format's reader, with ``spec``'s
    selection); a campaign passes a cached one, so many runs on one trace read it once.
    No job at all, once selected and transformed, is an :class:`InputError` naming the
    files (a run of nothing gives zeros that look like results), unless ``allow_empty``
    (a scheduler that registers every job itself, with dynamic jobs).
    """
    read = read or read_workload
    if spec.max_jobs is not None and spec.max_jobs < 0:
        # checked here for every format: on a JSON workload ``del jobs[-5:]`` would
        # silently drop the *last* five jobs
        raise ConfigError(f"--max-jobs must be >= 0, got {spec.max_jobs}")
    paths = list(spec.workloads)
    platform_path = spec.platform
    if not paths:
        paths = [str(bundled(DEFAULT_WORKLOAD))]
        if platform_path is None and spec.nb_res is None:
            platform_path = str(bundled(DEFAULT_PLATFORM))
        log.info("no workload given: bundled %s on %s", DEFAULT_WORKLOAD,
                 Path(platform_path).name if platform_path else f"{spec.nb_res} machines")
    if platform_path is not None and spec.nb_res is not None:  # before reading anything
        raise ConfigError("give either a platform file or a number of machines, not both")
    if platform_path is not None and spec.extra_machines is not None:
        raise ConfigError("--extra-machines grows a platform of identical machines "
                          "(--nb-res or the SWF header), not a platform file")
    with steady_gc():  # a few objects per job: no young collection every 700 of them
        workloads = [read(p, f"w{i}", spec) for i, p in enumerate(paths)]
    if not allow_empty:
        _check_not_empty(workloads, spec, "the selection (--max-jobs, --start, --end, "
                         "--status)" if _selects(spec) else None)
    if platform_path is not None:
        platform = read_platform(platform_path)
    elif spec.nb_res is not None:
        if spec.nb_res <= 0:
            raise ConfigError(f"the number of machines must be positive, got {spec.nb_res}")
        platform = Platform.homogeneous(spec.nb_res)
    else:
        sizes = [w.nb_res for w in workloads if w.nb_res]
        if len(sizes) != len(workloads):
            raise ConfigError("no platform: give a platform file (-p) or a number of "
                              "machines (--nb-res); only a Batsim JSON workload with nb_res "
                              "or an SWF trace with MaxProcs/MaxNodes in its header sizes "
                              "the platform itself")
        widest = max(workloads, key=lambda w: w.nb_res or 0)
        platform = Platform.homogeneous(widest.nb_res)
        log.info("platform: %d identical machines (%s)", widest.nb_res, _size_origin(widest))
    # the jobs that cannot fit go first (lenient: dropped and counted), before the weeks'
    # utilisation is measured on the original machines; then the transforms
    workloads = [apply(_checked_fits(w, platform.nb_machines, spec.lenient), spec.transform,
                       nb_res=platform.nb_machines) for w in workloads]
    for w in workloads:
        if w.skipped:
            log.info("%s: %d jobs; skipped or adjusted: %s", w.source, len(w.jobs),
                     ", ".join(f"{k} {n}" for k, n in sorted(w.skipped.items())))
    if not allow_empty:
        _check_not_empty(workloads, spec, "the transforms (--weeks, --sample, ...) and "
                         "dropping the jobs larger than the platform")
    if spec.extra_machines is not None:
        platform = Platform.homogeneous(_grown(platform.nb_machines, spec.extra_machines))
        log.info("platform grown to %d identical machines (--extra-machines %g)",
                 platform.nb_machines, spec.extra_machines)
    events: list[ExternalEvent] = []
    for path in spec.events:
        events.extend(read_events(path))
    return workloads, platform, events


def _size_origin(workload: Workload) -> str:
    """Where a workload's platform size comes from, for the log.

    >>> _size_origin(Workload("w0", [], {}, nb_res=4, source="w.json"))
    'nb_res of w.json'
    >>> _size_origin(Workload("w0", [], {}, nb_res=100, source="KTH.swf.gz"))
    'the header of KTH.swf.gz'
    """
    source = workload.source or workload.name
    swf = source.lower().endswith((".swf", ".swf.gz"))
    return f"the header of {source}" if swf else f"nb_res of {source}"


def _selects(spec: InputSpec) -> bool:
    """True when ``spec`` selects part of a workload file while reading it."""
    return any(v is not None for v in (spec.max_jobs, spec.start, spec.end,
                                       spec.status_filter))


def _check_not_empty(workloads: Sequence[Workload], spec: InputSpec, after: str | None) -> None:
    """Raise :class:`InputError` when no workload has a job (``after``: what removed them)."""
    if any(w.jobs for w in workloads):
        return
    files = ", ".join(str(w.source or w.name) for w in workloads)
    if after is None:
        raise InputError(f"no job in {files}: nothing to simulate")
    raise InputError(f"no job left in {files} after {after}: nothing to simulate")


def _grown(nb_machines: int, fraction: float) -> int:
    """``nb_machines`` + ⌈fraction·nb_machines⌉ (rounded to 9 decimals first: 0.15·20 is 3).

    >>> _grown(20, 0.15), _grown(100, 0.0)
    (23, 100)
    """
    if not (math.isfinite(fraction) and fraction >= 0):
        raise ConfigError(f"--extra-machines must be a finite fraction >= 0, got {fraction}")
    return nb_machines + math.ceil(round(fraction * nb_machines, 9))


def _checked_fits(workload: Workload, nb_machines: int, lenient: bool) -> Workload:
    """A job wider than the platform is a broken input: one error, or dropped and counted.

    Batsim itself accepts such a job and leaves it to the scheduler (every policy of ours
    rejects it); ``simulate`` stops on it instead, as a researcher asking for this
    platform most likely gave the wrong one, unless ``lenient``.
    """
    max_res = getattr(workload.jobs, "max_res", None)  # a streamed trace's: no pass
    if max_res is not None and max_res <= nb_machines:
        return workload
    wide = [job for job in workload.jobs if job.res > nb_machines]
    if not wide:
        return workload
    if not lenient:
        job = wide[0]
        raise InputError(f"asks for {job.res} machines but the platform has {nb_machines} "
                         f"({len(wide)} such job(s)); --lenient drops them and counts them",
                         path=workload.source, job=job.id, field="res")
    log.warning("%s: dropped %d job(s) larger than the platform's %d machines",
                workload.source, len(wide), nb_machines)
    skipped = Counter(workload.skipped)
    skipped["dropped_larger_than_platform"] += len(wide)
    return replace(workload, jobs=[job for job in workload.jobs if job.res <= nb_machines],
                   skipped=skipped)  # a new workload: the one read may be a cached one

"""Batsim JSON workloads (Batsim's protocol: workloads): read with Batsim 4.2.1's rules, written.

Checked like ``Job::from_json`` in Batsim's ``src/jobs.cpp``: the top level is an object
with a ``jobs`` array and a ``profiles`` object (``nb_res`` optional); each job has an
``id`` (string or 32-bit integer), a finite ``subtime`` >= 0, an optional ``walltime``
(> 0, or -1 for none), ``res`` a JSON *integer* >= 0 (``4.0`` is refused, as rapidjson's
``IsInt`` refuses it) and a ``profile`` naming an existing profile. Every profile is an
object with a string ``type``; ``delay`` profiles need a finite ``delay`` > 0 and
``composed`` ones a ``seq`` of existing profile names (what the simulator relies on).

Job ids become Batsim's full ids ``workload!name``. An id that already holds a ``!`` must
be exactly ``<name>!<job>``. Deviation, on purpose: Batsim looks for the workload name as
a *substring* of the id, so an id such as ``w0x`` in workload ``w0`` (or the integer id
``10`` in a workload named ``1``) makes Batsim abort; we prefix such ids and log a warning.

Numbers with a fraction or an exponent are the doubles Batsim's rapidjson parse gives
(:mod:`.rapidjson_number`), a few ulps from Python's ``float`` for some 16-17 digit texts.
``JobSpec.raw`` is the job object as Batsim forwards it in JOB_SUBMITTED: the file's
object, same key order and numbers, with ``id`` rewritten to the full id. Duplicated
ids are an error. Jobs come back in Batsim's submission order (subtime, then full id as
a string; :meth:`Workload.sort`).

Extra job fields (``deadline``, ``job_type``, ``origin``, ``comp_share``, ``ppbw``,
``preferred``, ``runtime_other``, ``job_model``: :mod:`batpolicy.scheduler.jobfields`)
are kept in ``raw``, as Batsim keeps and forwards them, and checked here: a wrong type
is an error (``invalid_field`` when lenient), as Batsim itself does not look at them.

Errors are :class:`InputError` naming the file, the job (index in ``jobs`` and id) and
the field; invalid JSON names line and column. With ``lenient=True`` a bad job (or
profile) is skipped and counted in ``Workload.skipped`` under the reason
(``invalid_res``, ``unknown_profile``, ``duplicate_id``...).

Writing (:func:`write_batsim_workload`): the file is what Batsim 4.2.1 reads with ``-w``:
``{"nb_res", "jobs", "profiles"}``, each job its ``raw`` object (every extra field kept:
``swf``, ``deadline``, ``job_type``...) with ``id`` the job's name inside the workload
(the part after ``!``, so the file reads back under any workload name), ``subtime``,
``res``, ``profile`` and ``walltime`` (``-1`` for none, as Batsim writes it) taken from the
:class:`JobSpec`. Profiles are written as
they are. One job per line, keys in a fixed order: the same workload gives the same
bytes, so generated files can be compared with ``cmp`` and committed.

The file is written beside its final name and renamed into place, so a failed or
interrupted write never leaves a truncated workload behind.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

from batpolicy.errors import ConfigError, InputError
from batpolicy.io.rapidjson_number import rapidjson_float
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.scheduler import rules
from batpolicy.scheduler.jobfields import JobFieldError, parse_job_fields

__all__ = ["full_job_id", "read_batsim_workload", "workload_to_json", "write_batsim_workload"]

log = logging.getLogger(__name__)

_INT32_MAX = 2**31 - 1
_INT32_MIN = -(2**31)


class _BadJob(Exception):
    """A job (or profile) breaks a rule: ``reason`` counts it, ``field`` names the field."""

    def __init__(self, reason: str, field: str | None, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.field = field


def full_job_id(job_id: str | int, workload: str) -> str:
    """Batsim's full id of a workload job id: ``workload!id`` unless it already has a ``!``.

    Raises :class:`ValueError` for an id with a ``!`` that is not ``workload!name``.

    >>> full_job_id(7, "w0"), full_job_id("a", "w0"), full_job_id("w0!a", "w0")
    ('w0!7', 'w0!a', 'w0!a')
    """
    text = str(job_id)
    if "!" not in text:
        return f"{workload}!{text}"
    parts = text.split("!")
    if len(parts) != 2 or parts[0] != workload or not parts[1]:
        raise ValueError(f"id {text!r} holds a '!' but is not '{workload}!<name>' "
                         f"(a full id has exactly one '!', after the workload name)")
    return text


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON (Batsim's parser refuses it)")


def _load_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the workload: {exc.strerror or exc}",
                         path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                         path=str(path)) from None
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=rapidjson_float)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=str(path),
                         line=exc.lineno) from None
    except ValueError as exc:  # NaN / Infinity
        raise InputError(f"invalid JSON: {exc}", path=str(path)) from None


#: The profile types Batsim 4.2.1 reads (``src/profiles.cpp``, ``Profile::from_json``), and
#: ``sequence``, the older name of ``composed`` the simulator still runs.
PROFILE_TYPES = frozenset({"delay", "parallel", "parallel_homogeneous",
                           "parallel_homogeneous_total", "composed", "sequence",
                           "parallel_homogeneous_pfs", "data_staging", "send", "recv", "smpi",
                           "usage_trace"})


def _check_profile(name: str, profile: Any, names: set[str] | dict[str, Any]) -> None:
    if not isinstance(profile, dict):
        raise _BadJob("invalid_profile", "type", "a profile must be a JSON object")
    kind = profile.get("type")
    if not isinstance(kind, str):
        raise _BadJob("invalid_profile", "type", "a profile needs a string 'type'")
    if kind not in PROFILE_TYPES:
        raise _BadJob("invalid_profile", "type", f"profile type {kind!r} is unknown (Batsim "
                      f"4.2.1's: {', '.join(sorted(PROFILE_TYPES - {'sequence'}))})")
    ret = profile.get("ret", 0)
    if isinstance(ret, bool) or not isinstance(ret, int):
        raise _BadJob("invalid_profile", "ret", f"'ret' must be an integer, got {ret!r}")
    if kind == "delay":
        delay = profile.get("delay")
        if not _is_number(delay) or not math.isfinite(delay) or delay <= 0:
            # Batsim 4.2.1 aborts on a delay of 0 too (src/profiles.cpp l.314)
            raise _BadJob("invalid_profile", "delay",
                          f"a delay profile needs a finite number 'delay' > 0, got {delay!r}")
    elif kind in ("composed", "sequence"):
        seq = profile.get("seq")
        if not isinstance(seq, list) or not all(isinstance(s, str) for s in seq):
            raise _BadJob("invalid_profile", "seq", "a composed profile needs a list 'seq' of "
                          "profile names")
        missing = [s for s in seq if s not in names]
        if missing:
            raise _BadJob("invalid_profile", "seq", f"unknown profiles in 'seq': {missing[:5]}")
        repeat = profile.get("repeat", 1)
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise _BadJob("invalid_profile", "repeat", "a composed profile's 'repeat' must be "
                          f"an integer >= 1, got {repeat!r}")
    elif kind in ("parallel_homogeneous", "parallel_homogeneous_total"):
        for key, default in (("cpu", None), ("com", 0)):
            value = profile.get(key, default)
            if not _is_number(value) or not math.isfinite(value):
                raise _BadJob("invalid_profile", key, f"a {kind} profile has a non-number "
                              f"{key!r} field ({value!r})")
            if value < 0:
                raise _BadJob("invalid_profile", key, f"a {kind} profile has a negative "
                              f"{key!r} field ({value})")
    elif kind == "parallel":
        _check_parallel(kind, profile.get("cpu"), profile.get("com"))


def _check_parallel(kind: str, cpu: Any, com: Any) -> None:
    """A ``parallel`` profile's amounts, as Batsim's ``Profile::from_json`` checks them.

    ``cpu``: n flop amounts (one per task), ``com``: the n × n bytes matrix, row-major.
    The words are the simulator's own (:mod:`batpolicy.simulator.jobmodels.ptask.tasks`).

    >>> try:
    ...     _check_parallel("parallel", [1, 2], [0, 1, 1])
    ... except _BadJob as bad:
    ...     print(bad.field, bad)
    com a parallel profile is incoherent: its 'com' array has 3 values, 'cpu' has 2 so 'com' \
needs 2 x 2 = 4
    """
    if not isinstance(cpu, list) or not cpu:
        raise _BadJob("invalid_profile", "cpu", f"a {kind} profile needs a non-empty 'cpu' "
                      f"array, got {cpu!r}")
    if not isinstance(com, list):
        raise _BadJob("invalid_profile", "com", f"a {kind} profile needs a 'com' array, got "
                      f"{com!r}")
    n = len(cpu)
    if len(com) != n * n:
        raise _BadJob("invalid_profile", "com", f"a {kind} profile is incoherent: its 'com' "
                      f"array has {len(com)} values, 'cpu' has {n} so 'com' needs {n} x {n} = "
                      f"{n * n}")
    for key, values in (("cpu", cpu), ("com", com)):
        for i, value in enumerate(values):
            if not _is_number(value) or not math.isfinite(value) or value < 0:
                raise _BadJob("invalid_profile", key, f"a {kind} profile's {key!r} array is "
                              "invalid: all its values must be numbers >= 0, value "
                              f"{i} is {value!r}")


def _job_spec(job: Any, name: str, profiles: dict[str, Any]) -> JobSpec:
    """One job object to a JobSpec, or :class:`_BadJob` naming the broken field."""
    if not isinstance(job, dict):
        raise _BadJob("not_an_object", None, "a job must be a JSON object")
    if "id" not in job:
        raise _BadJob("invalid_id", "id", "the job has no 'id'")
    raw_id = job["id"]
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        raise _BadJob("invalid_id", "id", f"'id' must be a string or an integer, got "
                      f"{type(raw_id).__name__}")
    if isinstance(raw_id, int) and not _INT32_MIN <= raw_id <= _INT32_MAX:
        raise _BadJob("invalid_id", "id", f"integer id {raw_id} does not fit 32 bits "
                      "(Batsim refuses it; write it as a string)")
    if raw_id == "":
        raise _BadJob("invalid_id", "id", "'id' is empty")
    try:
        full = full_job_id(raw_id, name)
    except ValueError as exc:
        raise _BadJob("invalid_id", "id", str(exc)) from None
    if "!" not in str(raw_id) and name in str(raw_id):
        log.warning("job id %r holds the workload name %r: Batsim 4.2.1 would take it for a "
                    "full id and abort; using %r", raw_id, name, full)

    subtime = job.get("subtime")
    if "subtime" not in job:
        raise _BadJob("invalid_subtime", "subtime", "the job has no 'subtime'")
    if not _is_number(subtime) or not math.isfinite(subtime) or subtime < 0:
        raise _BadJob("invalid_subtime", "subtime",
                      f"'subtime' must be a finite number >= 0, got {subtime!r}")

    walltime: float | None = None
    if "walltime" in job:
        wt = job["walltime"]
        if not rules.walltime_ok(wt):
            raise _BadJob("invalid_walltime", "walltime",
                          f"'walltime' must be a number > 0, or -1 for none, got {wt!r}")
        walltime = None if wt == -1 else float(wt)

    if "res" not in job:
        raise _BadJob("invalid_res", "res", "the job has no 'res'")
    res = job["res"]
    if isinstance(res, bool) or not isinstance(res, int):
        raise _BadJob("invalid_res", "res", f"'res' must be a JSON integer, got {res!r}")
    if not 0 <= res <= _INT32_MAX:
        raise _BadJob("invalid_res", "res", f"'res' must be >= 0 (and fit 32 bits), got {res}")

    if "profile" not in job:
        raise _BadJob("invalid_profile_name", "profile", "the job has no 'profile'")
    profile = job["profile"]
    if not isinstance(profile, str):
        raise _BadJob("invalid_profile_name", "profile",
                      f"'profile' must be a string, got {type(profile).__name__}")
    if profile not in profiles:
        raise _BadJob("unknown_profile", "profile", f"profile {profile!r} does not exist")

    try:
        extra = parse_job_fields(job)
    except JobFieldError as exc:
        raise _BadJob("invalid_field", exc.field, str(exc)) from None

    raw = {k: (full if k == "id" else v) for k, v in job.items()}
    spec = JobSpec(full, float(subtime), res, profile, walltime, raw)
    spec.parsed = extra  # checked above: the simulator reuses it (parsed once per job)
    return spec


def read_batsim_workload(path: str | Path, name: str = "w0", *, lenient: bool = False) -> Workload:
    """Read a Batsim JSON workload as Batsim 4.2.1 would, jobs in submission order.

    Runtime complexity: O(n log n) in the number of jobs.
    """
    path = Path(path)
    if "!" in name or not name:
        raise InputError(f"workload name {name!r} must be non-empty and hold no '!'",
                         path=str(path))
    doc = _load_json(path)
    where = str(path)
    if not isinstance(doc, dict):
        raise InputError("the workload must be a JSON object", path=where)
    if not isinstance(doc.get("jobs"), list):
        raise InputError("the workload needs a 'jobs' array", path=where, field="jobs")
    raw_profiles = doc.get("profiles", {})
    if not isinstance(raw_profiles, dict):
        raise InputError("'profiles' must be a JSON object", path=where, field="profiles")

    skipped: Counter[str] = Counter()
    nb_res = doc.get("nb_res")
    if nb_res is not None and (isinstance(nb_res, bool) or not isinstance(nb_res, int)
                               or nb_res < 0):
        if not lenient:
            raise InputError(f"'nb_res' must be an integer >= 0, got {nb_res!r}", path=where,
                             field="nb_res")
        log.warning("%s: ignoring invalid nb_res %r", where, nb_res)
        nb_res = None

    profiles: dict[str, dict[str, Any]] = {}
    for pname, profile in raw_profiles.items():
        try:
            _check_profile(pname, profile, raw_profiles)
        except _BadJob as bad:
            if not lenient:
                raise InputError(f"profile {pname!r}: {bad}", path=where,
                                 field=f"profiles.{pname}.{bad.field}") from None
            skipped[bad.reason] += 1
            log.debug("%s: skipping profile %r: %s", where, pname, bad)
            continue
        profiles[pname] = profile

    jobs: list[JobSpec] = []
    seen: set[str] = set()
    for index, job in enumerate(doc["jobs"]):
        try:
            spec = _job_spec(job, name, profiles)
            if spec.id in seen:
                raise _BadJob("duplicate_id", "id", f"duplicated job id {spec.id!r}")
        except _BadJob as bad:
            label = _job_label(index, job)
            if not lenient:
                raise InputError(str(bad), path=where, job=label, field=bad.field) from None
            skipped[bad.reason] += 1
            log.debug("%s: skipping job %s: %s", where, label, bad)
            continue
        seen.add(spec.id)
        jobs.append(spec)

    if skipped:
        log.warning("%s: skipped %s", where, dict(skipped))
    workload = Workload(name, jobs, profiles, nb_res=nb_res, source=where, skipped=skipped)
    workload.sort()
    return workload


def _job_label(index: int, job: Any) -> str:
    """How an error names a job: its index in ``jobs`` and its id when it has one.

    >>> _job_label(3, {"id": 12}), _job_label(0, [])
    ('#3 (id 12)', '#0')
    """
    if isinstance(job, dict) and "id" in job:
        return f"#{index} (id {job['id']!r})"
    return f"#{index}"


_CORE = ("id", "subtime", "walltime", "res", "profile")


def _job_object(job: JobSpec) -> dict[str, Any]:
    """A job as Batsim's JSON object: core fields first, then the extra ones of ``raw``.

    >>> _job_object(JobSpec("w0!7", 0.0, 2, "p", None, {"id": "w0!7", "deadline": 9.0}))
    {'id': '7', 'subtime': 0.0, 'walltime': -1, 'res': 2, 'profile': 'p', 'deadline': 9.0}
    """
    obj: dict[str, Any] = {"id": job.id.split("!", 1)[-1], "subtime": job.subtime,
                           "walltime": -1 if job.walltime is None else job.walltime,
                           "res": job.res, "profile": job.profile}
    obj.update((k, v) for k, v in job.raw.items() if k not in _CORE)
    return obj


def workload_to_json(workload: Workload) -> str:
    """The Batsim JSON text of ``workload``: one job per line, deterministic.

    Runtime complexity: O(size of the workload).
    """
    def dump(value: Any) -> str:
        """``value`` as compact JSON, or a ConfigError naming the workload."""
        try:
            return json.dumps(value, allow_nan=False, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"workload {workload.name!r} cannot be written as JSON: {exc}") \
                from None

    lines = ["{"]
    if workload.nb_res is not None:
        lines.append(f'  "nb_res": {int(workload.nb_res)},')
    jobs = [f"    {dump(_job_object(job))}" for job in workload.jobs]
    lines.append('  "jobs": [' + ("\n" + ",\n".join(jobs) + "\n  ]," if jobs else "],"))
    profiles = [f"    {dump(name)}: {dump(p)}" for name, p in workload.profiles.items()]
    lines.append('  "profiles": {' + ("\n" + ",\n".join(profiles) + "\n  }" if profiles
                                      else "}"))
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_batsim_workload(workload: Workload, path: str | os.PathLike[str]) -> Path:
    """Write ``workload`` to ``path`` as a Batsim JSON workload; returns the path.

    A missing folder is created; errors (no permission, a file in the way) are a
    :class:`ConfigError` naming the file.
    """
    path = Path(path)
    text = workload_to_json(workload)
    partial = path.with_name(f".{path.name}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError as exc:
        with contextlib.suppress(OSError):  # nothing to remove where no folder could be
            partial.unlink(missing_ok=True)
        raise ConfigError(f"cannot write the workload to {path}: {exc.strerror or exc}") \
            from None
    return path

"""Writing a :class:`Workload` as a Batsim JSON workload file (Batsim's protocol: workloads).

The file is what Batsim 4.2.1 reads with ``-w``: ``{"nb_res", "jobs", "profiles"}``,
each job its ``raw`` object (every extra field kept: ``swf``, ``deadline``, ``job_type``...)
with ``id`` the job's name inside the workload (the part after ``!``, so the file reads
back under any workload name), ``subtime``, ``res``, ``profile`` and ``walltime`` (``-1``
for none, as Batsim writes it) taken from the :class:`JobSpec`. Profiles are written as
they are. One job per line, keys in a fixed order: the same workload gives the same
bytes, so generated files can be compared with ``cmp`` and committed.

The file is written beside its final name and renamed into place, so a failed or
interrupted write never leaves a truncated workload behind.
"""

from __future__ import annotations

import json
import contextlib
import os
from pathlib import Path
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.io.model import JobSpec, Workload

__all__ = ["workload_to_json", "write_batsim_workload"]

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

"""Reading workloads, platforms and events files; writing Batsim-compatible outputs.

:func:`read_workload` picks the reader from the file name: ``.json`` is a Batsim JSON
workload (:func:`read_batsim_workload`), ``.swf`` or ``.swf.gz`` a Standard Workload
Format trace (:func:`read_swf`). :func:`read_events` reads a Batsim ``--events`` file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from batpolicy.errors import InputError
from batpolicy.scheduler.io.batsim_json import read_batsim_workload
from batpolicy.scheduler.io.events import ExternalEvent, read_events
from batpolicy.scheduler.io.model import JobSpec, Workload
from batpolicy.scheduler.io.swf import read_swf

__all__ = ["ExternalEvent", "JobSpec", "Workload", "read_batsim_workload", "read_events",
           "read_swf", "read_workload", "workload_format"]


def workload_format(path: str | Path) -> str:
    """``"json"`` or ``"swf"`` from a workload file name (case-insensitive).

    >>> workload_format("trace.SWF.gz"), workload_format("w.json")
    ('swf', 'json')
    """
    lower = Path(path).name.lower()
    if lower.endswith(".json"):
        return "json"
    if lower.endswith((".swf", ".swf.gz")):
        return "swf"
    raise InputError("unknown workload format: expected a .json (Batsim) or a .swf / .swf.gz "
                     "(Standard Workload Format) file", path=str(path))


def read_workload(path: str | Path, **options: Any) -> Workload:
    """Read a workload, choosing the reader by extension; ``options`` go to that reader."""
    if workload_format(path) == "json":
        return read_batsim_workload(path, **options)
    return read_swf(path, **options)

"""Reading workloads, platforms and events files; writing Batsim-compatible outputs.

:func:`read_workload` picks the reader from the file name: ``.json`` is a Batsim JSON
workload (:func:`read_batsim_workload`), ``.swf`` or ``.swf.gz`` a Standard Workload
Format trace (:func:`read_swf`). :func:`read_events` reads a Batsim ``--events`` file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from batpolicy.errors import InputError
from batpolicy.lazy import lazy_getattr

if TYPE_CHECKING:
    from batpolicy.io.workload import Workload

#: Public name -> submodule that defines it, loaded on first access (PEP 562), so that
#: building the command line (which imports this package) loads no reader.
_LAZY = {"read_batsim_workload": "batsim_json", "ExternalEvent": "events",
         "read_events": "events", "JobSpec": "workload", "Workload": "workload", "read_swf": "swf"}

__all__ = sorted([*_LAZY, "read_workload", "workload_format"])


__getattr__ = lazy_getattr(__name__, _LAZY)


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
        from batpolicy.io.batsim_json import read_batsim_workload

        return read_batsim_workload(path, **options)
    from batpolicy.io.swf import read_swf

    return read_swf(path, **options)

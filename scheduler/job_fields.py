"""Extra Batsim job fields (``origin``, ``comp_share``, ``ppbw``...) read the same way everywhere.

Shim for issue 10, interface C: until :class:`~batpolicy.scheduler.jobs.Job` (and the
simulator's job) carry these fields as typed attributes, read them from the job's JSON
object (``raw``), which Batsim forwards in JOB_SUBMITTED with every extra field kept.
The co-allocation model and policy (Jones et al. 2005, seed 003) use ``origin`` (the
cluster the job arrived at, §5 module LA), ``comp_share`` (K, §3.8) and ``ppbw``
(byte/s per processor, §3.3).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["job_field"]


def job_field(job: Any, name: str) -> Any:
    """A job's extra field: the typed attribute when set, else ``raw[name]``, else None.

    >>> from types import SimpleNamespace
    >>> job_field(SimpleNamespace(raw={"ppbw": 5.0}), "ppbw")
    5.0
    >>> job_field(SimpleNamespace(raw=None, ppbw=None), "ppbw") is None
    True
    """
    value = getattr(job, name, None)
    if value is not None:
        return value
    raw = getattr(job, "raw", None)
    return raw.get(name) if isinstance(raw, Mapping) else None

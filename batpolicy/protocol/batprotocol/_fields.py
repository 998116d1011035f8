"""Field-level conversions between batprotocol's tables and Batsim 4's typed values.

Host sets, times, return codes, jobs, hosts and kill progress, each both ways, and
:class:`Memory`, what one conversation must remember because batprotocol no longer
repeats it. Used by :mod:`._events` and :mod:`._decisions`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from batpolicy.errors import ProtocolError
from batpolicy.protocol import types as t
from batpolicy.protocol.batprotocol import _schema as s
from batpolicy.protocol.intervals import MachineSet, format_intervals, parse_intervals

#: batprotocol's notification tables and the Batsim 4 NOTIFY kind each stands for.
NOTIFY_OF = {
    "AllStaticJobsHaveBeenSubmittedEvent": t.NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value,
    "AllStaticExternalEventsHaveBeenInjectedEvent":
        t.NotifyType.NO_MORE_EXTERNAL_EVENT_TO_OCCUR.value,
}
#: The other way round: the Batsim 4 NOTIFY kind -> the batprotocol table.
TABLE_OF_NOTIFY = {kind: table for table, kind in NOTIFY_OF.items()}


@dataclass
class Memory:
    """What one conversation remembers from the decisions that crossed it.

    ``allocations``: job id -> the hosts it was started on (a JobCompletedEvent has
    none). ``calls``: CallMeLater id -> its time (a RequestedCallEvent names the call).
    ``host_separator``: "," for the snapshot, " " for rc2. ``config``: the Batsim 4
    ``config`` of SIMULATION_BEGINS the EDC's features amount to.
    """

    host_separator: str = ","
    config: dict[str, Any] = field(default_factory=dict)
    allocations: dict[str, MachineSet] = field(default_factory=dict)
    calls: dict[str, float] = field(default_factory=dict)
    next_call: int = 0

    def new_call(self, at: float) -> str:
        """A fresh CallMeLater id for a call at ``at``."""
        call_id = f"batpolicy-{self.next_call}"
        self.next_call += 1
        self.calls[call_id] = at
        return call_id


def hosts_text(hosts: MachineSet, separator: str = ",") -> str:
    """A host set as Batsim 5 writes it (intervalset's ``to_string_hyphen``).

    The snapshot and its EDCs use its default separator, a comma; rc2 passes a space
    (Batsim 4's).

    >>> hosts_text(MachineSet.of((1, 12), (14, 17), 20)), hosts_text(MachineSet.of(1, 3), " ")
    ('1-12,14-17,20', '1 3')
    """
    text = format_intervals(hosts)
    return text if separator == " " else text.replace(" ", separator)


def parse_hosts(text: str, *, field: str, index: int, separator: str = ",") -> MachineSet:
    """A host set in Batsim 5's form (ProtocolError naming ``field``).

    >>> parse_hosts("1-12,14-17", field="f", index=0) == MachineSet.of((1, 12), (14, 17))
    True
    """
    other = " " if separator == "," else ","
    if other in text:
        raise ProtocolError(f"hosts {text[:80]!r}: this Batsim 5 separates intervals with "
                            f"{'commas' if separator == ',' else 'spaces'}",
                            index=index, field=field)
    return parse_intervals(text.replace(separator, " "), field=field, index=index)


def strip_nul(raw: bytes) -> bytes:
    r"""The JSON text of a message: Batsim's C strings end with one NUL byte.

    >>> strip_nul(b'{"now":0.0}\x00'), strip_nul(b'{}')
    (b'{"now":0.0}', b'{}')
    """
    return raw[:-1] if raw[-1:] == b"\0" else raw


def call_time_ms(at: float) -> int:
    """A CallMeLater time in whole milliseconds, never before ``at``.

    batprotocol's OneShot holds an integer time; rounding up keeps Batsim 4's promise
    that the call comes at or after ``at`` (Batsim 5 fires a call in the past at once).

    >>> call_time_ms(10.0), call_time_ms(0.0015), call_time_ms(1e-7)
    (10000, 2, 1)
    """
    ms = at * 1000.0
    whole = round(ms)
    return whole if abs(ms - whole) < 1e-6 else math.ceil(ms)


def signed_return_code(code: int) -> int:
    """A return code as Batsim 4 gave it.

    Batsim 5 writes its C ``int`` into batprotocol's ``uint32``: a walltime-killed job's -1
    arrives as 4294967295.

    >>> signed_return_code(4294967295), signed_return_code(3)
    (-1, 3)
    """
    return code - 2 ** 32 if code >= 2 ** 31 else code


def _properties(props: list[s.HostProperty]) -> dict[str, str]:
    return {p.key: p.value for p in props}


def resource(host: s.Host) -> t.ResourceInfo:
    """A SimulationBeginsEvent host as Batsim 4's resource (state in lower case)."""
    return t.ResourceInfo(id=host.id, name=host.name, state=host.state.lower(),
                          properties=_properties(host.properties),
                          zone_properties=_properties(host.zone_properties))


def host(info: t.ResourceInfo) -> s.Host:
    """A Batsim 4 resource as a SimulationBeginsEvent host."""
    return s.Host(name=info.name, id=info.id, state=info.state.upper(),
                  properties=[s.HostProperty(str(k), str(v)) for k, v in info.properties.items()],
                  zone_properties=[s.HostProperty(str(k), str(v))
                                   for k, v in info.zone_properties.items()])


def job_description(job_id: str, job: s.WireJob, submission_time: float) -> dict[str, Any]:
    """The Batsim 4 job object of a batprotocol Job.

    ``walltime`` <= 0 means "none" in Batsim 5 (its EASY EDC rejects such jobs), -1 in
    Batsim 4. The members of ``extra_data`` (a JSON object as a string, Batsim 5's place
    for user fields) join the object as Batsim 4's extra job fields did, without
    replacing the protocol's own.

    >>> job_description("w0!1", s.WireJob(4, 60.0, '{"deadline": 90}', True, "w0!p"), 5.0)
    {'id': 'w0!1', 'subtime': 5.0, 'res': 4, 'walltime': 60.0, 'profile': 'p', 'deadline': 90}
    """
    profile = job.profile_id or ""
    desc: dict[str, Any] = {"id": job_id, "subtime": submission_time,
                            "res": job.resource_request,
                            "walltime": job.walltime if job.walltime > 0 else -1,
                            "profile": profile.partition("!")[2] or profile}
    if job.extra_data:
        try:
            extra = json.loads(job.extra_data)
        except ValueError:
            extra = None
        if isinstance(extra, dict):
            for key, value in extra.items():
                desc.setdefault(key, value)
        else:
            desc["extra_data"] = job.extra_data
    return desc


def wire_job(job_id: str, desc: Mapping[str, Any]) -> s.WireJob:
    """A Batsim 4 job object as batprotocol's Job (inverse of :func:`job_description`)."""
    walltime = desc.get("walltime", -1)
    profile = str(desc.get("profile", ""))
    workload = job_id.partition("!")[0]
    known = {"id", "subtime", "res", "walltime", "profile"}
    extra = {k: v for k, v in desc.items() if k not in known}
    return s.WireJob(resource_request=int(desc["res"]),
                     walltime=float(walltime) if walltime and walltime > 0 else -1.0,
                     extra_data=json.dumps(extra, sort_keys=True) if extra else "",
                     profile_id=profile if "!" in profile else f"{workload}!{profile}")


def progress_to_v4(wrapper: Mapping[str, Any]) -> dict[str, Any]:
    """A KillProgressWrapper as Batsim 4's job_progress entry (``profile_name`` keys)."""
    kind = wrapper.get("kill_progress_type")
    body = wrapper.get("kill_progress") or {}
    out: dict[str, Any] = {"profile_name": str(body.get("profile_id", "")).partition("!")[2]}
    if kind == "KillProgressSequentialProfile":
        out["current_task_index"] = body.get("current_task_index", 0)
        out["current_task"] = progress_to_v4(body.get("current_task_progress") or {})
    else:
        out["progress"] = body.get("progress", 0.0)
    return out


def progress_to_v5(job_id: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """Batsim 4's job_progress entry as a KillProgressWrapper (inverse of progress_to_v4)."""
    profile = f"{job_id.partition('!')[0]}!{entry.get('profile_name', '')}"
    if "current_task" in entry:
        return {"kill_progress_type": "KillProgressSequentialProfile", "kill_progress": {
            "profile_id": profile, "current_repetition": 0,
            "current_task_index": entry.get("current_task_index", 0),
            "current_task_progress": progress_to_v5(job_id, entry["current_task"])}}
    return {"kill_progress_type": "KillProgressAtomicProfile",
            "kill_progress": {"profile_id": profile, "progress": entry.get("progress", 0.0)}}

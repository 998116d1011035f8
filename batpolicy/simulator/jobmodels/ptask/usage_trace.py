"""Batsim 4.2.1's ``usage_trace`` profiles: the trace files and the tasks they become.

A ``usage_trace`` profile names a trace file (``trace``, relative to the workload file's
folder, ``Profile::from_json`` in ``src/profiles.cpp``) listing one file per rank, one a
line (trimmed on the right, relative to the trace file's folder; an empty line names the
folder itself, which reads as an empty trace). Batsim checks the trace file when it
loads the workload; the rank files are read when the job runs.

Each rank's file is replayed by SimGrid 3.32's ``xbt::replay_runner``
(``src/xbt/xbt_replay.cpp``, ``ReplayReader``): lines trimmed, blank lines and lines
starting with ``#`` skipped, fields split on spaces and tabs; a line whose first field
is not the rank's number is ignored; and the file's last line counts only if a newline
ends it (``ReplayReader::get`` returns ``not eof`` after reading it). The only action
Batsim registers is ``RANK m_usage USAGE FLOPS`` (``usage_trace_replayer`` in
``src/jobs_execution.cpp``): USAGE and FLOPS read with ``std::stod`` (a number prefix),
USAGE finite in [0, 1], FLOPS finite and >= 0; it runs a one-host parallel task of
``max(round(USAGE x cores), 1)`` executors of FLOPS each on the rank's host.

Where Batsim stops (an assertion, an exception, an unknown action) this module raises
one :class:`~batpolicy.errors.InputError` naming the file, the line and the profile.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from batpolicy.errors import InputError

__all__ = ["RankTrace", "UsageTrace", "check_trace_field", "cores_to_use", "rank_hosts",
           "read_usage_trace"]

#: ``std::stod``'s accepted prefix (``strtod``): decimal, hexadecimal, inf and nan.
_STOD = re.compile(r"\s*[+-]?(?:(?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                   r"(?:[pP][+-]?\d+)?)|(?P<dec>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
                   r"|(?P<inf>inf(?:inity)?)|(?P<nan>nan(?:\([0-9A-Za-z_]*\))?))",
                   re.IGNORECASE)
#: ``boost::trim``'s white space (the classic locale's ``isspace``).
_SPACE = " \t\n\v\f\r"


@dataclass(frozen=True, slots=True)
class RankTrace:
    """One rank's actions: (USAGE, FLOPS) of each ``m_usage`` line, in order."""

    path: str
    actions: tuple[tuple[float, float], ...]


@dataclass(frozen=True, slots=True)
class UsageTrace:
    """A ``usage_trace`` profile's rank files (the trace file's lines, resolved)."""

    trace: str
    rank_files: tuple[str, ...]


def _where(workload: str, name: str) -> str:
    return f"{workload}!{name}"


def check_trace_field(profile: Mapping[str, Any], workload: str, name: str,
                      workload_path: str | None) -> UsageTrace:
    """Batsim's load-time checks of a ``usage_trace`` profile; its rank files.

    ``workload_path`` is the workload file (None: a profile registered by the scheduler,
    which Batsim refuses: only a file workload can hold one).
    """
    where = _where(workload, name)
    trace = profile.get("trace")
    if "trace" not in profile:
        raise InputError(f"profile '{name}' has no 'trace' field", path=workload_path,
                         field=where)
    if not isinstance(trace, str):
        raise InputError(f"profile '{name}' has a non-string 'trace' field", path=workload_path,
                         field=where)
    if workload_path is None:
        raise InputError("a usage_trace profile can only come from a workload file (Batsim: "
                         "trying to create a SMPI profile from another source than a file "
                         "workload)", field=where)
    base = os.path.dirname(workload_path)
    trace_path = f"{base}/{trace}" if base else trace
    if not os.path.isfile(trace_path):
        raise InputError(f"profile '{name}' has an invalid 'trace' field ('{trace}'), which "
                         f"leads to a non-existent file ('{trace_path}')", path=workload_path,
                         field=where)
    folder = os.path.dirname(trace_path)
    with open(trace_path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
        text = handle.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":  # getline: a final newline ends the last line
        lines.pop()
    ranks = tuple(f"{folder}/{line.rstrip(_SPACE)}" for line in lines)
    return UsageTrace(trace_path, ranks)


def _stod(text: str) -> float | None:
    """``std::stod``: the number at the start of ``text``; None where it throws."""
    match = _STOD.match(text)
    if match is None:
        return None
    token = match.group(0).strip()
    if match.group("inf"):
        return -math.inf if token.startswith("-") else math.inf
    if match.group("nan"):
        return math.nan
    try:
        value = float.fromhex(token) if match.group("hex") else float(token)
    except (OverflowError, ValueError):
        return None  # out of range: std::out_of_range
    if math.isinf(value):
        return None  # overflow: strtod's ERANGE, std::out_of_range
    if value == 0.0 and re.search(r"[1-9a-fA-F]", token.split("e")[0].split("E")[0]
                                  .split("p")[0].split("P")[0].lstrip("+-0xX")):
        return None  # underflow to 0: ERANGE, std::out_of_range
    return value


def read_rank(path: str, rank: int, where: str, workload_path: str | None) -> RankTrace:
    """The ``m_usage`` actions of ``rank``'s file (``replay_runner`` with a rank file)."""
    if os.path.isdir(path):
        return RankTrace(path, ())  # a directory opens, and reads as empty
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
            text = handle.read()
    except OSError as exc:
        raise InputError(f"cannot read the trace of rank {rank} ({exc.strerror}; Batsim: "
                         f"Cannot read replay file), workload {workload_path}",
                         path=path, field=where) from None
    lines = text.split("\n")
    # the last piece has no newline after it: ReplayReader::get reads it and hits eof
    lines.pop()
    me = str(rank)
    actions: list[tuple[float, float]] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip(_SPACE)
        if not line or line.startswith("#"):
            continue
        fields = [f for f in re.split(r"[ \t]+", line) if f]
        if fields[0] != me:
            continue  # Batsim warns: trace element not for me
        actions.append(_action(fields, path, number, where, workload_path))
    return RankTrace(path, tuple(actions))


def _action(fields: Sequence[str], path: str, number: int, where: str,
            workload_path: str | None) -> tuple[float, float]:
    """(USAGE, FLOPS) of one line, checked as ``usage_trace_replayer`` does."""
    def bad(message: str) -> InputError:
        """The error of this line: its file, number, profile and workload."""
        return InputError(f"{message} (workload {workload_path})", path=path, line=number,
                          field=where)
    if len(fields) < 2 or fields[1] != "m_usage":
        action = fields[1] if len(fields) > 1 else "(none)"
        raise bad(f"unknown replay action '{action}': a usage trace line is "
                  "'RANK m_usage USAGE FLOPS'")
    if len(fields) < 4:
        raise bad("an m_usage line needs USAGE and FLOPS: 'RANK m_usage USAGE FLOPS'")
    usage, flops = _stod(fields[2]), _stod(fields[3])
    if usage is None:
        raise bad(f"invalid usage '{fields[2]}': not a number (std::stod)")
    if flops is None:
        raise bad(f"invalid flops '{fields[3]}': not a number (std::stod)")
    if not (math.isfinite(usage) and 0.0 <= usage <= 1.0):
        raise bad(f"invalid usage read: {usage:g} not in [0,1]")
    if not (math.isfinite(flops) and flops >= 0.0):
        raise bad(f"invalid flops read: {flops:g} not positive and finite")
    return usage, flops


def read_usage_trace(trace: UsageTrace, where: str, workload_path: str | None
                     ) -> tuple[RankTrace, ...]:
    """Every rank's actions, as the job's rank actors read them."""
    return tuple(read_rank(path, rank, where, workload_path)
                 for rank, path in enumerate(trace.rank_files))


def cores_to_use(usage: float, cores: int) -> int:
    """``max(round(usage x cores), 1)``, C's ``round`` (halves away from zero).

    >>> cores_to_use(0.5, 3), cores_to_use(0.0, 8), cores_to_use(0.97, 100)
    (2, 1, 97)
    """
    x = usage * float(cores)
    floor = math.floor(x)
    return max(int(floor) + (1 if x - floor >= 0.5 else 0), 1)


def rank_hosts(nb_ranks: int, executors: Sequence[int], mapping: Any, requested: int,
               where: str, job: str) -> list[int]:
    """The host of each rank (``execute_task``).

    The job's ``smpi_ranks_to_hosts_mapping`` or ranks round-robin over the requested
    resources, indexing the executors' hosts.
    """
    if mapping is None:
        return [executors[rank % requested] for rank in range(nb_ranks)]
    if not isinstance(mapping, list) or len(mapping) != nb_ranks:
        size = len(mapping) if isinstance(mapping, list) else "no list"
        raise InputError(f"invalid job: its smpi_ranks_to_hosts_mapping has size {size}, the "
                         f"trace has {nb_ranks} ranks", job=job, field=where)
    hosts = []
    for rank, index in enumerate(mapping):
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < requested:
            raise InputError(f"bad smpi_ranks_to_hosts_mapping: rank {rank} has an invalid "
                             f"value {index!r}: should be in [0,{requested}[", job=job,
                             field=where)
        hosts.append(executors[index])
    return hosts

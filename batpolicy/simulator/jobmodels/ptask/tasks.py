"""Batsim 4.2.1's profiles as SimGrid parallel tasks: the matrices and their checks.

Follows ``src/task_execution.cpp`` (``generate_matrices_from_profile``):

- ``parallel``: ``cpu[i]`` flop on the i-th executor, ``com[i * n + j]`` bytes from the
  i-th to the j-th; the profile's size must be the allocation's
  (``generate_parallel_task``);
- ``parallel_homogeneous``: ``cpu`` flop on each executor and ``com`` bytes between every
  ordered pair of distinct executors, no matrix when ``com`` is 0
  (``generate_parallel_homogeneous``);
- ``parallel_homogeneous_total``: the same with ``cpu / n`` and ``com / n``
  (``generate_parallel_homogeneous_total_amount``);
- ``parallel_homogeneous_pfs``: the executors plus one storage host; each executor
  writes ``bytes_to_write`` to it and reads ``bytes_to_read`` from it, nothing computed;
  the storage is the one of ``storage_mapping[label]`` (label ``storage``, default
  ``pfs``), or the platform's only storage host when the decision gives no mapping
  (``generate_parallel_homogeneous_with_pfs``);
- ``data_staging``: ``nb_bytes`` from storage ``from`` to storage ``to``
  (``generate_data_staging_task``);
- ``delay``: a sleep, no resource.

and the checks of ``src/profiles.cpp`` (``Profile::from_json``): sizes, signs, labels.
Errors are :class:`~batpolicy.errors.InputError` naming the profile (``workload!name``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from batpolicy.errors import InputError

__all__ = ["COMMUNICATING", "Leaf", "check_ptask_profile", "communicates", "leaf_task",
           "program"]

#: Profile types whose task can move data (or needs the parallel-task model at all).
COMMUNICATING = frozenset({"parallel_homogeneous_pfs", "data_staging"})
SEQUENCES = frozenset({"composed", "sequence"})
_PARALLEL = frozenset({"parallel", "parallel_homogeneous", "parallel_homogeneous_total"})


@dataclass(frozen=True, slots=True)
class Leaf:
    """One task of a job.

    A parallel task on ``hosts`` (machine ids, repeats allowed) or, when ``delay`` is
    set, a sleep, or, when ``ranks`` is set, a usage trace (:mod:`.usage_trace`): per
    rank its host and its one-host tasks (executors, flops of each), each rank telling
    the job actor on host ``receiver`` its end with a 4-byte message; ``ret`` is the
    profile's return code.
    """

    name: str
    hosts: tuple[int, ...] = ()
    flops: tuple[float, ...] = ()
    bytes: tuple[float, ...] | None = None
    delay: float | None = None
    ret: int = 0
    ranks: tuple[tuple[int, tuple[tuple[int, float], ...]], ...] | None = None
    receiver: int = -1


def _number(profile: Mapping[str, Any], key: str, where: str, default: float | None = None
            ) -> float:
    value = profile.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"profile has a non-number '{key}' field ({value!r})", field=where)
    if value < 0:
        raise InputError(f"profile has a negative '{key}' field ({value})", field=where)
    return float(value)


def check_ptask_profile(profile: Mapping[str, Any], where: str) -> None:
    """Batsim's checks of a leaf profile's amounts (``Profile::from_json``).

    >>> check_ptask_profile({"type": "parallel", "cpu": [1, 2], "com": [0, 1, 1]}, "w!p")
    Traceback (most recent call last):
    ...
    batpolicy.errors.InputError: field 'w!p': profile is incoherent: its 'com' array has 3 \
values, 'cpu' has 2 so 'com' needs 2 x 2 = 4
    """
    kind = profile.get("type")
    if kind == "parallel":
        cpu, com = profile.get("cpu"), profile.get("com")
        if not isinstance(cpu, list) or not cpu:
            raise InputError("profile needs a non-empty 'cpu' array", field=where)
        if not isinstance(com, list):
            raise InputError("profile needs a 'com' array", field=where)
        if len(com) != len(cpu) * len(cpu):
            raise InputError(f"profile is incoherent: its 'com' array has {len(com)} values, "
                             f"'cpu' has {len(cpu)} so 'com' needs {len(cpu)} x {len(cpu)} = "
                             f"{len(cpu) * len(cpu)}", field=where)
        for key, values in (("cpu", cpu), ("com", com)):
            for i, value in enumerate(values):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                    raise InputError(f"profile's '{key}' array is invalid: all its values must "
                                     f"be numbers >= 0, value {i} is {value!r}", field=where)
    elif kind in ("parallel_homogeneous", "parallel_homogeneous_total"):
        _number(profile, "cpu", where)
        _number(profile, "com", where, 0.0)
    elif kind == "parallel_homogeneous_pfs":
        if "bytes_to_read" not in profile and "bytes_to_write" not in profile:
            raise InputError("profile has no 'bytes_to_read' or 'bytes_to_write' field",
                             field=where)
        _number(profile, "bytes_to_read", where, 0.0)
        _number(profile, "bytes_to_write", where, 0.0)
        label = profile.get("storage", profile.get("host", "pfs"))
        if not isinstance(label, str):
            raise InputError(f"profile has a non-string storage label ({label!r})", field=where)
    elif kind == "data_staging":
        _number(profile, "nb_bytes", where)
        for key in ("from", "to"):
            if not isinstance(profile.get(key), str):
                raise InputError(f"profile needs a string '{key}' field (a storage label)",
                                 field=where)


Definitions = Callable[[str], Mapping[str, Any]]


def communicates(profile: Mapping[str, Any], definition: Definitions, _depth: int = 0) -> bool:
    """Whether a profile (or a task of its sequence) moves data over the network."""
    kind = profile.get("type")
    if kind in SEQUENCES:
        return _depth < 20 and any(communicates(definition(str(s)), definition, _depth + 1)
                                   for s in profile.get("seq", ()))
    if kind in COMMUNICATING:
        return True
    if kind == "parallel":
        return any(c > 0 for c in profile.get("com", ()))
    if kind in ("parallel_homogeneous", "parallel_homogeneous_total"):
        return float(profile.get("com", 0) or 0) > 0
    return False


def program(name: str, profile: Mapping[str, Any], definition: Definitions
            ) -> list[tuple[tuple[tuple[str, int], ...], str, Mapping[str, Any]]]:
    """The leaves of a profile in execution order.

    Each with its path of (sequence name, index in its ``seq``), for Batsim's kill
    progress, its name and its definition.
    """
    out: list[tuple[tuple[tuple[str, int], ...], str, Mapping[str, Any]]] = []

    def walk(path: tuple[tuple[str, int], ...], name: str, profile: Mapping[str, Any]) -> None:
        """Append the leaves of ``profile`` under ``path``."""
        if profile.get("type") in SEQUENCES:
            seq = [str(s) for s in profile.get("seq", ())]
            for _ in range(int(profile.get("repeat", 1))):
                for index, sub in enumerate(seq):
                    walk((*path, (name, index)), sub, definition(sub))
        else:
            out.append((path, name, profile))

    walk((), name, profile)
    return out


def _pairs(nb: int, amount: float) -> tuple[float, ...] | None:
    """``amount`` between every ordered pair of distinct executors, None if 0."""
    if amount <= 0:
        return None
    matrix = [amount] * (nb * nb)
    matrix[::nb + 1] = [0.0] * nb  # the diagonal
    return tuple(matrix)


def leaf_task(name: str, profile: Mapping[str, Any], executors: Sequence[int], where: str,
              storage_mapping: Mapping[str, int] | None, storage_ids: Sequence[int]) -> Leaf:
    """The parallel task (or sleep) of a leaf profile on ``executors`` (machine ids).

    ``storage_mapping`` maps the decision's labels to machine ids (None or empty: none
    given); ``storage_ids`` are the platform's storage machines. Errors name ``where``.
    """
    ret = int(profile.get("ret", 0))
    kind = profile.get("type")
    nb = len(executors)
    hosts = tuple(executors)
    if kind == "delay":
        return Leaf(name, delay=float(profile["delay"]), ret=ret)
    if kind == "parallel":
        cpu = profile["cpu"]
        if len(cpu) != nb:
            raise InputError(f"profile '{name}' is for {len(cpu)} executors, the allocation has "
                             f"{nb} (Batsim: the number of resources given by the allocation "
                             "differs from the profile's)", field=where)
        com = tuple(float(c) for c in profile.get("com", ()))
        return Leaf(name, hosts, tuple(float(c) for c in cpu),
                    com if any(c > 0 for c in com) else None, ret=ret)
    if kind == "parallel_homogeneous":
        return Leaf(name, hosts, (float(profile["cpu"]),) * nb,
                    _pairs(nb, float(profile.get("com", 0))), ret=ret)
    if kind == "parallel_homogeneous_total":
        return Leaf(name, hosts, (float(profile["cpu"]) / nb,) * nb,
                    _pairs(nb, float(profile.get("com", 0)) / nb), ret=ret)
    if kind == "parallel_homogeneous_pfs":
        label = str(profile.get("storage", profile.get("host", "pfs")))
        pfs = _storage(label, storage_mapping, storage_ids, where, allow_default=True)
        read = float(profile.get("bytes_to_read", 0))
        write = float(profile.get("bytes_to_write", 0))
        size = nb + 1
        matrix = None
        if read > 0 or write > 0:
            matrix = tuple(write if col == nb and row != nb else
                           read if row == nb and col != nb else 0.0
                           for row in range(size) for col in range(size))
        return Leaf(name, (*hosts, pfs), (0.0,) * size, matrix, ret=ret)
    if kind == "data_staging":
        src = _storage(str(profile["from"]), storage_mapping, storage_ids, where)
        dst = _storage(str(profile["to"]), storage_mapping, storage_ids, where)
        amount = float(profile["nb_bytes"])
        return Leaf(name, (src, dst), (0.0, 0.0),
                    (0.0, amount, 0.0, 0.0) if amount > 0 else None, ret=ret)
    raise InputError(f"profile type {kind!r} is not a task the parallel-task model runs",
                     field=where)


def _storage(label: str, mapping: Mapping[str, int] | None, storage_ids: Sequence[int],
             where: str, allow_default: bool = False) -> int:
    """The storage machine of ``label`` (``generate_parallel_homogeneous_with_pfs``)."""
    if not mapping:
        if allow_default and len(storage_ids) == 1:
            return storage_ids[0]
        if allow_default:
            raise InputError(f"no storage_mapping given and the platform has "
                             f"{len(storage_ids)} storage machines, not exactly one "
                             f"(storage label '{label}')", field=where)
        raise InputError(f"unknown storage label '{label}': the EXECUTE_JOB decision gives no "
                         "storage_mapping", field=where)
    if label not in mapping:
        raise InputError(f"unknown storage label '{label}': the EXECUTE_JOB storage_mapping "
                         f"has {sorted(mapping)}", field=where)
    machine = mapping[label]
    if machine not in storage_ids:
        raise InputError(f"storage label '{label}' maps to machine {machine}, which is not a "
                         "storage machine", field=where)
    return machine

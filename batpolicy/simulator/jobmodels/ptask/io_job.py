"""EXECUTE_JOB's ``additional_io_job``: an I/O profile merged into the job's parallel tasks.

Batsim 4.2.1 (``protocol.cpp``, ``handle_execute_job``) reads ``additional_io_job`` =
``{"alloc": "...", "profile_name": NAME[, "profile": {...}]}``: a given ``profile`` is
added to the job's workload under ``profile_name`` (a name that already exists aborts),
else ``profile_name`` must exist; an I/O *sequence* needs a job sequence of as many
elements. The job actor (``jobs_execution.cpp``, ``initialize_sequential_tasks``) gives
the i-th task of each repetition of a sequence the i-th element of the I/O sequence,
and a leaf task the I/O profile itself; a delay task ignores it. Each parallel task
(``task_execution.cpp``, ``execute_parallel_task``) then:

- builds the I/O matrices for ``len(io_alloc)`` hosts (``allocation->io_hosts`` are
  machines ``0..k-1``: only their count matters for the parallel profile types);
- merges them with the job's (:func:`merge`): the hosts are the union of both
  allocations in machine order; a machine in both adds both computations; the
  communications are copied as Batsim's loop does (each side's matrix read in order,
  summed where both sides have an entry).

Refused with one clear error, where Batsim would read outside a matrix or abort
(undefined behaviour there): an I/O leaf that is not ``parallel``,
``parallel_homogeneous(_total)`` or that moves no data, a storage profile
(``parallel_homogeneous_pfs``, ``data_staging``) as the job's task (Batsim's FIXME), a
job sequence paired with an I/O profile that is no sequence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from batpolicy.errors import InputError
from batpolicy.simulator.jobmodels.ptask.tasks import (
    COMMUNICATING,
    SEQUENCES,
    Leaf,
    communicates,
    leaf_task,
    program,
)

__all__ = ["IO_TYPES", "check_io_profiles", "io_profiles", "merge", "merged_leaf"]

#: I/O leaf profile types Batsim can merge (``generate_matrices_from_profile`` without
#: a storage mapping).
IO_TYPES = frozenset({"parallel", "parallel_homogeneous", "parallel_homogeneous_total"})

Definitions = Callable[[str], Mapping[str, Any]]


def io_profiles(name: str, profile: Mapping[str, Any], io_name: str,
                io_profile: Mapping[str, Any], definition: Definitions, where: str
                ) -> list[tuple[str, Mapping[str, Any]]]:
    """The I/O leaf profile of each leaf of the job's program, in its order.

    Aligned with :func:`~.tasks.program` (``initialize_sequential_tasks``): a sequence's
    i-th element (every repetition) pairs with the I/O sequence's i-th element.
    """
    out: list[tuple[str, Mapping[str, Any]]] = []

    def walk(name: str, profile: Mapping[str, Any], io_name: str,
             io_profile: Mapping[str, Any], depth: int) -> None:
        """Append the I/O leaf of each leaf under ``profile``."""
        if profile.get("type") in COMMUNICATING:
            raise InputError(f"additional_io_job: the job's task '{name}' is a "
                             f"{profile.get('type')} profile, which Batsim cannot merge with "
                             "an I/O task (task_execution.cpp: 'This will not work for the "
                             "PFS profiles')", field=where)
        if profile.get("type") not in SEQUENCES:
            out.append((io_name, io_profile))
            return
        if io_profile.get("type") not in SEQUENCES or depth > 20:
            raise InputError(f"additional_io_job: profile '{io_name}' is no sequence but the "
                             f"job's task '{name}' is one (Batsim needs a sequence of the "
                             "same size to merge them)", field=where)
        seq = [str(s) for s in profile.get("seq", ())]
        io_seq = [str(s) for s in io_profile.get("seq", ())]
        if len(seq) != len(io_seq):
            raise InputError(f"additional_io_job: IO profile sequence size ({len(io_seq)}) and "
                             f"job profile sequence size ({len(seq)}) should be the same",
                             field=where)
        for _ in range(int(profile.get("repeat", 1))):
            for sub, io_sub in zip(seq, io_seq, strict=True):
                walk(sub, definition(sub), io_sub, definition(io_sub), depth + 1)

    walk(name, profile, io_name, io_profile, 0)
    return out


def check_io_profiles(name: str, profile: Mapping[str, Any], io_name: str,
                      io_profile: Mapping[str, Any], definition: Definitions, where: str
                      ) -> None:
    """What :func:`merged_leaf` refuses, checked when the decision comes (no matrix built)."""
    for (_, _, leaf), (leaf_io_name, leaf_io) in zip(
            program(name, profile, definition),
            io_profiles(name, profile, io_name, io_profile, definition, where), strict=True):
        if leaf.get("type") == "delay":
            continue
        _check_io_leaf(leaf_io_name, leaf_io, definition, where)


def _check_io_leaf(io_name: str, io_profile: Mapping[str, Any], definition: Definitions,
                   where: str) -> None:
    """An I/O leaf Batsim can merge: a parallel type that moves data."""
    if io_profile.get("type") not in IO_TYPES:
        raise InputError(f"additional_io_job: profile '{io_name}' is a "
                         f"{io_profile.get('type')!r} profile; Batsim merges only "
                         f"{', '.join(sorted(IO_TYPES))} I/O tasks", field=where)
    if not communicates(io_profile, definition):
        raise InputError(f"additional_io_job: profile '{io_name}' moves no data; Batsim's "
                         "merge reads its communication matrix, which is then empty",
                         field=where)


def merged_leaf(leaf: Leaf, io_name: str, io_profile: Mapping[str, Any],
                io_alloc: Sequence[int], where: str) -> Leaf:
    """The job's task ``leaf`` (on its allocation, in machine order) with its I/O task."""
    if leaf.delay is not None:
        return leaf  # execute_task: a delay ignores the I/O profile
    _check_io_leaf(io_name, io_profile, lambda n: {}, where)
    io_leaf = leaf_task(io_name, io_profile, list(range(len(io_alloc))), where, None, ())
    hosts, flops, matrix = merge(leaf.hosts, leaf.flops, leaf.bytes, sorted(io_alloc),
                                 io_leaf.flops, io_leaf.bytes)
    return Leaf(leaf.name, hosts, flops, matrix if any(b > 0 for b in matrix) else None,
                ret=leaf.ret)


def merge(job_hosts: Sequence[int], flops: Sequence[float], matrix: Sequence[float] | None,
          io_hosts: Sequence[int], io_flops: Sequence[float], io_matrix: Sequence[float]
          ) -> tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...]]:
    """Batsim's merge of a job's task and its I/O task (``execute_parallel_task``).

    ``job_hosts`` and ``io_hosts`` are machine ids in increasing order; ``matrix`` is
    None when the job's task moves nothing (Batsim's empty matrix). Position ``col * n +
    row`` of the result takes the next unread entry of the sides the pair belongs to, as
    Batsim's loop (outer loop on ``col``, inner on ``row``) does.

    >>> merge((0, 1), (1.0, 2.0), None, (1, 2), (10.0, 20.0), (0.0, 5.0, 6.0, 0.0))
    ((0, 1, 2), (1.0, 12.0, 20.0), (0.0, 0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 6.0, 0.0))
    """
    in_job, in_io = set(job_hosts), set(io_hosts)
    hosts = tuple(sorted(in_job | in_io))
    n = len(hosts)
    new_flops = [0.0] * n
    new_matrix = [0.0] * (n * n)
    k = flop_job = flop_io = com_job = com_io = 0
    for col in range(n):
        machine = hosts[col]
        only_job = only_io = False
        if machine in in_job and machine in in_io:
            new_flops[col] = flops[flop_job] + io_flops[flop_io]
            flop_job += 1
            flop_io += 1
        elif machine in in_job:
            new_flops[col] = flops[flop_job]
            flop_job += 1
            only_job = True
        else:
            new_flops[col] = io_flops[flop_io]
            flop_io += 1
            only_io = True
        for row in range(n):
            other = hosts[row]
            if other in in_job and other in in_io:
                if only_job:
                    if matrix is not None:
                        new_matrix[k] = matrix[com_job]
                        com_job += 1
                elif only_io:
                    new_matrix[k] = io_matrix[com_io]
                    com_io += 1
                elif matrix is not None:
                    new_matrix[k] = matrix[com_job] + io_matrix[com_io]
                    com_job += 1
                    com_io += 1
                else:
                    new_matrix[k] = io_matrix[com_io]
                    com_io += 1
            elif other in in_job:
                if not only_io and matrix is not None:
                    new_matrix[k] = matrix[com_job]
                    com_job += 1
            elif not only_job:
                new_matrix[k] = io_matrix[com_io]
                com_io += 1
            k += 1
    return hosts, tuple(new_flops), tuple(new_matrix)

"""Which machines a job gets: ``Allocator`` strategies over interval sets.

A policy decides *when* a job starts; an allocator decides *on which machines*, given
the free machines, the job and the platform's groups (clusters, racks, multi-CPU
machines: :mod:`batpolicy.platforms.model`). Every allocator returns a subset of ``free``
of exactly ``job.res`` machines, or ``None`` when its rule finds none; it returns
``None`` only when no allocation satisfying its constraint exists (so a policy may read
``None`` as "does not fit now").

- :class:`LowestIds` (``lowest``, the default): the lowest free ids, as the Batsim
  reference schedulers do (batsched's ``basic`` selector), so batsched equivalence holds.
- :class:`WithinOneGroup` (``one-group``): all machines in one group, the group that
  fits most tightly (fewest free machines left), lowest ids inside it.
- :class:`FewestGroups` (``fewest-groups``): spans as few groups as possible.
- :class:`PreferredGroupsFirst` (``preferred-first``): the job's preferred machines
  first: its ``preferred`` group, its ``origin`` group, GPU machines for a ``gpu`` job
  (CPU machines first for the others, keeping GPUs free), one group for an ``mpi`` job
  (seed 001's placement preferences; :mod:`batpolicy.platforms.placement`).

``one_group=True`` turns any of them into a constrained allocator: the job runs inside
one group or not at all (whether a job may span groups is the policy's parameter, not
an accident of the platform). Machines that belong to no group form one implicit group.
Groups are assumed disjoint (one group per machine, INTERFACES.md §A).

Runtime complexity: ``lowest`` one C-level search and intersection (with ``one_group``
and groups of one interval each, O(i log G) over the i free intervals); the group-aware
ones one C-level intersection per group (G groups) plus a sort of the G groups.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import Protocol

from batpolicy.errors import ConfigError
from batpolicy.platforms.model import Platform
from batpolicy.platforms.placement import platform_groups
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.jobs import Job


def allocate_or_lowest(allocator: Allocator | None, available: MachineSet, job: Job,
                       platform: Platform | None) -> MachineSet | None:
    """The queue walks' one placement step: ``allocator``'s machines for ``job``.

    Within ``available``; None when the allocator finds none. With no allocator, the
    ``job.res`` lowest ids (``available`` must hold them): the walks' fast path.
    """
    if allocator is None:
        return take_lowest(available, job.res)
    return allocator.allocate(available, job, platform)


def take_lowest(available: MachineSet, count: int) -> MachineSet:
    """The ``count`` lowest ids of ``available`` (which must hold at least ``count``).

    Runtime complexity: O(log n) and one C-level intersection (:meth:`MachineSet.lowest`).

    >>> str(take_lowest(MachineSet.of((0, 1), (4, 9)), 4))
    '0-1 4-5'
    """
    if len(available) < count:
        raise ValueError(f"asked for {count} resources, only {len(available)} available")
    return available.lowest(count)


class Allocator(Protocol):
    """How a policy chooses machines: ``allocate(free, job, platform)``."""

    #: Registry name (``allocator=`` parameter value).
    name: str
    #: Whether every allocation must lie inside one group.
    one_group: bool
    #: False only for unconstrained lowest ids, which never reads the platform.
    needs_platform: bool

    def allocate(self, free: MachineSet, job: Job, platform: Platform | None) -> MachineSet | None:
        """``job.res`` machines of ``free``, or None if the rule finds none."""
        ...


# ------------------------------------------------------------------ platform groups
class Groups:
    """The platform's groups as interval sets, computed once per platform.

    ``sets`` lists (name, machines) in order of first machine id (every machine is in
    one); ``gpu`` holds the GPU machines and ``no_gpu`` the others; ``gpu_groups`` the
    names of groups made only of GPU machines.
    """

    __slots__ = ("sets", "by_name", "gpu", "no_gpu", "gpu_groups", "bounds", "starts")

    def __init__(self, platform: Platform) -> None:
        sets = [(name, group.machines)
                for name, group in platform_groups(platform).items()]
        grouped = MachineSet().union(*[m for _, m in sets])
        everything = MachineSet.span(0, platform.nb_machines - 1)
        rest = everything - grouped
        if rest:
            sets.append(("", rest))  # machines of no group: one implicit group
        sets.sort(key=lambda item: item[1].min())
        self.sets: list[tuple[str, MachineSet]] = sets
        self.by_name = dict(sets)
        self.gpu = MachineSet([m.id for m in platform.machines if m.gpu])
        self.no_gpu = everything - self.gpu
        self.gpu_groups = frozenset(name for name, machines in sets
                                    if machines and machines <= self.gpu)
        #: (first, last) id of each group when every group is one interval (machines,
        #: racks, clusters as generated), for :func:`first_fit_walk`; else None
        self.bounds: list[tuple[int, int]] | None = (
            [(m.min(), m.max()) for _, m in sets]
            if sets and all(m.max() - m.min() + 1 == len(m) for _, m in sets) else None)
        self.starts = [b[0] for b in self.bounds] if self.bounds is not None else []


class _GroupAware:
    """Shared machinery of the group-aware allocators: the cached groups of a platform."""

    name = ""
    needs_platform = True

    def __init__(self, one_group: bool = False) -> None:
        self.one_group = one_group
        self._cache: tuple[Platform, Groups] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(one_group={self.one_group})"

    def groups(self, platform: Platform | None) -> Groups:
        """The platform's groups (cached per platform). Runtime complexity: O(n) once."""
        if platform is None:
            raise ConfigError(f"allocator '{self.name}' needs the platform's groups, and the "
                              "policy gave it no platform")
        cache = self._cache
        if cache is None or cache[0] is not platform:
            cache = self._cache = (platform, Groups(platform))
        return cache[1]

    def allocate(self, free: MachineSet, job: Job, platform: Platform | None) -> MachineSet | None:
        """``job.res`` machines of ``free`` by this allocator's rule, or None."""
        need = job.res
        if need <= 0 or len(free) < need:
            return None
        groups = self.groups(platform)
        if self.one_group:
            return self._one_group(free, job, groups)
        return self._any(free, job, groups)

    def _one_group(self, free: MachineSet, job: Job, groups: Groups) -> MachineSet | None:
        return best_fit_group(free, job.res, groups.sets)

    def _any(self, free: MachineSet, job: Job, groups: Groups) -> MachineSet | None:
        raise NotImplementedError


def _free_per_group(free: MachineSet, sets: Iterable[tuple[str, MachineSet]]
                    ) -> list[tuple[int, str, MachineSet]]:
    """(free count, name, free machines) of every group with a free machine, in group order."""
    out = []
    for name, machines in sets:
        mine = free & machines
        if mine:
            out.append((len(mine), name, mine))
    return out


def first_fit_group(free: MachineSet, need: int, sets: Iterable[tuple[str, MachineSet]]
                    ) -> MachineSet | None:
    """The lowest ``need`` free ids of the first group (in id order) holding that many.

    >>> sets = [("a", MachineSet.span(0, 3)), ("b", MachineSet.span(4, 9))]
    >>> str(first_fit_group(MachineSet.of(1, 2, (4, 9)), 3, sets))
    '4-6'
    """
    for _, machines in sets:
        if len(machines) < need:  # too small whatever is free (O(1) for one interval)
            continue
        mine = free & machines
        if len(mine) >= need:
            return take_lowest(mine, need)
    return None


def first_fit_walk(free: MachineSet, need: int, bounds: list[tuple[int, int]],
                   starts: list[int]) -> MachineSet | None:
    """:func:`first_fit_group` for groups that are single intervals, by walking ``free``.

    Counts the free machines of each group met while walking the free intervals in id
    order; the first group to reach ``need`` is the first in id order that holds that
    many (an earlier one would have been complete before). Runtime complexity:
    O(i log G) for i free intervals, independent of the G groups that have nothing
    free, which is what a busy platform of many small machines has.

    >>> bounds = [(0, 3), (4, 9)]
    >>> str(first_fit_walk(MachineSet.of(1, 2, (4, 9)), 3, bounds, [0, 4]))
    '4-6'
    >>> first_fit_walk(MachineSet.of(1, 2, 5), 3, bounds, [0, 4]) is None
    True
    """
    last_group, count = -1, 0
    for inf, sup in free.intervals():
        lo = inf
        while lo <= sup:
            g = bisect_right(starts, lo) - 1
            if g < 0:  # before the first group
                lo = starts[0]
                continue
            first, last = bounds[g]
            if lo > last:  # between groups (machines of no group are not in ``bounds``)
                if g + 1 == len(starts):
                    return None
                lo = starts[g + 1]
                continue
            hi = sup if sup < last else last
            if g != last_group:
                last_group, count = g, 0
            count += hi - lo + 1
            if count >= need:
                return take_lowest(free & MachineSet.span(first, last), need)
            lo = hi + 1
    return None


def best_fit_group(free: MachineSet, need: int, sets: Iterable[tuple[str, MachineSet]]
                   ) -> MachineSet | None:
    """The lowest ``need`` free ids of the group that fits most tightly, or None.

    Tightest: fewest free machines left after the allocation; ties go to the group of
    lowest ids. Runtime complexity: O(G·k).

    >>> sets = [(n, MachineSet.parse(s)) for n, s in [("a", "0-3"), ("b", "4-5"), ("c", "6-9")]]
    >>> free = MachineSet.parse("0-9")
    >>> str(best_fit_group(free, 2, sets)), best_fit_group(free, 5, sets)
    ('4-5', None)
    """
    best: tuple[int, MachineSet] | None = None
    for count, _, mine in _free_per_group(free, sets):
        if count >= need and (best is None or count < best[0]):
            best = (count, mine)
    return None if best is None else take_lowest(best[1], need)


def fewest_groups(free: MachineSet, need: int, sets: Iterable[tuple[str, MachineSet]]
                  ) -> MachineSet | None:
    """``need`` free machines spanning as few groups as possible, or None if too few.

    One group if one fits (:func:`best_fit_group`); else the groups with the most free
    machines, whole, and the remainder in the remaining group that fits it most tightly
    (this takes the minimum number of groups). Lowest ids inside each group.
    Runtime complexity: O(G·k + G log G).

    >>> sets = [(n, MachineSet.parse(s)) for n, s in [("a", "0-3"), ("b", "4-9"), ("c", "10-11")]]
    >>> [str(fewest_groups(MachineSet.span(0, 11), n, sets)) for n in (7, 6, 11)]
    ['4-10', '4-9', '0-10']
    """
    per_group = _free_per_group(free, sets)
    best: tuple[int, MachineSet] | None = None
    total = 0
    for count, _, mine in per_group:
        total += count
        if count >= need and (best is None or count < best[0]):
            best = (count, mine)
    if best is not None:
        return take_lowest(best[1], need)
    if total < need:
        return None
    order = sorted(range(len(per_group)), key=lambda i: (-per_group[i][0], i))
    taken: list[MachineSet] = []
    left = need
    for rank, index in enumerate(order):
        count, _, mine = per_group[index]
        if count >= left:  # the last group: the tightest of those left that holds the rest
            fits = [per_group[i] for i in order[rank:] if per_group[i][0] >= left]
            tightest = min(fits, key=lambda item: item[0])
            taken.append(take_lowest(tightest[2], left))
            break
        taken.append(mine)
        left -= count
    return MachineSet().union(*taken)


def lowest_in_tiers(free: MachineSet, need: int, tiers: Iterable[MachineSet]) -> MachineSet | None:
    """Lowest free ids of the first tier, then of the next...; None if all hold too few.

    >>> str(lowest_in_tiers(MachineSet.parse("0-9"), 4, [MachineSet.parse("6-7"),
    ...                                                  MachineSet.parse("0-9")]))
    '0-1 6-7'
    """
    taken: list[MachineSet] = []
    left = need
    for tier in tiers:
        mine = free & tier
        count = len(mine)
        if count >= left:
            taken.append(take_lowest(mine, left))
            return MachineSet().union(*taken)
        if count:
            taken.append(mine)
            left -= count
            free = free - mine
    return None


# ----------------------------------------------------------------------- allocators
class LowestIds(_GroupAware):
    """Lowest free ids (batsched's choice); with ``one_group``, in the first group that fits.

    >>> from batpolicy.scheduler.jobs import Job
    >>> str(LowestIds().allocate(MachineSet.of(1, (3, 9)), Job("w!1", 0, 3, None, "p", 0), None))
    '1 3-4'
    """

    name = "lowest"

    def __init__(self, one_group: bool = False) -> None:
        super().__init__(one_group)
        self.needs_platform = one_group

    def allocate(self, free: MachineSet, job: Job, platform: Platform | None) -> MachineSet | None:
        """The ``job.res`` lowest free ids (in one group if ``one_group``), or None."""
        need = job.res
        if need <= 0 or len(free) < need:
            return None
        if self.one_group:
            groups = self.groups(platform)
            if groups.bounds is not None:
                return first_fit_walk(free, need, groups.bounds, groups.starts)
            return first_fit_group(free, need, groups.sets)
        return take_lowest(free, need)


class WithinOneGroup(_GroupAware):
    """All machines in one group: the one that fits most tightly (best fit)."""

    name = "one-group"

    def __init__(self, one_group: bool = True) -> None:
        super().__init__(True)  # one group by definition


class FewestGroups(_GroupAware):
    """Span as few groups as possible (one if one fits, the tightest)."""

    name = "fewest-groups"

    def _any(self, free: MachineSet, job: Job, groups: Groups) -> MachineSet | None:
        return fewest_groups(free, job.res, groups.sets)


class PreferredGroupsFirst(_GroupAware):
    """The job's preferred machines first (preferred / origin group, GPUs, one group for MPI).

    Preference order: the job's ``preferred`` group, its ``origin`` group, then GPU
    machines for a ``gpu`` job and non-GPU machines for any other job, then the rest;
    an ``mpi`` job first tries one group (tightest fit), then the fewest groups. With
    ``one_group``, the first group in that order that fits (tightest among equals).
    """

    name = "preferred-first"

    def _named(self, job: Job, groups: Groups) -> list[MachineSet]:
        tiers = []
        for name in (job.preferred, job.origin):
            if name is not None and name in groups.by_name:
                tiers.append(groups.by_name[name])
        return tiers

    def _any(self, free: MachineSet, job: Job, groups: Groups) -> MachineSet | None:
        need = job.res
        tiers = self._named(job, groups)
        if tiers:
            found = first_fit_group(free, need, [("", tier) for tier in tiers])
            if found is not None:
                return found
        if job.job_type == "mpi":
            return fewest_groups(free, need, groups.sets)
        if groups.gpu:
            tiers.append(groups.gpu if job.job_type == "gpu" else groups.no_gpu)
        tiers.append(free)
        return lowest_in_tiers(free, need, tiers)

    def _one_group(self, free: MachineSet, job: Job, groups: Groups) -> MachineSet | None:
        need = job.res
        named = self._named(job, groups)
        found = first_fit_group(free, need, [("", tier) for tier in named])
        if found is not None:
            return found
        if groups.gpu_groups:
            gpu_job = job.job_type == "gpu"
            liked = [(n, m) for n, m in groups.sets if (n in groups.gpu_groups) == gpu_job]
            found = best_fit_group(free, need, liked)
            if found is not None:
                return found
        return best_fit_group(free, need, groups.sets)


ALLOCATORS: dict[str, Callable[[bool], Allocator]] = {
    LowestIds.name: LowestIds,
    WithinOneGroup.name: WithinOneGroup,
    FewestGroups.name: FewestGroups,
    PreferredGroupsFirst.name: PreferredGroupsFirst,
}


def make_allocator(name: str, one_group: bool = False) -> Allocator:
    """The allocator registered as ``name``; ``one_group`` keeps every job in one group.

    >>> make_allocator("fewest-groups", one_group=True)
    FewestGroups(one_group=True)
    """
    try:
        return ALLOCATORS[name](one_group)
    except KeyError:
        raise ConfigError(f"unknown allocator '{name}' (known: {', '.join(ALLOCATORS)})"
                          ) from None


def is_plain_lowest(allocator: Allocator) -> bool:
    """True for the unconstrained lowest-ids allocator, which policies special-case.

    Their fast paths (count-based fits, the reservation as lowest ids of a union) are
    exact only for it. Runtime complexity: O(1).

    >>> is_plain_lowest(make_allocator("lowest")), is_plain_lowest(make_allocator("lowest", True))
    (True, False)
    """
    return type(allocator) is LowestIds and not allocator.one_group

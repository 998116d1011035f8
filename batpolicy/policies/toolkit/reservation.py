"""EASY's reservation for the queue head: its shadow time and the machines it will use.

Lifka, *The ANL/IBM SP scheduling system*, JSSPP 1995 (EASY); Mu'alem & Feitelson,
IEEE TPDS 12(6), 2001, §2: the first queued job gets a reservation at the earliest time
enough processors are expected free (the *shadow time*); processors free at that time
beyond its need are the *extra* processors.

As in batsched's ``easy_bf`` (the Batsim team's reference), the reservation holds
*specific* machines: the lowest ids among those expected free at the shadow time. A
backfilled job may use a reserved machine only if it ends (by its walltime) at or before
the shadow time; otherwise it must fit in the non-reserved free machines, which is the
"extra processors" rule expressed on machines instead of counts.

With an allocator other than plain lowest ids (:mod:`batpolicy.policies.toolkit.allocation`,
e.g. one group per job), the shadow time is the earliest expected release after which
the *allocator* finds machines for the head among those free then, and the reservation
holds exactly the machines it chose: machines the head can really use, so the rule
above keeps EASY's guarantee (backfilled jobs never delay the head) under any
allocator that finds an allocation whenever one satisfying its constraint exists.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from heapq import merge
from operator import itemgetter

from msgspec import Struct

from batpolicy.platforms.model import Platform
from batpolicy.policies.toolkit.allocation import (
    Allocator,
    is_plain_lowest,
    take_lowest,
)
from batpolicy.policies.toolkit.queue import JobQueue
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import ExecuteJob
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView

#: The expected end of an ``(end, machines)`` release: the order of releases.
_end_of = itemgetter(0)


class Reservation(Struct, frozen=True):
    """The head job's reservation: from ``shadow_time`` on, ``machines`` are its own."""

    job: Job
    shadow_time: float
    machines: MachineSet


class HeadsStarted(Struct):
    """What :func:`start_heads` did: decisions, what is left free, and the new head.

    A msgspec Struct for its C ``__init__``: EASY builds one per message.
    """

    decisions: list[ExecuteJob]
    free: MachineSet
    nfree: int
    started: list[tuple[float, MachineSet]]  # (expected end, allocation) of each started job
    head: Job | None  # the first waiting job that did not fit, or None


def start_heads(queue: JobQueue, free: MachineSet, now: float, allocator: Allocator | None = None,
                platform: Platform | None = None) -> HeadsStarted:
    """Start queue heads while they fit (EASY's first step): lowest free ids by default.

    The same step opens DPSA (Grudenic & Bogunovic 2011, Fig. 2, l. 3-7). Started jobs
    leave the queue; ``started`` feeds :func:`expected_releases`. With an ``allocator``,
    a head fits when the allocator finds it machines (in ``platform``'s groups).
    """
    decisions: list[ExecuteJob] = []
    started: list[tuple[float, MachineSet]] = []
    nfree = len(free)
    head = queue.first_waiting()
    if allocator is not None and is_plain_lowest(allocator):  # callers pass None for it
        allocator = None
    while head is not None and head.res <= nfree:
        # without an allocator, the lowest ids (take_lowest's own step: they fit nfree)
        alloc = free.lowest(head.res) if allocator is None else \
            allocator.allocate(free, head, platform)
        if alloc is None:
            break
        free = free - alloc
        nfree -= head.res
        queue.remove(head)
        decisions.append(ExecuteJob(head.id, alloc))
        started.append((now + head.planned_walltime, alloc))
        head = queue.first_waiting()
    return HeadsStarted(decisions, free, nfree, started, head)


def expected_releases(view: PolicyView, started: Iterable[tuple[float, MachineSet]] = ()
                      ) -> Iterable[tuple[float, MachineSet]]:
    """Running jobs' (expected end, machines), earliest first, merged with ``started``.

    ``started`` lists (end, allocation) of jobs the policy started in this very decision
    (not yet in the state), sorted by end. A job already past its expected end is
    counted as releasing its machines now (it must be ending at this very instant).
    Runtime complexity: O(1) per item taken (lazy merge).
    """
    now = view.now
    running = ((end if (end := job.expected_end) >= now else now, job.allocation)
               for job in view.running_by_expected_end)  # max() without the builtin call
    if isinstance(started, list | tuple) and not started:
        return running  # nothing to merge (most decisions): no heap and key calls per item
    return merge(running, started, key=_end_of)  # type: ignore[arg-type]


def reserve_head(head: Job, now: float, free: MachineSet, view: PolicyView,
                 started: list[tuple[float, MachineSet]], allocator: Allocator | None = None,
                 platform: Platform | None = None) -> Reservation:
    """The queue head's reservation after this decision's starts (sorted here by end).

    A head that needs every machine is answered at once (:func:`whole_platform_reservation`);
    any other, or any head under a group-aware allocator, by :func:`plan_reservation`'s
    walk over the expected releases (:func:`expected_releases`). Runtime complexity: O(1)
    for a whole-platform head, else that of :func:`plan_reservation`.
    """
    if len(started) > 1:
        started.sort(key=_end_of)
    if allocator is None or is_plain_lowest(allocator):
        if head.res == view.nb_machines:
            reservation = whole_platform_reservation(head, view, started)
            if reservation is not None:
                return reservation
        if not view.unavailable:
            return lowest_reservation(head, now, free, view.running_by_expected_end, started)
    return plan_reservation(head, now, free, expected_releases(view, started),
                            view.unavailable, allocator, platform)


def lowest_reservation(job: Job, now: float, free: MachineSet, running: Iterable[Job],
                       started: list[tuple[float, MachineSet]]) -> Reservation:
    """:func:`plan_reservation` with lowest ids and no unavailable machine, walking jobs.

    ``running`` are the running jobs by expected end (the view's
    ``running_by_expected_end``), ``started`` the (end, allocation) of the jobs started in
    this very decision, sorted by end. The same shadow time and machines as
    :func:`plan_reservation` over :func:`expected_releases` (``tests/policies/
    test_reservation.py`` compares them), without a generator, a tuple per release, or
    ``heapq.merge``'s Python-level key calls: EASY's every re-planning walks here (on
    RICC-2010, 253,505 walks of 17 releases on average cost a tenth of the run).

    A release's end is its expected end, or now for a job past it. The shadow time is
    the earliest end ``E`` at which the machines free now and those released by ``E``
    reach the job's need, and the reservation takes the lowest ids among them (every
    release ending at ``E`` included, whatever its place among equals): the walk counts
    releases in end order until the need is met (a started job before a running one
    that ends later), then gathers the releases that tie with that end. An endless
    release meeting the need gives an infinite shadow time and no machine. Runtime
    complexity: O(k) for the ``k`` releases up to the shadow time, then one C-level
    union of ``k + 1`` bitmaps.

    >>> head = Job("w0!1", 0.0, 3, 10.0, "p", seq=1)
    >>> started = [(5.0, MachineSet.parse("0-1")), (7.0, MachineSet.parse("2-3"))]
    >>> r = lowest_reservation(head, 0.0, MachineSet.parse("4"), [], started)
    >>> r.shadow_time, str(r.machines)
    (5.0, '0-1 4')
    """
    need = job.res
    count = len(free)
    if count >= need:
        return Reservation(job, now, take_lowest(free, need))
    pending: list[MachineSet] = []
    append = pending.append
    inf = math.inf
    nstarted = len(started)
    taken = 0  # the started jobs counted so far
    # the end of the next started job (inf: none left; an endless one is never counted,
    # as it could only give an infinite shadow time, the answer without it)
    following = started[0][0] if nstarted else inf
    shadow = inf
    walk = iter(running)
    for run in walk:
        end = run.expected_end
        while end > following:  # the started jobs that end before this one
            shadow, machines = started[taken]
            taken += 1
            following = started[taken][0] if taken < nstarted else inf
            append(machines)
            count += len(machines)
            if count >= need:
                break
        else:
            machines = run.allocation
            append(machines)
            count += len(machines)
            if count >= need:
                shadow = end if end >= now else now  # past its end: releases now
                break
            continue
        break  # met by a started job
    else:  # every running job counted: the started jobs left, up to an endless one
        while following < inf:
            shadow, machines = started[taken]
            taken += 1
            following = started[taken][0] if taken < nstarted else inf
            append(machines)
            count += len(machines)
            if count >= need:
                break
        else:
            return Reservation(job, inf, MachineSet())
    if shadow == inf:
        return Reservation(job, inf, MachineSet())
    for run in walk:  # the running jobs that end with the shadow time (ties)
        if run.expected_end > shadow:
            break
        append(run.allocation)
    while following <= shadow:  # and the started ones
        append(started[taken][1])
        taken += 1
        following = started[taken][0] if taken < nstarted else inf
    return Reservation(job, shadow, free.union(*pending).lowest(need))


def whole_platform_reservation(job: Job, view: PolicyView,
                               started: list[tuple[float, MachineSet]]) -> Reservation | None:
    """The reservation of a job that needs every machine, in O(1); None for any other job.

    With no machine unavailable, every machine is free or held by a running job (or one
    started in this very decision, ``started``, sorted by end), so such a job fits only
    once the last of them has ended: its shadow time is the latest expected end (a job
    past its end counts as ending now, an endless one makes it infinite and reserves
    nothing) and it is reserved every machine. That is what :func:`plan_reservation`
    finds by walking every release and uniting their machines: on RICC-2010 (8,192
    machines) 14,276 reservations of whole-platform jobs, each behind ~2,000 running
    jobs, took 168 µs a call and 5 % of the run. With unavailable machines (a release
    may then free none the job can use), None: :func:`plan_reservation` decides
    (tests/policies/test_reservation.py checks both give the same).
    """
    if view.unavailable:
        return None
    everything = view.all_machines
    if job.res != len(everything):
        return None
    running = view.running_by_expected_end
    last = max(view.now, running[-1].expected_end if running else -math.inf,
               started[-1][0] if started else -math.inf)
    if last == math.inf:
        return Reservation(job, math.inf, MachineSet())
    return Reservation(job, last, everything)


def plan_reservation(job: Job, now: float, free: MachineSet,
                     releases: Iterable[tuple[float, MachineSet]],
                     unavailable: MachineSet, allocator: Allocator | None = None,
                     platform: Platform | None = None) -> Reservation:
    """Earliest time at which ``job`` fits, and the lowest machine ids free then.

    ``free`` are the machines free now (after this decision's starts); ``releases`` the
    (end, machines) of running jobs, earliest first. Unavailable machines never count.
    If the job can never fit, the shadow time is infinite and no machine is reserved.
    With an ``allocator`` other than plain lowest ids, the earliest time the allocator
    finds machines among those free then, and the machines it finds
    (:func:`plan_allocated_reservation`).
    Runtime complexity: O(k) for ``k`` releases up to the shadow time, then one C-level
    union of the ``k + 1`` bitmaps and its ``need`` lowest ids.

    >>> from batpolicy.scheduler.jobs import Job
    >>> head = Job("w0!1", 0.0, 3, 10.0, "p", seq=1)
    >>> releases = [(5.0, MachineSet.parse("0-1")), (7.0, MachineSet.parse("2-3"))]
    >>> r = plan_reservation(head, 0.0, MachineSet.parse("4"), releases, MachineSet())
    >>> r.shadow_time, str(r.machines)
    (5.0, '0-1 4')
    """
    if allocator is not None and not is_plain_lowest(allocator):
        return plan_allocated_reservation(job, now, free, releases, unavailable, allocator,
                                          platform)
    need = job.res
    count = len(free)
    if count >= need:
        return Reservation(job, now, take_lowest(free, need))
    pending: list[MachineSet] = []
    shadow = math.inf
    some_unavailable = bool(unavailable)
    for end, machines in releases:
        if end > shadow:
            break
        if some_unavailable:
            machines = machines - unavailable
        pending.append(machines)
        count += len(machines)
        if count >= need and shadow == math.inf:
            shadow = end
    if shadow == math.inf:
        return Reservation(job, math.inf, MachineSet())
    return Reservation(job, shadow, free.union(*pending).lowest(need))


def plan_allocated_reservation(job: Job, now: float, free: MachineSet,
                               releases: Iterable[tuple[float, MachineSet]],
                               unavailable: MachineSet, allocator: Allocator,
                               platform: Platform | None) -> Reservation:
    """The reservation under a group-aware allocator: earliest time it finds machines.

    The allocator is asked at ``now`` and then after each expected release instant (all
    releases of one instant together), once enough machines are free in count; the
    machines it returns are reserved. Finding an allocation is monotone in the machines
    free, so the first instant found is the earliest. Runtime complexity: one C-level
    union per release up to the shadow time, one allocator call per instant tried.

    >>> from batpolicy.platforms.model import Machine, Platform
    >>> from batpolicy.policies.toolkit.allocation import make_allocator
    >>> two_racks = Platform([Machine(i, f"m{i}", cluster=f"r{i // 4}") for i in range(8)])
    >>> head = Job("w0!1", 0.0, 3, 10.0, "p", seq=1)
    >>> r = plan_allocated_reservation(head, 0.0, MachineSet.of(0, 1, 4, 5),
    ...     [(5.0, MachineSet.of(2)), (6.0, MachineSet.of(6))], MachineSet(),
    ...     make_allocator("one-group"), two_racks)
    >>> r.shadow_time, str(r.machines)
    (5.0, '0-2')
    """
    found = allocator.allocate(free, job, platform)
    if found is not None:
        return Reservation(job, now, found)
    need = job.res
    available = free  # free at ``at``, once the releases up to it are in
    at: float | None = None
    some_unavailable = bool(unavailable)
    for end, machines in releases:
        if at is not None and end > at and len(available) >= need:
            found = allocator.allocate(available, job, platform)
            if found is not None:
                return Reservation(job, at, found)
        if some_unavailable:
            machines = machines - unavailable
        available = available | machines
        at = end
    if at is not None and len(available) >= need:
        found = allocator.allocate(available, job, platform)
        if found is not None:
            return Reservation(job, at, found)
    return Reservation(job, math.inf, MachineSet())

"""Schedule-based planning: per-machine resource schedules with planned starts and ends.

Klusáček, Matyska & Rudová, *Local Search for Deadline Driven Grid Scheduling*, 2007,
§3: "the *schedule* is composed of several *resource schedules*. Each resource schedule
is a list of jobs planned to be executed on this resource"; jobs already sent to
resources are not affected by the scheduling process. Here a *machine* is one group of
Batsim hosts of one speed (the paper's machine i with R_i CPUs of speed s_i); a job needs
R_j CPUs of ONE machine, and runs ``min(work / speed, walltime)`` seconds there (its
reference work scaled by the machine's speed, capped by its walltime as Batsim does).

A :class:`MachinePlan` holds the machine's running jobs (CPUs until their planned end)
and its queue (the resource schedule, in order). Planned starts are computed from the
queue order, each job at the earliest time its CPUs are free for its whole duration
given the running jobs and the jobs before it in the queue, so the machine's CPU count
is never exceeded at any time. Two placement rules share that code:

- ``ordered=True`` (the paper's resource schedules of 2007: its §5 leaves filling the
  gaps a parallel job leaves to future work): a job also starts no earlier than the job
  before it in the queue;
- ``ordered=False``: a job may start in any earlier gap that is long enough (the
  planned starts are recomputed from the queue order, so a job may move later when an
  earlier one is inserted before it).

Conservative backfilling (every waiting job *holds* its reservation, on specific
machines) is the other plan of this package, :mod:`batpolicy.policies.toolkit.plan.slices`:
its reservations are state kept between decisions, not recomputed from an order.

Plans are cheap to copy (:meth:`~.cluster.Plan.copy`: lists of references, O(n)), so searches
(MT-EDF's trials, Tabu search) run on copies and a policy adopts the copy it likes.
Updates are incremental: inserting or removing a job at queue position ``l``
invalidates only positions ≥ ``l`` (the free-CPU profile before each position is kept,
:meth:`MachinePlan.evaluate_insert` reuses it); a start, an end (planned or earlier) or
a change of capacity recomputes that machine only.

Times are floats; a job with an infinite duration (no walltime, no work estimate) holds
its CPUs forever and a job that can never fit is planned at ``inf``.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from batpolicy.protocol.intervals import MachineSet

__all__ = ["EPS", "MachinePlan", "PlannedJob", "check_capacity", "earliest_fit", "reserve"]

INF = math.inf
#: Tolerance when comparing a planned start with the current time (float arithmetic).
EPS = 1e-6


@dataclass(frozen=True, slots=True)
class PlannedJob:
    """What a plan needs of a job: CPUs, work at reference speed, walltime cap, deadline.

    ``work`` is in seconds at the reference speed (speed factor 1); the duration on a
    machine of speed factor ``s`` is ``min(work / s, walltime)``.

    >>> PlannedJob("a", 2, 100.0, walltime=60.0).duration(2.0)
    50.0
    >>> PlannedJob("b", 1, 10.0).duration(0.5)
    20.0
    """

    id: str
    res: int
    work: float
    walltime: float = INF
    deadline: float = INF
    seq: int = 0

    def duration(self, speed: float) -> float:
        """Planned run time on a machine of speed factor ``speed``. Runtime complexity: O(1)."""
        run = self.work / speed if self.work < INF else INF
        return run if run < self.walltime else self.walltime


# ------------------------------------------------------------ free-CPU profile helpers
# A profile is two parallel lists: ``times`` ascending and ``frees``; ``frees[i]`` CPUs
# are free on [times[i], times[i+1]) (the last segment extends to +inf).

def earliest_fit(times: list[float], frees: list[int], lower: float, duration: float,
                 res: int) -> float:
    """Earliest ``t >= lower`` with ``res`` CPUs free on ``[t, t + duration)``; inf if none.

    Runtime complexity: O(k) in the number of profile segments from ``lower`` on.

    >>> earliest_fit([0.0, 5.0, 9.0], [1, 3, 4], 0.0, 3.0, 2)
    5.0
    >>> earliest_fit([0.0, 5.0, 9.0], [1, 3, 4], 0.0, 3.0, 5)
    inf
    """
    n = len(times)
    j = bisect_right(times, lower) - 1
    if j < 0:
        j = 0
    start = lower
    while True:
        if frees[j] < res:
            j += 1
            if j == n:
                return INF
            start = times[j]
            continue
        if j + 1 == n or times[j + 1] >= start + duration:
            return start
        j += 1


def _split(times: list[float], frees: list[int], at: float) -> int:
    """Index of the segment starting at ``at``, inserting a breakpoint if needed."""
    i = bisect_left(times, at)
    if i < len(times) and times[i] == at:
        return i
    times.insert(i, at)
    frees.insert(i, frees[i - 1])
    return i


def reserve(times: list[float], frees: list[int], start: float, duration: float,
            res: int) -> None:
    """Take ``res`` CPUs on ``[start, start + duration)`` in the profile (in place).

    Runtime complexity: O(k) (two list insertions and the segments covered).

    >>> times, frees = [0.0], [4]
    >>> reserve(times, frees, 2.0, 3.0, 3); times, frees
    ([0.0, 2.0, 5.0], [4, 1, 4])
    """
    if start == INF:
        return
    i = _split(times, frees, start)
    j = len(times) if start + duration == INF else _split(times, frees, start + duration)
    for k in range(i, j):
        frees[k] -= res


# --------------------------------------------------------------------- one machine
class MachinePlan:
    """The resource schedule of one machine: running jobs and the planned queue.

    ``cpus`` is the number of usable hosts (CPUs) and ``speed`` the speed factor
    (machine speed / reference speed). Schedules are computed lazily: read accessors
    bring positions up to date first.
    """

    __slots__ = ("name", "hosts", "size", "cpus", "speed", "ordered", "now", "_running", "_queue",
                 "_deadlines", "_durations", "_starts", "_ends", "_snaps", "_cu", "_ct",
                 "_valid", "_horizon", "_first")

    def __init__(self, name: str, hosts: MachineSet, speed: float = 1.0, *, cpus: int | None = None,
                 ordered: bool = True, now: float = 0.0) -> None:
        self.name = name
        self.hosts = hosts
        self.size = len(hosts)  # CPUs of the machine
        self.cpus = self.size if cpus is None else cpus  # CPUs usable now (available)
        self.speed = speed
        self.ordered = ordered
        self.now = now
        self._running: dict[str, tuple[float, int]] = {}
        self._queue: list[PlannedJob] = []
        self._deadlines: list[float] = []
        self._durations: list[float] = []  # run time here of each planned job
        # per queue position i: start, end, profile before placing i, U and T of jobs < i
        self._starts: list[float] = []
        self._ends: list[float] = []
        self._snaps: list[tuple[list[float], list[int]]] = []
        self._cu: list[int] = [0]
        self._ct: list[float] = [0.0]
        self._valid = -1  # positions < _valid are computed; -1: profile itself is stale
        self._horizon = INF  # earliest planned start or running end: re-plan if now passes it
        self._first = INF  # earliest planned start (valid when fresh)

    def copy(self) -> MachinePlan:
        """An independent copy sharing immutable pieces. Runtime complexity: O(n)."""
        other = MachinePlan.__new__(MachinePlan)
        other.name, other.hosts, other.cpus = self.name, self.hosts, self.cpus
        other.size = self.size
        other.speed, other.ordered, other.now = self.speed, self.ordered, self.now
        other._running = dict(self._running)
        other._queue = self._queue[:]
        other._deadlines = self._deadlines[:]
        other._durations = self._durations[:]
        other._starts, other._ends = self._starts[:], self._ends[:]
        other._snaps = self._snaps[:]  # snapshots are never mutated once stored
        other._cu, other._ct = self._cu[:], self._ct[:]
        other._valid, other._horizon, other._first = self._valid, self._horizon, self._first
        return other

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        """Number of planned (queued) jobs. Runtime complexity: O(1)."""
        return len(self._queue)

    @property
    def queue(self) -> Sequence[PlannedJob]:
        """Planned jobs in schedule order (read-only use). Runtime complexity: O(1)."""
        return self._queue

    @property
    def running(self) -> dict[str, tuple[float, int]]:
        """Running jobs: id -> (planned end, CPUs) (read-only use). Runtime complexity: O(1)."""
        return self._running

    def index(self, job_id: str) -> int:
        """Queue position of a planned job. Runtime complexity: O(n)."""
        for i, job in enumerate(self._queue):
            if job.id == job_id:
                return i
        raise KeyError(job_id)

    def schedule(self) -> list[tuple[PlannedJob, float, float]]:
        """``(job, planned start, planned end)`` in queue order.

        Runtime complexity: O(n) plus O(n·k) if stale.
        """
        self._ensure()
        return list(zip(self._queue, self._starts, self._ends, strict=True))

    def late_and_tardiness(self) -> tuple[int, float]:
        """Expected U and T of the planned jobs (§3 eq. 1 without U_C). Runtime: O(n·k) if stale."""
        self._ensure()
        return self._cu[-1], self._ct[-1]

    def due(self, now: float) -> list[PlannedJob]:
        """Planned jobs whose planned start is ``now`` (or earlier). Runtime complexity: O(n)."""
        limit = now + EPS
        if self._valid == len(self._queue) == len(self._starts) and self._first > limit:
            return []  # fresh, and nothing planned before the limit
        self._ensure()
        if self.ordered:
            out = []
            for job, start in zip(self._queue, self._starts, strict=True):
                if start > limit:
                    break
                out.append(job)
            return out
        return [job for job, start in zip(self._queue, self._starts, strict=True) if start <= limit]

    def edf_position(self, deadline: float) -> int:
        """Position ``l`` with ``d_{l-1} <= d < d_{l+1}`` (Fig. 1 l. 9).

        Runtime complexity: O(log n). Meaningful when the queue is in deadline order
        (MT-EDF and Tabu search keep it so).
        """
        return bisect_right(self._deadlines, deadline)

    def fits(self, job: PlannedJob) -> bool:
        """Whether the machine has enough CPUs for the job, available or not. O(1).

        A job wider than the CPUs available now is planned at ``inf`` until they return.
        """
        return 0 < job.res <= self.size

    # ------------------------------------------------------------------ updates
    def insert(self, job: PlannedJob, position: int | None = None) -> int:
        """Plan ``job`` at queue ``position`` (end if None); return the position.

        Runtime complexity: O(n) now; positions ≥ ``position`` are recomputed when next read.
        """
        if position is None:
            position = len(self._queue)
        self._queue.insert(position, job)
        self._deadlines.insert(position, job.deadline)
        self._durations.insert(position, job.duration(self.speed))
        self._invalidate(position)
        return position

    def pop(self, position: int) -> PlannedJob:
        """Remove and return the planned job at ``position``. Runtime complexity: O(n)."""
        job = self._queue.pop(position)
        del self._deadlines[position]
        del self._durations[position]
        self._invalidate(position)
        return job

    def start(self, job_id: str, now: float) -> float:
        """The planned job starts at ``now``: it runs until ``now + duration``; return that end.

        Runtime complexity: O(n); the machine is recomputed when next read.
        """
        job = self.pop(self.index(job_id))
        end = now + job.duration(self.speed)
        self._running[job_id] = (end, job.res)
        self._invalidate(-1)
        return end

    def add_running(self, job_id: str, end: float, res: int) -> None:
        """Record a job running here that this plan did not start. Runtime complexity: O(1)."""
        self._running[job_id] = (end, res)
        self._invalidate(-1)

    def finish(self, job_id: str) -> None:
        """A running job ended (as planned or earlier). Runtime complexity: O(1)."""
        del self._running[job_id]
        self._invalidate(-1)

    def set_capacity(self, cpus: int) -> None:
        """Change the number of usable CPUs (hosts (un)available). Runtime complexity: O(1)."""
        if cpus != self.cpus:
            self.cpus = cpus
            self._invalidate(-1)

    def advance(self, now: float) -> None:
        """Move the plan's time to ``now``; recompute only if a planned time fell behind.

        Runtime complexity: O(1).
        """
        self.now = now
        if now > self._horizon:
            self._invalidate(-1)

    # ------------------------------------------------------------------ evaluation
    def evaluate_insert(self, job: PlannedJob, position: int) -> tuple[int, float]:
        """(U, T) of this machine's planned jobs if ``job`` were inserted at ``position``.

        Nothing changes: the profile before ``position`` is reused, the suffix is placed
        on a scratch copy. Runtime complexity: O((n - position) · k).
        """
        self._ensure()
        jobs = [job, *self._queue[position:]]
        durations = [job.duration(self.speed), *self._durations[position:]]
        return self._evaluate(position, jobs, durations)

    def evaluate_remove(self, position: int) -> tuple[int, float]:
        """(U, T) of this machine's planned jobs if the job at ``position`` left.

        Nothing changes. Runtime complexity: O((n - position) · k).
        """
        self._ensure()
        return self._evaluate(position, self._queue[position + 1:],
                              self._durations[position + 1:])

    def _evaluate(self, position: int, jobs: Sequence[PlannedJob],
                  durations: Sequence[float]) -> tuple[int, float]:
        """(U, T) with ``jobs`` placed from ``position`` on, on a scratch profile."""
        times, frees = self._snaps[position]
        times, frees = times[:], frees[:]
        lower = self._lower(position)
        u, tard = self._cu[position], self._ct[position]
        ordered = self.ordered
        for other, dur in zip(jobs, durations, strict=True):
            start = earliest_fit(times, frees, lower, dur, other.res)
            reserve(times, frees, start, dur, other.res)
            end = start + dur
            if end > other.deadline:
                u += 1
                if end < INF:
                    tard += end - other.deadline
            if ordered:
                lower = start
        return u, tard

    def most_tardy(self, excluded: set[str] | frozenset[str] = frozenset()) -> int:
        """Position of the job of maximal expected tardiness (> 0) not in ``excluded``; -1 if none.

        Ties: the first in schedule order. Runtime complexity: O(n) plus O(n·k) if stale.
        """
        self._ensure()
        best, best_t = -1, 0.0
        for i, (job, end) in enumerate(zip(self._queue, self._ends, strict=True)):
            tard = end - job.deadline
            if tard > best_t and job.id not in excluded:
                best, best_t = i, tard
        return best

    # ------------------------------------------------------------------ internals
    def _invalidate(self, position: int) -> None:
        if position < self._valid:
            self._valid = position

    def _lower(self, position: int) -> float:
        if self.ordered and position > 0:
            prev = self._starts[position - 1]
            return prev if prev > self.now else self.now
        return self.now

    def _profile(self) -> tuple[list[float], list[int]]:
        now = self.now
        used = 0
        releases: list[tuple[float, int]] = []
        for end, res in self._running.values():
            used += res
            releases.append((end if end > now else now, res))
        releases.sort()
        times, frees = [now], [self.cpus - used]
        for end, res in releases:
            if end == times[-1]:
                frees[-1] += res
            else:
                times.append(end)
                frees.append(frees[-1] + res)
        return times, frees

    def _ensure(self) -> None:
        """Bring every position up to date. Runtime complexity: O((n - valid) · k)."""
        n = len(self._queue)
        valid = self._valid
        if valid == n and len(self._starts) == n:
            return
        if valid < 0:
            snap = self._profile()
            self._snaps[:] = [snap]
            del self._starts[:], self._ends[:]
            self._cu[:], self._ct[:] = [0], [0.0]
            valid = 0
        else:
            del self._snaps[valid + 1:], self._starts[valid:], self._ends[valid:]
            del self._cu[valid + 1:], self._ct[valid + 1:]
        times, frees = self._snaps[valid]
        times, frees = times[:], frees[:]
        lower = self._lower(valid)
        u, tard = self._cu[valid], self._ct[valid]
        ordered, durations = self.ordered, self._durations
        starts, ends, snaps, cu, ct = self._starts, self._ends, self._snaps, self._cu, self._ct
        for i, job in enumerate(self._queue[valid:], valid):
            dur = durations[i]
            start = earliest_fit(times, frees, lower, dur, job.res)
            reserve(times, frees, start, dur, job.res)
            end = start + dur
            if end > job.deadline:  # late; a job never planned (inf) adds no tardiness
                u += 1
                if end < INF:
                    tard += end - job.deadline
            starts.append(start)
            ends.append(end)
            snaps.append((times, frees))
            times, frees = times[:], frees[:]
            cu.append(u)
            ct.append(tard)
            if ordered:
                lower = start
        self._valid = n
        horizon = self._first = min(starts) if starts else INF
        for end, _ in self._running.values():
            if end < horizon:
                horizon = end
        self._horizon = horizon


def check_capacity(machine: MachinePlan) -> None:
    """Verify a machine's CPU count is never exceeded; raise ``AssertionError`` if so.

    Running jobs may overcommit CPUs that became unavailable under them, but no planned
    job may start then. Runtime complexity: O((r + n) log (r + n)).
    """
    events: list[tuple[float, int, int]] = []  # (time, running delta, planned delta)
    used = 0
    now = machine.now
    for end, res in machine.running.values():
        used += res
        events.append((max(end, now), -res, 0))
    for job, start, end in machine.schedule():
        if start < now - EPS:
            raise AssertionError(f"{machine.name}: job {job.id} planned at {start} < now {now}")
        if start < INF:
            events.append((start, 0, job.res))
            events.append((end, 0, -job.res))
    planned = 0
    for at, drun, dplan in sorted(events, key=lambda e: (e[0], e[1] + e[2])):  # ends first
        used += drun + dplan
        planned += dplan
        if planned > 0 and used > machine.cpus:
            raise AssertionError(f"{machine.name}: {used} CPUs used at {at} > {machine.cpus}")

"""Reservations on specific machines over time: the time-slice schedule of conservative backfilling.

Mu'alem & Feitelson, *Utilization, predictability, workloads, and user runtime estimates
in scheduling the IBM SP2 with backfilling*, IEEE TPDS 12(6), 2001, §2: with conservative
backfilling "every job is given a reservation when it enters the system"; a job is
backfilled into a hole of the schedule only if it delays no earlier reservation; when a
job ends before its estimate the schedule is *compressed*: each waiting job, in order,
is taken out and put back at the earliest place it fits (never later than before).

This is the planning structure of batsched 1.4 (the Batsim team's reference scheduler,
``src/schedule.cpp``), reproduced operation for operation so that a policy built on it
makes batsched's ``conservative_bf`` decisions:

- the schedule is a list of consecutive *time slices* ``[begin, end)``, from the current
  date to a far horizon (1e19 s); each slice holds the machines free during it and the
  jobs (with their machines) that hold it; a slice boundary is where the set of jobs
  changes;
- :meth:`SliceSchedule.add_first_fit` (``add_job_first_fit``) scans the slices from the
  first one for an *anchor*: a slice with enough free machines from which the machines
  free in it *and in every following slice* until ``begin + duration`` are still enough;
  the job gets the lowest ids of that intersection (batsched's default ``basic``
  selection) and the slice where it ends is split there;
- :meth:`SliceSchedule.remove` (``remove_job``) gives the job's machines back in every
  slice it held and merges a slice with the previous one when both hold the same jobs;
- :meth:`SliceSchedule.update_first_slice` moves the first slice's begin to the current
  date.

A reservation is *state*: it stays where it was made until the job is removed (its end,
or a compression re-inserting it), which is what lets a backfilled job never delay an
earlier one. (The order-derived plans of :mod:`batpolicy.policies.toolkit.plan.machines`
recompute every planned start from the queue order instead; re-placing all jobs from
scratch in queue order is *not* conservative backfilling's compression, where jobs later
in the queue keep their old reservations while an earlier one is re-inserted.)

Times are exact rationals (:class:`fractions.Fraction`), as batsched's GMP ``mpq``
rationals: Batsim's dates and walltimes are binary doubles, converted exactly, so ties
between a job's planned end and another's start are decided as batsched decides them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

from batpolicy.policies.toolkit.allocation import take_lowest
from batpolicy.protocol.intervals import MachineSet

__all__ = ["HORIZON", "Allocation", "SliceSchedule", "TimeSlice"]

#: End of the last slice (batsched: "greater than the number of seconds elapsed since the
#: big bang", 1e19 as a double, which is exactly 10**19).
HORIZON = Fraction(10**19)


@dataclass(slots=True)
class TimeSlice:
    """``[begin, end)``: the machines free during it and the jobs holding it."""

    begin: Fraction
    end: Fraction
    free: MachineSet
    nfree: int
    jobs: dict[str, MachineSet]

    @property
    def length(self) -> Fraction:
        """``end - begin``. Runtime complexity: O(1)."""
        return self.end - self.begin

    def copy_from(self, begin: Fraction) -> TimeSlice:
        """The same slice starting at ``begin`` (the second half of a split)."""
        return TimeSlice(begin, self.end, self.free, self.nfree, dict(self.jobs))

    def take(self, job_id: str, machines: MachineSet, res: int) -> None:
        """The job holds ``machines`` during this slice."""
        self.free = self.free - machines
        self.nfree -= res
        self.jobs[job_id] = machines


@dataclass(frozen=True, slots=True)
class Allocation:
    """Where and when :meth:`SliceSchedule.add_first_fit` placed a job."""

    job_id: str
    begin: Fraction
    end: Fraction
    machines: MachineSet
    #: True when the job starts in the first slice, i.e. now (batsched's
    #: ``started_in_first_slice``): the policy starts it.
    starts_now: bool


class SliceSchedule:
    """batsched's ``Schedule``: time slices of machine-id sets, from now to the horizon.

    >>> s = SliceSchedule(MachineSet.span(0, 3), Fraction(0))
    >>> a = s.add_first_fit("a", 3, Fraction(10))    # 0-10 on 0-2
    >>> b = s.add_first_fit("b", 4, Fraction(5))     # needs all 4: after a, 10-15
    >>> c = s.add_first_fit("c", 1, Fraction(20))    # machine 3 is free until 10 only
    >>> [(x.job_id, int(x.begin), str(x.machines)) for x in (a, b, c)]
    [('a', 0, '0-2'), ('b', 10, '0-3'), ('c', 15, '0')]
    >>> d = s.add_first_fit("d", 1, Fraction(10))    # backfilled beside a: delays nobody
    >>> d.starts_now, str(d.machines)
    (True, '3')
    """

    __slots__ = ("machines", "slices", "_res")

    def __init__(self, machines: MachineSet, now: Fraction = Fraction(0)) -> None:
        self.machines = machines
        self.slices: list[TimeSlice] = [TimeSlice(now, HORIZON, machines, len(machines), {})]
        self._res: dict[str, int] = {}

    # ------------------------------------------------------------------ queries
    def __contains__(self, job_id: object) -> bool:
        """Whether the job holds a reservation (or runs) here. Runtime complexity: O(1)."""
        return job_id in self._res

    def __len__(self) -> int:
        """Number of jobs in the schedule, running or planned. Runtime complexity: O(1)."""
        return len(self._res)

    @property
    def now(self) -> Fraction:
        """Begin of the first slice (the schedule's present). Runtime complexity: O(1)."""
        return self.slices[0].begin

    def allocations(self) -> dict[str, tuple[Fraction, Fraction, MachineSet]]:
        """Every job's ``(begin, end, machines)``; a running job begins at the first slice.

        Runtime complexity: O(s·j) for s slices holding j jobs each.
        """
        out: dict[str, tuple[Fraction, Fraction, MachineSet]] = {}
        for piece in self.slices:
            for job_id, machines in piece.jobs.items():
                if job_id in out:
                    begin, _, _ = out[job_id]
                    out[job_id] = (begin, piece.end, machines)
                else:
                    out[job_id] = (piece.begin, piece.end, machines)
        return out

    def __iter__(self) -> Iterator[TimeSlice]:
        """The slices, first to last (read-only use). Runtime complexity: O(1)."""
        return iter(self.slices)

    # ------------------------------------------------------------------ updates
    def update_first_slice(self, now: Fraction) -> None:
        """Move the present to ``now`` (batsched ``update_first_slice``). Runtime: O(1).

        ``now`` must lie within the first slice: every slice boundary is a planned start or
        a planned end, and a job ends (by its walltime) before its planned end.
        """
        first = self.slices[0]
        if not first.begin <= now <= first.end:
            raise ValueError(f"date {now} is outside the first slice [{first.begin}, "
                             f"{first.end}]: a job outlived its planned end")
        first.begin = now

    def add_first_fit(self, job_id: str, res: int, duration: Fraction | None) -> Allocation:
        """Reserve ``res`` machines for ``duration`` at the earliest anchor slice.

        batsched ``add_job_first_fit``: the first slice from which the machines free in
        every slice up to ``begin + duration`` still number ``res``; the lowest ids of
        that intersection. ``duration=None`` (a job without walltime) holds the machines
        up to the horizon, as batsched plans such a job; a job that then fits nowhere
        before the horizon gets an empty allocation at the horizon and holds nothing.
        Runtime complexity: O(s·w) for s slices, windows of w slices.
        """
        if job_id in self._res:
            raise ValueError(f"job {job_id} is already in the schedule")
        if not 0 < res <= len(self.machines):
            raise ValueError(f"job {job_id} asks for {res} machines of {len(self.machines)}")
        slices = self.slices
        for i, anchor in enumerate(slices):
            if anchor.nfree < res:
                continue
            need = HORIZON - anchor.begin if duration is None else duration
            available, total = anchor.free, anchor.length
            k, fits = i, total >= need
            while not fits:  # the window must extend over the next slices
                k += 1
                if k == len(slices) or slices[k].nfree < res:
                    break
                available = available & slices[k].free
                total += slices[k].length
                if len(available) < res:
                    break
                fits = total >= need
            if not fits:
                continue
            machines = take_lowest(available, res)
            begin = anchor.begin
            for piece in slices[i:k]:
                piece.take(job_id, machines, res)
            self._split(k, begin + need)
            slices[k].take(job_id, machines, res)
            self._res[job_id] = res
            return Allocation(job_id, begin, begin + need, machines, i == 0)
        # only behind a job without walltime (which holds machines up to the horizon):
        # batsched aborts; here the job is planned nowhere and holds nothing
        return Allocation(job_id, HORIZON, HORIZON, MachineSet(), False)

    def hold(self, job_id: str, machines: MachineSet, end: Fraction | None) -> None:
        """Record a running job holding ``machines`` from now until ``end`` (None: horizon).

        Not a batsched operation: it rebuilds a plan around jobs already running (see
        :class:`~batpolicy.policies.conservative.ConservativeBackfilling`). The machines
        must be free until ``end``. Runtime complexity: O(s).
        """
        end = HORIZON if end is None else end
        if job_id in self._res or not self.now < end <= HORIZON:
            raise ValueError(f"job {job_id}: cannot hold machines until {end}")
        res = len(machines)
        slices = self.slices
        k = 0
        while slices[k].end < end:
            k += 1
        self._split(k, end)
        for piece in slices[:k + 1]:
            if not machines <= piece.free:
                raise ValueError(f"job {job_id}: machines {machines} are not free at "
                                 f"{piece.begin}")
            piece.take(job_id, machines, res)
        self._res[job_id] = res

    def remove(self, job_id: str) -> bool:
        """Give the job's machines back; False if it was not here (``remove_job_if_exists``).

        Slices it held are merged with their predecessor when both then hold the same
        jobs, as is the slice right after its last one. Runtime complexity: O(s).
        """
        res = self._res.pop(job_id, None)
        if res is None:
            return False
        slices = self.slices
        i = next(k for k, piece in enumerate(slices) if job_id in piece.jobs)
        machines = slices[i].jobs[job_id]
        while i < len(slices) and job_id in slices[i].jobs:
            piece = slices[i]
            del piece.jobs[job_id]
            piece.free = piece.free | machines
            piece.nfree += res
            i = self._merge_with_previous(i) + 1
        if i < len(slices):
            self._merge_with_previous(i)
        return True

    # ------------------------------------------------------------------ internals
    def _split(self, k: int, date: Fraction) -> None:
        """Cut slice ``k`` at ``date`` if it lies strictly inside (``split_slice``)."""
        piece = self.slices[k]
        if piece.begin < date < piece.end:
            self.slices.insert(k + 1, piece.copy_from(date))
            piece.end = date

    def _merge_with_previous(self, i: int) -> int:
        """Merge slice ``i`` into slice ``i - 1`` if they hold the same jobs; new index."""
        if i == 0:
            return i
        previous, piece = self.slices[i - 1], self.slices[i]
        # a job holds the same machines in every slice it holds: comparing the job ids is
        # comparing batsched's job -> machines maps, without comparing sets
        if previous.jobs.keys() != piece.jobs.keys():
            return i
        if previous.nfree != piece.nfree:
            raise AssertionError(f"slices before and after {piece.begin} hold the same jobs "
                                 "on different machines")
        piece.begin = previous.begin
        del self.slices[i - 1]
        return i - 1

    def check(self) -> None:
        """Slices are consecutive, and free + held machines = all machines in each.

        Raises ``AssertionError`` otherwise. Runtime complexity: O(s·j).
        """
        for previous, piece in zip(self.slices, self.slices[1:], strict=False):
            if previous.end != piece.begin or not previous.begin <= previous.end:
                raise AssertionError(f"slices [{previous.begin}, {previous.end}) and "
                                     f"[{piece.begin}, {piece.end}) are not consecutive")
        for piece in self.slices:
            held = MachineSet()
            for machines in piece.jobs.values():
                if held & machines:
                    raise AssertionError(f"two jobs share a machine at {piece.begin}")
                held = held | machines
            if held | piece.free != self.machines or held & piece.free:
                raise AssertionError(f"machines lost or doubled at {piece.begin}")
            if piece.nfree != len(piece.free):
                raise AssertionError(f"free count wrong at {piece.begin}")

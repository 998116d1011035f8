"""Batsim's static jobs not yet submitted, taken from their source as they fall due.

Batsim's job submitter (``job_submitter.cpp``, ``static_job_submitter_process``) walks a
workload's jobs in submission order: it sends those whose submit time has come, then
sleeps until the next one's. :class:`StaticJobs` is that walk over an iterator, so a
source that builds jobs as it is read (:class:`~batpolicy.io.swf_stream.StreamedJobs`)
is never held whole: the simulator holds the next job. Whether an id is a static job's
(a decision naming an id the run does not hold, a registration) is asked of a bitmap of
the ids (:class:`MetIds`), gathered from a replay of the source the first time it is
asked: the submissions themselves keep no id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from pyroaring import BitMap

from batpolicy.io.workload import JobSpec

__all__ = ["MetIds", "StaticJobs"]


class StaticJobs:
    """The static jobs not submitted yet, in submission order (module docstring).

    ``replay`` gives the same jobs again from the first, when asked whether an id is a
    static job's (:meth:`met`, :meth:`is_pending`: a decision naming a job the run does
    not hold, a registration): the ids are then gathered once. Without it, each job's id
    is kept as it is submitted.

    >>> specs = [JobSpec("w0!1", 0.0, 1, "p"), JobSpec("w0!2", 5.0, 1, "p")]
    >>> jobs = StaticJobs(iter(specs), replay=lambda: iter(specs))
    >>> [s.id for s in jobs.take_due(0.0)], jobs.next.id
    (['w0!1'], 'w0!2')
    >>> jobs.met("w0!1"), jobs.met("w0!2"), jobs.is_pending("w0!2"), jobs.met("w0!3")
    (True, True, True, False)
    >>> jobs.is_pending("w0!1")
    False
    >>> [s.id for s in jobs.take_due(9.0)], bool(jobs), jobs.is_pending("w0!2")
    (['w0!2'], False, False)
    """

    __slots__ = ("_source", "next", "_replay", "_submitted", "_ids", "_pending")

    def __init__(self, specs: Iterable[JobSpec],
                 replay: Callable[[], Iterator[JobSpec]] | None = None) -> None:
        self._source: Iterator[JobSpec] = iter(specs)
        #: The next job to submit, None once all are.
        self.next: JobSpec | None = next(self._source, None)
        self._replay = replay
        #: ids submitted so far: kept only without a replay
        self._submitted = MetIds() if replay is None else None
        self._ids: MetIds | None = None  # every static id, once asked for (with a replay)
        self._pending: set[str] | None = None  # ids not yet submitted, once asked for

    def __bool__(self) -> bool:
        return self.next is not None

    def take_due(self, now: float) -> list[JobSpec]:
        """The jobs whose submit time is at or before ``now``, taken in order.

        Runtime complexity: O(k) for k jobs taken.
        """
        head, source = self.next, self._source
        due: list[JobSpec] = []
        while head is not None and head.subtime <= now:
            due.append(head)
            head = next(source, None)
        self.next = head
        if due and self._submitted is not None:
            self._submitted.update(spec.id for spec in due)
        return due

    def remaining(self) -> list[JobSpec]:
        """Every job not submitted yet, which are then held. O(n).

        For Batsim's submitters over links with latencies, or a check naming an id never
        submitted.
        """
        rest = [] if self.next is None else [self.next, *self._source]
        self._source = iter(rest[1:])
        return rest

    def is_pending(self, job_id: str) -> bool:
        """Whether a static job with this id is not submitted yet.

        With a replay: a static id at or after the next job in submission order, O(n) (a
        replay; asked only by checks naming a job the run does not hold). Without: O(n)
        the first time (the rest of the source is read and held), then O(1).
        """
        if self._replay is not None:  # submission order is (subtime, id): from the head on
            head = self.next
            return (head is not None and self.met(job_id)
                    and (head.subtime, head.id) <= self._key(job_id))
        if self._pending is None:
            self._pending = {spec.id for spec in self.remaining()}
        return job_id in self._pending and job_id not in self._submitted  # type: ignore[operator]

    def _key(self, job_id: str) -> tuple[float, str]:
        """The submission key of a static job, read from the replay. O(n)."""
        assert self._replay is not None
        return next((spec.subtime, spec.id) for spec in self._replay() if spec.id == job_id)

    def met(self, job_id: str) -> bool:
        """Whether this id is a static job's, submitted or not.

        Runtime complexity: O(n) the first time, then O(1).
        """
        if self._replay is None:
            return job_id in self._submitted or self.is_pending(job_id)  # type: ignore[operator]
        if self._ids is None:
            self._ids = MetIds()
            self._ids.update(spec.id for spec in self._replay())
        return job_id in self._ids


class MetIds:
    """A set of job ids ``workload!name`` in little memory.

    Names that are integers (an SWF trace's job numbers) as one bitmap per workload, the
    others as strings.

    >>> ids = MetIds()
    >>> ids.update(["w0!3", "w0!x", "w1!07"])
    >>> "w0!3" in ids, "w0!4" in ids, "w0!x" in ids, "w1!07" in ids, "w1!7" in ids
    (True, False, True, True, False)
    """

    __slots__ = ("_numbers", "_others")

    def __init__(self) -> None:
        self._numbers: dict[str, BitMap] = {}
        self._others: set[str] = set()

    def update(self, ids: Iterable[str]) -> None:
        """Add ids."""
        numbers, others = self._numbers, self._others
        for job_id in ids:
            workload, _, name = job_id.partition("!")
            if name.isdigit() and (name == "0" or name[0] != "0") and len(name) < 10:
                bits = numbers.get(workload)
                if bits is None:
                    bits = numbers[workload] = BitMap()
                bits.add(int(name))
            else:
                others.add(job_id)

    def __contains__(self, job_id: object) -> bool:
        if not isinstance(job_id, str):
            return False
        if job_id in self._others:
            return True
        workload, _, name = job_id.partition("!")
        bits = self._numbers.get(workload)
        return bits is not None and name.isdigit() and (name == "0" or name[0] != "0") \
            and len(name) < 10 and int(name) in bits

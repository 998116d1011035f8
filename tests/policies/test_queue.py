"""``JobQueue``: jobs in key order (ties by arrival), whatever the adds and removes.

The queue keeps (key, arrival, job) entries in one sorted list (policies/toolkit/queue.py);
these tests drive it with random operations and compare it with a plain sort, and check
the FCFS index that EASY's vectorised backfilling scan reads.
"""

from __future__ import annotations

import math
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.policies.toolkit.orders import ORDERS
from batpolicy.policies.toolkit.queue import JobQueue
from batpolicy.scheduler.jobs import Job

# (add?, job number): a job is added if absent and add? is true, removed if present and not
ops = st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=120)


#: the policies' orders, and a key with ties (arrival must break them, as FCFS would)
KEYS = {**ORDERS, "res only": lambda job: job.res}


def _job(i: int) -> Job:
    return Job(f"w0!{i}", 0.0, 1 + i % 5, 10.0 * (1 + (i * 7) % 4), "p", seq=i)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(KEYS)), ops)
def test_the_queue_is_always_in_key_then_arrival_order(order: str, steps: list) -> None:
    key = KEYS[order]
    queue = JobQueue(key)
    jobs = {i: _job(i) for i in range(31)}
    arrived: dict[int, int] = {}  # job number -> arrival rank
    clock = 0
    for add, i in steps:
        if add and i not in arrived:
            queue.add(jobs[i])
            arrived[i] = clock
            clock += 1
        elif not add and i in arrived:
            queue.remove(jobs[i])
            del arrived[i]
        expected = [jobs[i] for i in sorted(arrived, key=lambda i: (key(jobs[i]), arrived[i]))]
        assert list(queue) == expected
        assert len(queue) == len(expected) and bool(queue) == bool(expected)
        assert queue.head() is (expected[0] if expected else None)
        assert all(jobs[i] in queue for i in arrived)
        assert not any(jobs[i] in queue for i in set(jobs) - set(arrived))


def test_adding_a_queued_job_again_is_refused_and_changes_nothing() -> None:
    queue = JobQueue()
    a = _job(1)
    queue.add(a)
    with pytest.raises(ValueError, match="w0!1.*already"):
        queue.add(a)
    queue.remove(a)
    assert list(queue) == [] and queue.head() is None


def test_removing_a_job_that_is_not_queued_is_refused_and_changes_nothing() -> None:
    queue = JobQueue()
    a, b = _job(1), _job(2)
    queue.add(a)
    with pytest.raises(ValueError, match="w0!2"):
        queue.remove(b)
    twin = Job("w0!1", 0.0, 1, 10.0, "p", seq=1)  # same id, another object
    with pytest.raises(ValueError, match="w0!1"):
        queue.remove(twin)
    assert list(queue) == [a] and a in queue


def test_the_fcfs_index_finds_the_next_job_that_may_backfill() -> None:
    queue = JobQueue()
    for i in range(12):
        queue.add(_job(i))
    for i in (0, 4, 5):
        queue.remove(next(j for j in queue if j.seq == i))
    # after rank 1: the first queued job with res <= 3 that ends by t=20 or fits 1 extra
    found = queue.next_backfill(0.0, 20.0, nfree=3, nextra=1, after=1)
    expected = next(j for j in queue if j.seq > 1 and j.res <= 3
                    and (j.planned_walltime <= 20.0 or j.res <= 1))
    assert found is expected


def _brute_next_backfill(queue: JobQueue, now: float, shadow: float, nfree: int, nextra: int,
                         after: int) -> Job | None:
    """The definition, one job at a time in queue order."""
    for job in queue:
        if job.seq > after and job.res <= nfree and (
                now + job.planned_walltime <= shadow or job.res <= nextra):
            return job
    return None


# walltimes and instants whose float sums land on and beside the shadow time
walltimes = st.sampled_from([0.1, 0.2, 0.3, 1.0, 2.5, 1e-9, 3e6, 259200.0, 0.30000000000000004])
instants = st.sampled_from([0.0, 0.1, 0.7, 1e6 + 0.1, 3000003.0, 1e15])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 40), st.integers(1, 6), walltimes),
                max_size=150),
       instants, walltimes, st.integers(0, 8), st.integers(0, 8), st.integers(-1, 40),
       st.integers(1, 8), st.sampled_from([0, 4, 1000]))
def test_the_scan_finds_what_a_job_by_job_pass_finds(steps: list, now: float, ahead: float,
                                                     nfree: int, nextra: int, after: int,
                                                     compact_min: int, scalar: int) -> None:
    """Adds (ranks in any order), removes, compactions and float boundaries: same job.

    ``scalar``: the slots written one at a time below that many (0: always a fancy
    assignment, 1000: always scalar ones).
    """
    with mock.patch("batpolicy.policies.toolkit.queue._COMPACT_MIN", compact_min), \
            mock.patch("batpolicy.policies.toolkit.queue._SCALAR_WRITES", scalar):
        _scan_and_compare(steps, now, ahead, nfree, nextra, after)


def _scan_and_compare(steps: list, now: float, ahead: float, nfree: int, nextra: int,
                      after: int) -> None:
    queue = JobQueue()
    jobs: dict[int, Job] = {}
    for add, seq, res, walltime in steps:
        if add and seq not in jobs:
            jobs[seq] = Job(f"w0!{seq}", 0.0, res, walltime, "p", seq=seq)
            queue.add(jobs[seq])
        elif not add and seq in jobs:
            queue.remove(jobs.pop(seq))
    if queue.indexed:  # the smallest queued size, kept as jobs come and go
        assert queue._least == min((j.res for j in queue), default=math.inf)  # noqa: SLF001
    nextra = min(nextra, nfree)  # EASY's extra machines are some of the free ones
    for shadow in (now + ahead, math.nextafter(now + ahead, math.inf),
                   math.nextafter(now + ahead, -math.inf), math.inf):
        assert queue.next_backfill(now, shadow, nfree, nextra, after) is \
            _brute_next_backfill(queue, now, shadow, nfree, nextra, after)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 6), walltimes), max_size=60),
       instants, walltimes, st.integers(0, 12), st.integers(0, 12),
       st.lists(st.tuples(st.integers(0, 6), st.booleans()), max_size=30), st.integers(1, 8))
def test_a_backfilling_pass_finds_what_job_by_job_passes_find(
        jobs: list, now: float, ahead: float, nfree: int, nextra: int, steps: list,
        compact_min: int) -> None:
    """EASY's pass: after each job found the counts shrink and it leaves; some others leave.

    Every call is compared with a job-by-job pass on the queue as it is then (slots of
    the jobs that left compacted away or not).
    """
    with mock.patch("batpolicy.policies.toolkit.queue._COMPACT_MIN", compact_min):
        _backfilling_pass(jobs, now, ahead, nfree, nextra, steps)


def _backfilling_pass(jobs: list, now: float, ahead: float, nfree: int, nextra: int,
                      steps: list) -> None:
    queue = JobQueue()
    for seq, res, walltime in sorted({j[0]: j for j in jobs}.values()):
        queue.add(Job(f"w0!{seq}", 0.0, res, walltime, "p", seq=seq))
    shadow = now + ahead
    nextra = min(nextra, nfree)
    after = queue.head().seq if queue else -1
    for draw, drop_other in steps:
        found = queue.next_backfill(now, shadow, nfree, nextra, after)
        assert found is _brute_next_backfill(queue, now, shadow, nfree, nextra, after)
        if found is None:
            break
        queue.remove(found)
        after = found.seq
        nfree -= found.res
        nextra = max(0, min(nextra - min(draw, found.res), nfree))
        others = [j for j in queue if j.seq > after]
        if drop_other and others:  # started or rejected by someone else: dropped from the queue
            queue.remove(others[draw % min(len(others), 3)])


def test_scans_of_one_instant_with_more_machines_find_more() -> None:
    """A scan with more free machines at the same instant finds the job it now fits."""
    queue = JobQueue()
    for seq, res in enumerate((5, 9, 3, 1)):
        queue.add(Job(f"w0!{seq}", 0.0, res, 1.0, "p", seq=seq))
    assert queue.next_backfill(0.0, 10.0, 1, 1, after=0).seq == 3
    assert queue.next_backfill(0.0, 10.0, 3, 1, after=0).seq == 2  # not the last scan's 3
    assert queue.next_backfill(0.0, 10.0, 3, 0, after=0).seq == 2  # fewer extra: the same


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 6), walltimes), max_size=60),
       instants, walltimes,
       st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(-1, 40),
                          st.booleans(), st.booleans()), max_size=25))
def test_scans_of_one_instant_find_what_job_by_job_passes_find(
        jobs: list, now: float, ahead: float, calls: list) -> None:
    """Scans at one instant and shadow time: each gives the brute-force answer.

    The counts go up and down between scans; jobs leave (the one found) and come.
    """
    queue = JobQueue()
    for seq, res, walltime in sorted({j[0]: j for j in jobs}.values()):
        queue.add(Job(f"w0!{seq}", 0.0, res, walltime, "p", seq=seq))
    shadow = now + ahead
    for nfree, nextra, after, drop, add in calls:
        nextra = min(nextra, nfree)
        found = queue.next_backfill(now, shadow, nfree, nextra, after)
        assert found is _brute_next_backfill(queue, now, shadow, nfree, nextra, after)
        if found is not None and drop:
            queue.remove(found)
        if add:
            seq = 41 + len(queue) + after + 2 * nfree  # above every rank of the draw
            if all(job.seq != seq for job in queue):
                queue.add(Job(f"w0!{seq}", 0.0, 1 + nfree % 3, 1.0, "p", seq=seq))


@settings(max_examples=200, deadline=None)
@given(ops, st.integers(0, 30))
def test_a_fcfs_queue_that_gets_an_unranked_job_keeps_its_order(steps: list,
                                                              unranked: int) -> None:
    """A job without a state rank (seq -1) turns the slots into sorted entries: same order."""
    queue = JobQueue()
    jobs = {i: _job(i) if i != unranked else Job(f"w0!{i}", 0.0, 1, 10.0, "p", seq=-1)
            for i in range(31)}
    arrived: dict[int, int] = {}
    for clock, (add, i) in enumerate(steps):
        if add and i not in arrived:
            queue.add(jobs[i])
            arrived[i] = clock
        elif not add and i in arrived:
            queue.remove(jobs[i])
            del arrived[i]
        expected = [jobs[i] for i in sorted(arrived, key=lambda i: (jobs[i].seq, arrived[i]))]
        assert list(queue) == expected and len(queue) == len(expected)
        assert queue.head() is (expected[0] if expected else None)
        assert queue.first_waiting() is (expected[0] if expected else None)
    assert queue.indexed == (unranked not in arrived and all(
        not add or i != unranked for add, i in steps))

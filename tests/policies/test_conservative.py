"""Conservative backfilling on hand-made cases (Mu'alem & Feitelson 2001, §2).

A backfill that delays no earlier reservation (and a job refused because it would), a
compression after an early end where later jobs keep their reservations meanwhile (so
the result is neither EASY's nor a re-planning from scratch), rejections, and batsched's
5 s RJMS delay on every walltime. Run with ``batpolicy.testing.simulate`` (the embedded
simulator, every invariant checked).
"""

from __future__ import annotations

import pytest

from batpolicy.errors import ConfigError
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.testing import simulate


def conservative(**params: str):  # type: ignore[no-untyped-def]
    return make_policy("conservative", params)


def test_backfill_only_where_it_delays_no_reservation() -> None:
    # (subtime, res, runtime, walltime) on 4 machines; planning with walltimes exactly
    jobs = [(0, 2, 10, 10),   # 0: runs 0-10 on 0-1
            (1, 4, 5, 5),     # 1: every machine: reserved 10-15
            (2, 1, 20, 20),   # 2: 2-3 are free now, but 20 s would delay job 1: after it
            (3, 1, 7, 7),     # 3: ends at 10: backfilled now, delays nobody
            (4, 1, 30, 30)]   # 4: after 1, beside 2 (which keeps machine 0)
    s = simulate(conservative(rjms_delay="0"), jobs, machines=4)
    assert s.starts() == {"0": 0.0, "1": 10.0, "2": 15.0, "3": 3.0, "4": 15.0}
    assert (s.machines("3"), s.machines("2"), s.machines("4")) == ([2], [0], [1])


def test_compression_keeps_later_reservations_while_reinserting() -> None:
    jobs = [(0, 2, 2, 10),    # 0: 0-1, planned until 10, ends at 2
            (0, 2, 4, 4),     # 1: 2-3 until 4
            (1, 4, 5, 5),     # 2: every machine: reserved 10-15
            (1, 2, 6, 6)]     # 3: reserved 4-10 on 2-3 (before 2)
    s = simulate(conservative(rjms_delay="0"), jobs, machines=4)
    # at 2 (job 0 ended) each waiting job is removed and added again in order: job 2
    # first, while job 3 still holds 2-3 on 4-10, so job 2 stays at 10; then job 3 fits
    # now on 0-1; at 4 (job 1 ended) job 2 moves to 8, when job 3 ends
    assert s.start("3") == 2.0 and s.machines("3") == [0, 1]
    assert s.start("2") == 8.0
    # re-planning from scratch in queue order would have started job 2 at 4 and job 3 at
    # 9; EASY, reserving for job 2 only, starts it at 4 and job 3 after it
    easy = simulate("easy", jobs, machines=4)
    assert (easy.start("2"), easy.start("3")) == (4.0, 9.0)


def test_rjms_delay_is_added_to_every_walltime() -> None:
    """Every job is planned for its walltime + 5 s (batsched): a hole behind two jobs grows.

    Machine 2 is free until job 2, which waits for job 1, which waits for job 0: the
    hole lasts 18 s + 2 delays, job 3 needs 20 s + 1 delay.
    """
    jobs = [(0, 2, 10, 10),   # 0: 0-1, planned until 10 + d
            (1, 2, 10, 10),   # 1: 0-1 after 0: until 20 + 2d
            (1, 3, 5, 5),     # 2: every machine, after 1
            (2, 1, 20, 20)]   # 3: machine 2, 20 + d s from 2
    assert simulate(conservative(), jobs, machines=3).start("3") == 2.0
    assert simulate(conservative(rjms_delay="0"), jobs, machines=3).start("3") == 25.0


def test_too_large_and_no_walltime_jobs_are_rejected() -> None:
    jobs = [{"id": "big", "subtime": 0, "res": 5, "runtime": 1, "walltime": 2},
            {"id": "free", "subtime": 0, "res": 1, "runtime": 3},
            {"id": "ok", "subtime": 1, "res": 1, "runtime": 3, "walltime": 4}]
    s = simulate(conservative(), jobs, machines=4)
    assert s.state("big") == s.state("free") == JobState.REJECTED
    assert s.start("ok") == 1.0
    ran = simulate(conservative(no_walltime="run"), jobs, machines=4)
    assert ran.start("free") == 0.0 and ran.state("big") == JobState.REJECTED


def test_bad_delay_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="rjms_delay"):
        conservative(rjms_delay="-1")


def _sub(name: str, at: float, res: int, walltime: float) -> t.JobSubmitted:
    return t.JobSubmitted(at, f"w0!{name}", {"id": f"w0!{name}", "subtime": at, "res": res,
                                            "walltime": walltime, "profile": "p"})


def _starts(reply: t.Reply) -> dict[str, str]:
    return {d.job_id: str(d.alloc) for d in reply.decisions if isinstance(d, t.ExecuteJob)}


def test_a_job_outliving_its_planned_end_is_planned_around() -> None:
    """A job running past walltime + delay (batsched aborts there) is planned around."""
    resources = tuple(t.ResourceInfo(i, f"h{i}") for i in range(3))
    begins = t.SimulationBegins(0.0, 3, 3, 0, False, True, {}, resources, (),
                                {"w0": "/w0.json"}, {"w0": {"p": {"type": "delay",
                                                                  "delay": 1.0}}})
    d = Dispatcher(make_policy("conservative", {"rjms_delay": "0"}), paranoid=True)
    d.handle(t.Request(0.0, (begins,)))
    assert _starts(d.handle(t.Request(0.0, (_sub("a", 0.0, 2, 10.0),)))) == {"w0!a": "0-1"}
    assert _starts(d.handle(t.Request(1.0, (_sub("b", 1.0, 1, 50.0),)))) == {"w0!b": "2"}
    # at 12, a (planned until 10) still runs: it holds 0-1 until it ends, b holds 2, so
    # neither c nor d can start; when a ends, c gets its machines
    reply = d.handle(t.Request(12.0, (_sub("c", 12.0, 2, 5.0), _sub("d", 12.0, 1, 1.0))))
    assert _starts(reply) == {}
    done = t.JobCompleted(13.0, "w0!a", JobState.COMPLETED_SUCCESSFULLY, 0, MachineSet.span(0, 1))
    assert _starts(d.handle(t.Request(13.0, (done,)))) == {"w0!c": "0-1"}

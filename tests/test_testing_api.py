"""``batpolicy.testing``: the module's own example, dict jobs, and the pytest fixture."""

from __future__ import annotations

import pytest

from batpolicy.errors import ConfigError
from batpolicy.protocol.types import JobState
from batpolicy.testing import run_policy, simulate  # noqa: F401  (run_policy: the fixture)


def test_easy_backfills_the_short_job() -> None:  # the module docstring's example
    s = simulate("easy", [(0, 4, 100, 100), (1, 2, 50, 50), (2, 1, 10, 10)], machines=5)
    assert s.start("2") == 2.0
    assert s.start("1") == 100.0
    assert s.machines("2") == [4]
    assert s.order() == ["0", "2", "1"]
    assert s.metrics["nb_jobs"] == 3 and s.metrics["makespan"] == 150.0


def test_dict_jobs_keep_their_ids_and_extra_fields(run_policy) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    s = run_policy("fcfs", [{"id": "big", "subtime": 0, "res": 3, "runtime": 5},
                            {"id": "huge", "subtime": 1, "res": 9, "runtime": 5,
                             "deadline": 30.0}], machines=4)
    assert s.finish("big") == 5.0
    assert s.state("huge") is JobState.REJECTED and s.start("huge") is None


def test_a_walltime_shorter_than_the_runtime_kills_the_job() -> None:
    s = simulate("fcfs", [(0, 1, 100, 30)], machines=1)
    assert s.state("0") is JobState.COMPLETED_WALLTIME_REACHED and s.finish("0") == 30.0


def test_an_unknown_policy_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown policy 'nope'"):
        simulate("nope", [(0, 1, 1)])


@pytest.mark.parametrize(("order", "started"), [
    ("fcfs", ["0", "1", "2", "3"]), ("sjf", ["0", "3", "2", "1"]),
    ("ljf", ["0", "1", "2", "3"]), ("smallest", ["0", "1", "3", "2"]),
    ("largest", ["0", "2", "1", "3"])])
def test_fcfs_and_easy_queue_orders(order: str, started: list[str]) -> None:
    # job 0 fills the machine until 10; then the queue (1, 2, 3) goes in the order's
    # order, one at a time (each takes the whole machine or blocks the next).
    jobs = [(0, 4, 10, 10), (1, 3, 30, 30), (2, 4, 20, 20), (3, 1, 5, 5)]
    for policy in ("fcfs", "easy"):
        s = simulate(policy, jobs, machines=4, params={"order": order})
        got = s.order()
        if policy == "fcfs":
            assert got == started, (policy, order, got)
        else:  # EASY may backfill small jobs beside the head, but heads follow the order
            heads = [j for j in started if j in ("1", "2")]
            assert [j for j in got if j in ("1", "2")] == heads, (policy, order, got)

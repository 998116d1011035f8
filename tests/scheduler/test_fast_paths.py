"""serve's fast paths give the replies, byte for byte, of the full path they shortcut.

Shortcuts serve takes on most messages: a message that produces no decision skips the
commit (``Dispatcher.handle``); the base class's no-op hooks are not called
(``Dispatcher.handle``); FCFS answers at once when nothing new came and the head still
does not fit (``Fcfs.decide``); a reply without decisions is encoded around one call of
the encoder (``codec.encode_reply``, also tests/protocol/test_empty_reply.py). Replies
are compared here with the full path's on recorded Batsim conversations (batsched's,
vendored).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batpolicy.policies.fcfs import Fcfs
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import _FROM_SCHEDULER, _encode, encode_reply, request_from_obj
from batpolicy.scheduler.contract import Policy
from batpolicy.scheduler.dispatch import Dispatcher, _overridden

from conftest import VENDORED_TRANSCRIPTS

WORKLOADS = ("paper800", "hpc250", "walltime120")


def _requests(prefix: str, workload: str) -> Iterator[t.Request]:
    plain = VENDORED_TRANSCRIPTS / f"{prefix}-{workload}.jsonl"
    path = plain if plain.is_file() else Path(f"{plain}.gz")
    with gzip.open(path, "rt") if path.suffix == ".gz" else path.open() as f:
        for line in f:
            yield request_from_obj(json.loads(line)["batsim"])


def _full_encode(reply: t.Reply) -> bytes:
    """The encoder's general path: message object, schema check, dump."""
    return _encode(reply.now, tuple(reply.decisions), _FROM_SCHEDULER)


class _FullFcfs(Fcfs):
    """FCFS without its early answer: every message runs the whole decision."""

    def decide(self, now: float, view: Any) -> list[t.Decision]:
        return self._decide_fifo(view)


def _full_path(policy: Policy) -> Dispatcher:
    """A dispatcher that takes no shortcut: every hook called, every reply committed."""
    for hook in ("on_job_submitted", "on_job_completed"):  # set on the instance: called
        object.__setattr__(policy, hook, getattr(policy, hook))
    return Dispatcher(policy, paranoid=True)


@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("policy", ["fcfs", "easy"])
def test_fast_replies_are_the_full_paths_bytes(policy: str, workload: str) -> None:
    prefix = "batsched-fcfs" if policy == "fcfs" else "batsched-easy_bf"
    fast = Dispatcher(make_policy(policy))
    full = _full_path(_FullFcfs() if policy == "fcfs" else make_policy(policy))
    assert full._on_completed is not None
    assert (fast._on_completed is None) is (policy == "fcfs")  # FCFS keeps the base's no-op
    empty = 0
    for number, request in enumerate(_requests(prefix, workload), 1):
        ours, theirs = fast.handle(request), full.handle(request)
        assert encode_reply(ours, checked=True) == _full_encode(theirs), \
            f"{workload}: message {number} at t={request.now}"
        empty += not ours.decisions
    assert (fast.nb_messages, fast.nb_decisions) == (full.nb_messages, full.nb_decisions)
    assert fast.state.ended and empty > 50  # the shortcuts were taken, often


class _Completions(Policy):
    name = "completions"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def on_job_completed(self, job: Any, view: Any) -> None:
        self.seen.append(job.id)


class _Bare:
    """Not a Policy: hooks of its own or none."""

    def on_job_submitted(self, job: Any, view: Any) -> None:
        return None


def test_only_the_base_classs_no_op_hooks_are_skipped() -> None:
    base, mine = Policy(), _Completions()
    assert _overridden(base, "on_job_completed") is None
    assert _overridden(mine, "on_job_completed") == mine.on_job_completed
    assert _overridden(mine, "on_job_submitted") is None
    object.__setattr__(base, "on_job_completed", print)  # set on the instance: kept
    assert _overridden(base, "on_job_completed") is print
    bare = _Bare()
    assert _overridden(bare, "on_job_submitted") == bare.on_job_submitted
    with pytest.raises(AttributeError):  # no hook at all: fails when called, as before
        _overridden(bare, "on_job_completed")(None, None)  # type: ignore[misc]

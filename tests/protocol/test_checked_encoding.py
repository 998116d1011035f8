"""``encode_reply(reply, checked=True)``: the daemon's path skips the decode-back only where safe.

The codec decodes every reply it encodes (the decoders are the one rule book). A reply the
decision checker accepted need not be decoded again for undated plain EXECUTE_JOB and
REJECT_JOB decisions: the checker's rules (a known waiting job, a non-empty set of the
platform's machines) imply the decoders'. These tests check that implication on random
decisions, that the bytes never change, and that everything else is still refused.
"""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.errors import InvalidDecision, ProtocolError
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol._wire import decode_hook
from batpolicy.protocol.codec import (
    _FROM_SCHEDULER,
    _plainly_valid,
    _to_obj,
    decode_reply,
    encode_reply,
    request_from_obj,
)
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.checker import check_decisions
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.state import ClusterState

from conftest import TRANSCRIPTS

NB = 16


def _state(names: list[str]) -> ClusterState:
    state = ClusterState()
    resources = tuple(t.ResourceInfo(i, f"h{i}") for i in range(NB))
    state.apply(t.SimulationBegins(0.0, NB, NB, 0, False, True, {"dynamic-jobs-enabled": False},
                                   resources, (), {"w0": "/w0.json"},
                                   {"w0": {"p": {"type": "delay", "delay": 10.0}}}))
    for name in names:
        state.apply(t.JobSubmitted(0.0, f"w0!{name}", {"id": f"w0!{name}", "subtime": 0.0,
                                                        "res": 2, "walltime": 100.0,
                                                        "profile": "p"}))
    return state


# job names as Batsim's JSON can carry them: the decoder refuses a lone surrogate, so no
# state ever holds one (hypothesis found that generating them made encoding itself fail)
job_names = st.lists(st.text(st.characters(blacklist_categories=("Cs",),
                                           blacklist_characters="!"), min_size=1, max_size=6),
                     min_size=1, max_size=4, unique=True)
ids = st.one_of(st.sampled_from(["w0!a", "w0!0", "a!b!c", "", "w1!a"]),
                st.text(max_size=8))
allocs = st.one_of(
    st.lists(st.integers(0, NB - 1), min_size=2, max_size=2, unique=True),  # the job's size
    st.lists(st.integers(-1, NB + 2), max_size=4),
).map(lambda xs: MachineSet([x for x in xs if x >= 0]))


@settings(max_examples=300, deadline=None)
@given(job_names, st.lists(st.tuples(st.booleans(), st.booleans(), st.integers(0, 3), ids,
                                     allocs), min_size=1, max_size=4))
def test_what_the_checker_accepts_decodes_back(names: list[str], picks: list) -> None:
    state = _state(names)
    decisions: list[t.Decision] = []
    for execute, known, which, job_id, alloc in picks:
        if known:
            job_id = f"w0!{names[which % len(names)]}"
        decisions.append(t.ExecuteJob(job_id, alloc) if execute else t.RejectJob(job_id))
    try:
        check_decisions(state, decisions, "test")
    except InvalidDecision:
        return
    reply = t.Reply(3.0, tuple(decisions))
    data = encode_reply(reply, checked=True)
    assert data == encode_reply(reply)  # the full path (decode-back included) accepts it too
    assert decode_reply(data) is not None


def test_a_whole_run_encodes_to_the_same_bytes_checked_or_not() -> None:
    path = TRANSCRIPTS / "batsched-easy_bf-walltime120.jsonl"
    dispatcher = Dispatcher(make_policy("easy"))
    replies = 0
    for line in path.open():
        reply = dispatcher.handle(request_from_obj(json.loads(line)["batsim"]))
        assert encode_reply(reply, checked=True) == encode_reply(reply)
        replies += 1
    assert dispatcher.state.ended and replies > 100


@pytest.mark.parametrize("decision", [
    t.ExecuteJob("w0!a", MachineSet.of(0), timestamp=9.0),   # dated after the reply's now
    t.CallMeLater(1.0),                                  # in the past
    t.ExecuteJob("w0!a", MachineSet.of(0, 1), mapping={0: 5}),  # a host outside the allocation
    t.RejectJob("no-bang", timestamp=2.0),
], ids=["dated-execute", "call-me-in-the-past", "bad-mapping", "dated-reject-bad-id"])
def test_checked_still_refuses_what_the_checker_does_not_cover(decision: t.Decision) -> None:
    with pytest.raises(ProtocolError):
        encode_reply(t.Reply(3.0, (decision,)), checked=True)


def test_checked_still_refuses_a_bad_now() -> None:
    with pytest.raises(ProtocolError, match="now"):
        encode_reply(t.Reply(float("nan"), (t.RejectJob("w0!a"),)), checked=True)


# ids as a scheduler may write them: one '!' or not, newlines (the pattern's ``$`` matches
# before a final one), anything else; machine ids up to what a bitmap holds (2**32 - 1)
raw_ids = st.one_of(st.text(alphabet="ab!\n", max_size=5), st.text(max_size=6))
raw_allocs = st.lists(st.one_of(st.integers(0, 40), st.integers(2 ** 31 - 2, 2 ** 32 - 1)),
                      max_size=3).map(MachineSet)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.booleans(), raw_ids, raw_allocs), max_size=3))
def test_the_plain_reply_shortcut_says_what_the_schema_says(picks: list) -> None:
    """The shortcut for the commonest reply agrees with the wire schema.

    ``_plainly_valid`` checks an undated EXECUTE_JOB / REJECT_JOB reply without building
    the schema's structs; it must accept it exactly when the schema does.
    """
    decisions = tuple(t.ExecuteJob(job_id, alloc) if execute else t.RejectJob(job_id)
                      for execute, job_id, alloc in picks)
    obj = _to_obj(3.0, decisions, _FROM_SCHEDULER)
    try:
        msgspec.convert(obj, _FROM_SCHEDULER.schema, str_keys=True, dec_hook=decode_hook)
        schema_accepts = True
    except msgspec.ValidationError:
        schema_accepts = False
    assert _plainly_valid(3.0, decisions) == schema_accepts

"""Replaying another scheduler's real-Batsim conversation asks our policy at every step.

The Batsim side of pybatsim's EASY run (a different EASY: contiguous blocks) is fed to our
dispatcher in shadow mode: at every message our policy must answer with decisions the
checker accepts against the state of *that* run, whose evolution follows the recorded
pybatsim replies.
"""

from __future__ import annotations

import json

import pytest

from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import reply_from_obj, request_from_obj
from batpolicy.scheduler.dispatch import Dispatcher

from conftest import TRANSCRIPTS


@pytest.mark.parametrize("policy", ["easy", "fcfs"])
def test_every_message_of_pybatsim_run_gets_valid_decisions(policy: str) -> None:
    path = TRANSCRIPTS / "pybatsim-easy-paper800.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not available")
    dispatcher = Dispatcher(make_policy(policy), paranoid=True)
    answered = started = 0
    for line in path.open():
        exchange = json.loads(line)
        ours = dispatcher.shadow(request_from_obj(exchange["batsim"]),
                                 reply_from_obj(exchange["scheduler"]))
        answered += 1
        started += sum(isinstance(d, t.ExecuteJob) for d in ours.decisions)
    assert dispatcher.state.ended
    assert answered > 1000
    assert started > 100  # our policy did propose starts all along the run

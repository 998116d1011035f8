"""The protocol's records (frozen msgspec Structs): what a policy and the codec rely on."""

from __future__ import annotations

import inspect

import msgspec
import pytest

from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.outcomes import JobOutcome


def test_protocol_records_are_frozen_and_replaceable() -> None:
    """The wire records (msgspec Structs): frozen, equal by fields, hashable, replaceable."""
    job = t.ExecuteJob("w0!1", MachineSet.span(0, 3))
    with pytest.raises(AttributeError):
        job.alloc = MachineSet.span(0, 1)  # type: ignore[misc]
    stamped = msgspec.structs.replace(job, timestamp=2.0)
    assert stamped == t.ExecuteJob("w0!1", MachineSet.span(0, 3), timestamp=2.0) != job
    assert hash(t.RejectJob("w0!1")) == hash(t.RejectJob("w0!1"))
    assert list(inspect.signature(t.ExecuteJob).parameters) == [
        "job_id", "alloc", "mapping", "storage_mapping", "additional_io_job", "timestamp"]
    assert t.Notify(1.0, "x").data == {} and t.Notify(1.0, "x").data is not t.Notify(1.0, "x").data


def test_job_outcomes_are_frozen_records_with_defaults() -> None:
    done = JobOutcome(0.0, 1.0, 3.0, 2, True)
    assert (done.killed, done.deadline, done.alloc) == (False, None, None)
    with pytest.raises(AttributeError):
        done.finish = 4.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        JobOutcome(0.0, 1.0)  # type: ignore[call-arg]

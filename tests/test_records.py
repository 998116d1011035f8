"""slot_init: the faster __init__ of frozen, slotted records means what the dataclass's meant."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import FrozenInstanceError, dataclass, field

import msgspec
import pytest

from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.records import slot_init


def _record() -> type:
    """The same record class each call: one to keep the dataclass's __init__, one for slot_init."""
    @dataclass(frozen=True, slots=True)
    class Record:
        job_id: str
        alloc: object
        mapping: object = None
        timestamp: float | None = None

    return Record


Plain = _record()
Fast = slot_init(_record())


CALLS = [(("a", 1), {}), (("a", 1, {0: 1}), {}), (("a",), {"alloc": 2, "timestamp": 3.5}),
         ((), {"job_id": "b", "alloc": None, "mapping": None, "timestamp": 0.0})]
BAD_CALLS = [((), {}), (("a",), {}), (("a", 1, 2, 3, 4), {}), (("a", 1), {"nope": 1}),
             (("a", 1), {"job_id": "x"})]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_same_fields_as_the_dataclass_init(args: tuple, kwargs: dict) -> None:
    fast, plain = Fast(*args, **kwargs), Plain(*args, **kwargs)
    assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
    assert repr(fast) == repr(plain)


@pytest.mark.parametrize(("args", "kwargs"), BAD_CALLS)
def test_same_type_errors_as_the_dataclass_init(args: tuple, kwargs: dict) -> None:
    with pytest.raises(TypeError) as fast:
        Fast(*args, **kwargs)
    with pytest.raises(TypeError) as plain:
        Plain(*args, **kwargs)
    assert str(fast.value) == str(plain.value)


def test_still_frozen_and_replaceable() -> None:
    job = Fast("w0!1", MachineSet.span(0, 3))
    with pytest.raises(FrozenInstanceError):
        job.alloc = MachineSet.span(0, 1)  # type: ignore[misc]
    stamped = dataclasses.replace(job, timestamp=2.0)
    assert (stamped.job_id, str(stamped.alloc), stamped.timestamp) == ("w0!1", "0-3", 2.0)
    assert stamped == Fast("w0!1", MachineSet.span(0, 3), timestamp=2.0)
    assert list(inspect.signature(Fast).parameters) == [
        f.name for f in dataclasses.fields(Fast)]


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


def test_refuses_what_it_does_not_cover() -> None:
    @dataclass(frozen=True, slots=True)
    class Factory:
        data: dict = field(default_factory=dict)

    @dataclass(slots=True)
    class Mutable:
        a: int

    @dataclass(frozen=True, slots=True)
    class Post:
        a: int

        def __post_init__(self) -> None:
            pass

    for cls in (Factory, Mutable, Post):
        with pytest.raises(TypeError, match="slot_init"):
            slot_init(cls)

"""Frozen, slotted dataclasses whose ``__init__`` stores fields through their slots.

A frozen dataclass cannot assign ``self.x = x`` in its ``__init__`` (its ``__setattr__``
raises), so the ``__init__`` that :func:`dataclasses.dataclass` writes stores each field
with ``object.__setattr__(self, "x", x)``: a generic attribute store that looks the name
up along the class's MRO every time. With ``slots=True`` each field is a member
descriptor of the class, whose ``__set__`` stores at a fixed offset with no lookup.
:func:`slot_init` replaces the dataclass's ``__init__`` by one that calls those
descriptors: same parameters, defaults and errors, still frozen afterwards.

It is applied to the records built for every message or job; the others keep the
dataclass's ``__init__``. Why it matters: the drivers build about ten frozen records
per job (two requests and two replies, the job's events, its ``EXECUTE_JOB``, the
head's reservation, its outcome). On 2026-11-24, ``ExecuteJob("w0!1", alloc)`` took
0.63 µs with the dataclass's ``__init__`` and 0.38 µs with this one; the whole
``batpolicy simulate --policy easy`` on RICC-2010's first 150,000 jobs 16.46-16.52 s
against 16.10-16.35 s, on KTH-SP2 3.06-3.11 s against 2.95-3.01 s (alternated runs,
identical jobs.csv).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["slot_init"]

T = TypeVar("T")


def slot_init(cls: type[T]) -> type[T]:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` that stores via its slots.

    Apply it above ``@dataclass(frozen=True, slots=True)``. Classes the faster
    ``__init__`` does not cover (a ``__post_init__``, ``InitVar``, keyword-only or
    ``init=False`` fields, default factories) are refused, so the dataclass's own
    ``__init__`` is never silently changed in meaning.

    >>> from dataclasses import dataclass, FrozenInstanceError
    >>> @slot_init
    ... @dataclass(frozen=True, slots=True)
    ... class Pair:
    ...     a: int
    ...     b: str = "x"
    >>> Pair(1), Pair(2, b="y") == Pair(2, "y")
    (Pair(a=1, b='x'), True)
    >>> Pair(1).a = 3
    Traceback (most recent call last):
    ...
    dataclasses.FrozenInstanceError: cannot assign to field 'a'
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"slot_init needs a frozen, slotted dataclass, not {cls.__name__}")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"slot_init: {cls.__name__} has a __post_init__")
    every = cls.__dataclass_fields__  # type: ignore[attr-defined]
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if len(fields) != len(every) or any(not f.init or f.kw_only for f in fields) or any(
            f.default_factory is not dataclasses.MISSING for f in fields):
        raise TypeError(f"slot_init: {cls.__name__} has fields it does not cover "
                        "(InitVar, init=False, kw_only or a default factory)")
    if any(f.name == "self" or f.name.startswith(("_set", "_default")) for f in fields):
        raise TypeError(f"slot_init: a field of {cls.__name__} clashes with its own names")
    closure: dict[str, Any] = {}
    parameters, stores = [], []
    for i, f in enumerate(fields):
        closure[f"_set{i}"] = cls.__dict__[f.name].__set__
        if f.default is dataclasses.MISSING:
            parameters.append(f.name)
        else:
            closure[f"_default{i}"] = f.default
            parameters.append(f"{f.name}=_default{i}")
        stores.append(f"_set{i}(self, {f.name})")
    source = (f"def make({', '.join(closure)}):\n"
              f" def __init__(self, {', '.join(parameters)}):\n"
              f"  {'; '.join(stores) or 'pass'}\n"
              " return __init__\n")
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # noqa: S102  (source built above from field names only)
    init = namespace["make"](**closure)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls

"""Read-only containers handed to policies: sequences and mappings.

A policy reads the cluster state through :class:`~batpolicy.scheduler.view.PolicyView`;
every sequence or mapping it gets there is one of these (or a
:class:`types.MappingProxyType`), so that an in-place update fails at that line instead of
silently corrupting the state (the checker would then blame the policy's *next*
decision). Machine sets need no wrapper: a
:class:`~batpolicy.protocol.intervals.MachineSet` is immutable (``free -= alloc`` binds
the policy's own name to a new set; the state's set cannot change).

- :class:`ReadOnlySequence` wraps the state's sorted list of running jobs.
- :class:`ReadOnlyNested` is a mapping of mappings (profiles by workload), read-only on
  both levels.

These stop mistakes, not malice: Python has no private memory, so a policy determined
to change the state can always reach it (``gc``, frames, ``object.__setattr__``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NoReturn

from batpolicy.errors import ReadOnlyError

__all__ = ["ReadOnlyNested", "ReadOnlySequence"]



class ReadOnlySequence(Sequence[Any]):
    """A read-only window on a sequence (the state's running jobs by expected end).

    Indexing, slicing (a list copy), iteration, ``len`` and ``in`` work; there is no
    method that changes it. Runtime complexity: that of the wrapped sequence.

    >>> s = ReadOnlySequence([3, 1], "state.running_by_expected_end")
    >>> list(s), s[-1], len(s)
    ([3, 1], 1, 2)
    >>> s.add(4)
    Traceback (most recent call last):
    ...
    AttributeError: 'ReadOnlySequence' object has no attribute 'add'
    """

    __slots__ = ("_ReadOnlySequence__items", "_ReadOnlySequence__label")

    def __init__(self, items: Sequence[Any], label: str) -> None:
        object.__setattr__(self, "_ReadOnlySequence__items", items)
        object.__setattr__(self, "_ReadOnlySequence__label", label)

    def __getitem__(self, index: Any) -> Any:
        found = self.__items[index]
        return list(found) if isinstance(index, slice) else found

    def __len__(self) -> int:
        return len(self.__items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.__items)

    def __reversed__(self) -> Iterator[Any]:
        return reversed(self.__items)

    def __contains__(self, item: object) -> bool:
        return item in self.__items

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise ReadOnlyError(f"{self.__label} is read-only")

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        raise ReadOnlyError(f"{self.__label} is read-only")

    def __delitem__(self, index: Any) -> NoReturn:
        raise ReadOnlyError(f"{self.__label} is read-only")

    def __repr__(self) -> str:
        return f"ReadOnlySequence({list(self.__items)!r})"


class ReadOnlyNested(Mapping[str, Mapping[str, Any]]):
    """A mapping of mappings, read-only on both levels (``profiles[workload][name]``).

    >>> p = ReadOnlyNested({"w0": {"p1": {"type": "delay"}}})
    >>> p["w0"]["p1"]["type"], list(p), "w0" in p
    ('delay', ['w0'], True)
    >>> p["w0"]["p2"] = {}
    Traceback (most recent call last):
    ...
    TypeError: 'mappingproxy' object does not support item assignment
    """

    __slots__ = ("_ReadOnlyNested__data",)

    def __init__(self, data: Mapping[str, Mapping[str, Any]]) -> None:
        object.__setattr__(self, "_ReadOnlyNested__data", data)

    def __getitem__(self, key: str) -> Mapping[str, Any]:
        return MappingProxyType(self.__data[key])  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[str]:
        return iter(self.__data)

    def __len__(self) -> int:
        return len(self.__data)

    def __contains__(self, key: object) -> bool:
        return key in self.__data

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise ReadOnlyError("state.profiles is read-only")

    def __repr__(self) -> str:
        return f"ReadOnlyNested({dict(self.__data)!r})"

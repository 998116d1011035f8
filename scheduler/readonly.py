"""Read-only containers handed to policies: frozen interval sets, sequences and mappings.

A policy reads the cluster state through :class:`~batpolicy.scheduler.view.PolicyView`;
every set, sequence or mapping it gets there is one of these (or a
:class:`types.MappingProxyType`), so that an in-place update such as ``free -= alloc``
fails at that line instead of silently corrupting the state (the checker would then
blame the policy's *next* decision).

- :class:`FrozenProcSet` is a :class:`procset.ProcSet` whose in-place operators and
  mutating methods raise :class:`~batpolicy.errors.ReadOnlyError`; the ordinary
  operators (``free - alloc``, ``free & group``...) return a new, normal ``ProcSet``.
  Freezing is O(1): the frozen set shares the interval list of the live set, which is
  never modified in place (procset 1.x and :mod:`batpolicy.scheduler.intervalset`
  always build a new list).
- :class:`ReadOnlySequence` wraps the state's sorted list of running jobs.
- :class:`ReadOnlyNested` is a mapping of mappings (profiles by workload), read-only on
  both levels.

These stop mistakes, not malice: Python has no private memory, so a policy determined
to change the state can always reach it (``gc``, frames, ``object.__setattr__``).

>>> free = freeze(ProcSet((0, 7)), "state.free")
>>> str(free - ProcSet((0, 1))), type(free - ProcSet(3)).__name__
('2-7', 'ProcSet')
>>> free -= ProcSet(1)
Traceback (most recent call last):
...
batpolicy.errors.ReadOnlyError: state.free is read-only (a frozen ProcSet shared with the \
cluster state): write 'free = free - other' to get a new set
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NoReturn

from procset import ProcSet

from batpolicy.errors import ReadOnlyError

__all__ = ["FrozenProcSet", "ReadOnlyNested", "ReadOnlySequence", "freeze"]

_new_set = ProcSet.__new__
_set_itvs = ProcSet._itvs.__set__  # type: ignore[attr-defined]  # procset 1.x slot
_set_label = None  # set below, once the class exists


class FrozenProcSet(ProcSet):
    """A ProcSet that cannot change: in-place operators and mutators raise ReadOnlyError.

    Binary operators accept plain and frozen sets and return a new plain
    :class:`~procset.ProcSet`, so ``free - alloc`` keeps working as with any set.

    >>> a = FrozenProcSet((0, 3), label="view.unavailable")
    >>> str(a | ProcSet(9)), 2 in a, len(a)
    ('0-3 9', True, 4)
    >>> a.update(ProcSet(5))
    Traceback (most recent call last):
    ...
    batpolicy.errors.ReadOnlyError: view.unavailable is read-only (a frozen ProcSet shared \
with the cluster state): write 'unavailable = unavailable - other' to get a new set
    """

    __slots__ = ("_label",)

    def __init__(self, *intervals: Any, label: str = "this set") -> None:
        _set_itvs(self, ProcSet(*intervals)._itvs)
        _set_label(self, label)  # type: ignore[misc]

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        name = self._label.rsplit(".", 1)[-1]
        raise ReadOnlyError(f"{self._label} is read-only (a frozen ProcSet shared with the "
                            f"cluster state): write '{name} = {name} - other' to get a new set")

    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse  # type: ignore[assignment]
    update = intersection_update = difference_update = _refuse  # type: ignore[assignment]
    symmetric_difference_update = clear = insert = discard = _refuse  # type: ignore[assignment]
    __setattr__ = __delattr__ = __setitem__ = __delitem__ = _refuse  # type: ignore[assignment]

    def _thaw(self) -> ProcSet:
        plain = _new_set(ProcSet)
        _set_itvs(plain, self._itvs)
        return plain

    def copy(self) -> ProcSet:
        """A plain, mutable copy. Runtime complexity: O(k) intervals."""
        plain = _new_set(ProcSet)
        _set_itvs(plain, list(self._itvs))
        return plain

    def __copy__(self) -> ProcSet:
        return self.copy()

    def __or__(self, other: Any) -> ProcSet:
        return self._thaw().__or__(_plain(other))

    def __and__(self, other: Any) -> ProcSet:
        return self._thaw().__and__(_plain(other))

    def __sub__(self, other: Any) -> ProcSet:
        return self._thaw().__sub__(_plain(other))

    def __xor__(self, other: Any) -> ProcSet:
        return self._thaw().__xor__(_plain(other))

    def __ror__(self, other: Any) -> ProcSet:
        return _plain(other).__or__(self._thaw())

    def __rand__(self, other: Any) -> ProcSet:
        return _plain(other).__and__(self._thaw())

    def __rsub__(self, other: Any) -> ProcSet:
        return _plain(other).__sub__(self._thaw())

    def __rxor__(self, other: Any) -> ProcSet:
        return _plain(other).__xor__(self._thaw())

    def __reduce__(self) -> tuple[object, ...]:
        return _unpickle, (list(self._itvs), self._label)

    def aggregate(self) -> ProcSet:
        """The convex hull, as a plain set. Runtime complexity: O(1)."""
        return self._thaw().aggregate()

    __hash__ = None  # type: ignore[assignment]  # equal to mutable ProcSets, as ProcSet


_set_label = FrozenProcSet._label.__set__  # type: ignore[attr-defined]


def _unpickle(itvs: list[Any], label: str) -> FrozenProcSet:
    plain = _new_set(ProcSet)
    _set_itvs(plain, itvs)
    return freeze(plain, label)


def _plain(other: Any) -> Any:
    return other._thaw() if type(other) is FrozenProcSet else other


def freeze(machines: ProcSet, label: str) -> FrozenProcSet:
    """``machines`` as a :class:`FrozenProcSet` named ``label`` in its errors.

    Runtime complexity: O(1) (the interval list is shared, see the module docstring).

    >>> str(freeze(ProcSet(1, 2, 5), "state.free"))
    '1-2 5'
    """
    frozen = _new_set(FrozenProcSet)
    _set_itvs(frozen, machines._itvs)
    _set_label(frozen, label)
    return frozen


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

"""``MachineSet``: the one machine-set type, checked against Python's own sets.

What a user relies on: Batsim's interval strings in and out (canonical: sorted, disjoint,
maximal runs), the set algebra giving the sets Python's ``set`` gives and staying a
``MachineSet``, "the k lowest ids" by slicing, immutability, pickling, and one clear
error for a bad string.
"""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batpolicy.errors import ProtocolError
from batpolicy.protocol._wire import _parsed_machine_set, machine_set
from batpolicy.protocol.intervals import MachineSet, format_intervals, parse_intervals

#: Sets of ids dense enough to have runs, gaps and adjacent singletons.
IDS = st.sets(st.integers(0, 300), max_size=120)
#: Sets spread over the whole 32-bit range (bitmap containers of every kind).
WIDE = st.sets(st.integers(0, 2**32 - 1), max_size=40)


def _runs(ids: set[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive ids, by a plain walk (the reference)."""
    runs: list[tuple[int, int]] = []
    for i in sorted(ids):
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _text(runs: list[tuple[int, int]]) -> str:
    return " ".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


@given(st.one_of(IDS, WIDE))
def test_intervals_and_strings_are_batsims_canonical_form(ids: set[int]) -> None:
    machines = MachineSet(ids)
    assert machines.intervals() == _runs(ids)
    assert str(machines) == format_intervals(machines) == _text(_runs(ids))
    assert len(machines) == len(ids) and list(machines) == sorted(ids)
    if ids:
        assert parse_intervals(str(machines)) == machines
        assert MachineSet.parse(str(machines)) == machines


@given(IDS, st.randoms(use_true_random=False))
def test_any_order_overlaps_and_touching_intervals_parse_to_the_same_set(
        ids: set[int], rnd) -> None:  # type: ignore[no-untyped-def]
    pieces = [(a, b) for a, b in _runs(ids)]
    # split runs, duplicate some pieces, shuffle: Batsim's canonical form is not required
    tokens = []
    for a, b in pieces:
        cut = rnd.randint(a, b)
        tokens += [f"{a}-{cut}" if cut != a else str(a), f"{cut}-{b}" if cut != b else str(b)]
    rnd.shuffle(tokens)
    if tokens:
        assert parse_intervals(" ".join(tokens)) == MachineSet(ids)
        assert MachineSet.of(*pieces) == MachineSet(ids)


@given(IDS, IDS)
def test_operators_give_pythons_sets_and_stay_machine_sets(a: set[int], b: set[int]) -> None:
    x, y = MachineSet(a), MachineSet(b)
    for got, want in ((x - y, a - b), (x | y, a | b), (x & y, a & b), (x ^ y, a ^ b),
                      (MachineSet().union(x, y), a | b)):
        assert type(got) is MachineSet and set(got) == want
    assert (x <= y) == (a <= b) and x.isdisjoint(y) == a.isdisjoint(b)
    assert x.intersection_cardinality(y) == len(a & b)


@given(IDS, st.integers(0, 130))
def test_a_slice_is_the_lowest_ids(ids: set[int], k: int) -> None:
    lowest = MachineSet(ids)[:k]
    assert type(lowest) is MachineSet and list(lowest) == sorted(ids)[:k]


def test_sets_are_immutable_and_survive_pickling_and_copies() -> None:
    free = MachineSet.parse("0-7 12")
    alias = free
    alias -= MachineSet.span(0, 2)  # a new set bound to the alias
    assert str(alias) == "3-7 12" and str(free) == "0-7 12"
    for mutator in ("add", "update", "discard", "remove", "clear", "add_range"):
        assert not hasattr(free, mutator), mutator
    for back in (pickle.loads(pickle.dumps(free)), copy.copy(free), copy.deepcopy(free)):
        assert type(back) is MachineSet and back == free and hash(back) == hash(free)
    assert repr(free) == "MachineSet.parse('0-7 12')" and eval(repr(free)) == free
    assert repr(MachineSet()) == "MachineSet()" and eval(repr(MachineSet())) == MachineSet()
    assert f"{free}" == "0-7 12" and str(MachineSet()) == "" and not MachineSet()


@pytest.mark.parametrize("text,words", [
    ("3-1", "interval '3-1' has its bounds reversed"),
    ("0-3,7", "malformed interval set '0-3,7'"),
    ("", "malformed interval set ''"),
    ("4294967296", "resource id 4294967296 is out of range"),
    (7, "expected an interval-set string such as '0-3 7', got int"),
])
def test_a_bad_string_is_one_clear_error_naming_the_field(text: object, words: str) -> None:
    with pytest.raises(ProtocolError, match="field 'data.alloc'") as info:
        parse_intervals(text, field="data.alloc")
    assert words in str(info.value)


#: Strings near the one-run shape: runs, reversed or huge bounds, spaces, signs, zeros.
NEAR_RUNS = st.one_of(
    st.text(alphabet="0123456789- \n+", max_size=14),
    st.builds(lambda a, b, sep: f"{a}{sep}{b}", st.integers(0, 2**32 + 5),
              st.integers(0, 2**32 + 5), st.sampled_from(["-", " ", "--", ""])),
    st.integers(2**31 - 3, 2**31 + 3).map(str))


@given(NEAR_RUNS)
def test_the_one_run_reading_is_the_parsers(text: str) -> None:
    """``machine_set``'s C-level reading of ``a-b`` gives the set, or error, of the parser's."""
    def outcome(read: object) -> object:
        try:
            return read(text)  # type: ignore[operator]
        except ValueError as exc:
            return str(exc)

    assert outcome(machine_set) == outcome(_parsed_machine_set)

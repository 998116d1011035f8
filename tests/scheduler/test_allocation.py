"""Allocators: exact machine ids on hand-made platforms, and properties on random ones.

The hand-made platform has groups of several sizes: ``a`` = 0-3, ``b`` = 4-5,
``c`` = 6-11, ``gpu`` = 12-13 (GPU machines), and two machines of no group (14-15).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.errors import ConfigError
from batpolicy.platforms.model import Machine, Platform
from batpolicy.policies.toolkit.allocation import ALLOCATORS, make_allocator
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.jobs import Job

GROUPS = {"a": (0, 3), "b": (4, 5), "c": (6, 11), "gpu": (12, 13)}


def hand_made(nb_ungrouped: int = 2) -> Platform:
    machines = [Machine(i, f"m{i}", cluster=name, gpu=name == "gpu")
                for name, (lo, hi) in GROUPS.items() for i in range(lo, hi + 1)]
    machines += [Machine(14 + k, f"u{k}") for k in range(nb_ungrouped)]
    return Platform(machines)


def job(res: int, **fields: str) -> Job:
    return Job("w0!1", 0.0, res, 100.0, "p", seq=0, **fields)


def alloc(name: str, free: str, res: int, one_group: bool = False, **fields: str) -> str | None:
    found = make_allocator(name, one_group).allocate(MachineSet.parse(free), job(res, **fields),
                                                     hand_made())
    return None if found is None else str(found)


ALL = "0-15"


@pytest.mark.parametrize("free,res,expected", [
    (ALL, 5, "0-4"), ("1 3 5-9", 4, "1 3 5-6"), ("2-3", 3, None), (ALL, 16, ALL)])
def test_lowest_ids_is_batsched_choice(free: str, res: int, expected: str | None) -> None:
    assert alloc("lowest", free, res) == expected


@pytest.mark.parametrize("free,res,expected", [
    (ALL, 2, "0-1"),        # first group in id order that fits
    (ALL, 5, "6-10"),       # a (4) and b (2) are too small
    ("1-3 4-5 7-11", 3, "1-3"),
    ("0-2 4-5 6-9 14-15", 4, "6-9"),
    (ALL, 7, None),         # no group of 7
])
def test_lowest_in_one_group_is_first_fit(free: str, res: int, expected: str | None) -> None:
    assert alloc("lowest", free, res, one_group=True) == expected


@pytest.mark.parametrize("free,res,expected", [
    (ALL, 2, "4-5"),        # b fits exactly: the tightest group
    (ALL, 3, "0-2"),        # a leaves 1, c leaves 3: a
    ("0-1 4-11", 2, "0-1"),  # a has 2 free, b 2 as well: lowest ids win the tie
    (ALL, 6, "6-11"),
    ("0-3 6-8", 4, "0-3"),
    ("0-2 6-8 12-15", 4, None),
    (ALL, 7, None),
])
def test_one_group_is_best_fit(free: str, res: int, expected: str | None) -> None:
    assert alloc("one-group", free, res) == expected
    assert alloc("fewest-groups", free, res, one_group=True) == expected


@pytest.mark.parametrize("free,res,expected", [
    (ALL, 2, "4-5"),               # one group if one fits (tightest)
    (ALL, 8, "4-11"),              # c whole (6), then the tightest holding 2: b
    (ALL, 10, "0-3 6-11"),         # c (6) + a (4)
    ("0-3 4-5 6-8 12-15", 9, "0-8"),  # a (4) + c (3) + tightest for 2: b
    ("0-1 4 6", 5, None),
])
def test_fewest_groups(free: str, res: int, expected: str | None) -> None:
    assert alloc("fewest-groups", free, res) == expected


def test_fewest_groups_takes_the_tightest_group_for_the_remainder() -> None:
    # c (6 free) whole, then 2 more: b holds exactly 2, a would leave 2 idle
    assert alloc("fewest-groups", "0-3 4-5 6-11", 8) == "4-11"


@pytest.mark.parametrize("fields,free,res,expected", [
    ({"preferred": "c"}, ALL, 3, "6-8"),
    ({"preferred": "c"}, "0-7", 3, "0 6-7"),           # c's 2 free, then the lowest
    ({"origin": "b"}, ALL, 2, "4-5"),
    ({"preferred": "nowhere"}, ALL, 2, "0-1"),        # unknown group: no preference
    ({"job_type": "gpu"}, ALL, 3, "0 12-13"),          # both GPUs, then the lowest ids
    ({}, "10-15", 3, "10-11 14"),                      # CPU machines first, GPUs kept free
    ({"job_type": "mpi"}, ALL, 2, "4-5"),              # one group (tightest)
    ({"job_type": "mpi"}, ALL, 8, "4-11"),             # else the fewest groups
])
def test_preferred_first(fields: dict[str, str], free: str, res: int,
                         expected: str | None) -> None:
    assert alloc("preferred-first", free, res, **fields) == expected


@pytest.mark.parametrize("fields,free,res,expected", [
    ({"preferred": "c"}, ALL, 3, "6-8"),
    ({"job_type": "gpu"}, ALL, 2, "12-13"),   # the GPU group
    ({"job_type": "gpu"}, ALL, 3, "0-2"),     # no GPU group holds 3: best fit elsewhere
    ({}, ALL, 2, "4-5"),                       # CPU groups first (b is tightest)
    ({}, "0-3 12-13", 2, "0-1"),
])
def test_preferred_first_in_one_group(fields: dict[str, str], free: str, res: int,
                                      expected: str | None) -> None:
    assert alloc("preferred-first", free, res, one_group=True, **fields) == expected


def test_ungrouped_machines_form_one_implicit_group() -> None:
    assert alloc("one-group", "14-15", 2) == "14-15"
    flat = Platform.homogeneous(6)  # no group at all: one group of everything
    assert str(make_allocator("one-group").allocate(MachineSet.span(0, 5), job(6), flat)) == "0-5"


def test_unknown_allocator_and_missing_platform_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown allocator 'random'.*lowest"):
        make_allocator("random")
    with pytest.raises(ConfigError, match="needs the platform"):
        make_allocator("one-group").allocate(MachineSet.span(0, 3), job(2), None)


# ------------------------------------------------------------------ properties
@st.composite
def platforms_and_free(draw: st.DrawFn) -> tuple[Platform, MachineSet]:
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=6))
    machines: list[Machine] = []
    for index, group_size in enumerate(sizes):
        grouped = draw(st.booleans()) or index == 0
        gpu = draw(st.booleans())
        for _ in range(group_size):
            machines.append(Machine(len(machines), f"m{len(machines)}",
                                    cluster=f"g{index}" if grouped else None, gpu=gpu))
    free = MachineSet([m.id for m in machines if draw(st.booleans())])
    return Platform(machines), free


@settings(max_examples=300, deadline=None)
@given(platforms_and_free(), st.integers(1, 40), st.sampled_from(sorted(ALLOCATORS)),
       st.booleans(), st.sampled_from([None, "mpi", "gpu"]), st.sampled_from([None, "g0", "g2"]))
def test_every_allocator_gives_a_subset_of_free_of_the_right_size_or_none(
        case: tuple[Platform, MachineSet], res: int, name: str, one_group: bool,
        job_type: str | None, preferred: str | None) -> None:
    platform, free = case
    allocator = make_allocator(name, one_group)
    wanted = Job("w0!1", 0.0, res, None, "p", seq=0, job_type=job_type, preferred=preferred)
    found = allocator.allocate(free, wanted, platform)
    groups = {}
    for m in platform.machines:
        groups.setdefault(m.cluster, []).append(m.id)  # machines of no group: one group
    fits_one = any(len(free & MachineSet(ids)) >= res for ids in groups.values())
    if found is None:
        # None only when no allocation satisfying the constraint exists
        assert len(free) < res or ((one_group or name == "one-group") and not fits_one)
        return
    assert len(found) == res and found.issubset(free)
    if one_group or name == "one-group":
        assert any(found.issubset(MachineSet(ids)) for ids in groups.values()), str(found)
    if name == "fewest-groups" and fits_one:
        assert any(found.issubset(MachineSet(ids)) for ids in groups.values())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 8)), min_size=1, max_size=12),
       st.sets(st.integers(0, 80)), st.integers(1, 9))
def test_first_fit_walk_is_first_fit_group(layout: list[tuple[int, int]], free_ids: set[int],
                                           need: int) -> None:
    """The walk over free intervals picks what the scan over every group picks.

    Groups are single intervals with gaps of ungrouped machines between them (``layout``
    = (gap before, size) per group), as ``lowest`` with ``one_group`` sees machines.
    """
    from batpolicy.policies.toolkit.allocation import first_fit_group, first_fit_walk

    bounds, at = [], 0
    for gap, width in layout:
        bounds.append((at + gap, at + gap + width - 1))
        at += gap + width
    free = MachineSet(free_ids)
    sets = [(str(i), MachineSet.of(b)) for i, b in enumerate(bounds)]
    walked = first_fit_walk(free, need, bounds, [b[0] for b in bounds])
    assert walked == first_fit_group(free, need, sets)

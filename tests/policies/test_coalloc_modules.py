"""The co-allocation modules of seed 003 (§4.2, §5) on hand-made cluster states, and A1.

A1's feasible ranges (eq. 9-10) are checked against eq. 1 node count by node count, and
its three solvers (the paper's branch and bound, the exact DP, the fewest-clusters
objective) against brute force over every mapping, on random instances.
"""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from batpolicy.platforms.bandwidth import required_bandwidth
from batpolicy.policies.coalloc.modules import (
    ClusterInfo,
    b1,
    b2,
    b3,
    b4,
    eligible,
    first_fit,
    local,
    migrate,
)
from batpolicy.policies.coalloc.satisfy import (
    feasible_ranges,
    fits_link,
    solve_branch_and_bound,
    solve_dp,
    solve_fewest,
)


def C(name: str, free: int, capacity: float | None = None, load: float = 0.0) -> ClusterInfo:
    return ClusterInfo(name, free, capacity, load)


# ------------------------------------------------------------------------------ LA, MIG, FF
def test_local_takes_only_the_origin_cluster() -> None:
    clusters = [C("c0", 3), C("c1", 10)]
    assert local(3, clusters, "c0") == {"c0": 3}
    assert local(4, clusters, "c0") is None
    assert local(1, clusters, None) is None and local(1, clusters, "elsewhere") is None


def test_migration_picks_the_fewest_free_nodes_that_fit() -> None:
    clusters = [C("c0", 9), C("c1", 5), C("c2", 4), C("c3", 5)]
    assert migrate(5, clusters) == {"c1": 5}       # c1 and c3 tie at 5: platform order
    assert migrate(4, clusters) == {"c2": 4}
    assert migrate(10, clusters) is None


def test_first_fit_goes_largest_free_first_and_ignores_links() -> None:
    clusters = [C("c0", 5, 1.0, 1e9), C("c1", 8), C("c2", 6), C("c3", 6)]
    assert first_fit(17, clusters) == {"c1": 8, "c2": 6, "c3": 3}
    assert first_fit(9, clusters) == {"c1": 8, "c2": 1}
    assert first_fit(26, clusters) is None


# ------------------------------------------------------------------------------ class B
def test_lslt_excludes_clusters_whose_link_is_saturated_beyond_it() -> None:
    clusters = [C("c0", 10, 100.0, 101.0), C("c1", 4, 100.0, 60.0), C("c2", 4, None, 5.0)]
    assert [c.name for c in eligible(clusters, 1.0)] == ["c1", "c2"]
    assert [c.name for c in eligible(clusters, 0.5)] == ["c2"]
    assert [c.name for c in eligible(clusters, 1.2)] == ["c0", "c1", "c2"]
    # B1 would take c0 first (10 free) but its link is beyond 100 %
    assert b1(6, clusters, 1.0) == {"c1": 4, "c2": 2}
    assert b1(6, clusters, 1.2) == {"c0": 6}
    assert b1(9, clusters, 1.0) is None            # 8 nodes left below the threshold


def test_b2_takes_the_least_saturated_link_first() -> None:
    clusters = [C("c0", 9, 100.0, 90.0), C("c1", 3, 100.0, 10.0), C("c2", 4, 100.0, 50.0)]
    assert b2(8, clusters, 1.0) == {"c1": 3, "c2": 4, "c0": 1}


def test_b3_needs_a_large_chunk_on_one_cluster() -> None:
    clusters = [C("c0", 17), C("c1", 3), C("c2", 10)]
    assert b3(20, clusters, 1.0, 0.85) == {"c0": 17, "c2": 3}   # 17 >= ceil(0.85 x 20)
    assert b3(20, clusters, 1.0, 0.9) is None                   # needs 18 on one cluster
    assert b3(20, [C("c0", 17, 100.0, 200.0), C("c1", 10), C("c2", 10)], 1.0, 0.5) == \
        {"c1": 10, "c2": 10}                                     # c0 is beyond the LSLT
    assert b3(10, [C("c0", 7), C("c1", 7)], 1.0, 0.7) == {"c0": 7, "c1": 3}


def test_b4_deals_nodes_round_robin() -> None:
    clusters = [C("c0", 2), C("c1", 9), C("c2", 4), C("c3", 0)]
    assert b4(7, clusters, 1.0) == {"c1": 3, "c2": 2, "c0": 2}
    assert b4(12, clusters, 1.0) == {"c1": 6, "c2": 4, "c0": 2}
    assert b4(16, clusters, 1.0) is None
    assert b4(3, [C("c0", 5, 100.0, 500.0), C("c1", 5)], 1.0) == {"c1": 3}


# ------------------------------------------------------------------------------ A1
def test_a1_ranges_on_a_hand_worked_case() -> None:
    # 10 nodes, PPBW 90, 160 byte/s left: 90 x (10 - x) / 9 <= 160  <=>  x (10 - x) <= 16
    assert feasible_ranges(10, 10, 90.0, 160.0) == ((0, 2), (8, 10))
    assert feasible_ranges(10, 5, 90.0, 160.0) == ((0, 2),)
    assert feasible_ranges(10, 10, 90.0, 250.0) == ((0, 10),)   # 25 >= x (10 - x) always
    assert feasible_ranges(10, 10, 90.0, -5.0) == ((0, 0), (10, 10))  # link already full
    assert feasible_ranges(10, 0, 90.0, 160.0) == ((0, 0),)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 60), free=st.integers(0, 80), ppbw=st.floats(0.0, 1e3),
       avail=st.one_of(st.none(), st.floats(-100.0, 2e4)))
def test_a1_ranges_are_exactly_the_counts_within_the_link(n: int, free: int, ppbw: float,
                                                          avail: float | None) -> None:
    ranges = feasible_ranges(n, free, ppbw, avail)
    got = {x for lo, hi in ranges for x in range(lo, hi + 1)}
    want = {x for x in range(0, min(n, free) + 1)
            if x in (0, n) or avail is None or required_bandwidth(x, n, ppbw) <= avail
            or not ppbw > 0}
    # eq. 1 in floating point vs the exact integer test: only boundary ties may differ
    for x in got ^ want:
        assert math.isclose(required_bandwidth(x, n, ppbw), avail or 0.0, rel_tol=1e-9)
    assert all(fits_link(x, n, ppbw, avail) for x in got)


def _brute(ranges: list[tuple[tuple[int, int], ...]], n: int, order: str
           ) -> tuple[tuple[int, ...] | None, int | None]:
    """First solution of eq. 11 in the loops' order, and the fewest clusters spanned."""
    values = [[x for lo, hi in r for x in range(lo, hi + 1)] for r in ranges]
    if order == "desc":
        values = [v[::-1] for v in values]
    first, fewest = None, None
    for combo in itertools.product(*values):
        if sum(combo) == n:
            if first is None:
                first = combo
            used = sum(1 for x in combo if x)
            fewest = used if fewest is None else min(fewest, used)
    return first, fewest


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[tuple[tuple[int, int], ...]], int]:
    n = draw(st.integers(1, 14))
    ranges = []
    for _ in range(draw(st.integers(1, 4))):
        free = draw(st.integers(0, 14))
        ppbw = draw(st.floats(0.0, 50.0))
        avail = draw(st.one_of(st.none(), st.floats(-10.0, 300.0)))
        ranges.append(feasible_ranges(n, free, ppbw, avail))
    return ranges, n


@settings(max_examples=300, deadline=None)
@given(instance=instances(), order=st.sampled_from(["desc", "asc"]))
def test_a1_solvers_agree_with_brute_force(instance: tuple[list, int], order: str) -> None:
    ranges, n = instance
    first, fewest = _brute(ranges, n, order)
    assert solve_branch_and_bound(ranges, n, order).counts == first
    assert solve_dp(ranges, n, order).counts == first
    best = solve_fewest(ranges, n, order).counts
    if fewest is None:
        assert best is None
    else:
        assert best is not None and sum(best) == n
        assert sum(1 for x in best if x) == fewest
        assert all(any(lo <= x <= hi for lo, hi in r) for x, r in zip(best, ranges, strict=True))

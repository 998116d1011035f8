"""A1's eq. 11 solvers: the paper's branch and bound vs the exact DP (same answers).

Jones, Pang, Stanzione & Ligon (seed 003), §5 module A1 and §6.4 Table 1 (O(n p^m)
brute force, 69.6 us per decision in C). Random instances shaped like the §6.1 runs
(jobs of UNIF[10, 50] nodes, 4 or 8 clusters of 100 nodes with random free nodes and
link headroom, PPBW from BSBW 200-900 Mbps by eq. 8); every instance is solved by both,
the answers compared, and the time for all of them measured with bench/harness.py
(ratio = branch and bound / DP). Results: ``bench/results/coalloc_a1_solvers.txt``.

Random instances are easy for the pruned search (it finds a first solution at once, or
the bound cuts); "gapped" ones (a total that falls between the sums the ranges can
make) show the p^m worst case, where the DP's O(m p^2 / w) wins.

Usage::

    python bench/experiments/coalloc_a1_solvers.py              # the committed run
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import measure, write_results  # noqa: E402  (bench/harness.py)

from batpolicy.platforms.bandwidth import ppbw_from_bsbw
from batpolicy.policies.coalloc.satisfy import feasible_ranges, solve_branch_and_bound, solve_dp


def instances(clusters: int, count: int, seed: int) -> list[tuple[list, int]]:
    """Random A1 problems: (ranges per cluster, n)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(10, 50)
        ppbw = ppbw_from_bsbw(rng.uniform(200, 900) * 1e6 / 8, n)
        ranges = [feasible_ranges(n, rng.randint(0, min(100, n - 1)), ppbw,
                                  rng.uniform(-0.2, 1.0) * 125e6) for _ in range(clusters)]
        out.append((ranges, n))
    return out


def gapped(clusters: int, count: int, seed: int) -> list[tuple[list, int]]:
    """Hard cases for the search: ranges {0, 1} U [h, h+1], a total between the reachable sums.

    E.g. 8 clusters of ((0, 1), (12, 13)) and n = 46: 3 large parts make at most 44, 4 at
    least 48; the search visits most of the 4^8 combinations before giving up.
    """
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        h = rng.randint(8, 14)
        k = rng.randint(2, clusters - 2)
        top = (h + 1) * k + (clusters - k)   # most with k large parts
        bottom = h * (k + 1)                 # least with k + 1
        if bottom - top < 2:
            continue
        out.append(([((0, 1), (h, h + 1))] * clusters, top + 1))
    return out


def main() -> int:
    """Compare the solvers on 4 and 8 clusters; print and save the results."""
    lines = ["# command: python bench/experiments/coalloc_a1_solvers.py"]
    for clusters, kind in ((4, "random"), (8, "random"), (8, "gapped"), (10, "gapped")):
        cases = instances(clusters, 2000, seed=clusters) if kind == "random" else \
            gapped(clusters, 50, seed=clusters)
        feasible = 0
        for ranges, n in cases:
            a = solve_branch_and_bound(ranges, n).counts
            assert a == solve_dp(ranges, n).counts
            feasible += a is not None
        bnb = measure(f"branch-and-bound, {clusters} clusters, {kind}",
                      lambda cases=cases: [solve_branch_and_bound(r, n) for r, n in cases])
        dp = measure(f"dp, {clusters} clusters, {kind}",
                     lambda cases=cases: [solve_dp(r, n) for r, n in cases])
        lines += [f"# {kind}: {len(cases)} instances, {feasible} feasible, same answers from both",
                  bnb.line(), dp.line(bnb),
                  f"per decision: bnb {bnb.median / len(cases) * 1e6:.1f} us, "
                  f"dp {dp.median / len(cases) * 1e6:.1f} us"]
    for line in lines:
        print(line)
    write_results("coalloc_a1_solvers", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())

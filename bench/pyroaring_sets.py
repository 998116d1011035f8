"""pyroaring bitmaps against our ProcSet paths, on the operations a scheduler repeats (issue 14).

Measured, per operation (best of ``--repeat`` passes, µs):

1. parsing Batsim interval strings: the allocations of a real conversation (``--transcript``,
   e.g. ``batpolicy simulate --record``; else a synthetic KTH-like mix) and fragmented
   strings on 8,192 machines (200 random ids each, ~195 intervals): our
   :func:`~batpolicy.protocol.intervals.parse_intervals` against the same token loop
   filling a ``BitMap`` with ``add_range`` (pyroaring has no interval-string parser);
2. 500 successive differences ``free -= alloc`` on a fragmented 8,192-machine set:
   :func:`batpolicy.scheduler.intervalset.difference` against ``BitMap.__isub__``;
3. "lowest k free machines": :func:`~batpolicy.scheduler.intervalset.lowest_of_union`
   (with an empty second set) against ``BitMap`` slicing ``free[:k]``;
4. converting between the two (what a partial switch would pay at each boundary).

Needs ``pip install pyroaring`` (not a dependency). Prints; ``--save`` writes
``bench/results/pyroaring_sets.txt``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from procset import ProcSet
from pyroaring import BitMap

from batpolicy.protocol.intervals import format_intervals, parse_intervals
from batpolicy.scheduler import intervalset

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import write_results  # noqa: E402  (bench/harness.py)


def best_us(fn: Callable[[], object], count: int, repeat: int) -> float:
    """Best wall µs per item of ``fn`` (which handles ``count`` items) over ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - began)
    return best / count * 1e6


def roaring_from_string(text: str) -> BitMap:
    """The same token loop as parse_intervals, filling a BitMap."""
    bitmap = BitMap()
    for token in text.split():
        lo, _, hi = token.partition("-")
        a = int(lo)
        bitmap.add_range(a, (int(hi) if hi else a) + 1)
    return bitmap


def procset_from_ids(ids: object) -> ProcSet:
    """A ProcSet of integer ids, runs found in Python (a bitmap iterates its ids sorted)."""
    pieces, start, previous = [], None, None
    for i in sorted(ids):
        if start is None:
            start = previous = i
        elif i == previous + 1:
            previous = i
        else:
            pieces.append((start, previous))
            start = previous = i
    if start is not None:
        pieces.append((start, previous))
    return parse_intervals(" ".join(f"{a}-{b}" for a, b in pieces))  # canonical: no merging


def allocations(transcript: str | None) -> list[str]:
    """Allocation strings of a recorded conversation, or a KTH-like synthetic mix."""
    if transcript:
        from batpolicy.protocol.transcript import read_transcript

        return [e["data"]["alloc"] for request, _ in read_transcript(transcript)
                for e in request["events"] if e["type"] == "JOB_COMPLETED"]
    rng = random.Random(1)
    out = []
    for _ in range(20_000):
        a = rng.randrange(100)
        parts = [(a, min(99, a + rng.randrange(64)))]
        if rng.random() < 0.4:
            b = rng.randrange(parts[0][1] + 2, 130)
            parts.append((b, b + rng.randrange(8)))
        out.append(format_intervals(ProcSet(*parts)))
    return out


def measure(transcript: str | None, repeat: int) -> list[str]:
    """All figures, as report lines."""
    rng = random.Random(7)
    typical = allocations(transcript)
    fragmented = [format_intervals(procset_from_ids(rng.sample(range(8192), 200)))
                  for _ in range(500)]
    lines = [f"{'operation':<58} {'ours us':>9} {'pyroaring us':>13} {'ratio':>7}"]

    def row(label: str, ours: float, theirs: float) -> None:
        lines.append(f"{label:<58} {ours:9.2f} {theirs:13.2f} {ours / theirs:7.2f}")

    for label, data in ((f"parse typical allocation ({len(typical)} strings)", typical),
                        ("parse fragmented 8192-machine string (~195 itvs)", fragmented)):
        row(label, best_us(lambda d=data: [parse_intervals(s) for s in d], len(data), repeat),
            best_us(lambda d=data: [roaring_from_string(s) for s in d], len(data), repeat))

    free_ps = procset_from_ids(rng.sample(range(8192), 6000))
    free_bm = BitMap(free_ps)
    allocs = [procset_from_ids(rng.sample(sorted(free_ps), 8)) for _ in range(500)]
    allocs_bm = [BitMap(a) for a in allocs]

    def ours_diff() -> None:
        free = free_ps
        for a in allocs:
            free = intervalset.difference(free, a)

    def roaring_diff() -> None:
        free = free_bm.copy()
        for a in allocs_bm:
            free -= a

    row(f"difference on fragmented 8192 set ({len(free_ps._itvs)} itvs), per op",
        best_us(ours_diff, 500, repeat), best_us(roaring_diff, 500, repeat))
    for k in (1, 64, 1024):
        row(f"lowest {k} of the fragmented free set",
            best_us(lambda k=k: [intervalset.lowest_of_union([free_ps], k)
                                 for _ in range(200)], 200, repeat),
            best_us(lambda k=k: [free_bm[:k] for _ in range(200)], 200, repeat))
    row("convert: fragmented ProcSet -> BitMap / BitMap -> ProcSet",
        best_us(lambda: [BitMap(free_ps) for _ in range(20)], 20, repeat),
        best_us(lambda: [procset_from_ids(free_bm) for _ in range(20)], 20, repeat))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print (and save with --save)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcript", help="recorded conversation to take allocations from")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args(argv)
    lines = measure(args.transcript, args.repeat)
    print("\n".join(lines))
    if args.save:
        command = "python bench/pyroaring_sets.py " + " ".join(argv or sys.argv[1:])
        write_results("pyroaring_sets", [f"# command: {command}", *lines])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

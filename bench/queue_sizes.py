"""The policies' waiting queue at growing lengths: JobQueue's sorted list or a SortedKeyList.

``JobQueue`` (policies/queue.py) keeps its jobs in one plain list sorted with C-level
``bisect``/``insort``: a few calls per add or remove where ``sortedcontainers``'
``SortedKeyList`` costs about ten Python-level ones, at the price of one O(n) C-level
move of pointers. This prints, for a FCFS queue of ``n`` waiting jobs, the µs per
"remove the head, add a new job at the tail" (the FCFS steady state) on JobQueue's store
(the same entries and calls as ``JobQueue.add``/``remove``), and the same on the
``SortedKeyList`` keyed by submission rank it replaced, so that the length where the
list starts to lose is measured, not guessed. The state's index of running jobs
(``ClusterState``) is the same kind of list. Usage::

    python bench/queue_sizes.py [--sizes 1000 16000 100000] [--ops 2000] [--save]

``--save`` writes ``bench/results/queue_sizes.txt``.
"""

from __future__ import annotations

import argparse
import sys
import time
from bisect import bisect_left, insort
from pathlib import Path

from sortedcontainers import SortedKeyList

from batpolicy.policies.queue import fcfs_key
from batpolicy.scheduler.jobs import Job

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import write_results  # noqa: E402  (bench/harness.py)


def _jobs(count: int) -> list[Job]:
    return [Job(f"w0!{i}", 0.0, 1, 100.0, "p", seq=i) for i in range(count)]


def list_us(jobs: list[Job], n: int, ops: int) -> float:
    """JobQueue's store: (key, arrival, job) entries in a list, insort / bisect + del."""
    best = float("inf")
    for _ in range(3):
        entries = [(fcfs_key(job), i, job) for i, job in enumerate(jobs[:n])]
        made = {entry[2].id: entry for entry in entries}
        began = time.perf_counter()
        for i in range(ops):
            entry = made.pop(jobs[i].id)
            del entries[bisect_left(entries, entry)]
            job = jobs[n + i]
            entry = (fcfs_key(job), n + i, job)
            insort(entries, entry)
            made[job.id] = entry
        best = min(best, time.perf_counter() - began)
    return best / ops * 1e6


def sorted_key_list_us(jobs: list[Job], n: int, ops: int) -> float:
    """The store JobQueue had before: a SortedKeyList keyed by submission rank."""
    best = float("inf")
    for _ in range(3):
        queue = SortedKeyList(jobs[:n], key=fcfs_key)
        began = time.perf_counter()
        for i in range(ops):
            queue.remove(jobs[i])
            queue.add(jobs[n + i])
        best = min(best, time.perf_counter() - began)
    return best / ops * 1e6


def main() -> None:
    """Print (and with ``--save`` write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000, 100000])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    lines = [f"# command: python bench/queue_sizes.py --sizes {' '.join(map(str, args.sizes))} "
             f"--ops {args.ops}{' --save' if args.save else ''}",
             "# us per (remove head, add at tail) on a FCFS queue of n waiting jobs, best of 3",
             f"{'queued jobs':>12} {'list us':>12} {'SortedKeyList us':>17} {'ratio':>7}"]
    jobs = _jobs(max(args.sizes) + args.ops)
    for n in args.sizes:
        ours = list_us(jobs, n, args.ops)
        theirs = sorted_key_list_us(jobs, n, args.ops)
        lines.append(f"{n:>12} {ours:>12.2f} {theirs:>17.2f} {ours / theirs:>7.2f}")
    print("\n".join(lines))
    if args.save:
        print(f"saved {write_results('queue_sizes', lines)}")


if __name__ == "__main__":
    main()

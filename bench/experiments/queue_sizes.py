"""The policies' waiting queue at growing lengths: JobQueue's sorted list or a SortedKeyList.

``JobQueue`` (policies/toolkit/queue.py) keeps its jobs in one plain list sorted with C-level
``bisect``/``insort``: a few calls per add or remove where ``sortedcontainers``'
``SortedKeyList`` costs about ten Python-level ones, at the price of one O(n) C-level
move of pointers. This prints, for a FCFS queue of ``n`` waiting jobs, the µs per
"remove the head, add a new job at the tail" (the FCFS steady state) through
``JobQueue.remove``/``add`` themselves, and the same on the store it replaced (a
``SortedKeyList`` keyed by submission rank and a set of ids), so that the length where
the list starts to lose is measured, not guessed. The state's index of running jobs
(``ClusterState``) is the same kind of list. Usage::

    python bench/experiments/queue_sizes.py [--sizes 1000 16000 100000] [--ops 2000] [--save]

``--save`` writes ``bench/results/queue_sizes.txt``.
"""

from __future__ import annotations

import argparse
import sys
import time
from operator import attrgetter
from pathlib import Path

from sortedcontainers import SortedKeyList

from batpolicy.policies.toolkit.queue import JobQueue
from batpolicy.scheduler.jobs import Job

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import write_results  # noqa: E402  (bench/harness.py)

#: Submission rank, but not ``fcfs_key`` itself: JobQueue then keeps no FCFS index (numpy
#: arrays the same under either store), so only the store is compared.
_RANK = attrgetter("seq")


def _jobs(count: int) -> list[Job]:
    return [Job(f"w0!{i}", 0.0, 1, 100.0, "p", seq=i) for i in range(count)]


def job_queue_us(jobs: list[Job], n: int, ops: int) -> float:
    """``JobQueue.remove`` of the head and ``JobQueue.add`` at the tail (best of 3)."""
    best = float("inf")
    for _ in range(3):
        queue = JobQueue(_RANK)
        for job in jobs[:n]:
            queue.add(job)
        began = time.perf_counter()
        for i in range(ops):
            queue.remove(jobs[i])
            queue.add(jobs[n + i])
        best = min(best, time.perf_counter() - began)
    return best / ops * 1e6


def sorted_key_list_us(jobs: list[Job], n: int, ops: int) -> float:
    """The same on the store JobQueue had before: a SortedKeyList and a set of ids."""
    best = float("inf")
    for _ in range(3):
        queue = SortedKeyList(jobs[:n], key=_RANK)
        ids = {job.id for job in jobs[:n]}
        began = time.perf_counter()
        for i in range(ops):
            queue.remove(jobs[i])
            ids.discard(jobs[i].id)
            queue.add(jobs[n + i])
            ids.add(jobs[n + i].id)
        best = min(best, time.perf_counter() - began)
    return best / ops * 1e6


def main() -> None:
    """Print (and with ``--save`` write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000, 100000])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    sizes = " ".join(map(str, args.sizes))
    lines = [f"# command: python bench/experiments/queue_sizes.py --sizes {sizes} "
             f"--ops {args.ops}{' --save' if args.save else ''}",
             "# us per (remove head, add at tail) on a FCFS queue of n waiting jobs, best of 3",
             f"{'queued jobs':>12} {'JobQueue us':>12} {'SortedKeyList us':>17} {'ratio':>7}"]
    jobs = _jobs(max(args.sizes) + args.ops)
    for n in args.sizes:
        ours = job_queue_us(jobs, n, args.ops)
        theirs = sorted_key_list_us(jobs, n, args.ops)
        lines.append(f"{n:>12} {ours:>12.2f} {theirs:>17.2f} {ours / theirs:>7.2f}")
    print("\n".join(lines))
    if args.save:
        print(f"saved {write_results('queue_sizes', lines)}")


if __name__ == "__main__":
    main()

"""Time CPython's cyclic garbage collector spends inside ``batpolicy simulate``.

Runs the command itself (``batpolicy.app.cli.main``, outputs to a temporary
folder) once per (trace, young threshold, round), each in a fresh process, and reports
the collector's time (from :data:`gc.callbacks`: each collection's start to its stop)
and number of collections per generation, the command's wall time and the process's
peak memory. The collector's time is the figure to compare: it moves little from one
run to the next, where the whole command's wall time swings by a few percent on this VM.

``--young`` lists the young-generation thresholds to compare (the bench sets
:data:`batpolicy.scheduler.steady_gc.YOUNG_THRESHOLD` in the child before the command
runs; the product's own value is the default). Rounds alternate the thresholds.

Usage::

    python bench/performance/collector_time.py --traces RICC CEA-Curie --young 50000 500000 \
        --rounds 2

Results are printed, and saved to ``bench/results/collector_time.txt`` unless ``--no-save``.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import SHARED_DATA, write_results  # noqa: E402  (bench/harness.py)

TRACES = SHARED_DATA / "traces"


def run_one(task: tuple[str, str, int]) -> dict[str, Any]:
    """In a fresh process: ``batpolicy simulate`` on one trace with one young threshold."""
    trace, policy, young = task
    import batpolicy.scheduler.steady_gc as steady
    from batpolicy.app.cli import main

    steady.YOUNG_THRESHOLD = young
    spent = [0.0, 0.0, 0.0]
    counts = [0, 0, 0]
    began = [0.0]

    def timed(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            spent[info["generation"]] += time.perf_counter() - began[0]
            counts[info["generation"]] += 1

    gc.callbacks.append(timed)
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        status = main(["simulate", "--policy", policy, "-w", trace, "-o", out, "-q"])
        wall = time.perf_counter() - start
    gc.callbacks.remove(timed)
    if status != 0:
        raise SystemExit(f"{trace}: batpolicy simulate exited with {status}")
    return {"trace": Path(trace).name.split(".swf")[0], "policy": policy, "young": young,
            "wall_s": wall, "gc_s": spent, "collections": counts,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(argv: Sequence[str] | None = None) -> int:
    """Alternate the thresholds over the rounds; print and save one line per run."""
    from batpolicy.scheduler.steady_gc import YOUNG_THRESHOLD

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", nargs="+", default=["RICC"],
                        help="trace file name prefixes in the shared traces folder")
    parser.add_argument("--policy", default="easy")
    parser.add_argument("--young", nargs="+", type=int, default=[YOUNG_THRESHOLD])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    paths = sorted(p for p in TRACES.iterdir() if p.name.endswith((".swf", ".swf.gz"))
                   and any(p.name.startswith(x) for x in args.traces))
    if not paths:
        raise SystemExit(f"no trace in {TRACES} starts with {args.traces}")
    tasks = [(str(p), args.policy, young) for p in paths for _ in range(args.rounds)
             for young in args.young]
    command = " ".join(argv or sys.argv[1:])
    lines = [f"# command: python bench/performance/collector_time.py {command}",
             f"{'trace':<28} {'policy':<6} {'young':>9} {'collector s (gen 0/1/2)':>26} "
             f"{'collections':>14} {'wall s':>8} {'peak MB':>8}"]
    print(lines[-1], flush=True)
    spawn = multiprocessing.get_context("spawn")
    for i, task in enumerate(tasks, 1):  # one at a time, each in a process of its own
        print(f"# run {i}/{len(tasks)}: {Path(task[0]).name}, young {task[2]}", file=sys.stderr,
              flush=True)
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            r = pool.submit(run_one, task).result()
        gen = "/".join(f"{s:.2f}" for s in r["gc_s"])
        lines.append(f"{r['trace']:<28} {r['policy']:<6} {r['young']:>9} "
                     f"{sum(r['gc_s']):>8.2f} ({gen:>15}) "
                     f"{'/'.join(map(str, r['collections'])):>14} {r['wall_s']:>8.2f} "
                     f"{r['peak_mb']:>8.0f}")
        print(lines[-1], flush=True)
    if not args.no_save:
        print(f"saved to {write_results('collector_time', lines)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How long one DPSA decision takes: exact search, queues up to 1,000, up to 100,000 machines.

Grudenic & Bogunovic, MIPRO 2011, §IV: "every scheduling decision was made within few
seconds" with the exhaustive search; the exact dynamic programming of
``policies/dpsa/exact.py`` must stay far below that: target median < 1 ms and p99 < 10 ms.

Setting: a closed loop keeps the waiting queue at ``q`` jobs on ``m`` machines (every
message tops the queue up with new submissions), so each decision sees a full queue and a
busy machine; time jumps from one job completion to the next. Jobs: sizes log-uniform
between 1 and m/8 (a fifth of them sequential, 1 % wider than half the machine so that
big reservations and many free machines occur), walltimes log-uniform in [1 min, 1 day],
runtimes 5–100 % of the walltime. Per (m, q) and policy, after a warm-up, the wall time
of every ``decide()`` call is recorded (a wrapper around the policy's method), and DPSA's
own statistics (decisions that made a reservation and searched, ``Policy.stats()``) are
printed beside. EASY is the baseline: ``ratio = EASY / DPSA`` on medians.

Usage::

    python bench/papers/dpsa_decision_time.py     # m in 1k, 10k, 100k; q in 10, 100, 1000
    python bench/papers/dpsa_decision_time.py --machines 100000 --queue 1000 --decisions 500

Results go to ``bench/results/dpsa_decision_time.txt`` with the commit and the machine.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import header, pool_map, write_results  # noqa: E402  (bench/harness.py)

log = logging.getLogger("dpsa_decision_time")

POLICIES = ("easy", "dpsa-p", "dpsa-n", "dpsa-w")


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of unsorted ``values`` (0 if empty).

    >>> percentile([3.0, 1.0, 2.0, 4.0], 50)
    2.0
    """
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def new_job(rng: random.Random, m: int) -> tuple[int, float, float]:
    """(size, walltime, runtime) of one synthetic job for ``m`` machines."""
    u = rng.random()
    if u < 0.2:
        size = 1
    elif u < 0.21:
        size = rng.randint(m // 2, m)
    else:
        size = max(1, min(m, round(2 ** rng.uniform(0, math.log2(max(2, m // 8))))))
    walltime = float(round(60 * 1440 ** rng.random()))
    runtime = float(max(1, round(walltime * rng.uniform(0.05, 1.0))))
    return size, walltime, runtime


def measure(policy_name: str, m: int, q: int, decisions: int, warmup: int,
            seed: int) -> dict[str, Any]:
    """Run the closed loop; return decide() times (s) and the policy's stats."""
    import heapq

    from batpolicy.policies.registry import make_policy
    from batpolicy.protocol import types as t
    from batpolicy.protocol.intervals import MachineSet
    from batpolicy.scheduler.dispatch import Dispatcher

    logging.getLogger("batpolicy").setLevel(logging.WARNING)
    rng = random.Random(seed)
    policy = make_policy(policy_name)
    times: list[float] = []
    inner = policy.decide

    def timed_decide(now: float, state: Any) -> list[Any]:
        began = time.perf_counter()
        out = inner(now, state)
        times.append(time.perf_counter() - began)
        return out

    policy.decide = timed_decide  # type: ignore[method-assign]
    dispatcher = Dispatcher(policy)
    resources = tuple(t.ResourceInfo(i, f"h{i}") for i in range(m))
    dispatcher.handle(t.Request(0.0, (t.SimulationBegins(
        0.0, m, m, 0, False, False, {}, resources, (), {"w0": "/w0"},
        {"w0": {"p": {"type": "delay", "delay": 1.0}}}),)))
    runtimes: dict[str, float] = {}
    allocs: dict[str, MachineSet] = {}
    ends: list[tuple[float, int, str]] = []
    counter = 0
    now = 0.0
    events: list[Any] = []
    total = warmup + decisions
    while len(times) < total:
        state = dispatcher.state
        for _ in range(max(0, q + 1 - len(state.waiting))):  # the head + q waiting jobs
            size, walltime, runtime = new_job(rng, m)
            counter += 1
            jid = f"w0!{counter}"
            runtimes[jid] = runtime
            events.append(t.JobSubmitted(now, jid, {"id": jid, "subtime": now, "res": size,
                                                    "walltime": walltime, "profile": "p"}))
        reply = dispatcher.handle(t.Request(now, tuple(events)))
        for d in reply.decisions:
            if isinstance(d, t.ExecuteJob):
                allocs[d.job_id] = d.alloc
                heapq.heappush(ends, (now + runtimes[d.job_id], counter, d.job_id))
        if not ends:
            break
        now = ends[0][0]
        events = []
        while ends and ends[0][0] == now:
            _, _, jid = heapq.heappop(ends)
            events.append(t.JobCompleted(now, jid, t.JobState.COMPLETED_SUCCESSFULLY, 0,
                                         allocs.pop(jid)))
    return {"policy": policy_name, "m": m, "q": q, "times": times[warmup:],
            "stats": policy.stats()}


def _run(args: tuple[str, int, int, int, int, int]) -> dict[str, Any]:
    return measure(*args)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every (m, q, policy); print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machines", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    parser.add_argument("--queue", type=int, nargs="*", default=[10, 100, 1_000])
    parser.add_argument("--policies", nargs="*", default=list(POLICIES))
    parser.add_argument("--decisions", type=int, default=300, help="timed decisions per run")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args, _ = parser.parse_known_args(argv)  # tolerate flags meant for other scripts
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    tasks = [(p, m, q, args.decisions, args.warmup, args.seed)
             for m in args.machines for q in args.queue for p in args.policies]
    tasks.sort(key=lambda x: -x[1] * x[2])
    results: dict[tuple[str, int, int], dict[str, Any]] = {}
    began = time.perf_counter()
    for r in pool_map(_run, tasks, args.workers, "runs"):
        results[(r["policy"], r["m"], r["q"])] = r
    lines = [f"# DPSA decision time (exact search): closed loop, queue kept at q, "
             f"{args.decisions} timed decide() calls per run after {args.warmup} warm-up; "
             f"{time.perf_counter() - began:.0f} s on {args.workers} worker(s)",
             "# decide: every decide() call (wrapper); dpsa: decisions that made a reservation "
             "(Fig. 2, l. 3-12, Policy.stats()); fill: their l. 9-12 part (eligible jobs, "
             "exact search, mapping), i.e. what DPSA adds to EASY's reservation; "
             "ratio = EASY / policy, decide medians",
             f"{'machines':>8} {'queue':>5} {'policy':<7} {'decide med':>10} {'p99':>9} "
             f"{'max':>9} {'dpsa n':>6} {'dpsa med':>9} {'p99':>9} {'fill med':>9} "
             f"{'p99':>8} {'eligible':>8} {'ratio':>6}"]
    whole = fill = True
    for m in args.machines:
        for q in args.queue:
            base = results.get(("easy", m, q))
            for p in args.policies:
                r = results[(p, m, q)]
                times_ms = [x * 1000 for x in r["times"]]
                med, p99 = percentile(times_ms, 50), percentile(times_ms, 99)
                s = r["stats"]
                ratio = (percentile([x * 1000 for x in base["times"]], 50) / med
                         if base is not None and med > 0 else float("nan"))
                if "nb_dpsa_decisions" in s:
                    dpsa = (f"{s['nb_dpsa_decisions']:>6} {s['decision_time_ms.p50']:>6.3f} ms "
                            f"{s['decision_time_ms.p99']:>6.2f} ms "
                            f"{s['fill_time_ms.p50']:>6.3f} ms {s['fill_time_ms.p99']:>5.2f} ms "
                            f"{s['mean_eligible_jobs']:>8.1f}")
                    whole &= (s["decision_time_ms.p50"] < 1.0
                              and s["decision_time_ms.p99"] < 10.0)
                    fill &= s["fill_time_ms.p50"] < 1.0 and s["fill_time_ms.p99"] < 10.0
                else:
                    dpsa = f"{'-':>6} {'-':>9} {'-':>9} {'-':>9} {'-':>8} {'-':>8}"
                lines.append(f"{m:>8} {q:>5} {p:<7} {med:>7.3f} ms {p99:>6.2f} ms "
                             f"{max(times_ms):>6.1f} ms {dpsa} {ratio:>6.2f}")
    lines.append("target median < 1 ms, p99 < 10 ms in every DPSA run: "
                 f"whole DPSA decisions {'met' if whole else 'NOT met'}; "
                 f"DPSA's own part (fill) {'met' if fill else 'NOT met'}")
    text = "\n".join(lines)
    sys.stdout.write(header() + "\n" + text + "\n")
    log.info("written to %s", write_results("dpsa_decision_time", [text]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A generated Batsim workload the Gymnasium tests share (test helper, not a test)."""

from __future__ import annotations

import json
import random
from pathlib import Path


def delay_workload(path: Path, n: int, seed: int) -> Path:
    """``n`` delay jobs on 24 machines, drawn from ``seed``, written to ``path``.

    Bursts of submissions, runtimes from 1 s to 1,000 s, walltimes 1, 2 or 5 times the
    runtime.
    """
    rng = random.Random(seed)
    jobs, profiles, t = [], {}, 0.0
    for i in range(n):
        t += rng.choice([0, 0, 1, 5, 30, 120])
        run = rng.choice([1, 10, 50, 300, 1000])
        profiles[f"p{i}"] = {"type": "delay", "delay": run}
        jobs.append({"id": str(i), "subtime": t, "res": rng.randint(1, 20), "profile": f"p{i}",
                     "walltime": run * rng.choice([1, 2, 5])})
    path.write_text(json.dumps({"nb_res": 24, "jobs": jobs, "profiles": profiles}))
    return path

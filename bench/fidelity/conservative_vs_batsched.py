"""``conservative`` against batsched 1.4's ``conservative_bf`` beside real Batsim 4.2.1 (issue 15).

For each workload, Batsim + ``batsched -v conservative_bf`` is recorded
(``bench/fidelity/record_batsched.sh``: every message and reply), then the Batsim side is
replayed through our dispatcher with ``--policy conservative``; a run is *identical* when
every reply holds the same EXECUTE_JOB / REJECT_JOB decisions (same jobs, same machine
ids, same order) as batsched's. Also reported: the wall time Batsim waited for batsched
(``scheduling_time`` of its schedule.csv) and our policy's decision times on the replay.

Workloads: the shared Batsim workloads (five HPC seeds on 128 hosts, three g5k delay
seeds on 32, the Batsim paper workload, the 120-job walltime mix, Batsim's
test_walltime; the walltime mix on Batsim's platforms with latencies, cluster512 and
small_platform) and the first ``--swf-jobs`` jobs of the KTH-SP2 trace on its 100 hosts
(many jobs, a deep queue). Results go to ``bench/results/conservative_vs_batsched.txt``
with the commit and the command.

Usage::

    python bench/fidelity/conservative_vs_batsched.py              # everything (~10 min on 2 cores)
    python bench/fidelity/conservative_vs_batsched.py --quick      # two small workloads, not saved
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
from performance.serve_vs_batsched import prepare  # noqa: E402

from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import reply_from_obj, request_from_obj
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.testing import decision_key

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
INPUTS = SHARED / "transcripts" / "inputs"
WORKLOADS = SHARED / "batsim" / "workloads"
CLUSTER32, CLUSTER128 = INPUTS / "zero_lat_cluster32.xml", INPUTS / "zero_lat_cluster128.xml"
RESULT = REPO / "bench" / "results" / "conservative_vs_batsched.txt"


def workloads(swf_jobs: int, workdir: Path, quick: bool) -> dict[str, tuple[Path, Path]]:
    """Workloads to run: name -> (workload, platform)."""
    out = {"walltime120": (INPUTS / "walltime_mix_120.json", CLUSTER32),
           "test_walltime": (REPO / "tests" / "data" / "batsched_walltime" / "test_walltime.json",
                             CLUSTER128)}
    if quick:
        return out
    batsim421 = REPO / "tests" / "data" / "batsim421"
    out["wm120-cluster512"] = (batsim421 / "walltime_mix_120.json", batsim421 / "cluster512.xml")
    out["wm120res4-small"] = (batsim421 / "walltime_mix_120_res4.json",
                              batsim421 / "small_platform.xml")
    for seed in range(1, 6):
        out[f"hpc250-seed{seed}"] = (WORKLOADS / f"example_workload_hpc_seed{seed}_jobs250.json",
                                     CLUSTER128)
    for seed in range(3):
        out[f"g5k800-seed{seed}"] = (
            WORKLOADS / f"batsim-experiments_g5k_workload_delay_seed{seed}_size32.json",
            CLUSTER32)
    out["paper800"] = (INPUTS / "test_batsim_paper_workload_seed1.json", CLUSTER32)
    if swf_jobs:
        workload, plat, _ = prepare("KTH", swf_jobs, workdir)
        out[f"KTH-{swf_jobs}"] = (workload, plat)
    return out


def replay(transcript: Path) -> dict[str, object]:
    """Replay the Batsim side through ``conservative``; compare every reply."""
    policy = make_policy("conservative")
    dispatcher = Dispatcher(policy)
    messages = executes = rejects = 0
    first_diff: int | None = None
    began = time.perf_counter()
    with transcript.open() as f:
        for messages, line in enumerate(f, 1):
            record = json.loads(line)
            ours = dispatcher.handle(request_from_obj(record["batsim"]))
            theirs = reply_from_obj(record["scheduler"]).decisions
            executes += sum(isinstance(d, t.ExecuteJob) for d in theirs)
            rejects += sum(isinstance(d, t.RejectJob) for d in theirs)
            if first_diff is None and (list(map(decision_key, ours.decisions))
                                       != list(map(decision_key, theirs))):
                first_diff = messages
                break
    stats = policy.stats()
    return {"messages": messages, "executes": executes, "rejects": rejects,
            "identical": "yes" if first_diff is None else f"NO (message {first_diff})",
            "replay_s": time.perf_counter() - began, **stats}


def batsched_time(schedule_csv: Path) -> float:
    """Batsim's ``scheduling_time``: seconds it waited for the scheduler."""
    with schedule_csv.open() as f:
        return float(next(csv.DictReader(f))["scheduling_time"])


def main(argv: list[str] | None = None) -> int:
    """Record, replay, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, default=Path("/opt/batsim-4.2.1"))
    parser.add_argument("--swf-jobs", type=int, default=3000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    record = REPO / "bench" / "fidelity" / "record_batsched.sh"
    lines = [f"{'workload':<16} {'msgs':>5} {'exec':>5} {'rej':>4}  {'identical':<18} "
             f"{'batsched s':>10} {'ours s':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}"]
    with tempfile.TemporaryDirectory(prefix="cons-bench-") as tmp:
        work = Path(tmp)
        for name, (workload, plat) in workloads(args.swf_jobs, work, args.quick).items():
            out = work / name
            subprocess.run(["bash", str(record), "conservative_bf", str(workload), str(plat),
                            str(out), str(args.prefix)], check=True,
                           env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
            r = replay(Path(f"{out}.jsonl"))
            waited = batsched_time(Path(f"{out}_schedule.csv"))
            lines.append(f"{name:<16} {r['messages']:>5} {r['executes']:>5} {r['rejects']:>4}  "
                         f"{r['identical']:<18} {waited:>10.2f} "
                         f"{r['replay_s']:>7.2f} {r['decision_time_ms.p50']:>7.2f} "
                         f"{r['decision_time_ms.p99']:>7.2f} {r['decision_time_ms.max']:>7.2f}")
            print(lines[-1], flush=True)
    if not args.quick:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=REPO).stdout.strip()
        header = [f"# commit {commit}; {time.strftime('%Y-%m-%d %H:%M:%S')}; CPython "
                  f"{platform.python_version()}; {platform.machine()}",
                  f"# command: python bench/fidelity/conservative_vs_batsched.py "
                  f"{' '.join(argv if argv is not None else sys.argv[1:])}".rstrip(),
                  "# batsched 1.4 conservative_bf (defaults) beside Batsim 4.2.1, recorded; "
                  "our conservative replayed on the Batsim side. identical = every reply "
                  "has batsched's decisions (jobs, machine ids, order). batsched s = Batsim's "
                  "scheduling_time; ours s = replay wall time (dispatcher + policy); "
                  "p50/p99/max = our decide() times"]
        RESULT.write_text("\n".join(header + lines) + "\n")
        print(f"written {RESULT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

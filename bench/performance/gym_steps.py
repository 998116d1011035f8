"""Steps per second of ``batpolicy/Scheduling-v0`` on whole KTH-SP2 with the FCFS baseline.

Usage: ``python bench/performance/gym_steps.py [TRACE] [--rounds N]`` (default: the full
KTH-SP2-1996-2 trace in /work/shared/data/traces, else the bundled 4-week excerpt).
Prints, per round, the steps, wall and CPU seconds (both threads: the simulation runs in
the environment's helper thread) and steps per second of each; then min/median/max.
RLScheduler's SchedGym (github.com/DIR-LAB/deep-batch-scheduler) is not run side by side:
docs/gym.md says why.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from pathlib import Path

import gymnasium

import batpolicy.gym  # noqa: F401 - registers the environment
from batpolicy.gym import baselines
from batpolicy.io.inputs import bundled

FULL_KTH = Path("/work/shared/data/traces/KTH-SP2-1996-2.swf.gz")


def one_round(trace: Path) -> tuple[int, float, float, float]:
    """One whole-trace FCFS episode: steps, wall s, CPU s, mean bounded slowdown."""
    env = gymnasium.make("batpolicy/Scheduling-v0", workload=trace)
    wall, cpu = time.perf_counter(), time.process_time()
    obs, info = env.reset(seed=0)
    steps = 0
    while True:
        obs, _, terminated, _, info = env.step(baselines.fcfs(obs, info))
        steps += 1
        if terminated:
            break
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    env.close()
    return steps, wall, cpu, info["metrics"]["mean_bounded_slowdown"]


def main() -> None:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", type=Path,
                        default=FULL_KTH if FULL_KTH.is_file()
                        else bundled("KTH-SP2-1996-2-4weeks.swf.gz"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"gym steps/s, FCFS baseline, {args.trace.name}, commit {commit}")
    walls, cpus = [], []
    for i in range(args.rounds):
        steps, wall, cpu, bsld = one_round(args.trace)
        walls.append(steps / wall)
        cpus.append(steps / cpu)
        print(f"round {i}: {steps} steps, {wall:.2f} s wall ({steps / wall:,.0f} steps/s), "
              f"{cpu:.2f} s CPU ({steps / cpu:,.0f} steps/CPU-s), mean bsld {bsld:.3f}")
    for name, values in (("wall", walls), ("CPU", cpus)):
        print(f"steps/s ({name}): min {min(values):,.0f} median "
              f"{statistics.median(values):,.0f} max {max(values):,.0f}")


if __name__ == "__main__":
    main()

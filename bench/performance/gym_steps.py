"""Environment steps per second on whole KTH-SP2, FCFS: ours beside RLScheduler's SchedGym.

``batpolicy/Scheduling-v0`` with the FCFS baseline, and SchedGym on the same trace.

Usage: ``python bench/performance/gym_steps.py [TRACE] [--rounds N] [--schedgym PATH]``
(default trace: the full KTH-SP2-1996-2 in /work/shared/data/traces, else the bundled
4-week excerpt). Each round runs one whole-trace episode of ours (``baselines.fcfs``);
with ``--schedgym PATH`` (a checkout of github.com/DIR-LAB/deep-batch-scheduler, the
code of Zhang et al., *RLScheduler*, SC 2020) each round also runs one of its
``HPCSimPickJobs.HPCEnv`` on the same trace, the two alternating. Prints per round the
steps, wall and CPU seconds (ours: both threads, the simulation runs in the
environment's helper thread) and steps per second; then min/median/max of each and the
ratio ours / SchedGym of the medians.

SchedGym is driven with its own semantics: its observation is a window of 128 queued
jobs (the oldest first while at most 128 wait; else a mix of the shortest and smallest),
a step starts the chosen job, first moving its clock on (jobs end, jobs arrive) until
that job fits, so a step is one started job. The FCFS-like action is always the window's
first job (action 0). Its episodes are 256-job slices drawn in ``reset()``, which also
schedules each slice with two heuristics to shape the reward; here the episode is set to
the whole trace as its ``reset_for_test`` sets a slice (first job, last job, clock,
queue) and stepped with ``step_for_test``, its evaluation step (``step`` without the
end-of-episode comparison with those heuristics). It reads plain SWF (a ``.gz`` trace is
decompressed to a temporary file) and keeps only jobs with a positive runtime.

Its module imports TensorFlow 1 at import time (for its PPO code, never called by the
environment) and the pre-Gymnasium ``gym``: where ``import tensorflow`` fails, a stub
module that raises on any use stands in for it, and where ``import gym`` fails, a shim
maps ``gym.Env``, ``gym.spaces`` and ``gym.utils.seeding`` onto Gymnasium; both live
only in this process's ``sys.modules`` and the output says which were used.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium

import batpolicy.gym  # noqa: F401 - registers the environment
from batpolicy.gym import baselines
from batpolicy.io.inputs import bundled

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import header  # noqa: E402  (bench/harness.py)

FULL_KTH = Path("/work/shared/data/traces/KTH-SP2-1996-2.swf.gz")

#: (label, steps, wall s, CPU s, jobs of the episode, extra text) of one round.
Round = tuple[str, int, float, float, int, str]


def one_round(trace: Path) -> Round:
    """One whole-trace FCFS episode of ours: steps, wall s, CPU s, mean bounded slowdown."""
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
    metrics = info["metrics"]
    return ("batpolicy", steps, wall, cpu, metrics["nb_jobs"],
            f"mean bsld {metrics['mean_bounded_slowdown']:.3f}")


# ------------------------------------------------------------------ SchedGym
def _stub_tensorflow() -> types.ModuleType:
    """A ``tensorflow`` module that raises on any attribute use."""
    module = types.ModuleType("tensorflow")

    def missing(name: str) -> Any:
        raise ImportError(f"tensorflow.{name}: TensorFlow is not installed (bench stub)")

    module.__getattr__ = missing  # type: ignore[attr-defined]
    return module


def _gym_shim() -> dict[str, types.ModuleType]:
    """``gym``, ``gym.spaces``, ``gym.utils``, ``gym.utils.seeding`` mapped onto Gymnasium."""
    gym = types.ModuleType("gym")
    gym.Env = gymnasium.Env  # type: ignore[attr-defined]
    gym.spaces = gymnasium.spaces  # type: ignore[attr-defined]
    utils = types.ModuleType("gym.utils")
    seeding = types.ModuleType("gym.utils.seeding")
    seeding.np_random = gymnasium.utils.seeding.np_random  # type: ignore[attr-defined]
    utils.seeding = seeding  # type: ignore[attr-defined]
    gym.utils = utils  # type: ignore[attr-defined]
    return {"gym": gym, "gym.spaces": gymnasium.spaces, "gym.utils": utils,
            "gym.utils.seeding": seeding}


def load_schedgym(path: Path, gym_mode: str) -> tuple[Any, list[str]]:
    """Import ``HPCSimPickJobs`` from the checkout at ``path``; the module and what stood in."""
    notes = []
    with contextlib.suppress(ImportError):
        import tensorflow  # noqa: F401
    if "tensorflow" not in sys.modules:
        sys.modules["tensorflow"] = _stub_tensorflow()
        notes.append("tensorflow: not installed, a stub that raises on use (the env never uses it)")
    real_gym = None
    if gym_mode != "shim":
        with contextlib.suppress(ImportError), contextlib.redirect_stderr(io.StringIO()):
            real_gym = importlib.import_module("gym")
    if real_gym is not None:
        notes.append(f"gym: the installed gym {real_gym.__version__}")
    elif gym_mode == "installed":
        raise SystemExit("--gym installed: gym is not importable")
    else:
        sys.modules.update(_gym_shim())
        notes.append(f"gym: a shim onto gymnasium {gymnasium.__version__} (gym.Env, gym.spaces, "
                     "gym.utils.seeding)")
    sys.path.insert(0, str(path))
    try:
        module = importlib.import_module("HPCSimPickJobs")
    finally:
        sys.path.remove(str(path))
    return module, notes


def schedgym_trace(trace: Path, tmp: Path) -> Path:
    """The trace as plain SWF (SchedGym reads only that)."""
    if trace.suffix != ".gz":
        return trace
    plain = tmp / trace.stem
    with gzip.open(trace, "rb") as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return plain


def schedgym_env(module: Any, swf: Path) -> Any:
    """An ``HPCEnv`` with the trace loaded (its ``my_init``; its prints swallowed)."""
    with contextlib.redirect_stdout(io.StringIO()):
        env = module.HPCEnv()
        env.seed(0)
        env.my_init(workload_file=str(swf))
    return env


def schedgym_round(env: Any, window: int) -> Round:
    """One whole-trace episode of SchedGym, always its window's first job (action 0)."""
    wall, cpu = time.perf_counter(), time.process_time()
    env.cluster.reset()  # reset_for_test's steps, with the whole trace as the slice
    env.loads.reset()
    env.job_queue, env.running_jobs, env.visible_jobs, env.pairs = [], [], [], []
    env.scheduled_rl, env.penalty, env.pivot_job, env.scheduled_scores = {}, 0, False, []
    env.start = env.start_idx_last_reset = 0
    env.num_job_in_batch = env.last_job_in_batch = env.loads.size()
    env.current_timestamp = env.loads[0].submit_time
    env.job_queue.append(env.loads[0])
    env.next_arriving_job_idx = 1
    env.build_observation()
    steps = beyond = 0
    while True:
        beyond += len(env.job_queue) > window
        _, total, done, _ = env.step_for_test(0)
        steps += 1
        if done:
            break
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return ("SchedGym", steps, wall, cpu, env.loads.size(),
            f"mean bsld {total:.3f}, {beyond} steps with more than "
            f"{window} waiting (its first job is then not the oldest)")


# ------------------------------------------------------------------ report
def _stats(values: list[float]) -> str:
    return (f"min {min(values):,.0f} median {statistics.median(values):,.0f} "
            f"max {max(values):,.0f}")


def report(rounds: list[Round]) -> list[str]:
    """min/median/max steps/s per environment and clock, and the ratios of the medians.

    Also jobs of the trace per CPU second: a SchedGym step starts one job, ours is a
    decision point (a job started or a wait), so the two steps are not the same work.
    """
    lines, medians = [], {}
    for label in dict.fromkeys(r[0] for r in rounds):
        mine = [r for r in rounds if r[0] == label]
        for what, clock, index, count in (("steps", "wall", 2, 1), ("steps", "CPU", 3, 1),
                                          ("jobs", "CPU", 3, 4)):
            rates = [r[count] / r[index] for r in mine]
            medians[label, what, clock] = statistics.median(rates)
            lines.append(f"{label} {what}/s ({clock}): {_stats(rates)}")
    for what, clock in (("steps", "wall"), ("steps", "CPU"), ("jobs", "CPU")):
        if ("SchedGym", what, clock) in medians:
            ratio = medians["batpolicy", what, clock] / medians["SchedGym", what, clock]
            lines.append(f"ratio batpolicy / SchedGym, median {what}/s ({clock}): {ratio:.2f}")
    return lines


def main() -> None:
    """Run the rounds, alternating the environments, and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", type=Path,
                        default=FULL_KTH if FULL_KTH.is_file()
                        else bundled("KTH-SP2-1996-2-4weeks.swf.gz"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--schedgym", type=Path, default=None, metavar="PATH",
                        help="an RLScheduler checkout (github.com/DIR-LAB/deep-batch-scheduler)")
    parser.add_argument("--gym", choices=("auto", "installed", "shim"), default="auto",
                        help="SchedGym's gym: the installed one if any (auto), or the shim")
    args = parser.parse_args()
    print(header())
    print(f"# gym steps/s, FCFS baseline, {args.trace.name}")
    print("# command: python bench/performance/gym_steps.py " + " ".join(sys.argv[1:]))
    runners: list[Callable[[], Round]] = [lambda: one_round(args.trace)]
    with tempfile.TemporaryDirectory() as tmp:
        if args.schedgym is None or not (args.schedgym / "HPCSimPickJobs.py").is_file():
            where = "no --schedgym PATH given" if args.schedgym is None \
                else f"{args.schedgym} has no HPCSimPickJobs.py"
            print(f"SchedGym: not run ({where})")
        else:
            module, notes = load_schedgym(args.schedgym, args.gym)
            head = subprocess.run(["git", "-C", str(args.schedgym), "rev-parse", "--short",
                                   "HEAD"], capture_output=True, text=True).stdout.strip()
            print(f"SchedGym: {args.schedgym}/HPCSimPickJobs.py (commit {head or 'unknown'})")
            for note in notes:
                print(f"  {note}")
            env = schedgym_env(module, schedgym_trace(args.trace, Path(tmp)))
            runners.append(lambda: schedgym_round(env, module.MAX_QUEUE_SIZE))
        rounds = []
        for i in range(args.rounds):
            for run in runners:
                label, steps, wall, cpu, jobs, text = result = run()
                rounds.append(result)
                print(f"round {i} {label}: {steps} steps, {jobs} jobs, {wall:.2f} s wall "
                      f"({steps / wall:,.0f} steps/s), {cpu:.2f} s CPU "
                      f"({steps / cpu:,.0f} steps/CPU-s), {text}", flush=True)
    print("\n".join(report(rounds)))
    print("load average (1, 5, 15 min) at the end: "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()

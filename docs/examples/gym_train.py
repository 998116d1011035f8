"""Train a numpy policy-gradient scheduler on weeks of KTH-SP2, evaluate it on other weeks.

As written it runs in seconds (a tiny training, what the test suite checks);
``--full`` is docs/gym.md's run (2 cores, under 10 minutes) and ``--plot FILE`` draws
the comparison; ``--save FILE.npz`` keeps the agent for
``batpolicy serve --policy agent:FILE.npz`` beside Batsim.
"""

import argparse
import logging
from pathlib import Path

import gymnasium

import batpolicy.gym  # noqa: F401 - registers batpolicy/Scheduling-v0
from batpolicy.gym import baselines
from batpolicy.gym.pg import SoftmaxAgent, train
from batpolicy.io.inputs import bundled

KTH = bundled("KTH-SP2-1996-2-4weeks.swf.gz")  # 4 weeks, 100 machines
WEEK = 7 * 86400.0
WINDOW = 16

parser = argparse.ArgumentParser()
parser.add_argument("--full", action="store_true")
parser.add_argument("--plot")
parser.add_argument("--save")
args = parser.parse_args()
episodes, slice_jobs = (300, 256) if args.full else (3, 64)
logging.getLogger("batpolicy").setLevel(logging.WARNING)


def training_env():
    """Weeks 1-2, in seeded slices of consecutive jobs."""
    return gymnasium.make("batpolicy/Scheduling-v0", workload=KTH, end=2 * WEEK,
                          episode_jobs=slice_jobs, window=WINDOW)


agent = SoftmaxAgent(WINDOW)
returns = train(training_env, agent, episodes=episodes, lr=0.05, seed=1)
if args.save:
    Path(args.save).parent.mkdir(parents=True, exist_ok=True)
    agent.save(args.save)
print(f"trained on {episodes} episodes of {slice_jobs} jobs; "
      f"return of the first {returns[0]:.2f}, of the last {returns[-1]:.2f}")


def evaluate(act, week_start):
    """Mean bounded slowdown of one week (from 0), every job of it, greedy."""
    env = gymnasium.make("batpolicy/Scheduling-v0", workload=KTH, start=week_start,
                         end=week_start + WEEK, window=WINDOW,
                         max_jobs=None if args.full else 150)
    obs, info = env.reset(seed=0)
    while True:
        obs, _, terminated, _, info = env.step(act(obs, info))
        if terminated:
            env.close()
            return info["metrics"]["mean_bounded_slowdown"]


rules = {"fcfs": baselines.fcfs, "sjf": baselines.sjf, "easy": baselines.easy, "agent": agent}
table = {name: [evaluate(act, w * WEEK) for w in (2, 3)] for name, act in rules.items()}
print("mean bounded slowdown  week 3   week 4")
for name, (w3, w4) in table.items():
    print(f"{name:<21} {w3:8.2f} {w4:8.2f}")
if args.plot:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    for i, values in enumerate(table.values()):
        ax.bar([i - 0.2, i + 0.2], values, width=0.4, color=["tab:blue", "tab:orange"])
    ax.set_xticks(range(len(table)), list(table))
    ax.set_ylabel("mean bounded slowdown (weeks 3, 4)")
    fig.tight_layout()
    Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.plot)

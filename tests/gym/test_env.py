"""The Gymnasium environment (issue 45): same jobs as ``simulate``, check_env, vectors, seeds."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gym_workloads import delay_workload  # noqa: E402

import batpolicy.gym  # noqa: E402,F401 - registers the environment
from batpolicy.app.cli import main  # noqa: E402
from batpolicy.errors import ConfigError  # noqa: E402
from batpolicy.gym import baselines  # noqa: E402
from batpolicy.io.inputs import DEFAULT_WORKLOAD, bundled  # noqa: E402
from batpolicy.policies.agent.loading import load_action  # noqa: E402

from clirun import free_port, restore_logging  # noqa: E402,F401

KTH = bundled("KTH-SP2-1996-2-4weeks.swf.gz")


def _episode(env, act, seed=None):
    obs, info = env.reset(seed=seed)
    steps, rewards = 0, []
    while True:
        obs, reward, terminated, truncated, info = env.step(act(obs, info))
        steps += 1
        rewards.append(reward)
        if terminated or truncated:
            return steps, rewards, info


@pytest.mark.parametrize("inputs", ["bundled", "kth", "generated", "latency"])
def test_fcfs_episode_gives_simulate_fcfs_jobs_csv(tmp_path: Path, inputs: str) -> None:
    args: list[str] = []
    kwargs: dict = {}
    if inputs == "kth":
        args, kwargs = ["-w", str(KTH), "--max-jobs", "800"], {"workload": KTH, "max_jobs": 800}
    elif inputs == "latency":  # Batsim's message latencies: the latency driver
        platform = Path(__file__).parents[1] / "data" / "batsim421" / "cluster512.xml"
        args, kwargs = ["-p", str(platform)], {"platform": platform}
    elif inputs == "generated":
        w = delay_workload(tmp_path / "gen.json", n=300, seed=7)
        args, kwargs = ["-w", str(w)], {"workload": w}
    assert main(["simulate", "--policy", "fcfs", *args, "-o", str(tmp_path / "sim"), "-q",
                 "--no-progress"]) == 0
    env = gymnasium.make("batpolicy/Scheduling-v0", output_dir=tmp_path / "gym", window=8,
                         **kwargs)
    steps, rewards, info = _episode(env, baselines.fcfs)
    env.close()
    assert (tmp_path / "gym" / "jobs.csv").read_bytes() == \
        (tmp_path / "sim" / "jobs.csv").read_bytes()
    # the default reward sums to minus the mean bounded slowdown (every job ran)
    metrics = info["metrics"]
    assert metrics["nb_jobs_rejected"] == 0
    assert sum(rewards) == pytest.approx(-metrics["mean_bounded_slowdown"], rel=1e-9)
    assert steps > 0


def test_sjf_baseline_is_fcfs_ordered_by_walltime_with_a_whole_queue_window(tmp_path: Path
                                                                            ) -> None:
    assert main(["simulate", "--policy", "fcfs", "--param", "order=sjf", "-w", str(KTH),
                 "--max-jobs", "600", "-o", str(tmp_path / "sim"), "-q", "--no-progress"]) == 0
    env = gymnasium.make("batpolicy/Scheduling-v0", workload=KTH, max_jobs=600, window=600,
                         output_dir=tmp_path / "gym")
    _episode(env, baselines.sjf)
    env.close()
    assert (tmp_path / "gym" / "jobs.csv").read_bytes() == \
        (tmp_path / "sim" / "jobs.csv").read_bytes()


def test_check_env_passes() -> None:
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("batpolicy/Scheduling-v0", episode_jobs=40, window=8)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_same_seed_same_episode_other_seed_other_slice(tmp_path: Path) -> None:
    def run(seed: int, out: str) -> tuple:
        env = gymnasium.make("batpolicy/Scheduling-v0", workload=KTH, episode_jobs=150,
                             window=8, output_dir=tmp_path / out)
        obs, info = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        first = info["episode"]["first_job"]
        trace = []
        while True:
            mask = info["action_mask"]
            action = int(rng.choice(np.flatnonzero(mask)))
            obs, reward, term, _, info = env.step(action)
            trace.append((action, reward, obs["jobs"].tobytes(), obs["machines"].tobytes()))
            if term:
                break
        env.close()
        return first, trace, (tmp_path / out / "jobs.csv").read_bytes()

    a, b, c = run(3, "a"), run(3, "b"), run(4, "c")
    assert a == b
    assert a[0] != c[0] and a[2] != c[2]


def test_invalid_actions_wait_and_never_crash() -> None:
    env = gymnasium.make("batpolicy/Scheduling-v0", episode_jobs=60, window=4)
    obs, info = env.reset(seed=1)
    rng = np.random.default_rng(0)
    choices = [-3, 0, 1, 2, 3, 4, 99, "x", np.array([1, 2]), 1.5]
    bad = 0
    for _ in range(10_000):
        action = choices[int(rng.integers(len(choices)))]
        obs, reward, term, _, info = env.step(action)
        bad += info["invalid_action"]
        if term:
            break
    assert term and bad > 0
    assert info["metrics"]["nb_jobs_finished"] == 60
    env.close()


def test_vector_envs_sync_and_async() -> None:
    for cls in (gymnasium.vector.SyncVectorEnv, gymnasium.vector.AsyncVectorEnv):
        envs = cls([lambda: gymnasium.make("batpolicy/Scheduling-v0", episode_jobs=30,
                                           window=4)] * 2)
        obs, infos = envs.reset(seed=[1, 2])
        assert obs["jobs"].shape == (2, 4, 10)
        ended = np.zeros(2, dtype=bool)
        for _ in range(500):
            wait = np.full(2, 4)
            actions = np.where(infos["action_mask"][:, 0] == 1, 0, wait)
            obs, rewards, term, trunc, infos = envs.step(actions)
            ended |= term
            if ended.all():
                break
        assert ended.all()
        envs.close()


def test_closing_or_resetting_midway_leaves_no_thread() -> None:
    before = threading.active_count()
    env = gymnasium.make("batpolicy/Scheduling-v0", window=4)
    for seed in range(3):
        env.reset(seed=seed)
        env.step(4)
    env.close()
    del env
    assert threading.active_count() == before


def test_agent_gives_the_same_jobs_offline_and_beside_fake_batsim(tmp_path: Path) -> None:
    agent = tmp_path / "my_agent.py"
    agent.write_text("from batpolicy.gym.baselines import sjf\n"
                     "def act(obs, info):\n    return sjf(obs, info)\n")
    env = gymnasium.make("batpolicy/Scheduling-v0", output_dir=tmp_path / "offline",
                         window=16)
    _episode(env, load_action(str(agent)))
    env.close()
    port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", "--policy",
                              f"agent:{agent}:act", "--param", "window=16",
                              "-s", f"tcp://127.0.0.1:{port}", "--timeout", "60"],
                             stderr=subprocess.PIPE, text=True)
    try:
        assert main(["fake-batsim", "-s", f"tcp://127.0.0.1:{port}", "-o",
                     str(tmp_path / "beside"), "-q", "--no-progress", "--timeout", "60",
                     "-w", str(bundled(DEFAULT_WORKLOAD)), "-p",
                     str(bundled("zero_lat_cluster128.xml"))]) == 0
        assert serve.wait(timeout=60) == 0, serve.communicate()[1]
    finally:
        serve.kill()
        serve.communicate()
    assert (tmp_path / "beside" / "jobs.csv").read_bytes() == \
        (tmp_path / "offline" / "jobs.csv").read_bytes()


@pytest.mark.parametrize(("target", "message"), [
    ("missing.py:act", "no such file"),
    ("batpolicy.gym.baselines:nope", "has no 'nope'"),
    ("no_such_module_xyz:act", "cannot import"),
    ("", "needs a target"),
])
def test_bad_agent_targets_are_one_clear_error(target: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_action(target)


def test_bad_agent_on_the_command_line_is_one_line_and_status_1(tmp_path: Path,
                                                               capsys) -> None:
    assert main(["simulate", "--policy", "agent:missing.py", "-o", str(tmp_path), "-q"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.py" in err[0]


def test_a_saved_numpy_agent_runs_under_simulate_as_in_the_env(tmp_path: Path) -> None:
    from batpolicy.gym.pg import SoftmaxAgent

    agent = SoftmaxAgent(8, np.array([0.1, -0.5, -0.3, 0.4, -0.2]), wait_score=-1.0)
    agent.save(tmp_path / "agent.npz")
    env = gymnasium.make("batpolicy/Scheduling-v0", output_dir=tmp_path / "env", window=8)
    _episode(env, agent)
    env.close()
    assert main(["simulate", "--policy", f"agent:{tmp_path / 'agent.npz'}", "-o",
                 str(tmp_path / "sim"), "-q", "--no-progress"]) == 0
    assert (tmp_path / "sim" / "jobs.csv").read_bytes() == \
        (tmp_path / "env" / "jobs.csv").read_bytes()


@pytest.mark.batsim
def test_a_trained_agent_gives_beside_real_batsim_the_jobs_it_gave_offline(
        tmp_path: Path, batsim_prefix: Path) -> None:
    """docs/gym.md's agent (trained at a tiny size) through ``serve`` beside Batsim 4.2.1."""
    from batpolicy.gym.pg import SoftmaxAgent, train

    from clirun import serve_beside_batsim

    agent = SoftmaxAgent(16)
    train(lambda: gymnasium.make("batpolicy/Scheduling-v0", workload=KTH, episode_jobs=64,
                                 window=16), agent, episodes=3, seed=1)
    agent.save(tmp_path / "agent.npz")
    workload, platform = bundled(DEFAULT_WORKLOAD), bundled("zero_lat_cluster128.xml")
    env = gymnasium.make("batpolicy/Scheduling-v0", workload=workload, platform=platform,
                         output_dir=tmp_path / "offline", window=16)
    _episode(env, agent)
    env.close()
    serve_beside_batsim(batsim_prefix, platform, workload, tmp_path / "batsim",
                        ["--policy", f"agent:{tmp_path / 'agent.npz'}"])
    assert (tmp_path / "batsim_jobs.csv").read_bytes() == \
        (tmp_path / "offline" / "jobs.csv").read_bytes()

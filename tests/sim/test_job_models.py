"""Job models: Batsim's profiles, walltime arithmetic, moving ends, plugging in a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batpolicy.errors import ConfigError, InputError, InvalidDecision
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Machine, Platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.simulator import JobModel, SimOptions, Simulator
from batpolicy.simulator.jobmodels.base import ProfileModel


def one_job(profile: dict[str, Any], *, res: int = 1, walltime: float | None = None,
            extra: dict[str, dict[str, Any]] | None = None, name: str = "w0") -> Workload:
    raw = {"id": f"{name}!j", "subtime": 0, "res": res, "profile": "p"}
    job = JobSpec(f"{name}!j", 0.0, res, "p", walltime, raw)
    return Workload(name, [job], {"p": profile, **(extra or {})})


def platform(*speeds: float) -> Platform:
    return Platform([Machine(i, f"m{i}", speed=s) for i, s in enumerate(speeds)])


class Runner:
    """Starts ``w0!j`` on ``alloc`` at submission; optionally kills it at ``kill_at``."""

    def __init__(self, alloc: MachineSet, kill_at: float | None = None) -> None:
        self.alloc = alloc
        self.kill_at = kill_at
        self.completed: list[t.JobCompleted] = []
        self.killed: list[t.JobKilled] = []

    def __call__(self, request: t.Request) -> t.Reply:
        out: list[t.Decision] = []
        for event in request.events:
            if isinstance(event, t.JobSubmitted):
                out.append(t.ExecuteJob(event.job_id, self.alloc))
                if self.kill_at is not None:
                    out.append(t.CallMeLater(self.kill_at))
            elif isinstance(event, t.RequestedCall):
                out.append(t.KillJob(("w0!j",)))
            elif isinstance(event, t.JobCompleted):
                self.completed.append(event)
            elif isinstance(event, t.JobKilled):
                self.killed.append(event)
        return t.Reply(request.now, tuple(out))


def run(workload: Workload, plat: Platform, alloc: MachineSet, *, kill_at: float | None = None,
        options: SimOptions | None = None) -> Runner:
    runner = Runner(alloc, kill_at)
    Simulator([workload], plat, options=options).run(runner)
    return runner


def end(runner: Runner) -> tuple[float, JobState, int]:
    (done,) = runner.completed
    return done.timestamp, done.job_state, done.return_code


# ------------------------------------------------------------------------------ Batsim profiles
def test_delay_profile_and_walltime_equality() -> None:
    delay = {"type": "delay", "delay": 20}
    assert end(run(one_job(delay), platform(1e9), MachineSet.of(0))) == \
        (20.0, JobState.COMPLETED_SUCCESSFULLY, 0)
    assert end(run(one_job(delay, walltime=20.0), platform(1e9), MachineSet.of(0))) == \
        (20.0, JobState.COMPLETED_WALLTIME_REACHED, -1)
    assert end(run(one_job({**delay, "ret": 3}), platform(1e9), MachineSet.of(0))) == \
        (20.0, JobState.COMPLETED_FAILED, 3)


def test_a_parallel_task_ending_exactly_at_its_walltime() -> None:
    """Batsim 4.2.1: ptask wait_for vs delay sleep, and SimGrid's 1e-9 s early timeout.

    With Batsim's message latencies the task completes (test_walltime walltime2, job
    1010 on cluster512); on a zero-latency platform the walltime is reached (job 1010 on
    zero_lat_cluster128, tests/data/batsched_walltime).
    """
    from batpolicy.platforms.xml import read_platform
    from batpolicy.simulator.latency.driver import make_simulator

    ptask = {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0}
    assert end(run(one_job(ptask, walltime=10.0), platform(1e9), MachineSet.of(0))) == \
        (10.0, JobState.COMPLETED_WALLTIME_REACHED, -1)
    small = read_platform(Path(__file__).resolve().parents[1] / "data" / "batsim421"
                          / "small_platform.xml")
    for profile, outcome in ((ptask, JobState.COMPLETED_SUCCESSFULLY),
                             ({"type": "delay", "delay": 10}, JobState.COMPLETED_WALLTIME_REACHED)):
        cpu = {"type": "parallel_homogeneous", "cpu": 10 * small.machines[0].speed, "com": 0}
        runner = Runner(MachineSet.of(0))
        sim = make_simulator([one_job(cpu if profile is ptask else profile, walltime=10.0)],
                             small)
        sim.run(runner)
        assert end(runner)[1] is outcome


def test_composed_profile_repeats_and_carries_the_walltime() -> None:
    tasks = {"a": {"type": "delay", "delay": 3}, "b": {"type": "delay", "delay": 4}}
    seq = {"type": "composed", "repeat": 2, "seq": ["a", "b"]}
    assert end(run(one_job(seq, extra=tasks), platform(1e9), MachineSet.of(0)))[0] == 14.0
    # walltime 10: a (3 < 10), b (4 < 7), a (3 < 3? no) -> killed by the walltime at 10
    assert end(run(one_job(seq, walltime=10.0, extra=tasks), platform(1e9), MachineSet.of(0))) == \
        (10.0, JobState.COMPLETED_WALLTIME_REACHED, -1)
    failing = {"a": {"type": "delay", "delay": 3, "ret": 1}, "b": tasks["b"]}
    assert end(run(one_job(seq, extra=failing), platform(1e9), MachineSet.of(0))) == \
        (3.0, JobState.COMPLETED_FAILED, 1)


def test_composed_profile_kill_progress_names_the_current_task() -> None:
    tasks = {"a": {"type": "delay", "delay": 3}, "b": {"type": "delay", "delay": 4}}
    seq = {"type": "composed", "seq": ["a", "b"]}
    runner = run(one_job(seq, extra=tasks), platform(1e9), MachineSet.of(0), kill_at=5.0)
    (killed,) = runner.killed
    assert killed.job_progress == {"w0!j": {"profile_name": "p", "current_task_index": 1,
                                            "current_task": {"profile_name": "b",
                                                             "progress": 0.5}}}


def test_parallel_profiles_compute_on_the_slowest_machine() -> None:
    speeds = platform(1e9, 2e9, 4e9, 4e9)
    homogeneous = {"type": "parallel_homogeneous", "cpu": 8e9, "com": 1e6}
    assert end(run(one_job(homogeneous, res=2), speeds, MachineSet.of(2, 3)))[0] == 2.0
    assert end(run(one_job(homogeneous, res=2), speeds, MachineSet.of(1, 2)))[0] == 4.0
    total = {"type": "parallel_homogeneous_total", "cpu": 8e9, "com": 0}
    # the only profile whose allocation may differ from res: 4 machines share 8 Gflop
    assert end(run(one_job(total, res=1), speeds, MachineSet.span(0, 3)))[0] == 2.0
    parallel = {"type": "parallel", "cpu": [1e9, 8e9], "com": [0, 0, 0, 0]}
    assert end(run(one_job(parallel, res=2), speeds, MachineSet.of(0, 2)))[0] == 2.0


def test_allocation_size_differing_from_res_is_refused_for_other_profiles() -> None:
    homogeneous = {"type": "parallel_homogeneous", "cpu": 8e9, "com": 0}
    with pytest.raises(InvalidDecision, match="only parallel_homogeneous_total"):
        run(one_job(homogeneous, res=1), platform(1e9, 1e9), MachineSet.of(0, 1))


@pytest.mark.parametrize("profile,message", [
    ({"type": "smpi", "trace": "x"}, "not simulated"),
    ({"type": "teleport"}, "is unknown"),
    ({"type": "delay"}, "'delay' must be a number"),
    ({"type": "composed", "seq": ["nope"]}, "does not exist"),
    ({"type": "composed", "seq": []}, "non-empty 'seq'"),
])
def test_unsupported_profiles_are_refused_before_running(profile: dict[str, Any],
                                                         message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        Simulator([one_job(profile)], platform(1e9))
    assert "w0!" in str(info.value)


def test_unused_unsupported_profiles_are_ignored_as_batsim_drops_them() -> None:
    workload = one_job({"type": "delay", "delay": 1},
                       extra={"unused": {"type": "smpi", "trace": "x"}})
    runner = Runner(MachineSet.of(0))
    requests: list[t.Request] = []

    def scheduler(request: t.Request) -> t.Reply:
        requests.append(request)
        return runner(request)

    Simulator([workload], platform(1e9)).run(scheduler)
    assert requests[0].events[0].profiles == {"w0": {"p": {"type": "delay", "delay": 1}}}


# ------------------------------------------------------------------------------ moving ends
def test_speed_scaled_job_ends_when_its_machines_speed_up() -> None:
    workload = one_job({"type": "delay", "delay": 10}, res=2)
    options = SimOptions(job_models={"w0": "speed"})
    runner = Runner(MachineSet.of(0, 1))
    sim = Simulator([workload], platform(1e9, 1e9), options=options)
    sim.schedule_speed_change(4.0, MachineSet.of(0), 4e9)  # the other machine stays slow: no change
    sim.schedule_speed_change(6.0, MachineSet.of(1), 2e9)  # slowest now 2 Gf: 4 s of work left
    result = sim.run(runner)
    assert end(runner) == (8.0, JobState.COMPLETED_SUCCESSFULLY, 0)
    assert result.job("w0!j").runtime == 8.0


def test_speed_scaled_job_slowing_down_hits_its_walltime() -> None:
    workload = one_job({"type": "delay", "delay": 10}, walltime=15.0)
    options = SimOptions(job_models={"w0": "speed"})
    runner = Runner(MachineSet.of(0), kill_at=9.0)
    sim = Simulator([workload], platform(1e9), options=options)
    sim.schedule_speed_change(5.0, MachineSet.of(0), 0.5e9)  # 5 s of work left now take 10 s
    sim.run(runner)
    (killed,) = runner.killed
    assert killed.job_progress == {"w0!j": {"profile_name": "p", "progress": 0.7}}
    runner = Runner(MachineSet.of(0))
    sim = Simulator([workload], platform(1e9), options=options)
    sim.schedule_speed_change(5.0, MachineSet.of(0), 0.5e9)
    sim.run(runner)
    assert end(runner) == (15.0, JobState.COMPLETED_WALLTIME_REACHED, -1)


def test_batsim_profiles_ignore_speed_changes_of_delay_jobs() -> None:
    runner = Runner(MachineSet.of(0))
    sim = Simulator([one_job({"type": "delay", "delay": 10})], platform(1e9))
    sim.schedule_speed_change(5.0, MachineSet.of(0), 4e9)
    sim.run(runner)
    assert end(runner)[0] == 10.0


class Doubling(JobModel):
    """A model plugged in from outside: Batsim's duration, twice."""

    name = "doubling"

    def start(self, job: Any, now: float, ctx: Any) -> float:
        inner = ProfileModel().start(job, now, ctx)
        return now + 2 * (inner - now)

    def progress(self, job: Any, now: float, ctx: Any) -> dict[str, Any]:
        return {"profile_name": job.profile, "progress": 0.0}


def test_a_new_model_plugs_in_without_touching_the_engine() -> None:
    runner = Runner(MachineSet.of(0))
    Simulator([one_job({"type": "delay", "delay": 10})], platform(1e9),
              options=SimOptions(job_models={"w0": Doubling()})).run(runner)
    assert end(runner)[0] == 20.0
    with pytest.raises(ConfigError, match="unknown job model"):
        Simulator([one_job({"type": "delay", "delay": 10})], platform(1e9),
                  options=SimOptions(default_job_model="quantum"))


# ------------------------------------------------------------------------------ chosen models
def test_speed_model_scales_delays_by_the_slowest_allocated_machine() -> None:
    options = SimOptions(default_job_model="speed")
    delay = {"type": "delay", "delay": 10}  # 10 s at 1 Gflop/s = 1e10 flop
    assert end(run(one_job(delay, res=2), platform(4e9, 2e9, 1e9), MachineSet.of(0, 1),
                   options=options)) == (5.0, JobState.COMPLETED_SUCCESSFULLY, 0)
    assert end(run(one_job(delay, res=2, walltime=8.0), platform(4e9, 2e9, 1e9),
                   MachineSet.of(0, 2),
                   options=options)) == (8.0, JobState.COMPLETED_WALLTIME_REACHED, -1)


def test_speed_model_runs_parallel_profiles_as_batsim_and_moves_them() -> None:
    options = SimOptions(default_job_model="speed")
    parallel = {"type": "parallel", "cpu": [1e9, 8e9], "com": [0, 0, 0, 0]}
    speeds = platform(1e9, 2e9, 4e9, 4e9)
    # executor 1 (8 Gflop) on machine 2 (4 Gflop/s) sets the pace: 2 s, as Batsim
    alloc = MachineSet.of(0, 2)
    assert end(run(one_job(parallel, res=2), speeds, alloc, options=options))[0] == 2.0
    runner = Runner(MachineSet.of(0, 2))
    sim = Simulator([one_job(parallel, res=2)], speeds, options=options)
    # at t=1 machine 2 halves its speed: half the task is done, the other half takes 2 s
    sim.schedule_speed_change(1.0, MachineSet.of(2), 2e9)
    sim.run(runner)
    assert end(runner)[0] == 3.0


def placement_job(job_type: str | None, runtime_other: float | None, *,
                  walltime: float | None = None, res: int = 2,
                  preferred: str | None = None) -> Workload:
    raw: dict[str, Any] = {"id": "w0!j", "subtime": 0, "res": res, "profile": "p"}
    for key, value in (("job_type", job_type), ("runtime_other", runtime_other),
                       ("preferred", preferred)):
        if value is not None:
            raw[key] = value
    job = JobSpec("w0!j", 0.0, res, "p", walltime, raw)
    return Workload("w0", [job], {"p": {"type": "delay", "delay": 10}})


def racks() -> Platform:
    """Rack r0: machines 0-1 (GPUs), rack r1: machines 2-3 (CPUs)."""
    return Platform([Machine(i, f"m{i}", rack=f"r{i // 2}", gpu=i < 2) for i in range(4)])


@pytest.mark.parametrize("job_type,preferred,alloc,expected", [
    ("mpi", None, MachineSet.span(0, 1), 10.0),   # one rack: preferred
    ("mpi", None, MachineSet.of(1, 2), 25.0),     # across racks: runtime_other
    ("gpu", None, MachineSet.of(0, 1), 10.0),
    ("gpu", None, MachineSet.of(0, 2), 25.0),     # machine 2 has no GPU
    (None, "r1", MachineSet.of(2, 3), 10.0),
    (None, "r1", MachineSet.of(1, 2), 25.0),
    ("seq", None, MachineSet.of(1, 3), 10.0),     # no preference: anywhere is preferred
])
def test_placement_model_runtime_depends_on_the_allocation(
        job_type: str | None, preferred: str | None, alloc: MachineSet, expected: float) -> None:
    options = SimOptions(default_job_model="placement")
    done = end(run(placement_job(job_type, 25.0, preferred=preferred), racks(), alloc,
                   options=options))
    assert done == (expected, JobState.COMPLETED_SUCCESSFULLY, 0)


def test_placement_model_walltime_and_missing_runtime_other() -> None:
    options = SimOptions(default_job_model="placement")
    assert end(run(placement_job("mpi", 25.0, walltime=20.0), racks(), MachineSet.of(1, 2),
                   options=options)) == (20.0, JobState.COMPLETED_WALLTIME_REACHED, -1)
    assert end(run(placement_job("mpi", None), racks(), MachineSet.of(1, 2), options=options))[0] \
        == 10.0
    runner = run(placement_job("mpi", 25.0), racks(), MachineSet.of(1, 2), kill_at=5.0,
                 options=options)
    assert runner.killed[0].job_progress == {"w0!j": {"profile_name": "p", "progress": 0.2}}


def test_placement_model_refuses_profiles_without_a_delay() -> None:
    with pytest.raises(InputError, match="placement model runs delay profiles"):
        Simulator([one_job({"type": "parallel_homogeneous", "cpu": 1e9})], platform(1e9),
                  options=SimOptions(default_job_model="placement"))


def test_a_jobs_job_model_field_overrides_the_run_and_the_workload() -> None:
    profiles = {"p": {"type": "delay", "delay": 10}}
    jobs = []
    for name, model in (("a", None), ("b", "speed"), ("c", "profile")):
        raw: dict[str, Any] = {"id": f"w0!{name}", "subtime": 0, "res": 1, "profile": "p"}
        if model:
            raw["job_model"] = model
        jobs.append(JobSpec(f"w0!{name}", 0.0, 1, "p", None, raw))
    ends: dict[str, float] = {}

    def scheduler(request: t.Request) -> t.Reply:
        out = [t.ExecuteJob(e.job_id, MachineSet.of("abc".index(e.job_id[-1])))
               for e in request.events if isinstance(e, t.JobSubmitted)]
        ends.update({e.job_id: e.timestamp for e in request.events
                     if isinstance(e, t.JobCompleted)})
        return t.Reply(request.now, tuple(out))

    # workload w0 uses speed; on 2 Gflop/s machines a speed job runs 5 s, a profile job 10 s
    Simulator([Workload("w0", jobs, profiles)], platform(2e9, 2e9, 2e9),
              options=SimOptions(job_models={"w0": "speed"})).run(scheduler)
    assert ends == {"w0!a": 5.0, "w0!b": 5.0, "w0!c": 10.0}


def test_an_unknown_job_model_field_names_the_job_and_field() -> None:
    raw = {"id": "w0!j", "subtime": 0, "res": 1, "profile": "p", "job_model": "quantum"}
    workload = Workload("w0", [JobSpec("w0!j", 0.0, 1, "p", None, raw)],
                        {"p": {"type": "delay", "delay": 1}}, source="w.json")
    with pytest.raises(InputError, match="unknown job model 'quantum'") as info:
        Simulator([workload], platform(1e9))
    assert info.value.job == "w0!j" and info.value.field == "job_model"


def test_the_one_registry_holds_every_model_under_its_own_name() -> None:
    from batpolicy.simulator.jobmodels.registry import JOB_MODELS, make_job_model

    assert sorted(JOB_MODELS) == ["bandwidth", "fixed-penalty", "ideal", "placement",
                                  "profile", "ptask", "speed"]
    for name, cls in JOB_MODELS.items():
        assert cls.name == name and isinstance(make_job_model(name), cls)
    assert make_job_model("fixed-penalty:1.25").penalty == 1.25  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="job model 'speed' takes no argument"):
        make_job_model("speed:2")
    with pytest.raises(ConfigError, match="wants a number"):
        make_job_model("fixed-penalty:x")


class _GeneralProfileModel(ProfileModel):
    """ProfileModel through its general path (a subclass never takes the delay fast path)."""


@pytest.mark.parametrize("delay", [0.0, 5.0, 10.0, 10.5, 1e-7])
@pytest.mark.parametrize("walltime", [None, 0.0, 5.0, 10.0, 20.0])
@pytest.mark.parametrize("ret", [0, 3])
def test_the_delay_fast_path_plans_what_the_general_path_plans(
        delay: float, walltime: float | None, ret: int) -> None:
    from batpolicy.simulator.records import SimJob

    profile = {"type": "delay", "delay": delay, **({"ret": ret} if ret else {})}
    planned = []
    for model in (ProfileModel(), _GeneralProfileModel()):
        job = SimJob("w0!j", "w0", 0.0, 1, walltime, "p", profile, {})
        end = model.start(job, 7.25, None)
        planned.append((end, job.outcome, job.return_code, job.phases))
    assert planned[0] == planned[1]

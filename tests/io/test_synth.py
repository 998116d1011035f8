"""Synthetic workloads: determinism, distributions, extra fields, presets, the commands."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from batpolicy.app import cli
from batpolicy.errors import ConfigError
from batpolicy.io import read_batsim_workload
from batpolicy.io.batsim_json import workload_to_json
from batpolicy.io.presets import PRESETS, parse_overrides, preset
from batpolicy.io.synth import JobStreamSpec, JobType, SynthSpec, generate
from batpolicy.io.transform import inter_arrival_times

from clirun import read_jobs, restore_logging  # noqa: F401  (autouse fixture)

GROUPS = (JobStreamSpec(nb_jobs=400, origin="cluster0", mean_interarrival=150.0,
                    mean_service=225.0, res_range=(10, 90), comp_share=0.7, ppbw=1e6,
                    slack_range=(1.5, 3.0),
                    job_types=(JobType("mpi", 3.0, preferred="cluster0"),
                               JobType("gpu", 1.0, preferred="cluster1",
                                       runtime_other_factor=2.0))),
          JobStreamSpec(nb_jobs=300, origin="cluster1", mean_interarrival=100.0,
                    service="uniform", service_range=(60.0, 600.0), res_range=(1, 4)))


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    spec = SynthSpec(GROUPS, nb_res=100)
    first = workload_to_json(generate(spec, 7))
    assert workload_to_json(generate(spec, 7)) == first
    assert workload_to_json(generate(SynthSpec(GROUPS, nb_res=100), 7)) == first
    assert workload_to_json(generate(spec, 8)) != first


def test_command_output_is_byte_identical_for_the_same_seed(tmp_path: Path) -> None:
    outputs = []
    for name, seed in (("a.json", "7"), ("b.json", "7"), ("c.json", "8")):
        assert cli.main(["workload", "synth", "--preset", "uniform", "--seed", seed,
                         "--param", "nb_jobs=300", "-o", str(tmp_path / name)]) == 0
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1] != outputs[2]
    w = read_batsim_workload(tmp_path / "a.json")
    assert len(w.jobs) == 300 and w.nb_res == 32


def test_distributions_follow_the_spec() -> None:
    w = generate(SynthSpec(GROUPS, nb_res=100), 3)
    by_origin = {o: [j for j in w.jobs if j.raw["origin"] == o] for o in ("cluster0", "cluster1")}
    assert len(by_origin["cluster0"]) == 400 and len(by_origin["cluster1"]) == 300
    gaps = inter_arrival_times(by_origin["cluster0"])
    assert statistics.fmean(gaps) == pytest.approx(150.0, rel=0.15)  # Poisson arrivals
    runs = [w.profiles[j.profile]["delay"] for j in by_origin["cluster0"]]
    assert statistics.fmean(runs) == pytest.approx(225.0, rel=0.15)  # exponential service
    assert statistics.stdev(runs) == pytest.approx(225.0, rel=0.2)
    assert {j.res for j in by_origin["cluster0"]} <= set(range(10, 91))
    assert min(j.res for j in by_origin["cluster0"]) < 20 < 80 < max(j.res for j in
                                                                  by_origin["cluster0"])
    uniform = [w.profiles[j.profile]["delay"] for j in by_origin["cluster1"]]
    assert 60 <= min(uniform) and max(uniform) <= 600
    assert all(j.subtime == int(j.subtime) for j in w.jobs)  # 1 s resolution
    assert [(j.subtime, j.id) for j in w.jobs] == sorted((j.subtime, j.id) for j in w.jobs)


def test_extra_fields_and_deadlines() -> None:
    w = generate(SynthSpec(GROUPS, nb_res=100), 5)
    for job in w.jobs:
        run = w.profiles[job.profile]["delay"]
        if job.raw["origin"] == "cluster0":
            assert job.raw["comp_share"] == 0.7 and job.raw["ppbw"] == 1e6
            slack = (job.raw["deadline"] - job.subtime) / run
            assert 1.5 - 1 / run <= slack <= 3.0 + 1 / run  # rounded to 1 s
            assert job.raw["job_type"] in ("mpi", "gpu")
            if job.raw["job_type"] == "gpu":
                assert job.raw["preferred"] == "cluster1"
                assert job.raw["runtime_other"] == pytest.approx(2 * run, abs=1)
            else:
                assert "runtime_other" not in job.raw
            assert job.walltime == 2 * run
        else:  # nothing asked: no extra field but the origin
            assert set(job.raw) == {"id", "subtime", "res", "profile", "walltime", "origin"}
    types = [j.raw["job_type"] for j in w.jobs if "job_type" in j.raw]
    assert types.count("mpi") > 2 * types.count("gpu")


def test_turning_deadlines_on_keeps_arrivals_runs_and_sizes() -> None:
    plain = JobStreamSpec(nb_jobs=50, res_range=(1, 8))
    base = generate(SynthSpec((plain,)), 11)
    with_deadlines = generate(SynthSpec((JobStreamSpec(nb_jobs=50, res_range=(1, 8),
                                                   slack_range=(2.0, 2.0)),)), 11)
    assert [(j.id, j.subtime, j.res, j.profile) for j in base.jobs] == \
        [(j.id, j.subtime, j.res, j.profile) for j in with_deadlines.jobs]
    for job in with_deadlines.jobs:
        assert job.raw["deadline"] == job.subtime + 2 * base.profiles[job.profile]["delay"]


def test_a_group_added_leaves_the_others_jobs_alone() -> None:
    one = generate(SynthSpec(GROUPS[:1]), 2)
    two = generate(SynthSpec(GROUPS), 2)
    key = [(j.subtime, j.res, j.profile) for j in one.jobs]
    assert [(j.subtime, j.res, j.profile) for j in two.jobs
            if j.raw["origin"] == "cluster0"] == key


@pytest.mark.parametrize("group,message", [
    (JobStreamSpec(mean_interarrival=0), "mean_interarrival"),
    (JobStreamSpec(service="normal"), "service"),
    (JobStreamSpec(res_range=(5, 2)), "res_range"),
    (JobStreamSpec(res_range=(1, 200)), "nb_res"),
    (JobStreamSpec(comp_share=1.5), "comp_share"),
    (JobStreamSpec(slack_range=(3.0, 1.0)), "slack_range")])
def test_bad_specs_name_the_parameter(group: JobStreamSpec, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        generate(SynthSpec((group,), nb_res=100), 1)


def test_presets_registry() -> None:
    assert "uniform" in PRESETS
    spec = preset("uniform", **parse_overrides("uniform", ["nb_jobs=12", "nb_res=8",
                                                            "slack_min=2"]))
    w = generate(spec, 1)
    assert len(w.jobs) == 12 and w.nb_res == 8 and max(j.res for j in w.jobs) <= 4
    assert all("deadline" in j.raw for j in w.jobs)
    with pytest.raises(ConfigError, match="no such parameter"):
        parse_overrides("uniform", ["jobs=3"])
    with pytest.raises(ConfigError, match="nb_jobs must be an integer"):
        parse_overrides("uniform", ["nb_jobs=many"])
    with pytest.raises(ConfigError, match="unknown preset"):
        preset("nope")


def test_the_workloads_doc_lists_every_preset() -> None:
    """docs/workloads.md's table of presets names each registered one (it said only uniform)."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "workloads.md").read_text()
    rows = doc.split("| preset | the workload |")[1].split("\n\n")[0].splitlines()[2:]
    named = [name for row in rows for name in re.findall(r"`([^`]+)`", row.split("|")[1])]
    assert sorted(named) == sorted(PRESETS)


def test_synthetic_workload_simulates(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    assert cli.main(["workload", "synth", "--preset", "uniform", "--seed", "4", "--param",
                     "nb_jobs=60", "-o", str(path)]) == 0
    out = tmp_path / "out"
    assert cli.main(["simulate", "-w", str(path), "--nb-res", "32", "-o", str(out),
                     "--quiet"]) == 0
    assert len(read_jobs(out / "jobs.csv")) == 60


# ------------------------------------------------------------------ transform command
def test_transform_command_load_2_halves_gaps_in_the_file(tmp_path: Path) -> None:
    src, dst = tmp_path / "w.json", tmp_path / "t.json"
    assert cli.main(["workload", "synth", "--preset", "uniform", "--seed", "1", "-o",
                     str(src)]) == 0
    assert cli.main(["workload", "transform", str(src), "--load", "2", "-o", str(dst)]) == 0
    before, after = read_batsim_workload(src), read_batsim_workload(dst)
    assert [j.id for j in after.jobs] == [j.id for j in before.jobs]
    assert inter_arrival_times(after.jobs) == [g / 2 for g in inter_arrival_times(before.jobs)]
    assert json.loads(dst.read_text())["profiles"] == json.loads(src.read_text())["profiles"]


def test_simulate_takes_the_transform_options(tmp_path: Path) -> None:
    src = tmp_path / "w.json"
    assert cli.main(["workload", "synth", "--preset", "uniform", "--seed", "1", "--param",
                     "nb_jobs=80", "-o", str(src)]) == 0
    for extra, nb in ((["--load", "2"], 80), (["--sample-jobs", "25", "--sample-seed", "3"], 25)):
        out = tmp_path / "+".join(extra)
        assert cli.main(["simulate", "-w", str(src), "--nb-res", "32", *extra, "-o", str(out),
                         "--quiet"]) == 0
        rows = read_jobs(out / "jobs.csv")
        assert len(rows) == nb
    doubled = read_jobs(tmp_path / "--load+2" / "jobs.csv")
    source = read_batsim_workload(src)
    assert sorted(float(r["submission_time"]) for r in doubled.values()) == \
        [source.jobs[0].subtime + (j.subtime - source.jobs[0].subtime) / 2 for j in source.jobs]


@pytest.mark.parametrize("args,named", [
    (["workload", "transform", "{missing}", "-o", "{out}"], "missing.swf"),
    (["workload", "transform", "{src}", "--load", "-2", "-o", "{out}"], "--load"),
    (["workload", "transform", "{src}", "--weeks", "0", "-o", "{out}"], "--weeks"),
    (["workload", "transform", "{src}", "--sample", "1.5", "-o", "{out}"], "--sample"),
    (["workload", "transform", "{src}", "--weeks", "1", "--min-util", "1", "-o", "{out}"],
     "--week-index"),
    (["workload", "transform", "{src}", "--status", "1", "-o", "{out}"], "--status"),
    (["workload", "synth", "--preset", "uniform", "--param", "nb_res=0", "-o", "{out}"],
     "nb_res"),
    (["workload", "synth", "--preset", "uniform", "-o", "{nowhere}"], "nowhere"),
    (["simulate", "-w", "{src}", "--load", "0", "-o", "{out}"], "--load"),
    # issue 31 item 8: alone they were silently ignored
    (["workload", "transform", "{src}", "--min-util", "0.7", "-o", "{out}"],
     "--min-util chooses among the blocks of --weeks N: give --weeks"),
    (["workload", "transform", "{src}", "--week-index", "2", "-o", "{out}"],
     "--week-index chooses among the blocks of --weeks N"),
    (["simulate", "-w", "{src}", "--nb-res", "8", "--min-util", "0.7", "-o", "{out}"],
     "--min-util chooses among the blocks of --weeks N"),
])
def test_errors_are_one_line_naming_the_option_or_file(
        args: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "w.json"
    assert cli.main(["workload", "synth", "--preset", "uniform", "--param", "nb_jobs=5",
                     "-o", str(src)]) == 0
    capsys.readouterr()
    (tmp_path / "nowhere").write_text("a file where the folder would be\n")
    paths = {"missing": tmp_path / "missing.swf", "out": tmp_path / "o.json", "src": src,
             "nowhere": tmp_path / "nowhere" / "w.json"}
    assert cli.main([a.format(**paths) for a in args]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if "ERROR" in line]
    assert len(err) == 1 and named in err[0], err
    assert "Traceback" not in err[0]
    assert not (tmp_path / "o.json").exists()

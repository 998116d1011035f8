"""Campaign files: grids expand as a researcher expects, errors name file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from batpolicy.app.campaign.spec import load_campaign
from batpolicy.errors import InputError


def test_grids_expand_to_the_cartesian_product_in_file_order(small_campaign: Path) -> None:
    campaign = load_campaign(small_campaign)
    runs = campaign.runs
    assert len(runs) == 8
    assert [(r.policy, r.max_jobs) for r in runs[:4]] == [
        ("fcfs", 60), ("fcfs", 120), ("easy", 60), ("easy", 120)]
    redirection = runs[4:]
    assert [(dict(r.params)["theta"], r.seed) for r in redirection] == [
        (1, 1), (1, 2), (10, 1), (10, 2)]
    assert all(dict(r.params)["alpha"] == 0.1 for r in redirection)
    assert campaign.output == small_campaign.parent / "res"
    assert len({r.run_id for r in runs}) == 8
    assert [r.index for r in runs] == list(range(8))


def test_run_ids_are_stable_across_reads(small_campaign: Path) -> None:
    assert [r.run_id for r in load_campaign(small_campaign).runs] == \
        [r.run_id for r in load_campaign(small_campaign).runs]


def test_duplicate_runs_run_once(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[[run]]\npolicy = "easy"\n[[run]]\npolicy = "easy"\n'
                    '[[grid]]\npolicy = ["easy", "fcfs"]\n')
    assert [r.policy for r in load_campaign(path).runs] == ["easy", "fcfs"]


@pytest.mark.parametrize(("text", "words"), [
    ('[[grid]]\npolicy = "easy"\nthta = 3\n', ("unknown key", "grid")),
    ('[[run]]\npolicy = "easy"\nmax_jobs = "ten"\n', ("max_jobs", "wrong type")),
    ('[[run]]\nworkload = "w.json"\n', ("no 'policy'",)),
    ('[campaign]\nname = "x"\n', ("no run",)),
    ('[[grid]\npolicy = "easy"\n', ("not valid TOML",)),
    ('[sweep]\npolicy = "easy"\n', ("unknown table", "sweep")),
])
def test_bad_campaign_files_give_one_error_naming_file_and_key(
        tmp_path: Path, text: str, words: tuple[str, ...]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_campaign(path)
    message = str(info.value)
    assert "bad.toml" in message
    for word in words:
        assert word in message


def test_a_preset_run_generates_its_workload_with_the_run_seed(tmp_path: Path) -> None:
    from batpolicy.app.campaign.executors import LocalPool
    from batpolicy.app.campaign.runner import run_campaign

    path = tmp_path / "c.toml"
    path.write_text('[[grid]]\npolicy = "fcfs"\npreset = "uniform"\nnb_res = 8\n'
                    'preset_params = { nb_jobs = [5, 7], nb_res = 8 }\nseed = [1, 2]\n')
    campaign = load_campaign(path)
    assert [(dict(r.preset_params)["nb_jobs"], r.seed) for r in campaign.runs] == [
        (5, 1), (5, 2), (7, 1), (7, 2)]
    report = run_campaign(campaign, LocalPool(1), progress=False)
    assert report.failed == 0
    table = (campaign.output / "results.csv").read_text().splitlines()
    assert table[0].count("preset.nb_jobs") == 1 and len(table) == 5
    runs = campaign.runs
    first = (campaign.output / "runs" / runs[0].run_id / "workload.json").read_text()
    again = (campaign.output / "runs" / runs[1].run_id / "workload.json").read_text()
    assert first != again  # another seed, another workload


def test_a_workload_and_a_preset_together_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[[run]]\npolicy = "fcfs"\npreset = "uniform"\nworkload = "w.json"\n')
    with pytest.raises(InputError, match="not both"):
        load_campaign(path)


def test_variants_vary_keys_together_and_transforms_vary_like_params(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('''
[defaults]
transform = { weeks = 1, min_util = 0.7 }
[[grid]]
policy = "redirection"
params = { theta = [1, 10] }
variants = [
    [{ workload = "a.swf", transform = { week_index = [0, 3] } }, { workload = "b.swf" }],
    [{ params = { alpha = 0.1 }, extra_machines = 0.1 },
     { params = { alpha = 0.2 }, extra_machines = 0.2 }],
]
''')
    runs = load_campaign(path).runs
    assert len(runs) == 2 * (2 + 1) * 2
    assert all(dict(r.params)["alpha"] == r.extra_machines for r in runs)
    keys = [(dict(r.params)["theta"], Path(r.workloads[0]).name,
             dict(r.transform).get("week_index"), r.extra_machines) for r in runs]
    assert keys[:6] == [(1, "a.swf", 0, 0.1), (1, "a.swf", 0, 0.2), (1, "a.swf", 3, 0.1),
                        (1, "a.swf", 3, 0.2), (1, "b.swf", None, 0.1), (1, "b.swf", None, 0.2)]
    # the defaults' transform table is merged with the variant's, not replaced
    assert all(dict(r.transform)["min_util"] == 0.7 for r in runs)


@pytest.mark.parametrize(("text", "words"), [
    ('[[run]]\npolicy = "easy"\nvariants = [{ seed = 1 }]\n', "belongs in a [[grid]]"),
    ('[[grid]]\npolicy = "easy"\nvariants = [1, 2]\n', "list of tables"),
    ('[[grid]]\npolicy = "easy"\nvariants = [{ colour = 1 }]\n', "colour"),
    ('[[run]]\npolicy = "easy"\ntransform = { loud = 2 }\n', "loud"),
    ('[[run]]\npolicy = "easy"\ntransform = { weeks = "one" }\n', "weeks"),
    ('[[run]]\npolicy = "easy"\nsize = "big"\n', "requested"),
])
def test_bad_variants_and_transforms_are_named(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=words.replace("[", r"\[").replace("]", r"\]")):
        load_campaign(path)


def test_committed_campaigns_keep_their_run_ids() -> None:
    """Run ids of campaigns committed before new run keys existed are unchanged.

    So a rerun of such a campaign finds every run done.
    """
    import csv

    bench = Path(__file__).resolve().parents[2] / "bench" / "campaigns"
    table = bench / "results" / "redirection_demo" / "results.csv"
    with table.open(newline="") as f:
        committed = {row["run_id"] for row in csv.DictReader(f)}
    runs = load_campaign(bench / "redirection_demo.toml").runs
    assert len(runs) == 21 and {r.run_id for r in runs} == committed


def test_a_tabu_4_run_without_platform_gets_the_machines_its_workload_was_drawn_for(
        tmp_path: Path) -> None:
    """tabu-4 sizes jobs and arrivals for its seed's machines: the run writes them too.

    The run equals ``platform machines --preset tabu-4`` + ``workload synth`` +
    ``simulate`` by hand, and every job stays inside one machine (one_group).
    """
    import csv
    import json

    from batpolicy.app.campaign.executors import LocalPool
    from batpolicy.app.campaign.runner import run_campaign
    from batpolicy.app.cli import main
    from batpolicy.platforms.xml import read_platform
    from batpolicy.protocol.intervals import MachineSet

    path = tmp_path / "c.toml"
    path.write_text('[[run]]\npolicy = "easy"\nparams = { one_group = true }\n'
                    'preset = "tabu-4"\njob_model = "speed"\nseed = 4\n'
                    'preset_params = { nb_jobs = 40, nb_machines = 8, level = 2 }\n')
    campaign = load_campaign(path)
    assert run_campaign(campaign, LocalPool(1), progress=False).failed == 0
    folder = campaign.output / "runs" / campaign.runs[0].run_id
    with (campaign.output / "results.csv").open() as f:
        (row,) = list(csv.DictReader(f))
    assert row["platform"] == "preset:tabu-4" and row["status"] == "ok"
    groups = read_platform(folder / "platform.xml").groups.values()
    machines = [MachineSet(g.machines) for g in groups]
    assert len(machines) == 8
    with (folder / "jobs.csv").open() as f:
        jobs = list(csv.DictReader(f))
    assert len(jobs) == 40
    for job in jobs:
        alloc = MachineSet.parse(job["allocated_resources"])
        assert any(alloc.issubset(m) for m in machines), job
    params = ["--param", "nb_jobs=40", "--param", "nb_machines=8"]
    assert main(["platform", "machines", "--preset", "tabu-4", "--seed", "4", *params,
                 "-o", str(tmp_path / "g.xml")]) == 0
    assert (tmp_path / "g.xml").read_bytes() == (folder / "platform.xml").read_bytes()
    assert main(["workload", "synth", "--preset", "tabu-4", "--seed", "4", *params,
                 "--param", "level=2", "-o", str(tmp_path / "w.json")]) == 0
    assert main(["simulate", "--policy", "easy", "--param", "one_group=true", "--job-model",
                 "speed", "-p", str(tmp_path / "g.xml"), "-w", str(tmp_path / "w.json"),
                 "-o", str(tmp_path / "out"), "-q", "--no-progress"]) == 0
    by_hand = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert int(row["nb_late_jobs"]) == by_hand["nb_late_jobs"]
    assert (tmp_path / "out" / "jobs.csv").read_text() == (folder / "jobs.csv").read_text()

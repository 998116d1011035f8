"""A sweep of bad inputs over every subcommand: one clear line, a non-zero exit, no traceback.

What a new user types wrong (issue 47): each row of :data:`BAD` is a command line with
one mistake and a fragment the error line must hold (what is wrong, and where). Every
command runs in-process through :func:`batpolicy.app.cli.main`; an exception escaping it
is the traceback a user would have seen, and fails the row. Errors of the command line's
shape are argparse's (exit 2, its ``usage`` and one ``error:`` line); every other
refusal is exactly one ``ERROR`` line on stderr and exit status 1 (3 for a peer that
does not answer).

The rows marked *47* gave a traceback or exit 0 before (``campaign -o /proc/x``,
``synth --param nb_jobs=-5``, ``plot --dist`` of runs where no job ran, a negative
``wattage_per_state``, ``simulate --policy poweroff`` without ``-E`` at t=60 s) or an
unhelpful message (``serve --policy pybatsim:``, ``plot`` of a file that is no jobs.csv,
the uniform preset naming neither itself nor ``--param``, ``--weeks 99`` on a 4-week trace
kept every job).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batpolicy.app.cli import main
from batpolicy.io.inputs import bundled

from clirun import free_port, restore_logging  # noqa: F401  (an autouse fixture)

KTH = str(bundled("KTH-SP2-1996-2-4weeks.swf.gz"))

#: (id, argv with {placeholders} of :func:`files`, fragment of the error, exit status).
BAD: list[tuple[str, list[str], str, int]] = [
    # serve
    ("serve-pybatsim", ["serve", "--policy", "pybatsim:fillerSched"],  # 47
     "`pybatsim fillerSched`", 1),
    ("serve-unknown-policy", ["serve", "--policy", "nope"], "unknown policy 'nope'", 1),
    ("serve-param-shape", ["serve", "--param", "novalue"], "KEY=VALUE", 1),
    ("serve-param-unknown", ["serve", "--policy", "easy", "--param", "zz=1"], "zz", 1),
    ("serve-bad-number", ["serve", "--timeout", "soon"], "invalid float value", 2),
    # policies
    ("policies-extra", ["policies", "extra"], "unrecognized arguments: extra", 2),
    # simulate
    ("simulate-missing-workload", ["simulate", "-w", "{tmp}/missing.json", "-o", "{out}"],
     "missing.json", 1),
    ("simulate-poweroff-without-E", ["simulate", "--policy", "poweroff", "-p", "{power}",  # 47
                                     "-w", "{workload}", "-o", "{out}"],
     "policy 'poweroff' switches machines off and on: it needs the energy model, -E", 1),
    ("simulate-negative-wattage", ["simulate", "--policy", "poweroff", "-E", "-p",  # 47
                                   "{negative_watts}", "-w", "{workload}", "-o", "{out}"],
     "is not a power in watts", 1),
    ("simulate-profile-field", ["simulate", "-w", "{bad_profile}", "-o", "{out}"],  # 47
     "field 'profiles.p.cpu': profile 'p'", 1),
    ("simulate-weeks-beyond-trace", ["simulate", "-w", KTH, "--weeks", "99", "-o",  # 47
                                     "{out}"], "--weeks 99: the jobs are submitted over 4 "
                                               "weeks", 1),
    ("simulate-tau", ["simulate", "--bsld-tau", "0", "-o", "{out}"], "--bsld-tau", 1),
    ("simulate-output-is-a-file", ["simulate", "-o", "{a_file}"], "a_file", 1),
    ("simulate-job-model", ["simulate", "--job-model", "nope", "-o", "{out}"],
     "--job-model 'nope'", 1),
    ("simulate-max-jobs", ["simulate", "--max-jobs", "-1", "-o", "{out}"], "--max-jobs", 1),
    ("simulate-max-jobs-type", ["simulate", "--max-jobs", "abc"], "invalid int value", 2),
    ("simulate-unknown-option", ["simulate", "--nope"], "unrecognized arguments", 2),
    # fake-batsim
    ("fake-batsim-missing-workload", ["fake-batsim", "-w", "{tmp}/missing.json", "-o",
                                      "{out}"], "missing.json", 1),
    ("fake-batsim-no-scheduler", ["fake-batsim", "-s", "tcp://127.0.0.1:{port}", "--timeout",
                                  "0.3", "-o", "{out}"], "no reply from the scheduler", 3),
    # platform
    ("platform-racks-zero", ["platform", "racks", "--racks", "0", "--nodes", "2", "-o",
                             "{tmp}/r.xml"],
     "--racks", 1),
    ("platform-negative-watts", ["platform", "multicluster", "--clusters", "1", "--nodes",
                                 "4", "--idle-watts", "-5", "-o", "{tmp}/m.xml"],
     "--idle-watts", 1),
    ("platform-missing-spec", ["platform", "machines", "--spec", "{tmp}/missing.csv", "-o",
                               "{tmp}/g.xml"], "missing.csv", 1),
    # workload
    ("synth-negative-jobs", ["workload", "synth", "--preset", "tabu-4", "--param",  # 47
                             "nb_jobs=-5", "-o", "{tmp}/t.json"],
     "preset 'tabu-4': --param nb_jobs must be >= 1, got -5", 1),
    ("synth-uniform-range", ["workload", "synth", "--preset", "uniform", "--param",  # 47
                             "res_min=10", "--param", "res_max=2", "-o", "{tmp}/u.json"],
     "preset 'uniform': --param res_max", 1),
    ("synth-uniform-jobs", ["workload", "synth", "--preset", "uniform", "--param",  # 47
                            "nb_jobs=-5", "-o", "{tmp}/u.json"],
     "preset 'uniform': --param nb_jobs", 1),
    ("synth-unknown-preset", ["workload", "synth", "--preset", "nope", "-o", "{tmp}/u.json"],
     "unknown preset 'nope'", 1),
    ("synth-param-type", ["workload", "synth", "--preset", "uniform", "--param", "nb_jobs=x",
                          "-o", "{tmp}/u.json"], "nb_jobs must be an integer", 1),
    ("transform-weeks-beyond-trace", ["workload", "transform", KTH, "--weeks", "99",  # 47
                                      "-o", "{tmp}/k.json"], "--weeks 99", 1),
    ("transform-missing", ["workload", "transform", "{tmp}/missing.swf", "-o",
                           "{tmp}/k.json"], "missing.swf", 1),
    ("transform-status-on-json", ["workload", "transform", "{workload}", "--status", "1", "-o",
                                  "{tmp}/k.json"], "--status", 1),
    ("transform-unwritable", ["workload", "transform", "{workload}", "-o", "/proc/x.json"],
     "/proc/x.json", 1),
    # campaign
    ("campaign-output-proc", ["campaign", "{campaign}", "-o", "/proc/batpolicy-x"],  # 47
     "results folder /proc/batpolicy-x", 1),
    ("campaign-output-proc-dry-run", ["campaign", "{campaign}", "-o",  # 47
                                      "/proc/batpolicy-x", "--dry-run"],
     "results folder /proc/batpolicy-x", 1),
    ("campaign-output-is-a-file", ["campaign", "{campaign}", "-o", "{a_file}"],  # 47
     "a file of that name exists", 1),
    ("campaign-missing", ["campaign", "{tmp}/missing.toml"], "missing.toml", 1),
    ("campaign-poweroff-without-energy", ["campaign", "{poweroff_campaign}", "--dry-run"],
     "energy = true", 1),
    # plot
    ("plot-not-a-jobs-csv", ["plot", "{a_file}", "--gantt"], "not a Batsim jobs.csv", 1),  # 47
    ("plot-dist-no-job-ran", ["plot", "{no_job_ran}", "--dist"], "no job ran", 1),  # 47
    ("plot-two-kinds", ["plot", "{a_file}", "--gantt", "--dist"], "choose one of", 1),
    ("plot-line-without-metric", ["plot", "{a_file}", "--line", "theta"], "--metric", 1),
    ("plot-missing", ["plot", "{tmp}/missing", "--gantt"], "missing", 1),
]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """The inputs the rows name: good ones beside the one mistake of each row."""
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": str(i), "subtime": i, "res": 1, "walltime": 100, "profile": "p"}
        for i in range(4)], "profiles": {"p": {"type": "delay", "delay": 10}}}))
    bad_profile = tmp_path / "bad_profile.json"
    bad_profile.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": "1", "subtime": 0, "res": 1, "walltime": 100, "profile": "p"}],
        "profiles": {"p": {"type": "parallel_homogeneous", "cpu": -1, "com": 0}}}))
    power = tmp_path / "power.xml"
    assert main(["platform", "multicluster", "--clusters", "1", "--nodes", "4", "--power",
                 "-o", str(power)]) == 0
    negative = tmp_path / "negative_watts.xml"
    text = power.read_text()
    assert 'id="wattage_per_state" value="' in text
    negative.write_text(text.replace('id="wattage_per_state" value="',
                                     'id="wattage_per_state" value="-'))
    a_file = tmp_path / "a_file"
    a_file.write_text("hello\n")
    campaign = tmp_path / "c.toml"
    campaign.write_text(f'[[run]]\npolicy = "fcfs"\nworkload = "{workload}"\n')
    poweroff = tmp_path / "poweroff.toml"
    poweroff.write_text(f'[[run]]\npolicy = "poweroff"\nworkload = "{workload}"\n'
                        f'platform = "{power}"\n')
    run = tmp_path / "no_job_ran" / "runs" / "r1"  # one run, its only job rejected
    run.mkdir(parents=True)
    (run / "metrics.json").write_text('{"policy": "easy"}\n')
    (run / "jobs.csv").write_text(
        "job_id,workload_name,profile,submission_time,requested_number_of_resources,"
        "requested_time,success,final_state,starting_time,execution_time,finish_time,"
        "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata\n"
        '1,w0,p,0.000000,1,-1.000000,0,REJECTED,,,,,,,,,""\n')
    return {"tmp": str(tmp_path), "out": str(tmp_path / "out"), "workload": str(workload),
            "bad_profile": str(bad_profile), "power": str(power),
            "negative_watts": str(negative), "a_file": str(a_file),
            "campaign": str(campaign), "poweroff_campaign": str(poweroff),
            "no_job_ran": str(tmp_path / "no_job_ran"), "port": str(free_port())}


@pytest.mark.parametrize("argv,fragment,status", [row[1:] for row in BAD],
                         ids=[row[0] for row in BAD])
def test_a_bad_input_is_one_clear_line_and_a_non_zero_exit(
        argv: list[str], fragment: str, status: int, files: dict[str, str],
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    if argv[0] == "plot":
        pytest.importorskip("matplotlib")
    if "/proc/" in " ".join(argv) and not Path("/proc/self").exists():
        pytest.skip("no /proc here")
    monkeypatch.chdir(files["tmp"])
    args = [a.format(**files) for a in argv]
    try:
        got = main(args)
    except SystemExit as exc:  # argparse: the command line's shape
        got = exc.code
    err = capsys.readouterr().err
    assert got == status, f"exit {got}, expected {status}: {err[-2000:]}"
    assert "Traceback" not in err
    if status == 2:
        assert err.count("error:") == 1 and fragment in err, err
        return
    errors = [line for line in err.splitlines() if "ERROR" in line]
    assert len(errors) == 1, err
    assert fragment in errors[0], errors[0]
    if "poweroff" in argv and "-E" not in argv:  # refused before the run, not at t=60 s
        assert not Path(files["out"], "jobs.csv").exists()


def test_every_subcommand_has_rows_in_the_sweep() -> None:
    """A new subcommand gets its bad inputs here too."""
    from batpolicy.app.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    swept = {row[1][0] for row in BAD}
    assert set(sub.choices) <= swept, sorted(set(sub.choices) - swept)

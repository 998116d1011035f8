"""The command line: help, version, policy listing, and one-line errors."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from batpolicy import __version__
from batpolicy.app.cli import build_parser
from batpolicy.platforms.generators import read_machines_csv
from batpolicy.policies.registry import POLICIES


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "batpolicy", *args], capture_output=True,
                          text=True, timeout=60)


def test_version() -> None:
    out = _run("--version")
    assert out.returncode == 0 and __version__ in out.stdout


def test_version_names_the_interpreter_and_its_build() -> None:
    """Its build sets serve's speed: a user quoting figures must see which one ran."""
    out = _run("--version").stdout
    assert f"{platform.python_implementation()} {platform.python_version()}" in out
    maps = Path("/proc/self/maps")  # this test runs the same executable as the command
    if maps.exists():
        linked = "shared" if "libpython" in maps.read_text() else "static"
        assert f"{linked} libpython" in out
    configured = sysconfig.get_config_var("CONFIG_ARGS") or ""
    assert ("--enable-optimizations" in out) == ("--enable-optimizations" in configured)


_PROBE = """
import sys
from batpolicy.app.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(sorted(m for m in sys.modules if m in {HEAVY}), file=sys.stderr)
"""
#: What the quick commands must not import (start-up under 0.15 s; issue 14): numpy and
#: the policies behind it, the simulator, ZeroMQ, the codec, the protocol's types, the
#: workload readers and generators, the platform model, the plug-in scan's metadata.
_HEAVY = {"numpy", "zmq", "orjson", "batpolicy.policies.easy", "batpolicy.policies.dpsa",
          "batpolicy.simulator.engine.simulator", "batpolicy.protocol", "batpolicy.protocol.codec",
          "batpolicy.io.workload", "batpolicy.io.presets",
          "batpolicy.io.swf", "batpolicy.platforms.model",
          "batpolicy.platforms.generators", "importlib.metadata"}


@pytest.mark.parametrize("args", [["--version"], ["serve", "--help"], ["--help"]])
def test_quick_commands_import_nothing_heavy(args: list[str]) -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE.replace("{HEAVY}", repr(_HEAVY)),
                          *args], capture_output=True, text=True, timeout=60)
    assert out.stderr.strip().splitlines()[-1] == "[]", out.stderr


def test_serve_fcfs_starts_without_numpy() -> None:
    # FCFS needs no vectorised queue: without numpy (and OpenBLAS's threads) it starts ~0.1 s sooner
    args = ["serve", "--policy", "fcfs", "--timeout", "0.01", "-s", "tcp://127.0.0.1:*"]
    out = subprocess.run([sys.executable, "-c", _PROBE.replace("{HEAVY}", repr({"numpy"})),
                          *args], capture_output=True, text=True, timeout=60)
    assert "no message from Batsim" in out.stderr  # it did listen, then timed out
    assert out.stderr.strip().splitlines()[-1] == "[]", out.stderr


_BLAS_PROBE = """
import os, sys
from batpolicy.app.cli import console
sys.argv = ["batpolicy", *sys.argv[1:]]
try:
    console()
except SystemExit:
    pass
import numpy  # imported by EASY's queue already
threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
print(os.environ.get("OPENBLAS_NUM_THREADS"), threads, file=sys.stderr)
"""


@pytest.mark.parametrize("preset", [None, "2"])
def test_the_command_runs_openblas_on_one_thread_unless_told(preset: str | None) -> None:
    # numpy's OpenBLAS starts (and spins) a thread per core at import; batpolicy calls no
    # BLAS, so the command defaults to one thread; a user's own setting is kept
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    args = ["serve", "--policy", "easy", "--timeout", "0.01", "-s", "tcp://127.0.0.1:*"]
    out = subprocess.run([sys.executable, "-c", _BLAS_PROBE, *args], capture_output=True,
                         text=True, timeout=60, env=env)
    setting, threads = out.stderr.strip().splitlines()[-1].split()
    assert setting == (preset or "1"), out.stderr
    if preset is None:  # the serving thread alone once ZeroMQ's context is closed
        assert threads == "1", out.stderr


def test_transform_size_choices_are_the_readers() -> None:
    # the parser names them without importing the SWF reader
    from batpolicy.app.io_cli import SIZES
    from batpolicy.io.swf import SIZE_FIELDS

    assert SIZES == SIZE_FIELDS


def _subcommand_options(*path: str) -> dict[str, argparse.Action]:
    """The options of subcommand ``path`` (e.g. "workload", "transform") by their long name."""
    parser = build_parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return {a.option_strings[-1] if a.option_strings[-1].startswith("--") else
            a.option_strings[0]: a for a in parser._actions if a.option_strings}


READER_OPTIONS = ("--max-jobs", "--start", "--end", "--status", "--size", "--lenient")


@pytest.mark.parametrize("option", READER_OPTIONS)
def test_each_reader_option_is_one_declaration_with_one_help(option: str) -> None:
    """simulate, fake-batsim and workload transform read workloads alike (issue 42, item 2).

    The options were declared twice, in io_cli and sim_cli, with different help (e.g.
    --lenient and --start said different things for the same reader).
    """
    commands = [("simulate",), ("fake-batsim",), ("workload", "transform")]
    actions = [_subcommand_options(*command)[option] for command in commands]
    assert len({(a.help, a.type, a.default, a.metavar, tuple(a.choices or ())) for a in actions}) \
        == 1, [a.help for a in actions]


@pytest.mark.parametrize("command", ["serve", "policies"])
def test_help_of_every_command(command: str) -> None:
    out = _run(command, "--help")
    assert out.returncode == 0 and "usage:" in out.stdout


def test_every_registry_key_is_its_class_name() -> None:
    # the registry names policies without importing them; the class must agree
    for name, cls in POLICIES.items():
        assert cls.name == name


def test_policies_lists_every_policy_with_its_parameters() -> None:
    out = _run("policies")
    assert out.returncode == 0
    for name, cls in POLICIES.items():
        assert name in out.stdout
        for param in cls.parameters:
            assert f"--param {param.name}:" in out.stdout


@pytest.mark.parametrize("args,needle", [
    (["serve", "--policy", "easy", "--param", "order=random"], "order"),
    (["serve", "--policy", "easy", "--param", "nonsense=1"], "nonsense"),
    (["serve", "--policy", "easy", "--param", "novalue"], "KEY=VALUE"),
])
def test_bad_parameters_give_one_clear_line(args: list[str], needle: str) -> None:
    out = _run(*args)
    assert out.returncode != 0
    assert needle in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_unknown_policy_is_refused_by_name() -> None:
    out = _run("serve", "--policy", "nope")
    assert out.returncode != 0 and "nope" in out.stderr and "Traceback" not in out.stderr


def test_a_run_as_a_process_exits_with_its_outputs_whole(tmp_path: Path) -> None:
    """The process entry freezes the collector before exit: nothing written may be lost."""
    out = _run("simulate", "-o", str(tmp_path), "-q")  # the bundled 250-job workload
    assert out.returncode == 0, out.stderr
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["complete"] is True
    rows = (tmp_path / "jobs.csv").read_text().splitlines()
    assert len(rows) == 1 + metrics["nb_jobs"] == 251
    assert len((tmp_path / "schedule.csv").read_text().splitlines()) == 2
    failed = _run("simulate", "-o", str(tmp_path / "bad"), "-q", "--bsld-tau", "0")
    assert failed.returncode == 1 and "--bsld-tau" in failed.stderr


def _options(parser: argparse.ArgumentParser, path: str
             ) -> Iterator[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{path} {name}")
        else:
            yield path, parser, action


def test_every_option_of_every_command_says_what_it_does() -> None:
    """Issue 31 item 15: `platform multicluster --clusters` and `racks --racks` had no help."""
    bare = [f"{path} {action.option_strings or action.dest}"
            for path, _, action in _options(build_parser(), "batpolicy") if not action.help]
    assert bare == []


def test_machines_help_shows_the_header_row_the_reader_requires(tmp_path: Path) -> None:
    [spec] = [action.help for path, _, action in _options(build_parser(), "batpolicy")
              if path == "batpolicy platform machines" and "--spec" in action.option_strings]
    assert "header" in spec and "'cpus,speed'" in spec
    rows = tmp_path / "m.csv"  # the example as the help gives it is what the reader accepts
    rows.write_text("cpus,speed\n4,2Gf\n")
    assert read_machines_csv(rows) == [(None, 4, "2Gf", False)]


@pytest.mark.parametrize("args", [["policies"], ["workload", "presets"]])
def test_a_listing_into_a_closed_pipe_is_no_traceback(args: list[str]) -> None:
    """`batpolicy workload presets | head`: the reader leaves early, the writer stays quiet."""
    read, write = os.pipe()
    os.close(read)  # every write now fails with EPIPE, as once `head` has exited
    try:
        done = subprocess.run([sys.executable, "-m", "batpolicy", *args], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write)
    assert done.returncode == 1 and done.stderr == ""


@pytest.mark.parametrize("words", [
    ["serve"],
    ["serve", "--policy", "easy", "--param", "queue=fifo", "-s", "tcp://127.0.0.1:29000"],
    ["serve", "--policy", "fcfs", "--batsim", "auto", "--timeout", "3", "--record", "t.msgpack"],
])
def test_serve_alone_parses_as_the_whole_parser_does(words: list[str]) -> None:
    """``batpolicy serve ...`` builds only serve's parser (start-up): same options, same values."""
    whole = build_parser().parse_args(words)
    alone = build_parser(only_serve=True).parse_args(words)
    assert vars(alone) == vars(whole)


def test_serve_does_not_import_the_other_commands() -> None:
    """The daemon's start-up leaves out the simulator's, the campaign's and the plots' CLI."""
    others = ["batpolicy.app.sim_cli", "batpolicy.app.platforms_cli", "batpolicy.app.plot_cli",
              "batpolicy.app.io_cli", "batpolicy.app.campaign.cli", "batpolicy.simulator"]
    code = ("import sys; from batpolicy.app import cli; cli.build_parser(only_serve=True); "
            f"print(sorted(m for m in {others!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "[]"
    out = _run("serve", "--policy", "nosuchpolicy")  # errors still name the choices
    assert out.returncode != 0 and "easy" in out.stderr

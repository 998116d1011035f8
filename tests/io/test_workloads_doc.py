"""docs/workloads.md's commands run as written (issue 31: run every docs command).

The ``workload`` lines run in a temporary folder (the trace linked from ../shared when
present); the ``simulate`` line, a whole RICC week (a minute), is only parsed.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from batpolicy.app.cli import build_parser, main

from clirun import restore_logging  # noqa: F401  (autouse fixture)
from conftest import SHARED_DATA

DOC = Path(__file__).resolve().parents[2] / "docs" / "workloads.md"


def _commands() -> list[list[str]]:
    block = DOC.read_text().split("```")[1]
    return [shlex.split(line, comments=True)[1:] for line in block.strip().splitlines()]


def test_the_commands_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    written = []
    for command in _commands():
        if command[0] == "simulate":
            build_parser().parse_args(command)
            continue
        traces = [a for a in command if a.endswith((".swf", ".swf.gz"))]
        if traces and not (SHARED_DATA / "traces" / traces[0]).is_file():
            continue  # a clean clone has no trace
        for trace in traces:
            (tmp_path / trace).symlink_to(SHARED_DATA / "traces" / trace)
        assert main(command) == 0, command
        if "-o" in command:
            written.append(command[command.index("-o") + 1])
    assert len(written) == len(set(written))  # no line overwrites another's output
    assert all((tmp_path / name).is_file() for name in written)

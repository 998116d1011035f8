"""A campaign's results folder is checked first, and Ctrl-C stops it in one line (issue 47, item 2).

``-o /proc/x`` and ``-o`` an existing file ended in a FileNotFoundError / FileExistsError
traceback from the runner's ``mkdir`` (and ``--dry-run`` said nothing and exited 0);
Ctrl-C during ``campaign -j 2`` printed every worker's traceback (~110 lines). Now each
is one line naming what and where, a non-zero exit, and the runs finished before the
Ctrl-C are in ``results.csv``.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from batpolicy.app.cli import main
from batpolicy.io.inputs import DEFAULT_WORKLOAD, bundled


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
@pytest.mark.parametrize("where", ["proc", "file", "under-a-file"])
def test_an_unusable_results_folder_is_one_line_before_any_run(
        small_campaign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        where: str, dry_run: bool) -> None:
    (tmp_path / "afile").write_text("x")
    target = {"proc": "/proc/batpolicy-x", "file": str(tmp_path / "afile"),
              "under-a-file": str(tmp_path / "afile" / "sub")}[where]
    if where == "proc" and not Path("/proc/self").exists():
        pytest.skip("no /proc here")
    status = main(["campaign", str(small_campaign), "-o", target, "-j", "1", "--no-progress",
                   *(["--dry-run"] if dry_run else [])])
    err = capsys.readouterr().err
    assert status == 1
    assert target in err and "results folder" in err
    assert not (tmp_path / "res").exists()  # no run started


def test_a_dry_run_leaves_nothing_behind(small_campaign: Path, tmp_path: Path) -> None:
    assert main(["campaign", str(small_campaign), "-o", str(tmp_path / "new" / "sub"),
                 "--dry-run"]) == 0
    assert not (tmp_path / "new").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["small.toml"]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT")
def test_ctrl_c_during_a_parallel_campaign_is_one_line_and_keeps_finished_runs(
        tmp_path: Path) -> None:
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it."""
    toml = tmp_path / "c.toml"
    toml.write_text(f'[defaults]\nworkload = "{bundled(DEFAULT_WORKLOAD)}"\nnb_res = 128\n'
                    '[[grid]]\npolicy = ["conservative", "easy"]\n'
                    f'seed = {list(range(1, 31))}\n')
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, "-m", "batpolicy", "campaign", str(toml), "-j", "2",
                             "-o", str(out), "--no-progress"], start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("runs/*/row.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the campaign ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130
    assert "Traceback" not in err, err[-3000:]
    lines = [line for line in err.splitlines() if "INFO" not in line]
    assert len(lines) == 1 and "campaign interrupted (SIGINT)" in lines[0], err[-3000:]
    finished = len(list(out.glob("runs/*/row.json")))
    assert finished >= 1
    assert f"{finished} of 60 runs finished" in lines[0]
    assert len(_rows(out / "results.csv")) == finished
    assert not any(p.name.startswith(".batpolicy-probe") for p in out.iterdir())

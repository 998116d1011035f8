"""What the workload commands and ``simulate`` say of their inputs (issue 31, item 15).

Every command reports through the log (``batpolicy: INFO: ...`` on stderr), saying where
a number comes from, in words rather than Python reprs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batpolicy.app import cli

from clirun import restore_logging  # noqa: F401  (autouse fixture)

#: A tiny SWF trace: a 16-processor machine, three jobs that all survive the cleaning.
SWF = """; MaxProcs: 16
1 0 0 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1
2 5 0 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1
3 9 0 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1
"""


def _info(capsys: pytest.CaptureFixture[str], *, stdout: bool = False) -> list[str]:
    """The INFO lines on stderr; stdout must be empty unless ``stdout`` (simulate's table)."""
    out, err = capsys.readouterr()
    assert stdout or out == ""  # a summary is a log line, not bare text on stdout
    return [line.removeprefix("batpolicy: INFO: ") for line in err.splitlines()
            if line.startswith("batpolicy: INFO: ")]


def test_synth_and_transform_report_through_the_log(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, dst = tmp_path / "w.json", tmp_path / "t.json"
    assert cli.main(["workload", "synth", "--preset", "uniform", "--seed", "7", "--param",
                     "nb_jobs=20", "-o", str(src)]) == 0
    assert f"wrote {src}: 20 jobs, 20 profiles, nb_res 32 (preset uniform, seed 7)" \
        in _info(capsys)
    assert cli.main(["workload", "transform", str(src), "--max-jobs", "5", "-o",
                     str(dst)]) == 0
    assert f"wrote {dst}: 5 of 5 jobs, 5 profiles, nb_res 32" in _info(capsys)


def test_a_json_workload_sizes_the_platform_by_its_nb_res(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "w.json"
    assert cli.main(["workload", "synth", "--preset", "uniform", "--param", "nb_jobs=5",
                     "-o", str(src)]) == 0
    capsys.readouterr()
    assert cli.main(["simulate", "-w", str(src), "-o", str(tmp_path / "out")]) == 0
    assert f"platform: 32 identical machines (nb_res of {src})" in _info(capsys, stdout=True)


def test_an_swf_trace_says_what_it_kept_in_words(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(SWF)
    assert cli.main(["simulate", "-w", str(trace), "-o", str(tmp_path / "out")]) == 0
    info = _info(capsys, stdout=True)
    assert f"{trace}: 3 jobs kept, none dropped" in info
    assert f"platform: 16 identical machines (the header of {trace})" in info
    assert cli.main(["simulate", "-w", str(trace), "--max-jobs", "2", "-o",
                     str(tmp_path / "out2")]) == 0
    assert f"{trace}: 2 jobs kept, dropped 1 (beyond_max_jobs 1)" in _info(capsys, stdout=True)

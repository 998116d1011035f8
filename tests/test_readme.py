"""The README's commands run as written and leave the checkout clean (issue 31, item 13).

The set-up's default run (``batpolicy simulate``), then every line of the "Use" section's
first block, top to bottom, in a copy of this checkout made a git repository of its own:
each line must exit 0 and ``git status --porcelain`` must stay empty after it (outputs
go to the git-ignored ``out/``). The section's second block (``serve`` and its peer
``fake-batsim``, two processes that wait for each other) runs as two processes on a free
port instead of Batsim's default one, which another run on the machine may hold.

Commands run through the ``batpolicy`` entry point beside this interpreter (the
installed one), or ``python -m batpolicy`` when there is none, in ``bash``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import free_port

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: Long enough for the slowest line (the campaign) on a loaded 2-core machine.
LINE_TIMEOUT_S = 180


def section(title: str, text: str | None = None) -> str:
    """The text of the README's ``## title`` section, up to the next ``## `` heading."""
    text = README.read_text() if text is None else text
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README.md has no '## {title}' section"
    return match.group(1)


def fenced_commands(text: str) -> list[list[str]]:
    r"""The shell commands of each fenced block: ``\`` continuations joined, comments dropped.

    >>> fenced_commands("x\n```sh\n# c\na b \\\n  c   # d\n\ne\n```\n")
    [['a b c   # d', 'e']]
    """
    blocks = []
    for body in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S):
        joined = re.sub(r"\\\n\s*", "", body)
        blocks.append([line.strip() for line in joined.splitlines()
                       if line.strip() and not line.lstrip().startswith("#")])
    return blocks


def _bin_dir(tmp: Path) -> Path:
    """A folder whose ``batpolicy`` runs this interpreter's batpolicy."""
    installed = Path(sys.executable).parent / "batpolicy"
    if installed.is_file():
        return installed.parent
    shim = tmp / "bin" / "batpolicy"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m batpolicy "$@"\n')
    shim.chmod(0o755)
    return shim.parent


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


class Checkout:
    """A copy of this checkout's files as a git repository of its own, and a shell in it."""

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.root = root
        self.env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                    "MPLBACKEND": "Agg"}

    def status(self) -> str:
        return _git(self.root, "status", "--porcelain")

    def run(self, line: str, what: str = "README", timeout: float | None = None) -> str:
        """Run one line; fail naming it if it fails or leaves the tree unclean; its stderr."""
        done = subprocess.run(["bash", "-e", "-c", line], cwd=self.root, env=self.env,
                              capture_output=True, text=True,
                              timeout=timeout or LINE_TIMEOUT_S)
        assert done.returncode == 0, \
            f"{what} line failed (exit {done.returncode}): {line}\n{done.stderr[-3000:]}"
        assert self.status() == "", f"{what} line dirtied the checkout: {line}\n{self.status()}"
        return done.stderr


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    """The copy, after the set-up's default run (the Use section starts from there)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout of batpolicy")
    tmp = tmp_path_factory.mktemp("readme")
    root = tmp / "clone"
    listed = _git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "copy")
    shell = Checkout(root, _bin_dir(tmp))
    assert shell.status() == ""
    set_up = section("Set up")
    assert "python -m pip install . && batpolicy simulate" in set_up
    shell.run("batpolicy simulate")  # the install is this test's own environment
    assert (root / "out" / "jobs.csv").is_file()
    return shell


def test_the_use_block_runs_as_written_and_leaves_the_checkout_clean(
        checkout: Checkout) -> None:
    lines = fenced_commands(section("Use"))[0]
    assert len(lines) > 15
    said = {line: checkout.run(line) for line in lines}
    # what a new user reads on the way (issue 47, item 6): no warning that misleads
    everything = "".join(said.values())
    assert "without a walltime" not in everything  # nstep kills jobs by its own rule
    nstep = next(err for line, err in said.items() if "--preset nstep-exp2" in line)
    assert "100 jobs in 2 streams of 50, 50 (the preset's job count is per stream)" in nstep
    kth = next(err for line, err in said.items() if "-o out/kth-easy" in line)
    assert "outputs: out/kth-easy/jobs.csv, out/kth-easy/schedule.csv, " \
        "out/kth-easy/machine_states.csv, out/kth-easy/metrics.json" in kth
    out = checkout.root / "out"
    for run in ("kth-easy", "kth-load1.5-easy", "nstep-soft", "coalloc-b3", "tabu"):
        assert (out / run / "metrics.json").is_file(), run
    assert (out / "redirection_demo" / "results.csv").is_file()
    assert list((out / "kth-easy" / "plots").glob("*.png"))
    assert list((out / "redirection_demo" / "plots").glob("*.png"))


def test_the_set_up_is_two_commands_and_every_later_install_is_editable() -> None:
    """The plot extra after the editable test install must stay editable (issue 47, item 6).

    ``python -m pip install '.[plot]'`` after ``pip install -e '.[test]'`` replaced the
    editable install with a copy: edits in the clone stopped taking effect.
    """
    text = README.read_text()
    set_up = [line.strip() for line in section("Set up").splitlines()
              if line.startswith("    ") and line.strip()]
    assert set_up == ["python -m pip install . && batpolicy simulate",
                      "python -m pip install -e '.[test]' && python -m pip install --no-deps "
                      "pybatsim==3.2.1 && python -m pytest"]
    after = text[text.index("## Use"):]
    installs = re.findall(r"pip install ([^`\n]*)", after[:after.index("## Docker")])
    assert installs and all(i.startswith("-e ") or i.startswith("--no-deps")
                            for i in installs), installs


def test_serve_and_fake_batsim_talk_as_the_readme_says(checkout: Checkout) -> None:
    serve, peer = fenced_commands(section("Use"))[1]
    assert serve.startswith("batpolicy serve") and peer.startswith("batpolicy fake-batsim")
    port = free_port()
    daemon = subprocess.Popen(["bash", "-e", "-c", f"{serve} -s tcp://127.0.0.1:{port}"],
                              cwd=checkout.root, env=checkout.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        checkout.run(f"{peer} -s tcp://127.0.0.1:{port}")
        _, err = daemon.communicate(timeout=LINE_TIMEOUT_S)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert daemon.returncode == 0, err[-3000:]
    assert checkout.status() == ""
    out = checkout.root / "out"
    # fake-batsim on the bundled inputs plays what simulate computed in the set-up
    assert (out / "served" / "jobs.csv").read_text() == (out / "jobs.csv").read_text()
    assert (out / "served.msgpack").stat().st_size > 0

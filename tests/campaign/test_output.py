"""A campaign run from a checkout never writes into tracked files (issue 31, item 2).

``batpolicy campaign bench/campaigns/nstep_table1.toml`` (the README's line) used to write
beside the campaign file, into the committed ``bench/campaigns/results/<name>/``. Without
``--output-dir`` the results now go to ``./campaign-results/<name>/`` under the current
folder, which the repository ignores.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from batpolicy.app.campaign.spec import load_campaign
from batpolicy.app.cli import main
from batpolicy.io.inputs import DEFAULT_WORKLOAD, bundled

REPO = Path(__file__).resolve().parents[2]
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@needs_git
def test_a_campaign_run_from_a_checkout_leaves_git_status_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout with a campaign file under bench/campaigns and the repository's ignores."""
    repo = tmp_path / "clone"
    (repo / "bench" / "campaigns").mkdir(parents=True)
    shutil.copy(REPO / ".gitignore", repo / ".gitignore")
    (repo / "bench" / "campaigns" / "tiny.toml").write_text(
        f'[defaults]\nworkload = "{bundled(DEFAULT_WORKLOAD)}"\nmax_jobs = 20\n'
        '[[grid]]\npolicy = ["fcfs", "easy"]\n')
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tiny")
    monkeypatch.chdir(repo)
    assert main(["campaign", "bench/campaigns/tiny.toml", "-j", "1", "--no-progress"]) == 0
    assert _git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert (repo / "campaign-results" / "tiny" / "results.csv").is_file()


def test_output_dir_names_the_results_folder(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text('[[run]]\npolicy = "fcfs"\nmax_jobs = 10\n')
    assert main(["campaign", str(toml), "--output-dir", str(tmp_path / "mine"), "-j", "1",
                 "--no-progress"]) == 0
    assert (tmp_path / "mine" / "results.csv").is_file()


@needs_git
def test_the_readme_campaign_writes_nothing_tracked(monkeypatch: pytest.MonkeyPatch) -> None:
    """From the repository's root, nstep_table1.toml's default output is git-ignored."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    monkeypatch.chdir(REPO)
    out = load_campaign(REPO / "bench" / "campaigns" / "nstep_table1.toml").output
    relative = out.relative_to(REPO)
    assert _git(REPO, "ls-files", str(relative)) == ""
    subprocess.run(["git", "check-ignore", "-q", str(relative / "results.csv")], cwd=REPO,
                   check=True)


@needs_git
def test_plotting_committed_results_writes_outside_the_tracked_tree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``plot`` of a git-tracked results table puts its PNG under out/plots/ (issue 47, item 1).

    Before, it wrote its PNGs into the committed campaign results folder, in the clone.
    """
    pytest.importorskip("matplotlib")
    repo = tmp_path / "clone"
    results = repo / "bench" / "campaigns" / "results" / "redirection_demo"
    results.mkdir(parents=True)
    shutil.copy(REPO / "bench/campaigns/results/redirection_demo/results.csv", results)
    (repo / ".gitignore").write_text("/out/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "results")
    monkeypatch.chdir(repo)
    assert main(["plot", str(results.relative_to(repo)), "--heatmap", "theta", "alpha",
                 "--metric", "mean_bounded_slowdown", "--policy", "redirection"]) == 0
    assert _git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert list((repo / "out" / "plots" / "redirection_demo").glob("*.png"))

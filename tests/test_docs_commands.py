"""The command lines of docs/*.md run as written from a clone and leave it clean (issue 47, item 1).

Every ``batpolicy`` (and ``batsim``) line of a doc's code blocks runs top to bottom in a
copy of this checkout made a git repository of its own (:class:`test_readme.Checkout`):
each must exit 0 and ``git status --porcelain`` stay empty (outputs go under ``out/``).
A line ending in ``&`` runs with the next one, as a shell runs them: ``serve`` and its
peer. Sockets: each ``serve``/``fake-batsim``/``batsim`` gets ``-s`` on a free loopback
port and a timeout; Batsim's part is played by ``batpolicy fake-batsim``, which takes
Batsim's flags (real Batsim's runs are the tests that need it). The docs in
:data:`NOT_RUN_YET` are not run here yet, each with its reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clirun import free_port
from test_readme import Checkout, checkout  # noqa: F401  (the module's fixture)

DOCS = Path(__file__).resolve().parents[1] / "docs"

#: Docs whose lines this test does not run yet: why.
NOT_RUN_YET = {
    "add_a_policy.md": "needs the reader's plug-in package installed",
    "campaigns.md": "placeholders (FILE.toml, results/X) and a Dask cluster",
    "energy.md": "the paper-size campaign and real batsched",
    "pybatsim.md": "pip lines and a user's scheduler file",
    "deadline.md": "the 700-run Fig. 4 campaign (25 min)",
    "batsim5.md": "real Batsim 5 (tests/batsim5 plays it with fake-batsim --batsim 5, and "
                  "runs the builds when present)",
    "gym.md": "the full training run (minutes; tests/gym checks the example's short run) "
              "and a serve that waits for the reader's Batsim",
}


def doc_commands(text: str) -> list[str]:
    r"""The command lines of a doc's fenced and indented blocks, continuations joined.

    >>> doc_commands("```sh\n# d\nbatpolicy e &\nbatpolicy f \\\n  -o g\n```\n")
    ['batpolicy e & batpolicy f -o g']
    """
    bodies = re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S)
    bodies += re.findall(r"(?:^\n)((?:^    \S.*\n(?:^    .*\n)*))", text, re.M)
    lines: list[str] = []
    for body in bodies:
        joined = re.sub(r"\\\n\s*", "", body)
        for line in (raw.strip() for raw in joined.splitlines()):
            if not re.match(r"(batpolicy|batsim) ", line):
                continue
            if lines and lines[-1].endswith("&"):
                lines[-1] = f"{lines[-1]} {line}"
            else:
                lines.append(line)
    return lines


def _wired(line: str) -> str:
    """``line`` on a free port, Batsim played by fake-batsim, every peer bounded in time."""
    port = free_port()
    line = re.sub(r"(^|&\s*)batsim ", r"\1batpolicy fake-batsim ", line)
    line = re.sub(r"batpolicy (serve|fake-batsim)",
                  rf"batpolicy \1 -s tcp://127.0.0.1:{port} --timeout 60", line)
    return f"{line}; wait" if "&" in line else line


DOCS_RUN = sorted(p.name for p in DOCS.glob("*.md")
                  if p.name not in NOT_RUN_YET and doc_commands(p.read_text()))


@pytest.mark.parametrize("doc", DOCS_RUN)
def test_the_docs_lines_run_as_written_and_leave_the_clone_clean(
        doc: str, checkout: Checkout) -> None:  # noqa: F811
    pytest.importorskip("matplotlib") if "batpolicy plot" in (DOCS / doc).read_text() else None
    for line in doc_commands((DOCS / doc).read_text()):
        checkout.run(_wired(line), what=doc)


def test_every_doc_with_commands_is_run_or_says_why_not() -> None:
    with_commands = {p.name for p in DOCS.glob("*.md") if doc_commands(p.read_text())}
    assert set(NOT_RUN_YET) <= with_commands
    assert with_commands - set(NOT_RUN_YET) == set(DOCS_RUN)

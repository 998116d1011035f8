"""The command lines of docs/*.md run as written from a clone and leave it clean (issue 47, item 1).

Every ``batpolicy``, ``batsim`` and ``python`` line of a doc's code blocks runs top to
bottom in a copy of this checkout made a git repository of its own
(:class:`test_readme.Checkout`): each must exit 0 and ``git status --porcelain`` stay
empty (outputs go under ``out/``). A block after ``<!-- not run: REASON -->`` is not run
(a Dask cluster, an installation into the reader's environment, real Batsim: the doc's
text says so too); one after ``<!-- slow: REASON -->`` only with ``-m benchmark``
(:func:`test_the_docs_slow_lines_run_as_written_too`), the doc giving a quick form first.
A line ending in ``&`` runs with the next one, as a shell runs them: ``serve`` and its
peer. Sockets: each ``serve``/``fake-batsim``/``batsim`` gets ``-s`` on a free loopback
port and a timeout; Batsim's part is played by ``batpolicy fake-batsim``, which takes
Batsim's flags (real Batsim's runs are the tests that need it). The docs in
:data:`BESIDE_REAL_BATSIM5` speak Batsim 5's command line, which fake-batsim does not
take: their lines run beside real Batsim 5 (:func:`test_the_batsim5_doc_runs_beside_real_batsim5`).
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_readme import REPO, Checkout, checkout  # noqa: F401  (the module's fixture)

from clirun import free_port

DOCS = Path(__file__).resolve().parents[1] / "docs"

#: Docs whose ``batsim`` lines are Batsim 5's command line: run beside real Batsim 5 only.
BESIDE_REAL_BATSIM5 = {"batsim5.md"}


#: A comment on the line before a block (a blank line between allowed) that sets it apart,
#: its reason after the colon: ``not run`` blocks are never run here (the doc's text says
#: why: a cluster, an installation, real Batsim), ``slow`` ones only by the
#: benchmark-marked test.
MARK = re.compile(r"<!--\s*(not run|slow):\s*((?:(?!-->).)*?)\s*-->\s*\n(?:[ \t]*\n)?\Z",
                  re.S)
#: Fenced blocks, then (where no fence is open) blocks indented by four spaces after a
#: blank line, in the doc's order.
BLOCK = re.compile(r"^```[a-z]*\n(.*?)^```|(?:^\n)((?:^    \S[^\n]*\n(?:^    [^\n]*\n)*))",
                   re.M | re.S)
#: The lines that are commands: batpolicy's, Batsim's (played by fake-batsim) and scripts.
COMMAND = re.compile(r"(nice |python )?(batpolicy|batsim) |python ")
#: A comment ending a line (``cmd &  # waits for Batsim``).
COMMENT = re.compile(r"\s+#(\s.*)?$")


def doc_blocks(text: str) -> list[tuple[str, str, list[str]]]:
    r"""Each block's mark (``""``, ``"not run"``, ``"slow"``), reason and command lines.

    Continuations are joined, and a line ending in ``&`` with the next command line.

    >>> doc_blocks("```sh\n# d\nbatpolicy e &  # c\nbatpolicy f \\\n  -o g\n```\n"
    ...            "<!-- slow: long -->\n\n    python x.py\n    pip y\n")
    [('', '', ['batpolicy e & batpolicy f -o g']), ('slow', 'long', ['python x.py'])]
    """
    blocks: list[tuple[str, str, list[str]]] = []
    for match in BLOCK.finditer(text):
        mark = MARK.search(text, 0, match.start() + (match.group(2) is not None))
        joined = re.sub(r"\\\n\s*", "", match.group(1) or match.group(2))
        lines: list[str] = []
        for line in (raw.strip() for raw in joined.splitlines()):
            if not COMMAND.match(line):
                continue
            if lines and COMMENT.sub("", lines[-1]).endswith("&"):
                lines[-1] = f"{COMMENT.sub('', lines[-1])} {line}"
            else:
                lines.append(line)
        if lines:
            blocks.append((mark.group(1), mark.group(2)) + (lines,) if mark else ("", "", lines))
    return blocks


def doc_commands(text: str, slow: bool = False) -> list[str]:
    r"""The command lines a doc runs, in order: no ``not run`` block's, ``slow`` ones' if asked.

    >>> doc_commands("```sh\n# d\nbatpolicy e &\nbatpolicy f \\\n  -o g\n```\n")
    ['batpolicy e & batpolicy f -o g']
    """
    return [line for mark, _, lines in doc_blocks(text)
            if mark == "" or (slow and mark == "slow") for line in lines]


def _wired(line: str) -> str:
    """``line`` on a free port, Batsim played by fake-batsim, every peer bounded in time."""
    port = free_port()
    line = re.sub(r"(^|&\s*)batsim ", r"\1batpolicy fake-batsim ", line)
    line = re.sub(r"batpolicy (serve|fake-batsim)",
                  rf"batpolicy \1 -s tcp://127.0.0.1:{port} --timeout 60", line)
    return f"{line}; wait" if "&" in line else line


def _doc_shell(doc: str, checkout: Checkout) -> Checkout:  # noqa: F811
    """The shell a doc's lines run in: the clone's, with what the doc's set-up provides."""
    return SET_UP.get(doc, lambda shell: shell)(checkout)


def _run_doc(doc: str, checkout: Checkout, slow: bool) -> None:  # noqa: F811
    text = (DOCS / doc).read_text()
    pytest.importorskip("matplotlib") if "batpolicy plot" in text else None
    pytest.importorskip("batsim") if "--policy pybatsim:" in text else None
    pytest.importorskip("gymnasium") if "gym_train.py" in text else None
    shell = _doc_shell(doc, checkout)
    for line in doc_commands(text, slow=slow):
        shell.run(_wired(line), what=doc, timeout=SLOW_LINE_TIMEOUT_S if slow else None)


def _plugin_installed(checkout: Checkout) -> Checkout:  # noqa: F811
    """The shell with docs/examples/my_package pip-installed into a folder on PYTHONPATH.

    Not into this environment (as the doc's ``pip install -e`` would): pip builds a copy
    of the package outside the clone, into a folder beside it, without network or build
    isolation (as tests/plugins do). The doc's step 1 is the package's module.
    """
    package = checkout.root / "docs" / "examples" / "my_package"
    code = re.findall(r"^```python\n(.*?)^```", (DOCS / "add_a_policy.md").read_text(),
                      re.M | re.S)[0]
    assert code in (package / "my_package" / "policies.py").read_text()
    site = checkout.root.parent / "plugin-site"
    if not site.is_dir():
        source = checkout.root.parent / "plugin-source"
        shutil.copytree(package, source)
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                               "--no-build-isolation", "--no-index", "--target", str(site),
                               str(source)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"cannot pip-install my_package: {done.stderr[-2000:]}"
    shell = copy.copy(checkout)
    path = os.environ.get("PYTHONPATH")
    shell.env = {**checkout.env, "PYTHONPATH": f"{site}{os.pathsep}{path}" if path else str(site)}
    return shell


#: What a doc's lines need that its ``not run`` blocks give the reader: doc -> function of
#: the clone's shell returning the shell to run the lines in.
SET_UP: dict[str, Callable[[Checkout], Checkout]] = {"add_a_policy.md": _plugin_installed}
#: Docs whose slow lines read the shared traces (paper-size campaigns).
NEEDS_SHARED_DATA = {"energy.md"}
#: A slow line's bound (the 700-run campaign takes 25 min on the shared 2-core machine).
SLOW_LINE_TIMEOUT_S = 3 * 3600

DOCS_RUN = sorted(p.name for p in DOCS.glob("*.md")
                  if p.name not in BESIDE_REAL_BATSIM5 and doc_commands(p.read_text()))
#: The docs with ``slow`` blocks: the benchmark-marked test runs all their lines.
DOCS_SLOW = sorted(p.name for p in DOCS.glob("*.md") if p.name not in BESIDE_REAL_BATSIM5
                   and any(mark == "slow" for mark, _, _ in doc_blocks(p.read_text())))


@pytest.mark.parametrize("doc", DOCS_RUN)
def test_the_docs_lines_run_as_written_and_leave_the_clone_clean(
        doc: str, checkout: Checkout) -> None:  # noqa: F811
    _run_doc(doc, checkout, slow=False)


@pytest.mark.benchmark
@pytest.mark.parametrize("doc", DOCS_SLOW)
def test_the_docs_slow_lines_run_as_written_too(
        doc: str, checkout: Checkout) -> None:  # noqa: F811
    """Every line but the ``not run`` blocks', the ``slow`` blocks' too (``-m benchmark``).

    The paper-size campaigns read the shared traces from the ``shared`` folder beside the
    clone: it is linked there when found (``$BATPOLICY_SHARED_DATA``, else the ``shared``
    folder's ``data`` beside this checkout).
    """
    shared = Path(os.environ.get("BATPOLICY_SHARED_DATA", REPO.parent / "shared" / "data"))
    beside = checkout.root.parent / "shared"
    if doc in NEEDS_SHARED_DATA and not shared.is_dir():
        pytest.skip(f"{doc}'s slow lines read the shared traces ({shared} is missing)")
    if shared.is_dir() and not beside.exists():
        beside.symlink_to(shared.parent, target_is_directory=True)
    _run_doc(doc, checkout, slow=True)


@pytest.mark.batsim5
@pytest.mark.parametrize("doc", sorted(BESIDE_REAL_BATSIM5))
def test_the_batsim5_doc_runs_beside_real_batsim5(doc: str, checkout: Checkout) -> None:  # noqa: F811
    """The doc's lines as written, ``batsim`` being real Batsim 5 (``$BATSIM5_PREFIX``).

    Both processes must exit 0 and Batsim must write its jobs; skipped when Batsim 5 is
    not built here (``docker/batsim5/build.sh``) or is the rc2 build, whose EDC options
    differ from the snapshot's that the doc shows.
    """
    from batsim5 import live

    if not live.available():
        pytest.skip(f"Batsim 5 not built under {live.PREFIX}")
    if live.is_rc2():
        pytest.skip(f"{live.PREFIX} is the rc2 build; the doc shows the snapshot's options")
    for line in doc_commands((DOCS / doc).read_text()):
        port = free_port()
        line = re.sub(r"(^|&\s*)batsim ", rf"\1{live.PREFIX / 'bin' / 'batsim'} ", line)
        line = line.replace("tcp://localhost:28000", f"tcp://127.0.0.1:{port}")
        line = re.sub(r"batpolicy serve",
                      rf"batpolicy serve -s tcp://127.0.0.1:{port} --timeout 60", line)
        checkout.run(f"{line}; wait" if "&" in line else line, what=doc, timeout=600)
    jobs = (checkout.root / "out" / "batsim5" / "jobs.csv").read_text().splitlines()
    assert len(jobs) == 1 + 250  # the header, then every job of the workload


def test_every_doc_with_commands_is_run_or_says_why_not() -> None:
    blocks = {p.name: doc_blocks(p.read_text()) for p in DOCS.glob("*.md")}
    with_commands = {name for name, found in blocks.items() if found}
    assert BESIDE_REAL_BATSIM5 <= with_commands
    assert with_commands - BESIDE_REAL_BATSIM5 == set(DOCS_RUN) | set(DOCS_SLOW)
    unexplained = [(name, lines) for name, found in blocks.items()
                   for mark, why, lines in found if mark and not why.strip()]
    assert not unexplained, f"a marked block says no reason: {unexplained}"

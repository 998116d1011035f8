"""References from the documentation to files: which exist in the repository, which do not.

Reads README.md, docs/*.md and every docstring of the Python files under batpolicy/,
bench/ and tests/, and lists each markdown link to a file and each path-like reference
(``docs/...``, ``bench/...``, ``seeds/...``, ``../shared/...``, ``PROTOCOL.md``,
``DESIGN.md``, ``STYLE.md``), flagging those that name no file or folder of the
repository: a clone lacks them. A document outside the repository is named as such
(Batsim's documentation, a URL), not by a path. Usage::

    python tests/doc_references.py          # the missing ones; exit status 1 if any
    python tests/doc_references.py --all    # every reference, found or not

``tests/test_doc_links.py`` fails on a missing markdown link or ``docs/``/``bench/`` path.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: ``[text](target)``; a target with a scheme or only an anchor is no file.
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
#: A path-like reference: one of the repository's top folders (or the shared folder beside
#: the clone, or a seed) followed by a path; ``<...>``/``*`` parts are wildcards.
PATH = re.compile(r"(?<![\w./-])((?:docs|bench|seeds|\.\./shared)/[\w./*<>{}-]*[\w*>}/])")
#: Documents that other projects (or an earlier layout) had at their root.
ROOT_DOC = re.compile(r"(?<![\w./-])((?:PROTOCOL|DESIGN|STYLE)\.md)\b")


@dataclass(frozen=True)
class Reference:
    """One reference: where it is written, what it names, and whether that exists."""

    source: str  # file:line
    kind: str  # "link" or "path"
    target: str
    exists: bool


def _exists(target: str, base: Path) -> bool:
    target = target.split("#", 1)[0].rstrip(".,;:")
    if not target:
        return True
    pattern = re.sub(r"<[^>]*>|\{[^}]*\}", "*", target)
    root = base if not target.startswith(("docs/", "bench/", "seeds/", "tests/")) else REPO
    try:
        if "*" in pattern:
            return any(root.glob(pattern.rstrip("/")))
        path = (root / pattern).resolve()
    except (ValueError, NotImplementedError):
        return False
    return path.exists() and REPO in (path, *path.parents)


def _texts() -> Iterator[tuple[Path, int, str, bool]]:
    """(file, first line, text, is_markdown) of every document and docstring."""
    for md in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        yield md, 1, md.read_text(), True
    for folder in ("batpolicy", "bench", "tests"):
        for py in sorted((REPO / folder).rglob("*.py")):
            if "data" in py.relative_to(REPO).parts[1:2] or py == Path(__file__).resolve():
                continue  # vendored data; this file, whose docstring names the patterns
            try:
                tree = ast.parse(py.read_text())
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                     ast.AsyncFunctionDef)):
                    doc = ast.get_docstring(node, clean=False)
                    if doc:
                        line = node.body[0].lineno if node.body else 1
                        yield py, line, doc, False


def references() -> list[Reference]:
    """Every markdown link and path-like reference, in file order."""
    found = []
    for path, first, text, markdown in _texts():
        rel = path.relative_to(REPO)
        for offset, line in enumerate(text.splitlines()):
            where = f"{rel}:{first + offset}"
            if markdown:
                for m in MD_LINK.finditer(line):
                    target = m.group(1)
                    if re.match(r"[a-z]+:", target) or target.startswith("#"):
                        continue
                    found.append(Reference(where, "link", target,
                                           _exists(target, path.parent)))
            for m in PATH.finditer(line):
                found.append(Reference(where, "path", m.group(1), _exists(m.group(1), REPO)))
            for m in ROOT_DOC.finditer(line):
                found.append(Reference(where, "path", m.group(1), _exists(m.group(1), REPO)))
    return found


def main(argv: list[str]) -> int:
    """Print the missing references (every one with ``--all``); 1 if any is missing."""
    refs = references()
    missing = [r for r in refs if not r.exists]
    for r in refs if "--all" in argv else missing:
        print(f"{'ok     ' if r.exists else 'MISSING'} {r.kind:4} {r.source}: {r.target}")
    print(f"{len(refs)} references, {len(missing)} missing", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

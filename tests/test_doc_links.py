"""The documentation names files the repository has (``tests/doc_references.py``).

A markdown link or a ``docs/``/``bench/`` path in README.md, docs/*.md or a docstring
that names no file of the repository sends a reader of a clone nowhere. Documents outside
the repository are named as such (Batsim's documentation, a URL), not by a path; this
test also refuses the names of the workspace's own notes (its protocol, design and style
notes) and paths into the shared folder beside the clone.
"""

from __future__ import annotations

from doc_references import references


def test_every_link_and_path_names_a_file_of_the_repository() -> None:
    refs = references()
    assert len(refs) > 100  # the scan found the documents
    missing = [f"{r.source}: {r.target}" for r in refs if not r.exists]
    assert missing == []


def test_the_scan_sees_a_missing_link_and_a_missing_path(tmp_path, monkeypatch) -> None:
    import doc_references

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "See [b](b.md), [a](a.md), [site](https://example.org) and `bench/nothing.py`.\n")
    (tmp_path / "README.md").write_text("`docs/a.md`, PROTOCOL.md\n")
    monkeypatch.setattr(doc_references, "REPO", tmp_path)
    missing = sorted(r.target for r in doc_references.references() if not r.exists)
    assert missing == ["PROTOCOL.md", "b.md", "bench/nothing.py"]

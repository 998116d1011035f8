"""Transcripts: msgpack recording flushed per exchange, reading msgpack and JSON lines."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import msgpack
import pytest

from batpolicy.errors import BatpolicyError, InputError
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import reply_to_obj, request_from_obj, request_to_obj
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.transcript import TranscriptWriter, read_transcript

SAMPLE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "transcripts" / \
    "chaos-samesubmit.jsonl"


def _exchanges() -> list[tuple[dict, dict | None]]:
    """A short conversation of typed messages, the last one left without a reply."""
    conversation = []
    for now in (0.0, 1.5, 3.0):
        request = t.Request(now, (t.JobSubmitted(now, f"w0!{now:g}", {"id": f"w0!{now:g}",
                                                                      "res": 1, "subtime": now,
                                                                      "profile": "p"}),))
        reply = t.Reply(now, (t.ExecuteJob(f"w0!{now:g}", MachineSet.of(0)),))
        conversation.append((request_to_obj(request), reply_to_obj(reply)))
    conversation[-1] = (conversation[-1][0], None)
    return conversation


def test_written_transcript_reads_back_identically(tmp_path: Path) -> None:
    path = tmp_path / "run.msgpack"
    exchanges = _exchanges()
    with TranscriptWriter(path) as writer:
        for request, reply in exchanges:
            writer.write(request, reply)
    assert writer.records == 3
    assert list(read_transcript(path)) == exchanges
    assert request_from_obj(exchanges[0][0]).events[0].job_id == "w0!0"


def test_each_record_is_on_disk_before_the_next_exchange(tmp_path: Path) -> None:
    path = tmp_path / "live.msgpack"
    writer = TranscriptWriter(path)
    assert not path.exists()  # the constructor has no side effect
    for count, (request, reply) in enumerate(_exchanges(), 1):
        writer.write(request, reply)  # opens on first use, as the daemon calls it
        assert len(list(read_transcript(path))) == count  # flushed, writer still open
    writer.close()
    writer.close()
    with pytest.raises(BatpolicyError, match="already closed"):
        writer.write({"now": 0, "events": []}, None)


@pytest.mark.parametrize("cut", [1, 2, 7, 20])
def test_truncated_msgpack_yields_complete_records_and_stops(
        tmp_path: Path, cut: int, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "crash.msgpack"
    exchanges = _exchanges()
    with TranscriptWriter(path) as writer:
        for request, reply in exchanges:
            writer.write(request, reply)
    path.write_bytes(path.read_bytes()[:-cut])  # the crash hit the last record
    with caplog.at_level(logging.WARNING, logger="batpolicy.protocol.transcript"):
        assert list(read_transcript(path)) == exchanges[:2]
    assert "truncated after 2 complete records" in caplog.text


def test_corrupt_record_is_an_input_error_naming_the_record(tmp_path: Path) -> None:
    path = tmp_path / "bad.msgpack"
    packer = msgpack.Packer()
    path.write_bytes(packer.pack({"batsim": {"now": 0, "events": []}, "scheduler": None})
                     + packer.pack({"batsim": [], "scheduler": None}))
    with pytest.raises(InputError, match=r"bad.msgpack:2"):
        list(read_transcript(path))


def test_reads_the_shared_jsonl_files_by_extension_and_by_sniffing(tmp_path: Path) -> None:
    if not SAMPLE.exists():
        pytest.skip(f"shared transcript not found at {SAMPLE}")
    records = list(read_transcript(SAMPLE))
    assert len(records) == len(SAMPLE.read_text().splitlines())
    assert records[0][0]["events"][0]["type"] == "SIMULATION_BEGINS"
    unnamed = tmp_path / "conversation"
    shutil.copy(SAMPLE, unnamed)
    assert list(read_transcript(unnamed)) == records
    recorded = tmp_path / "conversation.bin"
    with TranscriptWriter(recorded) as writer:
        for request, reply in records:
            writer.write(request, reply)
    assert list(read_transcript(recorded)) == records  # msgpack sniffed from the first byte


def test_jsonl_cut_mid_line_stops_at_the_last_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    lines = [json.dumps({"batsim": request, "scheduler": reply}) for request, reply in _exchanges()]
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:15])
    assert len(list(read_transcript(path))) == 2
    path.write_text("\n".join([lines[0], "{oops", lines[1]]) + "\n")
    with pytest.raises(InputError, match=r"cut.jsonl:2"):
        list(read_transcript(path))


def test_unknown_format_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(InputError, match="neither a msgpack nor a JSON-lines transcript"):
        list(read_transcript(path))

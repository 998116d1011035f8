"""Batsim --events files: machine events, generic events kept whole, stable time order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batpolicy.errors import InputError
from batpolicy.io.events import ExternalEvent, read_events
from batpolicy.protocol.intervals import MachineSet

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
INPUTS = SHARED / "transcripts" / "inputs"


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "events.txt"
    path.write_text(text)
    return path


def test_sorted_stably_blank_lines_and_generic_events_whole(tmp_path: Path) -> None:
    path = _file(tmp_path, "\n".join([
        '{"timestamp": 300, "type": "machine_available", "resources": "5-6"}',
        "",
        '{"timestamp": 60, "type": "machine_unavailable", "resources": "6 5 0-1"}',
        "   ",
        '{"timestamp": 300, "type": "custom", "x": [1, 2], "timestamp_note": "kept"}',
        '{"timestamp": 75.5, "type": "custom2"}',
    ]) + "\n")
    events = read_events(path)
    assert [(e.timestamp, e.type) for e in events] == [
        (60.0, "machine_unavailable"), (75.5, "custom2"), (300.0, "machine_available"),
        (300.0, "custom")]
    assert events[0].resources == MachineSet.of((0, 1), (5, 6)) and events[0].is_machine_event
    assert events[3].resources is None and not events[3].is_machine_event
    assert events[3].data == {"timestamp": 300, "type": "custom", "x": [1, 2],
                              "timestamp_note": "kept"}
    assert isinstance(events[3].data["timestamp"], int)  # forwarded as in the file


@pytest.mark.parametrize(("line", "field"), [
    ('{"timestamp": 1, "type": "machine_unavailable"}', "resources"),
    ('{"timestamp": 1, "type": "machine_available", "resources": "3-1"}', "resources"),
    ('{"timestamp": 1, "type": "machine_available", "resources": 3}', "resources"),
    ('{"timestamp": 1, "type": "machine_available", "resources": ""}', "resources"),
    ('{"timestamp": -1, "type": "x"}', "timestamp"),
    ('{"timestamp": "1", "type": "x"}', "timestamp"),
    ('{"type": "x"}', "timestamp"),
    ('{"timestamp": 1}', "type"),
    ('{"timestamp": 1, "type": 3}', "type"),
    ('[1, 2]', None),
    ('{"timestamp": 1, "type": "x",}', None),
    ('{"timestamp": NaN, "type": "x"}', None),
])
def test_errors_name_file_line_and_field(tmp_path: Path, line: str, field: str | None) -> None:
    path = _file(tmp_path, '{"timestamp": 0, "type": "x"}\n\n' + line + "\n")
    with pytest.raises(InputError) as err:
        read_events(path)
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 3, field)
    assert f"{path}:3" in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        read_events(tmp_path / "none.txt")


def test_event_dataclass() -> None:
    ev = ExternalEvent(1.0, "machine_available", MachineSet.of(3), {"type": "machine_available"})
    assert ev.is_machine_event and ev.resources == MachineSet.of(3)


def test_transcript_events_as_batsim_delivered_them(shared_data: Path) -> None:
    """Same order and content as the NOTIFYs of the recorded Batsim 4.2.1 run."""
    events = read_events(INPUTS / "events_generic.txt")
    notified = []
    transcript = SHARED / "transcripts" / "chaos-generic-events-walltime120.jsonl"
    for line in transcript.read_text().splitlines():
        for ev in json.loads(line)["batsim"]["events"]:
            if ev["type"] == "NOTIFY" and not ev["data"]["type"].startswith("no_more"):
                notified.append((ev["timestamp"], ev["data"]))
    assert len(events) == len(notified)
    for ev, (when, data) in zip(events, notified, strict=True):
        assert ev.timestamp == when
        if ev.is_machine_event:
            assert data == {"type": f"event_{ev.type}", "resources": str(ev.resources)}
        else:
            assert data == ev.data
    unavailable = read_events(INPUTS / "events_unavailable.txt")
    assert [(e.timestamp, str(e.resources)) for e in unavailable] == [
        (100.0, "0-3"), (250.5, "10 12"), (400.0, "0-3"), (900.0, "10 12")]

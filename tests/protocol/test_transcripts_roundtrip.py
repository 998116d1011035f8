"""Every conversation recorded with real Batsim 4.2.1 decodes and re-encodes without loss.

Both sides of every exchange: ``to_obj(from_obj(x)) == x`` as Python objects, and the
bytes we would send decode to the same typed message.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from batpolicy.protocol import types as t
from batpolicy.protocol.codec import (
    decode_reply,
    decode_request,
    encode_reply,
    encode_request,
    reply_from_obj,
    reply_to_obj,
    request_from_obj,
    request_to_obj,
)
from batpolicy.protocol.transcript import read_transcript

#: The shared folder is a sibling of the repository root.
TRANSCRIPTS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "transcripts"
FILES = sorted(TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else []
_ABSENT = pytest.mark.skip(reason=f"shared transcripts folder not found at {TRANSCRIPTS}")


@pytest.mark.parametrize("path", FILES or [pytest.param(None, marks=_ABSENT)],
                         ids=lambda p: p.stem if isinstance(p, Path) else "absent")
def test_transcript_round_trips_without_loss(path: Path) -> None:
    exchanges = 0
    for batsim, scheduler in read_transcript(path):
        request = request_from_obj(batsim)
        assert request_to_obj(request) == batsim, f"{path.name}: message {exchanges + 1}"
        assert decode_request(orjson.dumps(batsim)) == request
        assert decode_request(encode_request(request)) == request
        assert scheduler is not None
        assert scheduler["now"] >= batsim["now"]
        reply = reply_from_obj(scheduler)
        assert reply_to_obj(reply) == scheduler, f"{path.name}: reply {exchanges + 1}"
        assert decode_reply(encode_reply(reply)) == reply
        exchanges += 1
    assert exchanges > 1
    assert isinstance(request.events[-1], t.SimulationEnds)  # the whole simulation


def test_transcripts_show_the_421_quirks_we_decode() -> None:
    if not FILES:
        pytest.skip(f"shared transcripts folder not found at {TRANSCRIPTS}")
    seen: set[str] = set()
    for batsim, _ in read_transcript(TRANSCRIPTS / "chaos-generic-events-walltime120.jsonl"):
        for event in request_from_obj(batsim).events:
            if isinstance(event, t.JobKilled):
                assert all("profile_name" in p for p in event.job_progress.values())
                seen.add("killed")
            elif isinstance(event, t.Notify) and event.is_forwarded_external_event:
                assert event.data["type"] == event.kind and "timestamp" in event.data
                seen.add("forwarded")
            elif isinstance(event, t.Notify) and event.resources is not None:
                seen.add("machines")
    assert seen == {"killed", "forwarded", "machines"}

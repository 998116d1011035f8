"""Batsim 4's wire for one conversation: what serve sends and gets back, byte for byte.

``Batsim4Wire`` keeps the interval string of every allocation it sent; the JOB_COMPLETED
that echoes it takes the set back instead of parsing it. Replies of plain EXECUTE_JOB /
REJECT_JOB decisions are written without the encoder's generic walk. Both must accept,
refuse and write exactly what the codec's general paths do.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batpolicy.errors import ProtocolError
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import _FROM_SCHEDULER, _encode, decode_request, encode_reply
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.wires import Batsim4Wire


def _completion(job_id: str, alloc: str, now: float = 20.0) -> bytes:
    return (b'{"now":%r,"events":[{"timestamp":%r,"type":"JOB_COMPLETED","data":{"job_id":"%s",'
            b'"job_state":"COMPLETED_SUCCESSFULLY","return_code":0,"alloc":"%s"}}]}'
            % (now, now, job_id.encode(), alloc.encode()))


def test_a_completion_gets_back_the_allocation_that_was_sent() -> None:
    wire = Batsim4Wire()
    alloc = MachineSet.parse("0-3 7 9-12")
    sent = wire.encode(t.Reply(10.0, (t.ExecuteJob("w0!1", alloc),)))
    assert sent == encode_reply(t.Reply(10.0, (t.ExecuteJob("w0!1", alloc),)))
    back = wire.decode(_completion("w0!1", "0-3 7 9-12")).events[0]
    assert back.alloc is alloc  # taken back, not parsed again
    assert back == decode_request(_completion("w0!1", "0-3 7 9-12")).events[0]
    again = wire.decode(_completion("w0!1", "0-3 7 9-12")).events[0]  # taken once only
    assert again.alloc == alloc and again.alloc is not alloc


@pytest.mark.parametrize("echo", ["7 0-3 9-12", "0-3 7 9-12 ", "3-0", "", "0-2147483648", "x"])
def test_another_echo_is_decoded_or_refused_as_by_the_codec(echo: str) -> None:
    wire = Batsim4Wire()
    wire.encode(t.Reply(10.0, (t.ExecuteJob("w0!1", MachineSet.parse("0-3 7 9-12")),)))

    def outcome(decode: Any) -> Any:
        try:
            return decode(_completion("w0!1", echo))
        except ProtocolError as exc:
            return str(exc)

    assert outcome(wire.decode) == outcome(decode_request)


_IDS = st.sampled_from(["w0!1", "w!", "a!b!c", "noexcl", "w0!é", 'w0!"q"'])
_SETS = st.one_of(st.sets(st.integers(0, 70), max_size=12).map(MachineSet),
                  st.just(MachineSet.of(2 ** 31)), st.just([0, 1]))
_DECISIONS = st.one_of(
    st.builds(t.ExecuteJob, _IDS, _SETS),
    st.builds(t.ExecuteJob, _IDS, _SETS, mapping=st.just({0: 0})),
    st.builds(t.ExecuteJob, _IDS, _SETS, timestamp=st.sampled_from([1.0, 5.0])),
    st.builds(t.RejectJob, _IDS),
    st.builds(t.RejectJob, _IDS, timestamp=st.just(2.0)),
    st.builds(t.CallMeLater, st.sampled_from([3.0, 9.0])),
)


@given(st.sampled_from([3.0, 0.0, -1.0, 2.0 ** 60, 7]), st.lists(_DECISIONS, max_size=4))
def test_replies_are_written_as_the_full_path_writes_them(now: Any, decisions: list) -> None:
    def outcome(encode: Any) -> bytes | str:
        try:
            return encode(t.Reply(now, tuple(decisions)))  # type: ignore[no-any-return]
        except ProtocolError as exc:
            return str(exc)

    def full(reply: t.Reply) -> bytes:
        return _encode(reply.now, tuple(reply.decisions), _FROM_SCHEDULER)

    wire = Batsim4Wire()
    assert outcome(encode_reply) == outcome(full) == outcome(wire.encode)

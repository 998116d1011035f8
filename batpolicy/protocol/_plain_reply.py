"""The bytes of the commonest replies, written without building their message objects.

:func:`batpolicy.protocol.codec.encode_reply` (and the daemon's
:func:`~batpolicy.protocol.codec.reply_encoder`) write a reply without decisions around
one C call of :data:`ENCODER`, and a reply of undated plain EXECUTE_JOB / REJECT_JOB
decisions with :func:`plain_reply`: the same bytes as the codec's general path
(``codec._encode``: message object, schema check, dump), which ``test_empty_reply``,
``test_checked_encoding`` and ``test_sent_allocations`` compare.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from batpolicy.protocol._wire import INT32_MAX, encode_hook, is_job_id
from batpolicy.protocol.intervals import MachineSet, format_intervals
from batpolicy.protocol.types import ExecuteJob, RejectJob

__all__ = ["EMPTY_REPLY", "ENCODER", "plain_reply"]

#: The wire's JSON encoder (machine sets written as interval strings).
ENCODER = msgspec.json.Encoder(enc_hook=encode_hook)


def plain_reply(now: float, decisions: tuple[Any, ...], sent: dict[str, MachineSet] | None
                ) -> bytes | None:
    """The bytes of a reply of undated plain EXECUTE_JOB / REJECT_JOB decisions, else None.

    The commonest reply with decisions, written without ``codec._encode``'s generic walk
    nor a message object: the bytes the encoder writes for the objects ``codec._to_obj``
    builds (allocations as their interval strings, as the encoder's hook writes them),
    joined from the pieces the encoder writes between them (:data:`_PLAIN`), when the
    rules of ``codec._plainly_valid`` hold (``now`` is checked by the caller). Anything
    else answers None and goes the codec's whole way, which also names what is wrong.
    Each allocation written is added to ``sent`` (string -> set, for
    :func:`~batpolicy.protocol.codec.remembering_decoder`). ``decisions`` is not empty.
    Runtime complexity: O(decisions).
    """
    dump = ENCODER.encode
    stamp = dump(now)
    parts = [_PLAIN.head, stamp, _PLAIN.events]
    written = []
    for decision in decisions:
        kind = type(decision)
        if kind is not ExecuteJob and kind is not RejectJob:
            return None
        job_id = decision.job_id
        if decision.timestamp is not None or not is_job_id(job_id):
            return None
        if kind is ExecuteJob:
            alloc = decision.alloc
            if (type(alloc) is not MachineSet or not alloc or alloc.max() > INT32_MAX
                    or decision.mapping is not None or decision.storage_mapping is not None
                    or decision.additional_io_job is not None):
                return None
            text = format_intervals(alloc)
            written.append((text, alloc))
            parts += (_PLAIN.event, stamp, _PLAIN.execute, dump(job_id), _PLAIN.alloc,
                      dump(text), _PLAIN.close)
        else:
            parts += (_PLAIN.event, stamp, _PLAIN.reject, dump(job_id), _PLAIN.close)
        parts.append(b",")
    parts[-1] = _PLAIN.end
    if sent is not None:
        sent.update(written)
    return b"".join(parts)


class _PlainPieces(NamedTuple):
    """The encoder's bytes between the values of a plain reply (:func:`plain_reply`).

    ``test_sent_allocations`` and ``test_checked_encoding`` compare the bytes joined from
    them with the codec's general path for the same decisions.
    """

    head: bytes = b'{"now":'
    events: bytes = b',"events":['
    event: bytes = b'{"timestamp":'
    execute: bytes = b',"type":"EXECUTE_JOB","data":{"job_id":'
    reject: bytes = b',"type":"REJECT_JOB","data":{"job_id":'
    alloc: bytes = b',"alloc":'
    close: bytes = b'}}'
    end: bytes = b']}'


_PLAIN = _PlainPieces()

#: The bytes around ``now`` of a reply without decisions, as ``codec._encode`` writes it
#: (``{"now":<now>,"events":[]}``): such a reply is valid for any float ``now`` within
#: the schema's ``Time`` (``[0, MAX_TIME]``; a NaN fails both comparisons), so most
#: replies (a submission that waits, a completion that starts nothing) are one C call
#: of the encoder (``test_empty_reply`` checks the bytes against ``codec._encode``'s).
EMPTY_REPLY = tuple(ENCODER.encode({"now": 1.0, "events": []}).split(b"1.0"))

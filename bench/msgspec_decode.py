"""msgspec typed decoding against our decoder, back to back and after idle gaps (issue 14).

A design measurement, like ``pyroaring_sets.py``: would decoding Batsim's messages with
`msgspec <https://jcristharif.com/msgspec/>`_ (JSON straight into typed, validated
structs in one C pass) make ``serve`` markedly cheaper beside Batsim?

The prototype here decodes the two events that make up nearly every message of a trace
replay (JOB_SUBMITTED, JOB_COMPLETED) with msgspec structs checking what our decoders
check (members, job ids, ``res``, ``subtime``/``walltime``, job state, return code,
allocation string), builds the same :mod:`batpolicy.protocol.types` objects, and hands
any other message to :func:`batpolicy.protocol.codec.decode_request`. Every message of
the transcript is first checked to decode to the same typed request both ways.

Timed per message (process CPU, best of ``--repeat`` alternated passes): back to back, and with
``--idle-us`` of sleep after each message as the daemon waits for Batsim
(``serve_stages.py`` explains why that matters on this VM). Prints; ``--save`` writes
``bench/results/msgspec_decode.txt``. Needs ``pip install msgspec`` (not a dependency)::

    batpolicy simulate --policy easy -w KTH-SP2-1996-2.swf.gz --record /tmp/kth.msgpack -q
    python bench/msgspec_decode.py /tmp/kth.msgpack --idle-us 1000
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import msgspec

from batpolicy.protocol import types as t
from batpolicy.protocol._wire import INT32_MAX, INT32_MIN, FieldError, as_intervals, as_time
from batpolicy.protocol.codec import decode_request

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import batsim_messages, write_results  # noqa: E402  (bench/harness.py)

JobId = Annotated[str, msgspec.Meta(pattern=r"^[^!]*![^!]*$")]
Int32 = Annotated[int, msgspec.Meta(ge=INT32_MIN, le=INT32_MAX)]


class _Submitted(msgspec.Struct, forbid_unknown_fields=True):
    job_id: JobId
    job: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None


class _Completed(msgspec.Struct, forbid_unknown_fields=True):
    job_id: JobId
    job_state: t.JobState
    return_code: Int32
    alloc: str


class _Event(msgspec.Struct, forbid_unknown_fields=True):
    timestamp: float
    type: str
    data: msgspec.Raw


class _Message(msgspec.Struct, forbid_unknown_fields=True):
    now: float
    events: list[_Event]


_message = msgspec.json.Decoder(_Message)
_submitted = msgspec.json.Decoder(_Submitted)
_completed = msgspec.json.Decoder(_Completed)


def _check_job(job: dict[str, Any]) -> None:
    """What our ``_job_description`` checks of a forwarded job (res, subtime, walltime)."""
    res = job.get("res")
    if type(res) is not int or not 0 <= res <= INT32_MAX:
        raise FieldError("data.job.res", "expected an integer >= 0")
    for name in ("subtime", "walltime"):
        if name in job:
            as_time(job[name], f"data.job.{name}")


def decode_msgspec(raw: bytes) -> t.Request:
    """The prototype: msgspec for messages of submissions and completions, ours otherwise."""
    message = _message.decode(raw)
    events: list[t.Event] = []
    previous = -1.0
    for event in message.events:
        stamp = event.timestamp
        if stamp > message.now or stamp < previous:
            return decode_request(raw)  # ours names the problem
        previous = stamp
        if event.type == "JOB_SUBMITTED":
            s = _submitted.decode(event.data)
            if s.job is not None:
                _check_job(s.job)
            events.append(t.JobSubmitted(stamp, s.job_id, s.job, s.profile))
        elif event.type == "JOB_COMPLETED":
            c = _completed.decode(event.data)
            events.append(t.JobCompleted(stamp, c.job_id, c.job_state, c.return_code,
                                         as_intervals(c.alloc, "data.alloc")))
        else:
            return decode_request(raw)
    return t.Request(message.now, tuple(events))


def per_message_us(decode: Callable[[bytes], object], raws: Sequence[bytes],
                   idle_s: float) -> float:
    """Process-CPU µs per message over one pass, sleeping ``idle_s`` after each."""
    spent = 0.0
    clock = time.process_time
    for raw in raws:
        began = clock()
        decode(raw)
        spent += clock() - began
        if idle_s:
            time.sleep(idle_s)
    return spent / len(raws) * 1e6


def main() -> None:
    """Check both decoders agree on the transcript, then time them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transcript")
    parser.add_argument("--messages", type=int, default=20_000,
                        help="messages timed (from the 1,001st; default 20,000)")
    parser.add_argument("--idle-us", type=float, default=1000.0, metavar="US")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    raws = batsim_messages(args.transcript)
    for index, raw in enumerate(raws):
        if decode_msgspec(raw) != decode_request(raw):
            raise SystemExit(f"message #{index + 1}: the two decoders disagree")
    timed = raws[1000:1000 + args.messages]
    lines = [f"# command: python bench/msgspec_decode.py {' '.join(sys.argv[1:])}",
             f"# {len(raws)} messages agree; {len(timed)} timed, process CPU µs per message, "
             f"best of {args.repeat}; msgspec {msgspec.__version__}",
             f"{'decoder':<10} {'back to back':>13} {f'{args.idle_us:g} us idle':>14}"]
    decoders = {"ours": decode_request, "msgspec": decode_msgspec}
    best = {(name, idle): float("inf") for name in decoders for idle in (0.0, args.idle_us)}
    for _ in range(args.repeat):  # alternated, so drift of the machine hits both alike
        for name, decode in decoders.items():
            for idle in (0.0, args.idle_us):
                us = per_message_us(decode, timed, idle / 1e6)
                best[name, idle] = min(best[name, idle], us)
    for name in decoders:
        lines.append(f"{name:<10} {best[name, 0.0]:>13.1f} {best[name, args.idle_us]:>14.1f}")
    print("\n".join(lines))
    if args.save:
        print(f"saved {write_results('msgspec_decode', lines)}", file=sys.stderr)


if __name__ == "__main__":
    main()

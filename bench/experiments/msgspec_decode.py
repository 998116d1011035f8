"""Per-message cost of the codec, decode and encode, back to back and after idle gaps (issue 32).

The codec is msgspec (typed structs, a tagged union on the event type, one C pass per
message); this measures what ``serve`` pays for it per exchange, with the public API
only, so the same script times any version of the package: run it under two
interpreters whose ``batpolicy`` differ (e.g. the main checkout's and a worktree's
venv) and alternate them.

From a recorded conversation (``batpolicy simulate --record FILE``): each Batsim message
as the bytes Batsim sends, and each recorded reply as a typed :class:`Reply`, built
untimed. Timed per message (process CPU, best of ``--repeat`` passes):
:func:`~batpolicy.protocol.codec.decode_request` on the bytes, then
:func:`~batpolicy.protocol.codec.encode_reply` (``checked=True``, as the daemon calls
it) on the reply, undated as a policy builds it; back to back, and with ``--idle-us``
of sleep after each message, as the daemon waits for Batsim (``serve_stages.py``
explains why that matters on this VM); the garbage collector is set as the daemon sets
it. Prints; ``--save`` adds the run to
``bench/results/msgspec_decode.txt``::

    batpolicy simulate --policy easy -w KTH-SP2-1996-2.swf.gz --record /tmp/kth.msgpack -q
    python bench/experiments/msgspec_decode.py /tmp/kth.msgpack --idle-us 1000

``--dump FILE`` writes the bytes instead (``cmp`` two versions' files).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from batpolicy.interpreter import describe
from batpolicy.protocol.codec import decode_request, encode_reply, reply_from_obj
from batpolicy.protocol.transcript import read_transcript
from batpolicy.protocol.types import Reply

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import batsim_messages, write_results  # noqa: E402  (bench/harness.py)


def _undated(reply: Reply) -> Reply:
    """The reply as the daemon encodes it: its decisions built by a policy, without dates."""
    return Reply(reply.now, tuple(replace(d, timestamp=None) for d in reply.decisions))


def daemon_gc() -> None:
    """Set the collector as ``serve`` runs it (scheduler/steady_gc.py).

    The heap is frozen and young collections come every 500,000 allocations; with
    CPython's default the figures mostly measure how often a collection falls inside a
    timed step.
    """
    gc.freeze()
    gc.set_threshold(500_000, *gc.get_threshold()[1:])


def per_message_us(step: Callable[[object], object], inputs: Sequence[object],
                   idle_s: float) -> float:
    """Process-CPU µs per message over one pass, sleeping ``idle_s`` after each."""
    spent = 0.0
    clock = time.process_time
    for item in inputs:
        began = clock()
        step(item)
        spent += clock() - began
        if idle_s:
            time.sleep(idle_s)
    return spent / len(inputs) * 1e6


def dump(transcript: str, path: Path) -> None:
    """Write the bytes this version sends for every exchange of ``transcript``."""
    from batpolicy.protocol.codec import encode_request, request_from_obj

    with path.open("wb") as out:
        for request, reply in read_transcript(transcript):
            out.write(encode_request(request_from_obj(request)) + b"\n")
            if reply is not None:
                typed = reply_from_obj(reply)
                out.write(encode_reply(typed) + b"\n")
                out.write(encode_reply(_undated(typed), checked=True) + b"\n")


def main() -> None:
    """Time decode_request and encode_reply per message of a transcript."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transcript")
    parser.add_argument("--messages", type=int, default=20_000,
                        help="messages timed (from the 1,001st; default 20,000)")
    parser.add_argument("--idle-us", type=float, default=1000.0, metavar="US")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--label", default="", help="names this run's rows (e.g. before)")
    parser.add_argument("--save", action="store_true")
    parser.add_argument("--dump", metavar="FILE",
                        help="instead of timing, write every message this version encodes "
                             "(requests; replies dated and undated), one a line, to compare "
                             "two versions byte for byte")
    args = parser.parse_args()
    if args.dump:
        dump(args.transcript, Path(args.dump))
        return
    raws = batsim_messages(args.transcript)
    replies = [_undated(reply_from_obj(reply)) for _, reply in read_transcript(args.transcript)
               if reply is not None]
    raws, replies = raws[1000:1000 + args.messages], replies[1000:1000 + args.messages]
    steps: dict[str, tuple[Callable[[object], object], Sequence[object]]] = {
        "decode": (decode_request, raws),  # type: ignore[dict-item]
        "encode": (lambda reply: encode_reply(reply, checked=True), replies),
    }
    best = {(name, idle): float("inf") for name in steps for idle in (0.0, args.idle_us)}
    daemon_gc()
    for _ in range(args.repeat):
        for name, (step, inputs) in steps.items():
            for idle in (0.0, args.idle_us):
                best[name, idle] = min(best[name, idle],
                                       per_message_us(step, inputs, idle / 1e6))
    label = f"{args.label} " if args.label else ""
    lines = [f"# command: python bench/experiments/msgspec_decode.py {' '.join(sys.argv[1:])}",
             f"# {label}{describe()}; {len(raws)} messages timed, process CPU µs per "
             f"message, best of {args.repeat}",
             f"{'step':<20} {'back to back':>13} {f'{args.idle_us:g} us idle':>14}"]
    for name in (*steps, "decode+encode"):
        parts = list(steps) if name == "decode+encode" else [name]
        row = [sum(best[part, idle] for part in parts) for idle in (0.0, args.idle_us)]
        lines.append(f"{label + name:<20} {row[0]:>13.1f} {row[1]:>14.1f}")
    print("\n".join(lines))
    if args.save:
        print(f"saved {write_results('msgspec_decode', lines, keep_earlier=True)}",
              file=sys.stderr)


if __name__ == "__main__":
    main()

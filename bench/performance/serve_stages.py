"""Where ``batpolicy serve`` spends its CPU per Batsim message, stage by stage, without sockets.

A recorded conversation (``batpolicy simulate --record FILE`` or ``serve --record``) is
replayed in-process: each Batsim message is re-encoded to the bytes Batsim would send,
then timed through the daemon's own steps, in the daemon's order:

- ``decode``: the wire's ``decode`` (:class:`batpolicy.protocol.wires.Batsim4Wire`, one per
  replay as the daemon has one per conversation: :func:`batpolicy.protocol.codec.decode_request`,
  msgspec's pass and the typed events);
- ``dispatch``: :meth:`Dispatcher.handle` (state updates, policy, checker);
- ``encode``: the wire's ``encode`` (:func:`batpolicy.protocol.codec.encode_reply`,
  ``checked=True``, as the daemon).

The sum is what serve costs beside ZeroMQ's own send/recv. Usage::

    batpolicy simulate --policy easy -w KTH-SP2-1996-2.swf.gz --record /tmp/kth.msgpack -q
    python bench/performance/serve_stages.py /tmp/kth.msgpack --policy easy
    python bench/performance/serve_stages.py /tmp/kth.msgpack --policy easy --idle-us 1000
    python bench/performance/serve_stages.py /tmp/kth.msgpack --policy fcfs --instructions

``--idle-us`` sleeps that long after each message (outside the timed stages), as the
daemon waits while Batsim computes. Beside Batsim the same work costs two to three
times its back-to-back CPU on this 2-core VM: after each idle gap the caches and TLBs
are cold. The idle replay reproduces that (to about ±2 % on a calm VM, but 115 and
145 µs per message for the same code within minutes on 2026-11-24), where a whole run
beside Batsim swings ±10 %: alternate the two versions, and trust ``--calls`` first.

``--split-decode`` times ``decode`` in two: ``wire`` (msgspec's one C pass: JSON into the
wire schema's structs, every member checked, interval sets parsed) and ``typed`` (the
events' times against ``now``, then the typed events built), the two steps of
``decode_request``. ``--daemon-gc`` freezes the heap and sets the young collection
threshold to 500,000 as ``serve`` does (scheduler/steady_gc.py); without it, CPython's
default collections fall inside the timed stages.

``--instructions`` counts instructions instead (valgrind's callgrind, deterministic whatever
the VM does): six runs under callgrind (:data:`RUNS`), whose differences are each stage's
instructions per message, as the daemon runs them (decode: the daemon's pipeline less the
other two stages), and ``orjson.loads`` alone, the Python floor's whole decoding
(``floor_fcfs.py``), for scale. ZeroMQ's own work (pyzmq, libzmq, its I/O thread) is in no
stage: ``serve_vs_batsched.py --callgrind`` counts the whole process.

``--calls`` counts instead of timing: function calls (Python and C) per message in each
stage, and the distinct functions one message runs. Unlike times, the counts do not move
with this VM's drift (its speed changes by 2-3× from one day to the next, and back-to-back
times by ±30 % within an hour): a change that touches less shows as fewer calls and fewer
distinct functions, whatever the machine does.

Results are printed, not saved (the whole-run comparison is ``serve_vs_batsched.py``).
"""

from __future__ import annotations

import argparse
import gc
import logging
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from batpolicy.policies.registry import make_policy
from batpolicy.protocol import Request
from batpolicy.protocol.codec import decode_request, encode_reply
from batpolicy.scheduler.dispatch import Dispatcher

try:  # the daemon's own decode and encode: one wire per conversation
    from batpolicy.protocol.wires import Batsim4Wire
except ImportError:  # a tree from before wires.py: the codec's functions, as its daemon
    Batsim4Wire = None


def daemon_codec() -> tuple[Any, Any]:
    """``(decode, encode)`` as this tree's ``serve`` calls them for one conversation."""
    if Batsim4Wire is None:
        return decode_request, lambda reply: encode_reply(reply, checked=True)
    wire = Batsim4Wire()
    return wire.decode, wire.encode

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import batsim_messages  # noqa: E402  (bench/harness.py)

log = logging.getLogger("serve_stages")


def main() -> None:
    """Replay a transcript through decode, dispatch and encode; print µs per message."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transcript")
    parser.add_argument("--policy", default="easy")
    parser.add_argument("--repeat", type=int, default=3, help="replays (best is kept)")
    parser.add_argument("--idle-us", type=float, default=0.0, metavar="US",
                        help="sleep this long after each message, untimed (default 0)")
    parser.add_argument("--split-decode", action="store_true",
                        help="time decode as wire (msgspec) + typed (times, typed events)")
    parser.add_argument("--daemon-gc", action="store_true",
                        help="set the garbage collector as serve does (steady_gc.py)")
    parser.add_argument("--calls", action="store_true",
                        help="count calls and distinct functions per message instead of timing")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per message and stage (callgrind) instead")
    parser.add_argument("--replay-upto", choices=RUNS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    idle = args.idle_us / 1e6
    if args.instructions:
        count_instructions(args.transcript, args.policy)
        return
    messages = batsim_messages(args.transcript)
    if args.replay_upto:  # one of count_instructions' runs, under callgrind
        replay_upto(messages, args.policy, args.replay_upto)
        return
    if args.calls:
        count_calls(messages, args.policy)
        return
    best: dict[str, float] = {}
    if args.split_decode:  # this version's codec (the rest of the script times any version)
        from batpolicy.protocol.codec import _FROM_BATSIM, _typed
    if args.daemon_gc:
        gc.freeze()
        gc.set_threshold(500_000, *gc.get_threshold()[1:])
    for _ in range(args.repeat):
        dispatcher = Dispatcher(make_policy(args.policy))
        decode, encode = daemon_codec()
        clock = time.process_time
        stages = ("wire", "typed") if args.split_decode else ("decode",)
        spent = dict.fromkeys((*stages, "dispatch", "encode"), 0.0)
        for raw in messages:
            t0 = clock()
            if args.split_decode:
                wire = _FROM_BATSIM.decoder.decode(raw)  # decode_request's own two steps
                tp = clock()
                request = Request(wire.now, _typed(wire.now, wire.events))
                t1 = clock()
                spent["wire"] += tp - t0
                spent["typed"] += t1 - tp
            else:
                request = decode(raw)
                t1 = clock()
                spent["decode"] += t1 - t0
            reply = dispatcher.handle(request)
            t2 = clock()
            encode(reply)  # as the daemon encodes
            t3 = clock()
            spent["dispatch"] += t2 - t1
            spent["encode"] += t3 - t2
            if idle:
                time.sleep(idle)
        for stage, seconds in spent.items():
            best[stage] = min(best.get(stage, seconds), seconds)
    n = len(messages)
    total = sum(best.values())
    print(f"{n} messages, policy {args.policy}, best of {args.repeat} (process CPU), "
          f"{args.idle_us:g} µs idle after each")
    for stage, seconds in best.items():
        print(f"  {stage:<9} {seconds:7.3f} s  {seconds / n * 1e6:7.1f} µs/message")
    print(f"  {'total':<9} {total:7.3f} s  {total / n * 1e6:7.1f} µs/message")


#: The runs of :func:`count_instructions`: set-up only; every message decoded beforehand
#: (``predecoded``, the codec's :func:`decode_request`, no table of sent allocations);
#: then dispatched; then encoded; the daemon's own pipeline (its wire's decode, which takes
#: allocations back from the table its encode fills); the floor's ``orjson.loads`` alone.
RUNS = ("none", "predecoded", "dispatch", "encode", "daemon", "floor")


def replay_upto(messages: Sequence[bytes], policy: str, upto: str) -> None:
    """One run of :data:`RUNS` over every message (garbage collector set as ``serve``)."""
    gc.freeze()
    gc.set_threshold(500_000, *gc.get_threshold()[1:])
    dispatcher = Dispatcher(make_policy(policy))
    decode, encode = daemon_codec()
    if upto == "floor":
        import orjson

        for raw in messages:
            orjson.loads(raw)
    elif upto == "daemon":
        for raw in messages:
            encode(dispatcher.handle(decode(raw)))
    elif upto != "none":
        requests = [decode_request(raw) for raw in messages]
        if upto != "predecoded":
            replies = [dispatcher.handle(request) for request in requests]
            if upto == "encode":
                for reply in replies:
                    encode(reply)


def count_instructions(transcript: str, policy: str) -> None:
    """Print instructions per message of each stage, from callgrind runs of :data:`RUNS`.

    Each run is :func:`replay_upto` under callgrind; a stage is a difference between runs.
    """
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    n = len(batsim_messages(transcript))
    refs: dict[str, int] = {}
    for upto in RUNS:
        log.info("callgrind run %d/%d: %s", len(refs) + 1, len(RUNS), upto)
        run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              sys.executable, __file__, transcript, "--policy", policy,
                              "--replay-upto", upto], capture_output=True, text=True)
        found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
        if run.returncode or found is None:
            raise SystemExit(f"the callgrind run {upto} failed:\n{run.stderr[-2000:]}")
        refs[upto] = int(found.group(1).replace(",", ""))
    dispatch = refs["dispatch"] - refs["predecoded"]
    encode = refs["encode"] - refs["dispatch"]
    whole = refs["daemon"] - refs["none"]
    stages = {"decode": whole - dispatch - encode, "dispatch": dispatch, "encode": encode,
              "total": whole}
    print(f"{n} messages, policy {policy}: instructions per message (callgrind)")
    for stage, count in stages.items():
        print(f"  {stage:<9} {count / n:9,.0f}")
    print(f"  {'orjson':<9} {(refs['floor'] - refs['none']) / n:9,.0f}  (orjson.loads alone: "
          "the Python floor's decoding)")


def count_calls(messages: Sequence[bytes], policy: str) -> None:
    """Replay once under :func:`sys.setprofile`; print calls and distinct functions per message."""
    dispatcher = Dispatcher(make_policy(policy))
    decode, encode = daemon_codec()
    calls = dict.fromkeys(("decode", "dispatch", "encode"), 0)
    distinct = 0
    seen: set[Any] = set()
    counter = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            counter[0] += 1
            seen.add(frame.f_code)
        elif event == "c_call":
            counter[0] += 1
            seen.add(arg)

    def stage(name: str, fn: Any, *a: Any, **k: Any) -> Any:
        counter[0] = 0
        sys.setprofile(profile)
        try:
            return fn(*a, **k)
        finally:
            sys.setprofile(None)
            calls[name] += counter[0] - 1  # the call to sys.setprofile(None) itself

    for raw in messages:
        seen.clear()
        request = stage("decode", decode, raw)
        reply = stage("dispatch", dispatcher.handle, request)
        stage("encode", encode, reply)
        seen.discard(sys.setprofile)  # the profiler's own switch
        distinct += len(seen)
    n = len(messages)
    print(f"{n} messages, policy {policy}: calls per message (Python and C functions)")
    for name, count in calls.items():
        print(f"  {name:<9} {count / n:7.1f}")
    print(f"  {'total':<9} {sum(calls.values()) / n:7.1f}")
    print(f"  distinct functions run per message: {distinct / n:.1f}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()

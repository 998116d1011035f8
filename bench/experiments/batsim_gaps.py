"""How long the daemon waits for Batsim between its reply and the next message (issue 14).

A design measurement: beside Batsim, ``serve`` pays two to three times its back-to-back
CPU per message because its caches are cold after each wait (docs/performance.md).
Polling the socket for a while before blocking (busy-polling) would keep them warm, and
pays only if Batsim usually answers within that while. This runs real Batsim 4.2.1
(``--prefix``, as ``serve_vs_batsched.py``) against ``batpolicy serve`` in this process,
with the daemon's socket wrapped to time each gap (reply sent → next message readable),
and prints the distribution.

Usage::

    python bench/experiments/batsim_gaps.py --traces KTH --policy easy
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import zmq

from batpolicy.policies.registry import make_policy
from batpolicy.protocol import transport
from batpolicy.scheduler import daemon
from batpolicy.scheduler.daemon import ServeOptions, serve
from batpolicy.scheduler.dispatch import Dispatcher

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import free_port, write_results  # noqa: E402  (bench/harness.py)
from performance.serve_vs_batsched import DEFAULT_JOBS, TRACES, batsim_argv, prepare  # noqa: E402


class TimedReplySocket(transport.ReplySocket):
    """The daemon's socket, noting the wait between each send and the next message."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.gaps: list[float] = []
        self._sent: float | None = None

    def recv(self) -> bytes:
        """Wait until readable (timed from the last send), then receive."""
        if self._sent is not None:
            self._require_socket().poll(None, zmq.POLLIN)
            self.gaps.append(time.perf_counter() - self._sent)
        return super().recv()

    def send(self, data: bytes) -> None:
        """Send, and note when."""
        super().send(data)
        self._sent = time.perf_counter()


def main() -> None:
    """Run one trace through Batsim and our daemon; print the gaps' distribution."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", default="/opt/batsim-4.2.1", type=Path)
    parser.add_argument("--traces", nargs="+", choices=sorted(TRACES), default=["KTH"])
    parser.add_argument("--policy", default="easy")
    parser.add_argument("--max-jobs", type=int)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/batpolicy-gaps"))
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    batsim = args.prefix / "bin" / "batsim"
    if not batsim.exists():
        raise SystemExit(f"{batsim} not found: build it with ../shared/batsim/build.sh")
    sockets: list[TimedReplySocket] = []

    def timed_socket(*a: object, **k: object) -> TimedReplySocket:
        sockets.append(TimedReplySocket(*a, **k))
        return sockets[-1]

    daemon.ReplySocket = timed_socket  # type: ignore[misc,assignment]  # what serve() opens
    args.workdir.mkdir(parents=True, exist_ok=True)
    lines = [f"# command: python bench/experiments/batsim_gaps.py {' '.join(sys.argv[1:])}",
             "# gap = our reply sent -> Batsim's next message readable (µs)",
             f"{'trace':<6} {'messages':>9} {'mean':>6} {'p10':>6} {'p25':>6} {'p50':>6} "
             f"{'p75':>6} {'p90':>6} {'p99':>6} {'<=100':>6} {'<=200':>6} {'<=300':>6}"]
    for trace in args.traces:
        workload, platform, _ = prepare(trace, args.max_jobs or DEFAULT_JOBS[trace],
                                        args.workdir)
        endpoint = f"tcp://127.0.0.1:{free_port()}"
        sim = subprocess.Popen(batsim_argv(batsim, platform, workload, args.workdir / trace,
                                           endpoint),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        status = serve(Dispatcher(make_policy(args.policy)), ServeOptions(endpoint=endpoint))
        if sim.wait() != 0 or status != 0:
            raise SystemExit(f"{trace}: batsim exit {sim.returncode}, serve exit {status}")
        gaps = np.array(sockets[-1].gaps) * 1e6
        p = np.percentile(gaps, [10, 25, 50, 75, 90, 99])
        share = [100 * float((gaps <= limit).mean()) for limit in (100, 200, 300)]
        lines.append(f"{trace:<6} {len(gaps):>9} {gaps.mean():>6.0f} "
                     + " ".join(f"{q:>6.0f}" for q in p)
                     + " " + " ".join(f"{s:>5.1f}%" for s in share))
        print(lines[-1], flush=True)
    if args.save:
        print(f"saved {write_results('batsim_gaps', lines)}", file=sys.stderr)


if __name__ == "__main__":
    main()

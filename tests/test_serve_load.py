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


def test_the_soak_kills_workers_and_every_request_gets_an_answer_or_a_documented_code(trained):
    from tests.serve.live import DOCS

    options = ["--tokens", "40", "--clients", "4", "--workers", "2", "--minutes", "0.25"]
    run = run_script(trained, "serve_load.py", *options, "--kill-every", "5", "--sample-every", "3")
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    assert re.search(r"^soak: 4 clients for 0.25 min against --workers 2 ", out, re.M)
    lines = re.findall(r"^ +\d+s +[\d.]+ +\d+ +\d+ .*server \d+, worker \d+ \d+", out, re.M)
    assert len(lines) >= 4
    killed = re.search(r"^workers killed: (\d+); all workers live again after: (.*)$", out, re.M)
    assert killed and int(killed[1]) >= 1 and "not seen" not in killed[2]
    # Every response is an answer or a documented refusal (no 500, none without a code).
    responses = re.search(r"^responses: (.*)$", out, re.M)[1]
    labels = dict(item.rsplit(": ", 1) for item in responses.split(", "))
    documented = set(re.findall(r"^\| (\d{3} \| `\w+`) \|", DOCS.read_text(), re.M))
    for label in labels:
        assert label == "200" or label.replace(" ", " | `", 1) + "`" in documented, label
    assert int(labels["200"]) > 0
    assert re.search(r"^health at the end: status ok, live 2 of 2, restarts [1-9]", out, re.M)
    assert re.search(r"^memory after the warm-up -> the end: server \d+ -> \d+ MiB", out, re.M)

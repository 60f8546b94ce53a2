"""The tables of the ``train``, ``encoder``, ``eval`` and ``preprocess`` sections, the table
helpers every benchmark script prints with."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table

# (heading, key of a result row, format) of each table's columns after the entry's name
TRAIN = (
    ("examples/s", "median_examples_per_second", "{:.1f}"),
    ("tokens/s", "median_tokens_per_second", "{:,.0f}"),
    ("vs reference", "ratio_vs_reference", "{:.2f}x"),
    ("per CPU s", "median_examples_per_cpu_second", "{:.1f}"),
    ("vs ref (CPU)", "cpu_ratio_vs_reference", "{:.2f}x"),
    ("of dense", "share_of_dense", "{:.0%}"),
    ("(CPU)", "cpu_share_of_dense", "{:.0%}"),
    ("data wait", "data_wait_share", "{:.1%}"),
    ("peak MiB", "peak_rss_mib", "{:,.0f}"),
)
TRAIN_GPU = (("of dense bf16", "share_of_dense_bf16", "{:.0%}"), ("GPU peak MiB", "peak_gpu_mib", "{:,.0f}"))  # fmt: skip
ENCODER = (
    ("seconds", "median_seconds", "{:.3f}"),
    ("speed-up", "speedup_vs_packed", "{:.1f}x"),
    ("peak MiB", "peak_rss_mib", "{:,.0f}"),
)
EVAL = (
    ("seconds", "seconds", "{:.1f}"),
    ("CPU seconds", "cpu_seconds", "{:.1f}"),
    ("examples/s", "examples_per_second", "{:.1f}"),
    ("peak MiB", "peak_rss_mib", "{:,.0f}"),
)
PREPROCESS = (
    ("stories/s", "stories_per_second", "{:.1f}"),
    ("vs bare (wall)", "ratio_vs_bare", "{:.2f}x"),
    ("vs bare (CPU)", "cpu_ratio_vs_bare", "{:.2f}x"),
    ("peak MiB", "peak_rss_mib", "{:,.0f}"),
)


def print_table(
    console: Console, title: str, columns: Iterable[str], rows: Iterable, left: int = 1
) -> None:
    """A table of ``rows``: its first ``left`` columns aligned left, the others right."""
    table = Table(title=title)
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i < left else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def print_results(
    console: Console, title: str, results: dict, specs: tuple, first: str = ""
) -> None:
    """One row of ``results`` (name -> row) an entry, the columns of ``specs``."""
    rows = [(name, *(f.format(row[k]) for _, k, f in specs)) for name, row in results.items()]
    print_table(console, title, (first, *(heading for heading, _, _ in specs)), rows)


def print_tables(console: Console, result: dict) -> None:
    """The tables of ``result`` (the JSON the benchmark writes)."""
    s = result["settings"]
    scale = (
        f"{result['cpu_model']} ({result['device']}); vocab {s['vocab_size']:,}, emb {s['embedding_dim']}, hidden {s['hidden_dim']}, "
        f"batch {s['batch_size']}, contexts mean ~{s['mean_context']:.0f} (cap "
        f"{s['max_context']}), torch threads {result['threads']}"
    )
    if "train" in result:
        title = f"Training throughput (median of {s['rounds']} rounds; {scale})"
        specs = TRAIN + (TRAIN_GPU if result["device"] == "cuda" else ())
        print_results(console, title, result["train"], specs)
    if "encoder" in result:
        enc = result["encoder"]
        title = (
            f"Document BiLSTM forward + backward, batch {enc['batch']}, "
            f"~{enc['mean_length']} tokens (padded to {enc['padded_length']})"
        )
        print_results(console, title, enc["results"], ENCODER)
    if "eval" in result:
        title = f"Evaluation of a {result['eval']['examples']:,}-example split"
        print_results(console, title, result["eval"]["results"], EVAL)
    if result.get("preprocess"):
        pre = result["preprocess"]
        title = f"Preprocessing, {pre['stories']} real stories ({pre['model']})"
        print_results(console, title, pre["results"], PREPROCESS)

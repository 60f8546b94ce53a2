"""The tables of the ``train``, ``encoder``, ``eval`` and ``preprocess`` sections, and the
CPU's name."""

from __future__ import annotations

import platform
from pathlib import Path

from rich.console import Console
from rich.table import Table


def print_tables(console: Console, result: dict) -> None:
    """The tables of ``result`` (the JSON the benchmark writes)."""
    s = result["settings"]
    scale = (
        f"{result['cpu_model']} ({result['device']}); vocab {s['vocab_size']:,}, emb {s['embedding_dim']}, hidden {s['hidden_dim']}, "
        f"batch {s['batch_size']}, contexts mean ~{s['mean_context']:.0f} (cap "
        f"{s['max_context']}), torch threads {result['threads']}"
    )
    if "train" in result:
        table = Table(title=f"Training throughput (median of {s['rounds']} rounds; {scale})")
        columns = ("", "examples/s", "tokens/s", "vs reference", "per CPU s", "vs ref (CPU)")
        gpu = result["device"] == "cuda"
        more = ("of dense bf16", "GPU peak MiB") if gpu else ()
        for column in (*columns, "of dense", "(CPU)", "data wait", "peak MiB", *more):
            table.add_column(column, justify="right" if column else "left")
        for name, row in result["train"].items():
            extra = (
                (
                    f"{100 * row['share_of_dense_bf16']:.0f}%",
                    f"{row['peak_gpu_mib']:,.0f}",
                )
                if gpu
                else ()
            )
            table.add_row(
                name,
                f"{row['median_examples_per_second']:.1f}",
                f"{row['median_tokens_per_second']:,.0f}",
                f"{row['ratio_vs_reference']:.2f}x",
                f"{row['median_examples_per_cpu_second']:.1f}",
                f"{row['cpu_ratio_vs_reference']:.2f}x",
                f"{100 * row['share_of_dense']:.0f}%",
                f"{100 * row['cpu_share_of_dense']:.0f}%",
                f"{100 * row['data_wait_share']:.1f}%",
                f"{row['peak_rss_mib']:,.0f}",
                *extra,
            )
        console.print(table)
    if "encoder" in result:
        enc = result["encoder"]
        table = Table(
            title=f"Document BiLSTM forward + backward, batch {enc['batch']}, "
            f"~{enc['mean_length']} tokens (padded to {enc['padded_length']})"
        )
        for column in ("", "seconds", "speed-up", "peak MiB"):
            table.add_column(column, justify="right" if column else "left")
        for name, row in enc["results"].items():
            table.add_row(
                name,
                f"{row['median_seconds']:.3f}",
                f"{row['speedup_vs_packed']:.1f}x",
                f"{row['peak_rss_mib']:,.0f}",
            )
        console.print(table)
    if "eval" in result:
        ev = result["eval"]
        table = Table(title=f"Evaluation of a {ev['examples']:,}-example split")
        for column in ("", "seconds", "CPU seconds", "examples/s", "peak MiB"):
            table.add_column(column, justify="right" if column else "left")
        for name, row in ev["results"].items():
            table.add_row(
                name,
                f"{row['seconds']:.1f}",
                f"{row['cpu_seconds']:.1f}",
                f"{row['examples_per_second']:.1f}",
                f"{row['peak_rss_mib']:,.0f}",
            )
        console.print(table)
    if result.get("preprocess"):
        pre = result["preprocess"]
        table = Table(title=f"Preprocessing, {pre['stories']} real stories ({pre['model']})")
        for column in ("", "stories/s", "vs bare (wall)", "vs bare (CPU)", "peak MiB"):
            table.add_column(column, justify="right" if column else "left")
        for name, row in pre["results"].items():
            table.add_row(
                name,
                f"{row['stories_per_second']:.1f}",
                f"{row['ratio_vs_bare']:.2f}x",
                f"{row['cpu_ratio_vs_bare']:.2f}x",
                f"{row['peak_rss_mib']:,.0f}",
            )
        console.print(table)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``, else ``platform``)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()

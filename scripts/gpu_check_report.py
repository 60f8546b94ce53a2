#!/usr/bin/env python
"""The report of ``scripts/gpu_check.sh``: ``OUT/gpu_check.json`` and ``OUT/gpu_check.md``
from the files its stages left in ``OUT`` (a missing one makes its part say "not measured").
See docs/scale.md ("The GPU check").

    python scripts/gpu_check_report.py OUT
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench.settings import DENSE_BF16  # noqa: E402  (beside this script)
from benchmark_scale import CNN_TRAIN_QUESTIONS, _round_ratio  # noqa: E402

# The config gpu_check.sh fits (its batch size turns the profiler's steps into examples).
FIT_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "attentive_reader_paper.yaml"
EPOCH_TARGET_S = 120.0  # a full CNN epoch of the Attentive Reader's paper config, bf16-mixed
DENSE_SHARE_TARGET = 0.8
IMPATIENT_TARGET = 0.6
ATTENTIVE = "configs/attentive_reader_paper.yaml"
IMPATIENT = "configs/impatient_reader_paper.yaml"


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def text(path: Path) -> str:
    """The file's text; empty where it cannot be read (a stage that left no file)."""
    try:
        return path.read_text()
    except OSError:
        return ""


def stages(out: Path) -> dict[str, dict]:
    """Each stage's line of ``stages.jsonl`` (status, limit, seconds; or why it was skipped)."""
    result = {}
    for line in text(out / "stages.jsonl").splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            result[record["stage"]] = record
    return result


def profile(path: Path) -> dict[str, dict[str, float]]:
    """Lightning's simple-profiler report: action -> {mean, calls, total} (seconds)."""
    rows: dict[str, dict[str, float]] = {}
    for line in text(path).splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        with contextlib.suppress(ValueError):  # not a row of figures
            mean, calls, total = map(float, cells[1:4])
            rows[cells[0]] = {"mean": mean, "calls": calls, "total": total}
    return rows


def gpu_samples(path: Path) -> dict[str, float] | None:
    """Utilisation (%) and memory (MiB) sampled by nvidia-smi: their mean, median and peak; the
    busy mean counts only the samples from the first to the last with the GPU busy."""
    util, memory = [], []
    for row in csv.reader(text(path).splitlines()):
        with contextlib.suppress(IndexError, ValueError):
            util.append(float(row[1]))
            memory.append(float(row[2]))
    if not util:
        return None
    busy = [i for i, u in enumerate(util) if u > 0]
    window = util[busy[0] : busy[-1] + 1] if busy else util
    return {
        "samples": len(util),
        "utilization_mean": statistics.mean(util),
        "utilization_median": statistics.median(util),
        "utilization_busy_mean": statistics.mean(window),
        "memory_used_peak_mib": max(memory),
    }


def fit_summary(out: Path, corpus: dict | None, batch_size: int) -> dict | None:
    """The real epoch: steps, examples, training seconds, rate, loader share, estimate."""
    rows = profile(out / "fit-fit_profile.txt")
    batch = rows.get("run_training_batch")
    if batch is None:
        return None
    wait = rows.get("[_TrainingEpochLoop].train_dataloader_next", {"total": 0.0, "calls": 0})
    steps = int(batch["calls"])
    examples = steps * batch_size
    tokens_per_example = None
    if corpus:
        examples = min(examples, corpus["train_examples"])
        tokens_per_example = corpus["train_context_tokens"] / corpus["train_examples"]
    seconds = batch["total"] + wait["total"]
    rate = examples / seconds if seconds else 0.0
    epoch = rows.get("run_training_epoch", {}).get("total")
    summary = {
        "steps": steps,
        "examples": examples,
        "full_epoch": bool(corpus) and examples >= corpus["train_examples"],
        "training_seconds": seconds,
        "epoch_seconds_with_validation": epoch,
        "examples_per_second": rate,
        "context_tokens_per_second": rate * tokens_per_example if tokens_per_example else None,
        "loader_share": wait["total"] / seconds if seconds else None,
        "step_ms_mean": 1000 * batch["mean"],
        "cnn_epoch_seconds_estimate": CNN_TRAIN_QUESTIONS / rate if rate else None,
    }
    for row in csv.DictReader(text(out / "fit_metrics.csv").splitlines()):
        if row.get("val_acc"):
            summary["val_acc"] = float(row["val_acc"])
    return summary


def test_accuracy(path: Path) -> float | None:
    match = re.search(r"test_acc\s*[│|]\s*([0-9.]+)", text(path))
    return float(match.group(1)) if match else None


def evaluate_summary(report: dict | None) -> dict | None:
    if not report:
        return None
    for system in report.get("systems", []):
        if system.get("kind") != "baseline":
            return {"name": system.get("name"), **system["overall"]}
    return None


def round_ratio(bench: dict, name: str, reference: str) -> float | None:
    """The median over rounds of ``name``'s rate over ``reference``'s in the same round, or
    ``None`` where either was not measured."""
    if name not in bench or reference not in bench:
        return None
    return _round_ratio(bench[name]["examples_per_second"], bench[reference]["examples_per_second"])


def _target(
    text: str, wanted: str, measured: float | None, check: Callable[[float], bool], form: str
) -> dict:
    """One row of the targets: ``met`` is None where nothing was measured; ``form`` shows the
    value."""
    met = None if measured is None else bool(check(measured))
    return {"target": text, "wanted": wanted, "measured": measured, "met": met, "form": form}


def targets(result: dict) -> list[dict]:
    """Issue 38's targets beside what was measured (None: not measured)."""
    fit, paper = result.get("fit") or {}, (result.get("bench_paper") or {}).get("train", {})
    dense_tokens = (paper.get(DENSE_BF16) or {}).get("median_tokens_per_second")
    fit_tokens = fit.get("context_tokens_per_second")
    share = fit_tokens / dense_tokens if fit_tokens and dense_tokens else None
    bench_share = (paper.get(f"{ATTENTIVE}, bf16-mixed") or {}).get("share_of_dense_bf16")
    epoch = fit.get("cnn_epoch_seconds_estimate")
    share_wanted = f">= {DENSE_SHARE_TARGET:.0%}"
    rows = [
        _target(
            "Attentive Reader, paper config, bf16-mixed: a full CNN epoch (380,298 questions), "
            "seconds",
            f"< {EPOCH_TARGET_S:.0f}", epoch, lambda v: v < EPOCH_TARGET_S, "{:,.0f}",
        ),
        _target(
            "the same fit's context tokens/s as a share of the dense limit (bf16-mixed)",
            share_wanted, share, lambda v: v >= DENSE_SHARE_TARGET, "{:.0%}",
        ),
        _target(
            "the benchmark's paper-config entry (bf16-mixed) as a share of the dense limit "
            "(bf16-mixed)",
            share_wanted, bench_share, lambda v: v >= DENSE_SHARE_TARGET, "{:.0%}",
        ),
    ]  # fmt: skip
    for precision in ("bf16-mixed", "fp32"):
        ratio = round_ratio(paper, f"{IMPATIENT}, {precision}", f"{ATTENTIVE}, {precision}")
        rows.append(
            _target(
                f"Impatient / Attentive Reader, paper configs, {precision}",
                f">= {IMPATIENT_TARGET}x", ratio, lambda v: v >= IMPATIENT_TARGET, "{:.2f}x",
            )
        )  # fmt: skip
    return rows


def _fit_batch_size() -> int:
    return int(yaml.safe_load(FIT_CONFIG.read_text())["data"]["batch_size"])


def build(out: Path) -> dict:
    corpus = read_json(out / "corpus.json")
    result: dict[str, Any] = {
        "environment": read_json(out / "environment.json"),
        "stages": stages(out),
        "corpus": corpus,
        "bench_paper": read_json(out / "bench_paper.json"),
        "bench_shipped": read_json(out / "bench_shipped.json"),
        "fit": fit_summary(out, corpus, _fit_batch_size()),
        "gpu_samples": gpu_samples(out / "gpu_samples.csv"),
        "test_acc": test_accuracy(out / "test.log"),
        "evaluate": evaluate_summary(read_json(out / "evaluate.json")),
        "answer": read_json(out / "answer.json"),
    }
    result["targets"] = targets(result)
    return result


def _number(value: float | None, form: str = "{:,.1f}") -> str:
    return "not measured" if value is None else form.format(value)


def logged_rates(path: Path) -> dict[str, list[float]]:
    """Each entry's examples/s by round, from the lines the benchmark prints as it goes
    (``round 1/3: NAME: 12.3 examples/s, ...``): what a stage stopped by its time limit leaves."""
    rates: dict[str, list[float]] = {}
    for match in re.finditer(r"^round \d+/\d+: (.+): ([0-9.]+) examples/s", text(path), re.M):
        rates.setdefault(match.group(1), []).append(float(match.group(2)))
    return rates


def _throughput(
    lines: list[str], title: str, bench: dict | None, stage: dict | None, log: Path
) -> None:
    lines += [f"### {title}", ""]
    if not bench or "train" not in bench:
        lines += [f"No benchmark report (stage: {json.dumps(stage)}).", ""]
        rates = logged_rates(log)
        if rates:
            lines += [
                "What its log holds, entry by entry until it stopped:",
                "",
                "| entry | examples/s by round |",
                "| --- | --- |",
                *(
                    f"| {name} | {', '.join(f'{r:,.1f}' for r in values)} |"
                    for name, values in rates.items()
                ),
                "",
            ]
        return
    s = bench["settings"]
    lines += [
        f"Batch {s['batch_size']}, contexts ~{s['mean_context']:.0f} tokens (cap "
        f"{s['max_context']}), {s['train_batches']} batches an epoch, median of {s['rounds']} "
        f"round(s); dense limit at embedding {s['embedding_dim']}, hidden {s['hidden_dim']}.",
        "",
        "| entry | examples/s | context tokens/s | of dense fp32 | of dense bf16 | data wait "
        "| GPU peak MiB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in bench["train"].items():
        bf16 = row.get("share_of_dense_bf16")
        gpu = row.get("peak_gpu_mib")
        lines.append(
            f"| {name} | {row['median_examples_per_second']:,.1f} | "
            f"{row['median_tokens_per_second']:,.0f} | {100 * row['share_of_dense']:.0f}% | "
            f"{'-' if bf16 is None else f'{100 * bf16:.0f}%'} | "
            f"{100 * row['data_wait_share']:.1f}% | {'-' if gpu is None else f'{gpu:,.0f}'} |"
        )
    lines.append("")


def markdown(result: dict, out: Path) -> str:
    env = result["environment"] or {}
    lines = [
        "# GPU check",
        "",
        f"{env.get('gpu') or env.get('device', 'unknown device')}; torch {env.get('torch')}, "
        f"CUDA {env.get('cuda')}, cuDNN {env.get('cudnn')}, pytorch-lightning "
        f"{env.get('pytorch_lightning')}, Python {env.get('python')}, {env.get('cpu_count')} "
        "CPUs.",
        "",
        "## Targets",
        "",
        "| target | wanted | measured | met |",
        "| --- | --- | ---: | --- |",
    ]
    for row in result["targets"]:
        shown = _number(row["measured"], row["form"])
        met = {True: "yes", False: "no", None: "-"}[row["met"]]
        lines.append(f"| {row['target']} | {row['wanted']} | {shown} | {met} |")
    fit, corpus, samples = result["fit"], result["corpus"] or {}, result["gpu_samples"]
    where = "GPU" if env.get("device") == "cuda" else "CPU"
    lines += [
        "",
        "## One epoch of `attentive-reader fit` (configs/attentive_reader_paper.yaml)",
        "",
    ]
    if fit:
        lines += [
            f"- data: {corpus.get('train_examples', 0):,} generated CNN-shaped training "
            f"examples ({corpus.get('train_context_tokens', 0):,} context tokens)",
            f"- trained: {fit['steps']:,} steps, {fit['examples']:,} examples"
            + ("" if fit["full_epoch"] else " (stopped by --trainer.max_time)"),
            f"- training time (steps and waiting for batches): {fit['training_seconds']:.1f} s;"
            f" the epoch with validation: {_number(fit['epoch_seconds_with_validation'])} s",
            f"- {fit['examples_per_second']:,.0f} examples/s, "
            f"{_number(fit['context_tokens_per_second'], '{:,.0f}')} context tokens/s; "
            f"mean step {fit['step_ms_mean']:.1f} ms",
            f"- the loader's share of a step: {_number(fit['loader_share'], '{:.1%}')}",
            f"- a full CNN epoch (380,298 questions) at this rate: "
            f"{_number(fit['cnn_epoch_seconds_estimate'], '{:,.0f}')} s (an estimate from the "
            "measured rate)",
            f"- val_acc {fit.get('val_acc', 'not logged')}, test_acc "
            f"{_number(result['test_acc'], '{:.4f}')} (generated data: chance is the point)",
        ]
    else:
        lines.append(f"Not measured (stage: {json.dumps(result['stages'].get('fit'))}).")
    if samples:
        lines.append(
            f"- GPU utilisation (nvidia-smi, {samples['samples']} samples over the whole fit): "
            f"mean {samples['utilization_mean']:.0f}%, while busy "
            f"{samples['utilization_busy_mean']:.0f}%; memory used at most "
            f"{samples['memory_used_peak_mib']:,.0f} MiB"
        )
    evaluation = result["evaluate"]
    stage = result["stages"].get("evaluate") or {}
    lines.append(
        f"- `evaluate` on the {where}: {evaluation['n']:,} examples, accuracy "
        f"{evaluation['accuracy']:.4f}, {stage.get('seconds', 0):.1f} s in all"
        if evaluation
        else f"- `evaluate`: not measured (stage: {json.dumps(stage or None)})"
    )
    answer_stage = result["stages"].get("answer") or {}
    lines.append(
        f"- `answer` on the {where}: {answer_stage.get('seconds', 0):.1f} s in all"
        if result["answer"]
        else f"- `answer`: not run ({answer_stage.get('skipped') or json.dumps(answer_stage)})"
    )
    lines.append("")
    lines += ["## Training throughput", ""]
    _throughput(
        lines,
        "The paper configs at their sizes (embedding 200, hidden 256)",
        result["bench_paper"],
        result["stages"].get("bench_paper"),
        out / "bench_paper.log",
    )
    _throughput(
        lines,
        "Every shipped reader config",
        result["bench_shipped"],
        result["stages"].get("bench_shipped"),
        out / "bench_shipped.log",
    )
    encoder = (result["bench_paper"] or {}).get("encoder")
    if encoder:
        lines += [
            f"### The document BiLSTM alone: forward + backward, batch {encoder['batch']}, "
            f"~{encoder['mean_length']} tokens (padded to {encoder['padded_length']})",
            "",
            "| kernels | median ms | vs torch's PackedSequence |",
            "| --- | ---: | ---: |",
            *(
                f"| {name} | {1000 * row['median_seconds']:,.1f} | "
                f"{row['speedup_vs_packed']:.2f}x |"
                for name, row in encoder["results"].items()
            ),
            "",
        ]
    lines += ["## Stages", "", "| stage | exit | seconds | limit |", "| --- | ---: | ---: | ---: |"]
    for name, stage in result["stages"].items():
        if "skipped" in stage:
            lines.append(f"| {name} | skipped: {stage['skipped']} | | |")
        else:
            lines.append(
                f"| {name} | {stage['rc']} | {stage['seconds']:.1f} | {stage['limit_s']} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the folder gpu_check.sh wrote")
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"{args.out} is not a folder (run scripts/gpu_check.sh first)")
    result = build(args.out)
    (args.out / "gpu_check.json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result, args.out)
    (args.out / "gpu_check.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What reading less costs: ``evaluate --eval-mode`` reads a hard-attention checkpoint in each
mode as a system of its own, every report counts the document tokens each system read, and
``curves --reading`` draws accuracy against them (checkpoints: ``conftest.toy_run``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from attentive_reader.cli import main as cli
from attentive_reader.eval import evaluate, load_examples

MODES = ("greedy", "sample", "expected")


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _mean_length(data: Path) -> float:
    lengths = [len(example.context) for example in load_examples(data, "test")]
    return sum(lengths) / len(lengths)


def test_each_eval_mode_is_a_system_that_reads_what_its_mode_reads(toy_run, tmp_path, capsys):
    hard, out, lines = str(toy_run.hard), tmp_path / "hard.json", tmp_path / "hard.jsonl"
    argv = ["evaluate", "--ckpt", hard, "--eval-mode", *MODES, "--data", str(toy_run.data)]
    assert cli([*argv, "--out", str(out), "--predictions", str(lines)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    names = [f"{hard} [eval_mode={mode}]" for mode in MODES]
    models = [s for s in report["systems"] if s["kind"] == "model"]
    assert [s["name"] for s in models] == names
    # The same file, the same examples; only the mode differs (the saved one is kept).
    infos = report["inputs"]["checkpoints"]
    assert [info["eval_mode"] for info in infos] == list(MODES)
    assert len({info["sha256"] for info in infos}) == 1
    assert {info["hyper_parameters"]["eval_mode"] for info in infos} == {"greedy"}
    assert report["inputs"]["options"]["eval_modes"] == list(MODES)
    assert all(s["overall"]["n"] == 11 for s in models)

    # Tokens read, by hand: greedy with k = 1 reads one token of each question; expected
    # answers from every position alone, averaged: it reads the whole document.
    document = _mean_length(toy_run.data)
    greedy, sample, expected = (s["reading"] for s in models)
    assert greedy == {"tokens_read": 1.0, "document_tokens": document}
    assert expected == {"tokens_read": document, "document_tokens": document}
    # sample reads the union of its 8 one-token selections: each line says how many.
    written = _lines(lines)
    by_system = {name: [line for line in written if line["checkpoint"] == name] for name in names}
    sampled = [line["tokens_read"] for line in by_system[names[1]]]
    assert all(1 <= count <= 8 for count in sampled) and max(sampled) > 1
    assert sample["tokens_read"] == pytest.approx(sum(sampled) / len(sampled))
    assert {line["tokens_read"] for line in by_system[names[0]]} == {1}
    assert [line["document_tokens"] for line in by_system[names[2]]] == [
        len(ex.context) for ex in load_examples(toy_run.data, "test")
    ]
    assert f"| {names[0]} | model |" in printed and f"| 1.0 of {document:.1f} |" in printed


def test_a_soft_reader_reads_the_whole_document_as_the_baselines_do(toy_run):
    report = evaluate(toy_run.data, [toy_run.attentive, toy_run.gated], batch_size=4)
    document = _mean_length(toy_run.data)
    for system in report.systems:
        assert system.reading is not None, system.name
        assert system.reading.tokens_read == system.reading.document_tokens == document
    # An ensemble reads the tokens any of its readers reads.
    both = evaluate(toy_run.data, ensembles=[[toy_run.hard, toy_run.attentive]])
    (ensemble,) = [s for s in both.systems if s.kind == "model"]
    assert ensemble.reading is not None and ensemble.reading.tokens_read == document


def test_the_mode_given_is_the_saved_mode_read_again(toy_run):
    """``--eval-mode greedy`` on a reader saved greedy: the very same answers."""
    saved = evaluate(toy_run.data, [toy_run.hard])
    again = evaluate(toy_run.data, [toy_run.hard], eval_modes=["greedy"])
    (one,), (two,) = saved.lines.values(), again.lines.values()
    assert [(a.prediction, a.gold_probability) for a in one] == [
        (b.prediction, b.gold_probability) for b in two
    ]


def test_sampling_is_seeded_whatever_the_other_systems(toy_run):
    def sampled(modes, seed=0):
        report = evaluate(toy_run.data, [toy_run.hard], eval_modes=modes, seed=seed, batch_size=4)
        return report.lines.get(f"{toy_run.hard} [eval_mode=sample]")

    torch.manual_seed(123)
    first = sampled(["sample"])
    after = torch.rand(3)
    torch.manual_seed(123)
    sampled(["greedy"])  # draws nothing: the caller's generator is left as sampling leaves it
    assert torch.equal(after, torch.rand(3))
    assert sampled(["expected", "greedy", "sample"]) == first  # every field, probabilities too
    other = sampled(["sample"], seed=1)
    assert [line.tokens_read for line in other] != [line.tokens_read for line in first]
    assert evaluate(toy_run.data, [toy_run.hard], eval_modes=["sample"], seed=1).options.seed == 1


def test_eval_mode_mistakes_are_one_line_and_write_nothing(toy_run, tmp_path, capsys):
    data, hard, soft = str(toy_run.data), str(toy_run.hard), str(toy_run.attentive)
    out = tmp_path / "report.json"
    cases = [
        (["--ckpt", hard, soft, "--eval-mode", "sample"], f"--eval-mode sample: {soft} holds a reader that reads one way (AttentiveReader, no eval_mode); evaluate it without --eval-mode"),
        (["--ckpt", hard, "--eval-mode", "sideways"], f"--eval-mode sideways: {hard}: eval_mode must be one of"),
        (["--ckpt", hard, "--eval-mode", "greedy", "sample", "greedy"], "--eval-mode names greedy twice"),
        (["--ensemble", hard, "--eval-mode", "greedy"], "--eval-mode sets how each --ckpt reads; give a checkpoint"),
        (["--ckpt", hard, "--eval-mode", "sample", "--seed", "-1"], "--seed must be >= 0, got -1"),
    ]  # fmt: skip
    for args, message in cases:
        assert cli(["evaluate", "--data", data, *args, "--out", str(out)]) == 2, args
        captured = capsys.readouterr()
        (line,) = captured.err.strip().splitlines()[-1:]
        assert line.startswith("attentive-reader evaluate: error: ") and message in line, line
        assert "Traceback" not in captured.err and captured.out == ""
        assert "evaluating" not in captured.err  # told before any checkpoint is read
    assert not out.exists()


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_the_reading_plot_is_drawn_from_written_reports(toy_run, tmp_path, capsys):
    data, hard = str(toy_run.data), str(toy_run.hard)
    hard_json, soft_json = tmp_path / "hard.json", tmp_path / "soft.json"
    argv = ["evaluate", "--data", data, "--ckpt", hard, "--eval-mode", *MODES]
    assert cli([*argv, "--out", str(hard_json)]) == 0
    argv = ["evaluate", "--data", data, "--ckpt", str(toy_run.attentive)]
    assert cli([*argv, "--out", str(soft_json)]) == 0
    capsys.readouterr()
    png, table = tmp_path / "reading.png", tmp_path / "reading.md"
    argv = ["curves", "--reading", str(hard_json), str(soft_json), "--output", str(png)]
    assert cli([*argv, "--table", str(table)]) == 0
    printed = capsys.readouterr().out
    assert table.read_text().strip() == printed.strip()

    # One row per system, fewest tokens first, each from its report.
    systems = [s for f in (hard_json, soft_json) for s in json.loads(f.read_text())["systems"]]
    models = sorted(
        (s for s in systems if s["kind"] == "model"), key=lambda s: s["reading"]["tokens_read"]
    )
    rows = [line for line in printed.splitlines() if line.startswith(f"| {Path(hard).parent}")]
    assert len(rows) == 4
    for row, system in zip(rows, models):
        overall, read = system["overall"], system["reading"]
        assert row == (
            f"| {system['name']} | {read['tokens_read']:.1f} | {read['document_tokens']:.1f} | "
            f"{100 * overall['accuracy']:.1f} | "
            f"{100 * overall['ci_low']:.1f}-{100 * overall['ci_high']:.1f} |"
        )
    assert rows[0].startswith(f"| {hard} [eval_mode=greedy] | 1.0 |")
    assert "| word distance (baseline) |" in printed and "(11 questions)" in printed
    assert _png_size(png) == (880, 484)

    from attentive_reader.viz.curves import reading_curves

    figure = reading_curves([hard_json, soft_json]).draw()
    (ax,) = figure.get_axes()
    assert ax.get_xscale() == "log"
    labels = ax.get_legend_handles_labels()[1]
    assert [s["name"] for s in systems if s["kind"] == "model"] == [
        label for label in labels if label.startswith(str(Path(hard).parent))
    ]

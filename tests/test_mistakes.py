"""Every command of ``attentive-reader --help`` against a table of a user's mistakes.

Each mistake must end in one line that says what was wrong and what to do (exit status 2),
never a traceback, never more than a few lines of output (Lightning's two device lines and
"Seed set" may come first). The table grows with every mistake a user reports; a command
added to ``cli.COMMANDS`` without a row fails ``test_the_table_covers_every_command``.

Everything runs in this process on the tiny trained reader (``trained``), except the closed
pipe, which needs a real one.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from attentive_reader.cli import COMMANDS, main
from tests.trained_reader import ROOT, TrainedReader

MAX_LINES = 4
# fit's options that make a tiny, quiet run (the shipped config found by name).
QUIET_FIT = [
    "--config", "attentive_reader",
    "--data.batch_size", "8",
    "--model.init_args.embedding_dim", "8",
    "--model.init_args.hidden_dim", "8",
    "--trainer.max_steps", "1",
    "--trainer.logger", "false",
    "--trainer.enable_progress_bar", "false",
    "--trainer.enable_model_summary", "false",
]  # fmt: skip


@dataclass(frozen=True)
class Mistake:
    """One row: ``argv`` (``{name}`` filled from the ``world`` paths) and a fragment the
    error line must hold."""

    name: str
    argv: tuple[str, ...]
    says: str


TABLE = [
    # data commands
    Mistake("download-unknown-corpus", ("download", "nope", "--dest", "{tmp}/dl"), "unknown corpus"),
    Mistake("preprocess-mistyped-path", ("preprocess", "{tmp}/stories_typo/x", "-o", "{tmp}/p"), "no such file"),
    Mistake("preprocess-junk-input", ("preprocess", "{junk}", "-o", "{tmp}/p"), "unknown input type"),
    Mistake("preprocess-unknown-option", ("preprocess", "{stories}", "-o", "{tmp}/p", "--nope"), "unrecognized arguments"),
    Mistake("merge-missing", ("merge", "{tmp}/nope", "--output", "{tmp}/m"), "not the output of a partial run"),
    Mistake("export-missing-dataset", ("export", "{tmp}/nope", "--output", "{tmp}/e"), "not a processed dataset"),
    Mistake("synth-wrong-type", ("synth", "--stories", "abc", "{tmp}/s"), "--stories"),
    Mistake("encode-missing-dataset", ("encode", "{tmp}/nope"), "not a processed dataset"),
    Mistake("vectors-missing-dataset", ("vectors", "--data", "{tmp}/nope", "--output", "{tmp}/v.txt"), "not a processed dataset"),
    Mistake("configs-unknown-option", ("configs", "--nope"), "unrecognized arguments"),
    # the Lightning commands
    Mistake("fit-missing-dataset", ("fit", *QUIET_FIT, "--data.path", "{tmp}/nope"), "not a processed dataset"),
    Mistake("fit-bad-yaml", ("fit", *QUIET_FIT, "--config", "{bad_yaml}", "--data.path", "{data}"), "bad.yaml, line 4"),
    Mistake("fit-unknown-option-in-config", ("fit", *QUIET_FIT, "--config", "{unknown_yaml}", "--data.path", "{data}"), "no option 'hiden_dim' (in {unknown_yaml}, line 4)"),
    Mistake("fit-unknown-option", ("fit", *QUIET_FIT, "--data.path", "{data}", "--nope", "1"), "unrecognized arguments: --nope"),
    Mistake("fit-wrong-type", ("fit", *QUIET_FIT, "--data.path", "{data}", "--data.batch_size", "abc"), "--data.batch_size: expected int, got 'abc'"),
    Mistake("fit-missing-config", ("fit", "--config", "{tmp}/nope.yaml", "--data.path", "{data}"), "config {tmp}/nope.yaml does not exist"),
    Mistake("fit-unknown-config-name", ("fit", "--config", "atentive_reader", "--data.path", "{data}"), "no shipped config is called 'atentive_reader'"),
    Mistake("fit-no-reader", ("fit", "--data.path", "{data}"), "no reader given"),
    Mistake("fit-missing-checkpoint", ("fit", *QUIET_FIT, "--data.path", "{data}", "--ckpt_path", "{tmp}/nope.ckpt"), "no such file"),
    Mistake("fit-truncated-checkpoint", ("fit", *QUIET_FIT, "--data.path", "{data}", "--ckpt_path", "{truncated}"), "not a readable checkpoint"),
    Mistake("fit-empty-train", ("fit", *QUIET_FIT, "--data.path", "{no_train}"), "the train split of"),
    Mistake("fit-word-vectors-of-another-size", ("fit", *QUIET_FIT, "--data.path", "{data}", "--model.init_args.word_vectors", "{vectors5}"), "holds 5-dimensional vectors but the reader's embedding_dim is 8"),
    Mistake("fit-missing-word-vectors", ("fit", *QUIET_FIT, "--data.path", "{data}", "--model.word_vectors", "{tmp}/glove.txt"), "word vectors file not found: {tmp}/glove.txt"),
    Mistake("validate-empty-split", ("validate", "--config", "attentive_reader", "--data.path", "{empty}", "--ckpt_path", "{ckpt}"), "the validation split of"),
    Mistake("validate-junk-checkpoint", ("validate", "--config", "attentive_reader", "--data.path", "{data}", "--ckpt_path", "{junk}"), "not a readable checkpoint"),
    Mistake("test-empty-split", ("test", "--config", "attentive_reader", "--data.path", "{empty}", "--ckpt_path", "{ckpt}"), "the test split of"),
    Mistake("test-truncated-checkpoint", ("test", "--config", "attentive_reader", "--data.path", "{data}", "--ckpt_path", "{truncated}"), "not a readable checkpoint"),
    Mistake("predict-missing-checkpoint", ("predict", "--config", "attentive_reader", "--data.path", "{data}", "--ckpt_path", "{tmp}/nope.ckpt"), "no such file"),
    # the reading commands
    Mistake("evaluate-truncated-checkpoint", ("evaluate", "--data", "{data}", "--ckpt", "{truncated}"), "not a readable checkpoint"),
    Mistake("evaluate-missing-dataset", ("evaluate", "--data", "{tmp}/nope", "--ckpt", "{ckpt}"), "not a processed dataset"),
    Mistake("learning-unknown-reader", ("learning", "--readers", "attentive_redaer"), "--readers: no shipped config is called 'attentive_redaer'"),
    Mistake("learning-size-zero", ("learning", "--readers", "attentive_reader", "--sizes", "0"), "--sizes 0: a training-set size is a number of questions, 1 or more"),
    Mistake("anonymization-not-a-dataset", ("anonymization", "{tmp}"), "is not a preprocessed dataset"),
    Mistake("evaluate-ensemble-of-two-vocabularies", ("evaluate", "--data", "{data}", "--ensemble", "{ckpt}", "{other_vocab}"), "cannot answer as one ensemble: their vocabularies differ"),
    Mistake("curves-run-without-metrics", ("curves", "{tmp}/stories_typo"), "stories_typo: no version_N/metrics.csv in it"),
    Mistake("heatmap-junk-checkpoint", ("heatmap", "--data", "{data}", "--ckpt", "{junk}", "--out", "{tmp}/h"), "not a readable checkpoint"),
    Mistake("answer-missing-document", ("answer", "--ckpt", "{ckpt}", "--document", "{tmp}/nope.txt", "--query", "@placeholder won"), "not found"),
    Mistake("answer-ensemble-of-two-vocabularies", ("answer", "--ensemble", "{ckpt}", "{other_vocab}", "--document", "{story}", "--query", "@placeholder won"), "cannot answer as one ensemble"),
    Mistake("serve-missing-checkpoint", ("serve", "--ckpt", "{tmp}/nope.ckpt"), "not found"),
    Mistake("serve-ensemble-and-ckpt", ("serve", "--ckpt", "{ckpt}", "--ensemble", "{ckpt}"), "not allowed with argument"),
    Mistake("demo-unknown-reader", ("demo", "--reader", "nope"), "unknown reader 'nope'"),
    # a new user's first day
    Mistake("unknown-command", ("trian",), "unknown command 'trian'; did you mean 'fit'?"),
    Mistake("preprocess-folder-of-txt", ("preprocess", "{txt}", "-o", "{tmp}/p"), "it holds 3 .txt files: a story is its article, then its summary points each after an @highlight line"),
    Mistake("fit-missing-data-path", ("fit", "--config", "attentive_reader"), "--data.path (the processed dataset folder, from 'attentive-reader preprocess') is required; 'attentive-reader fit --help' lists the options"),
    Mistake("answer-missing-checkpoint", ("answer", "--ckpt", "{tmp}/nope.ckpt", "--document", "{tmp}/nope.txt", "--query", "@placeholder won"), "checkpoint not found: {tmp}/nope.ckpt"),
    Mistake("answer-missing-batch-file", ("answer", "--ckpt", "{ckpt}", "--batch", "{tmp}/nope.jsonl"), "batch file not found"),
    Mistake("serve-port-in-use", ("serve", "--ckpt", "{ckpt}", "--port", "{busy_port}"), "--port {busy_port}: the port is in use on 127.0.0.1"),
    Mistake("serve-missing-dataset", ("serve", "--ckpt", "{ckpt}", "--data", "{tmp}/nope"), "not a processed dataset"),
    Mistake("heatmap-missing-checkpoint", ("heatmap", "--data", "{data}", "--ckpt", "{tmp}/nope.ckpt", "--out", "{tmp}/h"), "checkpoint not found"),
    Mistake("evaluate-checkpoint-folder", ("evaluate", "--data", "{data}", "--ckpt", "{tmp}"), "is a folder, not a checkpoint"),
]  # fmt: skip


def _empty_split_dataset(trained: TrainedReader, out: Path, split: str = "") -> Path:
    """The stories as one CSV, preprocessed: every row goes to train, or to ``split`` when
    given (``SPLIT=FILE``); the other splits are empty."""
    rows = []
    for story in sorted((trained.corpus / "stories").glob("*.story"))[:8]:
        article, *highlights = story.read_text(encoding="utf-8").split("@highlight")
        rows.append(
            {"article": article.strip(), "highlights": "\n".join(h.strip() for h in highlights)}
        )
    sample = out / "sample.csv"
    with sample.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, ["article", "highlights"])
        writer.writeheader()
        writer.writerows(rows)
    data = out / f"empty_splits{split}"
    named = f"{split}={sample}" if split else str(sample)
    argv = ["preprocess", named, "--spacy-model", str(trained.ruler), "-o", str(data), "-q"]
    assert main(argv) == 0
    return data


@pytest.fixture(scope="module")
def world(trained: TrainedReader, tmp_path_factory) -> Iterator[dict[str, str]]:
    import torch

    tmp = tmp_path_factory.mktemp("mistakes")
    txt = tmp / "articles"  # plain text, as a new user's own stories may come
    (txt / "more").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "more/c.txt"):
        (txt / name).write_text("Kennedy flew to Lisbon.\n", encoding="utf-8")
    (tmp / "stories_typo").mkdir()  # a folder beside the mistyped path: a path, not a hub name
    truncated = tmp / "truncated.ckpt"
    truncated.write_bytes(trained.ckpt.read_bytes()[:3000])
    junk = tmp / "notes.ckpt"
    junk.write_text("not a checkpoint\n")
    bad_yaml = tmp / "bad.yaml"
    bad_yaml.write_text("model:\n  init_args:\n    hidden_dim: [8\n  dropout: 0.1\n")
    vectors5 = tmp / "glove.5d.txt"
    vectors5.write_text("the 1 2 3 4 5\n")
    checkpoint = torch.load(trained.ckpt, weights_only=True)
    words = checkpoint["ClozeDataModule"]["vocab"]["words"]
    words[:2] = words[1::-1]  # the same words, two of them at each other's ids
    other_vocab = tmp / "other_vocab.ckpt"
    torch.save(checkpoint, other_vocab)
    unknown_yaml = tmp / "unknown.yaml"
    unknown_yaml.write_text(
        "model:\n  class_path: attentive_reader.models.AttentiveReader\n  init_args:\n"
        "    hiden_dim: 8\n"
    )
    paths = {
        "tmp": tmp,
        "data": trained.data,
        "stories": trained.corpus / "stories",
        "ckpt": trained.ckpt,
        "truncated": truncated,
        "junk": junk,
        "bad_yaml": bad_yaml,
        "unknown_yaml": unknown_yaml,
        "vectors5": vectors5,
        "other_vocab": other_vocab,
        "story": sorted((trained.corpus / "stories").glob("*.story"))[0],
        "empty": _empty_split_dataset(trained, tmp),
        "no_train": _empty_split_dataset(trained, tmp, "test"),
        "txt": txt,
    }
    with socket.socket() as busy:  # a port another server holds
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield {"busy_port": str(busy.getsockname()[1])} | {k: str(v) for k, v in paths.items()}


def _run(argv, capfd) -> tuple[int, list[str]]:
    status = main(list(argv))
    captured = capfd.readouterr()
    return status, [line for line in (captured.out + captured.err).splitlines() if line.strip()]


def test_the_table_covers_every_command():
    assert set(COMMANDS) <= {mistake.argv[0] for mistake in TABLE} | {"configs"}
    assert "configs" in {mistake.argv[0] for mistake in TABLE}


@pytest.mark.parametrize("mistake", TABLE, ids=lambda m: m.name)
def test_a_mistake_is_one_line(mistake: Mistake, world, capfd, monkeypatch):
    monkeypatch.chdir(world["tmp"])
    argv = [arg.format(**world) for arg in mistake.argv]
    status, lines = _run(argv, capfd)
    output = "\n".join(lines)
    assert "Traceback" not in output, output
    assert status == 2, output
    assert len(lines) <= MAX_LINES, output
    command = argv[0]
    said = (
        f"attentive-reader {command}: error: "
        if command in COMMANDS
        else "attentive-reader: error: "
    )
    assert lines[-1].startswith(said), output
    assert mistake.says.format(**world) in lines[-1], output


@pytest.mark.parametrize(
    ("asking", "says"),
    [
        (("--config", "trainer/ddp_gpu"), "or put --trainer.accelerator cpu"),
        (("--trainer.accelerator", "gpu"), "the reader configs train on the CPU as they are"),
        (("--config", "trainer/ddp_gpu", "--trainer.accelerator=cuda"), "train on the CPU"),
    ],
    ids=["config", "flag", "flag-after-config"],
)
def test_a_gpu_asked_for_without_a_gpu_is_one_line_that_says_what_to_drop(
    asking, says, world, capfd
):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the GPU config runs")
    argv = ["fit", *QUIET_FIT, "--data.path", world["data"], *asking]
    status, lines = _run(argv, capfd)
    assert status == 2 and len(lines) <= MAX_LINES, lines
    asker = " ".join(asking[-2:]) if "=" not in asking[-1] else asking[-1].replace("=", " ")
    assert lines[-1].startswith(f"attentive-reader fit: error: {asker} asks for a GPU"), lines
    assert f"drop {asker}" in lines[-1] and says in lines[-1], lines
    assert "cpu_debug" not in lines[-1]


def test_a_config_path_read_from_the_shipped_copy_is_named(world, capfd, monkeypatch):
    from attentive_reader.training.shipped_configs import configs_dir

    monkeypatch.chdir(world["tmp"])  # no configs/ here
    status, lines = _run(["fit", "--config", "configs/real_news/as_reader.yaml"], capfd)
    shipped = configs_dir() / "real_news" / "as_reader.yaml"
    assert status == 2 and "--data.path" in lines[-1], lines
    notes = [line for line in lines if line.startswith("note:")]
    assert notes == [
        f"note: no configs/real_news/as_reader.yaml in this folder; reading the shipped copy {shipped}"
    ]


def test_argument_mistakes_are_told_before_torch_lightning_or_spacy_load(world, tmp_path):
    """A missing checkpoint (and the other argument checks) is said before the heavy imports
    (seconds each): each command runs in a fresh process that then lists what it loaded."""
    document = tmp_path / "doc.txt"
    document.write_text("Kennedy flew to Lisbon.\n", encoding="utf-8")
    nope = str(tmp_path / "nope.ckpt")
    cases = [
        (["answer", "--ckpt", nope, "--document", str(document), "--query", "@placeholder won"], f"checkpoint not found: {nope}"),
        (["answer", "--ckpt", world["ckpt"], "--document", str(document), "--query", "no blank"], "has no blank"),
        (["serve", "--ckpt", nope], f"checkpoint not found: {nope}"),
        (["serve", "--ckpt", world["ckpt"], "--port", world["busy_port"]], "the port is in use"),
        (["heatmap", "--data", world["data"], "--ckpt", nope, "--out", str(tmp_path / "h")], f"checkpoint not found: {nope}"),
        (["evaluate", "--data", world["data"], "--ckpt", nope], f"checkpoint not found: {nope}"),
        (["export", str(tmp_path / "nope"), "--output", str(tmp_path / "e")], "not a processed dataset"),
    ]  # fmt: skip
    code = (  # the commands one after another, each followed by what is loaded so far
        "import json, sys\n"
        "from attentive_reader.cli import main\n"
        "heavy = ('torch', 'pytorch_lightning', 'lightning', 'spacy')\n"
        "for argv in json.loads(sys.argv[1]):\n"
        "    status = main(argv)\n"
        "    print(json.dumps([status, [name for name in heavy if name in sys.modules]]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.run(
        [sys.executable, "-c", code, json.dumps([argv for argv, _ in cases])],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert [json.loads(line) for line in child.stdout.splitlines()] == [[2, []]] * len(cases), (
        child.stderr
    )
    lines = child.stderr.splitlines()
    assert len(lines) == len(cases), child.stderr
    for (argv, says), line in zip(cases, lines):
        assert line.startswith(f"attentive-reader {argv[0]}: error: ") and says in line, line


def test_a_mistyped_preprocess_path_leaves_nothing(world, capfd):
    out = Path(world["tmp"]) / "never"
    status, _ = _run(["preprocess", f"{world['tmp']}/stories_typo/x", "-o", str(out)], capfd)
    assert status == 2 and not out.exists()


def test_empty_splits_are_said_and_fit_trains_without_validation(world, capfd, tmp_path):
    manifest = json.loads((Path(world["empty"]) / "manifest.json").read_text())
    assert manifest["examples"]["validation"] == manifest["examples"]["test"] == 0
    runs = tmp_path / "runs"
    argv = [
        "fit",
        *QUIET_FIT,
        "--data.path",
        world["empty"],
        "--trainer.default_root_dir",
        str(runs),
    ]
    status, lines = _run(argv, capfd)
    output = "\n".join(lines)
    assert status == 0 and "Traceback" not in output, output
    assert "warning: the validation split of" in output and "training without validation" in output
    assert (runs / "checkpoints" / "last.ckpt").is_file()
    assert not [line for line in lines if "Tip" in line or "LeafSpec" in line], output


def test_preprocess_says_why_splits_are_empty(trained, tmp_path, capfd):
    _empty_split_dataset(trained, tmp_path)
    err = capfd.readouterr().err
    assert "warning: the validation and test splits are empty" in err
    assert "test=FILE" in err and len(err.strip().splitlines()) == 1


class _ClosedStdout:
    """A standard output whose reader has gone (``| head``)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        raise OSError("no file descriptor")


def test_a_closed_stdout_ends_quietly_with_the_files_written(world, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", _ClosedStdout())
    out = tmp_path / "r.json"
    assert (
        main(["evaluate", "--data", world["data"], "--ckpt", world["ckpt"], "--out", str(out)]) == 0
    )
    assert json.loads(out.read_text())["num_examples"] > 0
    assert "Traceback" not in capsys.readouterr().err


def test_a_closed_pipe_in_a_real_process(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "from attentive_reader.cli import main; import sys; sys.exit(main(['configs']))"
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    child.stdout.close()  # the reader goes before the first line, as head's may
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 0 and err == "", err

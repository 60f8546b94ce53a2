"""``attentive-reader curves``: each kind of curve on files written here with known numbers
(the table shows them, the PNG is whole), and the mistakes a user can make, each one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from attentive_reader.cli import main
from attentive_reader.commands.curves import build_parser
from tests.corpus.fixtures import cloze_example, write_dataset

BASELINES = {"maximum_frequency": 0.25, "exclusive_frequency": 0.3, "word_distance": 0.45}


def _metrics(path: Path, header: str, rows: list[str]) -> None:
    """A ``metrics.csv`` as the CSV logger writes it (step rows and epoch rows mixed)."""
    path.parent.mkdir(parents=True)
    path.write_text("\n".join([header, *rows]) + "\n")


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _curves(capsys, *args: str) -> str:
    assert main(["curves", *args]) == 0
    return capsys.readouterr().out


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """Run ``a`` stopped after epoch 2 and was resumed (version_1 has epoch 3); ``b`` validated
    once; ``c`` has not validated yet."""
    root = tmp_path / "runs"
    header = "epoch,step,train_loss_epoch,train_loss_step,val_acc"
    _metrics(
        root / "a/version_0/metrics.csv", header, ["0,9,,1.5,", "0,9,2.0,,0.5", "1,19,1.0,,0.625"]
    )
    _metrics(root / "a/version_1/metrics.csv", header, ["2,29,0.5,,0.6"])
    _metrics(root / "b/version_0/metrics.csv", header, ["0,9,2.0,,0.25"])
    _metrics(root / "c/version_0/metrics.csv", header, ["0,9,,1.5,"])
    return root


def test_validation_curves_of_a_folder_of_runs(runs, tmp_path, capsys):
    example = cloze_example("ex0", "s0")  # the answer @entity0 occurs once, @entity1 twice
    data = write_dataset(tmp_path / "data", {"train": [example], "validation": [example]})
    png, table = tmp_path / "curves.png", tmp_path / "curves.md"
    assert (
        main(["curves", str(runs), "--data", data, "--output", str(png), "--table", str(table)])
        == 0
    )
    captured = capsys.readouterr()
    # Resumed versions joined; the best epoch named; no wall time logged: no minutes.
    assert "| a | 0.500 | 0.625 | 0.600 | 0.625 (epoch 2) | - | - |" in captured.out
    assert "| b | 0.250 |  |  | 0.250 (epoch 1) | - | - |" in captured.out
    assert "| c |" not in captured.out and "runs/c: no validated epoch yet" in captured.err
    # Maximum frequency answers @entity1: wrong on the one validation question.
    assert "| maximum frequency (baseline) | 0.000 |" in captured.out
    assert table.read_text().strip() == captured.out.strip()
    assert _png_size(png) == (880, 484)  # 8 x 4.4 inches at 110 dpi
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curves.md", "curves.png", "data", "runs"]


def test_minutes_per_epoch_and_to_the_best_from_the_logged_wall_time(tmp_path, capsys):
    # Epochs end at 6, 18 and 24 minutes (a resume before the third): epochs of 6, 12 and 6
    # minutes (median 6); the best is the second, 18 minutes in.
    header = "epoch,step,train_loss_epoch,train_wall_s,val_acc"
    _metrics(tmp_path / "a/version_0/metrics.csv", header, ["0,9,1.0,360,0.5", "1,19,1.0,1080,0.7"])
    _metrics(tmp_path / "a/version_1/metrics.csv", header, ["2,29,1.0,1440,0.6"])
    printed = _curves(capsys, str(tmp_path / "a"))
    assert "| a | 0.500 | 0.700 | 0.600 | 0.700 (epoch 2) | 6.0 | 18.0 |" in printed


def test_the_wall_time_column_is_the_one_training_logs():
    from attentive_reader.training.wall_clock import METRIC
    from attentive_reader.viz.curve_data import WALL_METRIC

    assert WALL_METRIC == METRIC


def _evaluated(path: Path, accuracies: list[float], n: int = 200, baselines=BASELINES) -> str:
    """An ``evaluate --out`` file as the command writes it (the fields ``curves`` reads)."""

    def system(name: str, kind: str, accuracy: float) -> dict:
        overall = {"n": n, "correct": accuracy * n, "accuracy": accuracy}
        overall.update(ci_low=accuracy - 0.05, ci_high=accuracy + 0.04)
        return {"name": name, "kind": kind, "overall": overall}

    systems = [system(name, "baseline", value) for name, value in baselines.items()]
    systems += [system(f"run{i}/best.ckpt", "model", a) for i, a in enumerate(accuracies)]
    path.write_text(json.dumps({"num_examples": n, "systems": systems}))
    return str(path)


def test_accuracy_over_training_set_size(tmp_path, capsys):
    q25 = _evaluated(tmp_path / "q25.json", [0.5])
    q50 = _evaluated(tmp_path / "q50.json", [0.55])
    full = _evaluated(tmp_path / "all.json", [0.625])
    other = _evaluated(tmp_path / "other.json", [0.6])
    png, table = tmp_path / "size.png", tmp_path / "size.csv"
    args = ["--size", "A", "1", full, "--size", "A", "0.25", q25, "--size", "A", "0.5", q50]
    args += ["--size", "B", "0.25", other, "--output", str(png), "--table", str(table)]
    printed = _curves(capsys, *args)
    # Sorted by share within a reader; accuracy and interval in % from the files.
    rows = [line for line in printed.splitlines() if line.startswith("| A |")]
    assert rows == [
        "| A | 25% | 50.0 | 45.0-54.0 |",
        "| A | 50% | 55.0 | 50.0-59.0 |",
        "| A | 100% | 62.5 | 57.5-66.5 |",
    ]
    assert "| B | 25% | 60.0 | 55.0-64.0 |" in printed
    assert "| word distance (baseline) |  | 45.0 |  |" in printed
    assert "(200 test questions)" in printed
    with table.open(newline="") as handle:
        written = list(csv.reader(handle))
    assert written[0] == ["reader", "share of the training stories", "test", "95% interval"]
    assert written[1] == ["A", "25%", "50.0", "45.0-54.0"]
    assert _png_size(png) == (880, 484)


def _reading_report(
    path: Path, models: dict[str, tuple[float, float]], n: int = 200, split: str = "test"
) -> str:
    """An ``evaluate --out`` file whose checkpoints read ``(tokens read, accuracy)`` of
    documents of 800 tokens (the fields ``curves --reading`` reads)."""

    def system(name: str, kind: str, accuracy: float, tokens: float | None) -> dict:
        overall = {"n": n, "correct": accuracy * n, "accuracy": accuracy}
        overall.update(ci_low=accuracy - 0.05, ci_high=accuracy + 0.04)
        found = {"name": name, "kind": kind, "overall": overall}
        if tokens is not None:
            found["reading"] = {"tokens_read": tokens, "document_tokens": 800.0}
        return found

    systems = [system(name, "baseline", value, 800.0) for name, value in BASELINES.items()]
    systems += [system(name, "model", a, tokens) for name, (tokens, a) in models.items()]
    report = {"num_examples": n, "inputs": {"split": split}, "systems": systems}
    path.write_text(json.dumps(report))
    return str(path)


def test_accuracy_against_the_tokens_read(tmp_path, capsys):
    modes = {"hard [eval_mode=greedy]": (1.0, 0.4), "hard [eval_mode=expected]": (800.0, 0.6)}
    hard = _reading_report(tmp_path / "hard.json", {**modes, "ar": (800.0, 0.5)})
    soft = _reading_report(tmp_path / "soft.json", {"ar": (800.0, 0.65)})
    png = tmp_path / "reading.png"
    printed = _curves(capsys, "--reading", hard, soft, "--output", str(png))
    rows = [line for line in printed.splitlines() if line.startswith("| ")][2:]
    assert rows == [
        "| hard [eval_mode=greedy] | 1.0 | 800.0 | 40.0 | 35.0-44.0 |",
        "| hard [eval_mode=expected] | 800.0 | 800.0 | 60.0 | 55.0-64.0 |",
        "| ar (hard.json) | 800.0 | 800.0 | 50.0 | 45.0-54.0 |",  # one name in two files
        "| ar (soft.json) | 800.0 | 800.0 | 65.0 | 60.0-69.0 |",
        "| maximum frequency (baseline) | 800.0 | 800.0 | 25.0 |  |",
        "| exclusive frequency (baseline) | 800.0 | 800.0 | 30.0 |  |",
        "| word distance (baseline) | 800.0 | 800.0 | 45.0 |  |",
    ]
    assert (
        "### test accuracy against the document tokens read per question (200 questions)" in printed
    )
    assert _png_size(png) == (880, 484)


RECORD = {
    "cpu": "a CPU",
    "threads": 1,
    "data": None,
    "generated": {"stories": 40, "shape": "compact", "seed": 3},
    "num_entities": 50,
    "epochs": 3,
    "baselines": BASELINES,
    "readers": {
        "attentive_reader": {"val_acc": [0.25, 0.5, 0.9], "seconds": 1.0},
        # a glimpse reader's run also holds the tokens it read per validation example
        "glimpse": {
            "val_acc": [0.2, 0.4, 0.7],
            "seconds": 2.0,
            "val_tokens_read": [20.0, 18.0, 17.25],
            "val_tokens_pooled": [30.0, 27.0, 26.0],
            "val_doc_tokens": [70.0, 70.0, 70.0],
            "val_answer_read": [0.5, 0.6, 0.875],
        },
    },
    "plateau": {"answer_layer=tied, query_match=true": {"val_acc": [0.3, 0.8], "seconds": 3.0}},
}


def test_learning_curves_of_a_generated_corpus(tmp_path, capsys):
    saved, png = tmp_path / "curves.json", tmp_path / "curves.png"
    saved.write_text(json.dumps(RECORD))
    printed = _curves(capsys, "--learning", str(saved), "--output", str(png))
    assert "### Shipped configs: validation accuracy" in printed
    assert "| attentive_reader | 0.250 | 0.500 | 0.900 | 1 s |  |" in printed
    # The last epoch's tokens read at full resolution, of the document, beside accuracy.
    assert (
        "| glimpse | 0.200 | 0.400 | 0.700 | 2 s | 17.2 of 70.0 (+26.0 pooled), "
        "answer read in 88% |" in printed
    )
    assert "| answer_layer=tied, query_match=true | 0.300 | 0.800 |  | 3 s |  |" in printed
    assert printed.count("| word distance (baseline) | 0.450 |") == 2  # one per table
    assert _png_size(png) == (1760, 484)  # two panels


def test_the_learning_figure_is_titled_with_its_corpus(tmp_path):
    from attentive_reader.viz.curves import learning_curves

    saved = tmp_path / "curves.json"
    saved.write_text(json.dumps(RECORD))
    figure = learning_curves(saved).draw()
    assert figure.get_suptitle() == "40 compact synthetic stories (seed 3), 50 permuted entity ids"
    titles = [ax.get_title() for ax in figure.get_axes()]
    assert titles == ["Shipped configs", "Answer layers (attentive_reader.yaml)"]


def _mistakes(tmp: Path, runs: Path) -> list[tuple[list[str], str]]:
    read = _reading_report(tmp / "read.json", {"a": (1.0, 0.5)})
    read_fewer = _reading_report(tmp / "read_fewer.json", {"a": (1.0, 0.5)}, n=150)
    read_valid = _reading_report(tmp / "read_valid.json", {"a": (1.0, 0.5)}, split="validation")
    read_none = _reading_report(tmp / "read_none.json", {})
    read_old = _reading_report(tmp / "read_old.json", {"old.ckpt": (None, 0.5)})
    good = _evaluated(tmp / "good.json", [0.5])
    fewer = _evaluated(tmp / "fewer.json", [0.5], n=150)
    two = _evaluated(tmp / "two.json", [0.5, 0.6])
    (tmp / "broken.json").write_text("{")
    (tmp / "other.json").write_text('{"readers": {}}')
    (tmp / "empty").mkdir()
    _metrics(
        tmp / "cut/version_0/metrics.csv",
        "epoch,step,val_acc",
        ["0,9,0.5", "1,19,0.6", "2,29,0.7e"],
    )
    _metrics(tmp / "tb/version_0/metrics.csv", "step,val_acc", ["9,0.5"])
    return [
        ([str(tmp / "nope")], "nope: no such folder; give a run's log folder"),
        ([str(tmp / "empty")], "empty: no version_N/metrics.csv in it: give the log folder of a run trained with the CSV logger"),
        ([str(runs / "c")], "runs/c: no val_acc in its metrics.csv yet"),
        ([str(tmp / "cut")], "cut/version_0/metrics.csv, line 4: val_acc is '0.7e', not a number"),
        ([str(tmp / "tb")], "no 'epoch' column: not a metrics file of Lightning's CSV logger"),
        ([str(runs), "--table", str(tmp / "t.txt")], "--table " + str(tmp / "t.txt") + ": give a .md or a .csv file"),
        ([str(runs), "--output", str(tmp / "x"), "--table", str(tmp / "x")], "are the same file"),
        ([str(runs), "--output", str(tmp / "empty")], "--output " + str(tmp / "empty") + " is a folder; give the file to write"),
        (["--learning", str(tmp / "other.json"), "--data", str(tmp)], "--data gives the baselines of run folders"),
        ([], "give one kind of curve"),
        ([str(runs), "--learning", str(tmp / "broken.json")], "not RUN and --learning"),
        (["--learning", str(tmp / "broken.json")], "broken.json: not JSON"),
        (["--learning", str(tmp / "other.json")], "other.json: not the JSON file of `attentive-reader learning --output`"),
        (["--learning", str(tmp / "none.json")], "none.json: cannot read it"),
        (["--size", "A", "0.5", good, "--size", "A", "1", fewer], f"{fewer}: its test questions differ from those of {good}"),
        (["--size", "A", "0.5", two], f"{two}: holds 2 checkpoints' results"),
        (["--size", "A", "0.5", str(tmp / "broken.json")], "broken.json: not JSON"),
        (["--size", "A", "0.5", str(tmp / "other.json")], "other.json: not an `attentive-reader evaluate --out` file"),
        (["--size", "A", "1.5", good], "the share must be a number in (0, 1]"),
        (["--size", "A", "half", good], "the share must be a number in (0, 1]"),
        (["--size", "A", "0.5", good, "--size", "A", "0.5", good], "given twice for this reader"),
        (["--size", "A", "0.5"], "argument --size: expected 3 arguments"),
        (["--reading", read, "--size", "A", "0.5", good], "not --size and --reading"),
        (["--reading", read, read_fewer], f"{read_fewer}: its questions differ from those of {read}"),
        (["--reading", read, read_valid], f"{read_valid}: its questions are of the validation split, those of {read} of test"),
        (["--reading", read, str(tmp / "read.json")], f"--reading {read}: given twice"),
        (["--reading", read_none], "read_none.json: holds no checkpoint's results; evaluate with --ckpt"),
        (["--reading", read_old], "read_old.json: old.ckpt has no tokens read: the report was written before evaluate counted them"),
        (["--reading", str(tmp / "broken.json")], "broken.json: not JSON"),
        (["--reading", str(tmp / "other.json")], "other.json: not an `attentive-reader evaluate --out` file"),
    ]  # fmt: skip


def test_each_mistake_is_one_line(runs, tmp_path, capsys):
    for args, message in _mistakes(tmp_path, runs):
        assert main(["curves", *args]) == 2, args
        captured = capsys.readouterr()
        assert captured.out == "", args
        (line,) = captured.err.splitlines()
        assert line.startswith("attentive-reader curves: error: "), line
        assert message in line, (args, line)
    assert not (tmp_path / "x").exists()


def test_help_names_every_kind_and_its_files():
    text = " ".join(build_parser().format_help().split())
    shown_kinds = ("--size READER SHARE FILE.json", "--learning FILE.json", "--reading FILE.json")
    for shown in ("RUN", "--data", *shown_kinds):
        assert shown in text
    assert "--output FILE.png" in text and "(.md: Markdown, .csv: CSV)" in text
    assert main(["--help"]) == 0


def test_what_the_learning_command_writes_is_what_curves_reads(tmp_path, monkeypatch, capsys):
    """``attentive-reader learning --output`` (its training replaced by known figures) writes
    a record that ``curves --learning`` prints and draws."""
    from attentive_reader.commands import learning

    run = {"val_acc": [0.25, 0.5], "train_loss": [2.0, 1.0], "seconds": 4.0}
    monkeypatch.setattr(learning, "train", lambda *args: dict(run))
    monkeypatch.setattr(learning, "validation_baselines", lambda data: BASELINES)
    saved = tmp_path / "curves.json"
    argv = ["learning", "--data", str(tmp_path), "--readers", "attentive_reader", "--epochs", "2"]
    assert main([*argv, "--output", str(saved)]) == 0
    printed = capsys.readouterr().out
    row = "| attentive_reader | 0.250 | 0.500 | 4 s |  |"
    assert row in printed  # the command's own table
    png = tmp_path / "curves.png"
    assert row in _curves(capsys, "--learning", str(saved), "--output", str(png))
    assert _png_size(png) == (880, 484)


def test_learning_over_training_set_sizes(tmp_path, monkeypatch, capsys):
    """``learning --sizes``: each size is a share of the training stories that ``fit`` keeps
    (``--data.train_fraction``) holding at least that many questions, the smallest such share;
    the table gives each reader's best epoch at each size and ``curves --learning`` draws it."""
    from attentive_reader.commands import learning
    from attentive_reader.corpus.records import load_split
    from attentive_reader.data.stories import story_share

    # 10 stories of 3 training questions each
    train = [cloze_example(f"ex{i}", f"story{i // 3}") for i in range(30)]
    data = write_dataset(tmp_path / "data", {"train": train, "validation": train[:2]})
    rows = load_split(Path(data), "train")
    for size, held in [(1, 3), (3, 3), (4, 6), (7, 9), (30, 30)]:
        share, kept = learning.size_share(list(rows["story_id"]), size)
        assert kept == held and len(story_share(rows, share)) == held, size
    assert learning.size_share(list(rows["story_id"]), 30)[0] <= 1.0

    shares = []

    def train_run(config, data, out, epochs, seed, extra):
        share = float(extra[extra.index("--data.train_fraction") + 1])
        shares.append(share)
        held = len(story_share(rows, share))
        return {"val_acc": [0.1, held / 30], "train_loss": [2.0, 1.0], "seconds": 3.0}

    monkeypatch.setattr(learning, "train", train_run)
    monkeypatch.setattr(learning, "validation_baselines", lambda data: BASELINES)
    saved = tmp_path / "sizes.json"
    argv = ["learning", "--data", data, "--readers", "attentive_reader", "--epochs", "2"]
    assert main([*argv, "--sizes", "7", "30", "3", "--output", str(saved)]) == 0
    printed = capsys.readouterr().out
    assert len(shares) == 3  # one run per size, no run on the whole set besides
    head = "| reader | 3 questions | 9 questions | 30 questions |"
    row = "| attentive_reader | 0.100 (epoch 1) | 0.300 (epoch 2) | 1.000 (epoch 2) |"
    assert head in printed and row in printed
    assert "| attentive_reader, 9 questions | 0.100 | 0.300 | 3 s |  |" in printed
    record = json.loads(saved.read_text())
    assert [run["questions"] for run in record["sizes"]["attentive_reader"]] == [3, 9, 30]
    assert record["readers"] == {}
    png = tmp_path / "sizes.png"
    shown = _curves(capsys, "--learning", str(saved), "--output", str(png))
    assert row in shown
    assert _png_size(png) == (880 * 2, 484)  # the size panel beside the runs' epochs

    # a size the training split cannot hold, and a size below 1: one line each
    for sizes, message in [
        ("31", f"--sizes 31: the training split of {data} holds only 30 questions"),
        ("0", "--sizes 0: a training-set size is a number of questions, 1 or more"),
    ]:
        assert main([*argv, "--sizes", sizes]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line == f"attentive-reader learning: error: {message}"


def test_learning_generates_enough_stories_for_the_largest_size(tmp_path, monkeypatch, capsys):
    """Without --stories, a corpus too small for the largest --sizes is generated again, larger
    by the questions per story the first one had; the record names the stories generated."""
    from attentive_reader.commands import learning

    made = []

    def generate(out, stories, seed, shape):
        out.mkdir(parents=True, exist_ok=True)
        made.append(stories)
        return out / f"data{stories}"

    monkeypatch.setattr(learning, "generate", generate)
    monkeypatch.setattr(learning, "train_questions", lambda data: ["s"] * int(str(data)[-4:]))
    monkeypatch.setattr(learning, "validation_baselines", lambda data: BASELINES)
    monkeypatch.setattr(learning, "size_share", lambda ids, size: (0.5, size))
    monkeypatch.setattr(learning, "train", lambda *args: {"val_acc": [0.5], "seconds": 1.0})
    saved = tmp_path / "sizes.json"
    argv = ["learning", "--readers", "attentive_reader", "--epochs", "1", "--sizes", "3000"]
    assert main([*argv, "--work-dir", str(tmp_path), "--output", str(saved)]) == 0
    assert made == [1500, 3150]  # 1,500 stories held 1,500 questions: 3,000 needs 3,150 (5% more)
    assert json.loads(saved.read_text())["generated"]["stories"] == 3150
    assert "3,000 questions" in capsys.readouterr().out

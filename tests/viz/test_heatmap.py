"""Heatmap pages, PNGs and JSON sidecars, from plain data (no model needed)."""

import json
import re

import markupsafe
import pytest

from attentive_reader.corpus.records import ClozeExample
from attentive_reader.viz.files import file_stem, write_heatmaps
from attentive_reader.viz.heatmap import (
    HeatmapExample,
    heatmap_examples,
    intensities,
)
from attentive_reader.viz.html import render_html, render_index
from tests.viz.pages import NASTY, assert_self_contained, audit, make_example, softmax


def test_tokens_render_escaped_and_intact():
    page = render_html(make_example())
    a = assert_self_contained(page)
    text = " ".join(a.text)
    # The parser decodes entities: every token comes back exactly as it was.
    for token in (NASTY, "&", "Tom's", '"quoted"', "café", "Zürich", "東京"):
        assert token in text, token
    assert "Ann <O'Neil> & Co" in text  # the names view
    assert 's1:0:0 <b>&"' in text
    assert NASTY not in page and markupsafe.escape(NASTY) in page
    assert '<b>&"' not in page  # the id's markup stays text
    # Tooltips are escaped too, and parse back intact.
    assert any("@entity0 = Ann <O'Neil> & Co" in t for t in a.titles)


def test_page_shows_weights_outlines_and_truncation():
    ex = make_example()
    page = render_html(ex)
    a = audit(page)
    # One tooltip per context token with its weight (both views).
    weight_titles = [t for t in a.titles if "weight " in t]
    assert len(weight_titles) == 2 * len(ex.context)
    assert f"weight {ex.attention[-1]:.4f}" in weight_titles[len(ex.context) - 1]
    # The strongest token is full colour on the linear scale, the first one the weakest.
    assert "rgba(245,130,32,1.000)" in page
    assert 'class="t cand gold"' in page and 'class="t cand pred"' in page
    assert "@placeholder" in " ".join(a.text)
    assert "truncated: 24 more tokens" in " ".join(a.text)
    assert "p = 0.600" in page and "p = 0.300" in page
    assert "linear-gradient" in page  # the legend
    assert "wrong" in " ".join(a.text)


def test_normalized_scale_is_in_multiples_of_uniform():
    assert intensities([0.5, 0.25, 0.25], "linear") == [1.0, 0.5, 0.5]
    # n = 4, clip 2: w * n / 2, clipped.
    assert intensities([0.7, 0.1, 0.1, 0.1], "normalized", clip=2) == pytest.approx(
        [1.0, 0.2, 0.2, 0.2]
    )
    page = render_html(make_example(), scale="normalized", clip=5)
    assert "clipped at 5" in page
    with pytest.raises(ValueError, match="scale"):
        render_html(make_example(), scale="log")  # type: ignore[arg-type]


def test_impatient_reader_has_one_row_per_query_token():
    base = make_example()
    n, m = len(base.context), len(base.query)
    rows = tuple(tuple(softmax([(j + 1) * 0.05 * i for i in range(n)])) for j in range(m))
    ex = make_example(attention=rows)
    assert ex.per_query_token and ex.weights == rows[-1]
    a = audit(render_html(ex))
    row_titles = [t for t in a.titles if " after " in t]
    assert len(row_titles) == m * n
    with pytest.raises(ValueError, match="one row per query token"):
        make_example(attention=rows[:-1])


def test_hard_attention_marks_selected_tokens():
    page = render_html(make_example(selected=(2, 10)))
    assert page.count("selected by hard attention") == 4  # two tokens, two views
    assert "Selected by hard attention: #2" in page
    with pytest.raises(ValueError, match="outside"):
        make_example(selected=(99,))


def test_reader_without_attention():
    page = render_html(make_example(attention=None))
    assert_self_contained(page)
    assert "no attention" in page


def test_json_round_trip_and_files(tmp_path):
    ex = make_example()
    again = HeatmapExample.from_json(json.loads(json.dumps(ex.to_json())))
    assert again == ex
    entries = write_heatmaps([ex, make_example(id="b/2", prediction="@entity0")], tmp_path)
    stem = file_stem(ex.id)
    for suffix in (".html", ".json", ".png"):
        assert (tmp_path / f"{stem}{suffix}").stat().st_size > 0
    assert (tmp_path / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sidecar = json.loads((tmp_path / f"{stem}.json").read_text(encoding="utf-8"))
    assert sidecar["context"][2] == NASTY and sidecar["prediction"] == "@entity1"
    assert sum(sidecar["attention"]) == pytest.approx(1.0)
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    a = assert_self_contained(index)
    assert [e.correct for e in entries] == [False, True]
    assert f"./{stem}.html" in a.urls
    assert "2 examples, 1 of 2 answered correctly" in " ".join(a.text)
    # Each marker with its real name: the first row predicts @entity1 (Zoë), gold @entity0.
    first_row = index.split(f'href="./{stem}.html">')[1].split("</tr>")[0]
    cells = re.findall(r"<td>(.*?)</td>", first_row)
    assert "@entity1 Zoë" in cells and "@entity0 Ann &lt;O&#39;Neil&gt; &amp; Co" in cells
    listed = json.loads((tmp_path / "index.json").read_text(encoding="utf-8"))
    assert [(e["prediction_name"], e["answer_name"]) for e in listed] == [
        ("Zoë", "Ann <O'Neil> & Co"),
        ("Ann <O'Neil> & Co", "Ann <O'Neil> & Co"),
    ]


def test_a_document_without_gold_answer_gets_no_verdict(tmp_path):
    """A question about a user's document (``attentive-reader answer --heatmap``) has no gold
    answer: no correct / wrong verdict, no gold outline, nothing counted as answered."""
    ex = make_example(answer=None)
    assert ex.correct is None
    a = assert_self_contained(render_html(ex))
    text = " ".join(a.text)
    assert "no gold answer" in text and "correct" not in text and "wrong" not in text
    token_classes = re.findall(r'class="([^"]*)"', render_html(ex))
    assert not [c for c in token_classes if "gold" in c.split() and "key" not in c.split()]
    assert [
        c
        for c in re.findall(r'class="([^"]*)"', render_html(make_example()))
        if "gold" in c.split() and "key" not in c.split()
    ]
    assert HeatmapExample.from_json(json.loads(json.dumps(ex.to_json()))) == ex
    write_heatmaps([ex], tmp_path)
    index = " ".join(audit((tmp_path / "index.html").read_text(encoding="utf-8")).text)
    assert "1 examples." in index and "answered correctly" not in index
    assert (tmp_path / f"{file_stem(ex.id)}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_index_escapes_ids():
    from attentive_reader.viz.html import IndexEntry

    entry = IndexEntry(NASTY, "x.html", True, "@entity0", "@entity0", 0.9, 0.9)
    page = render_index([entry])
    assert_self_contained(page)
    assert NASTY in " ".join(audit(page).text)


def test_file_stems_are_safe_and_unique():
    assert file_stem("a/b:c") != file_stem("a_b_c")
    assert "/" not in file_stem("../../etc/passwd") and not file_stem("..").startswith(".")


def test_heatmap_examples_from_a_prediction_batch():
    torch = pytest.importorskip("torch")
    rows = {
        "x": ClozeExample(
            id="x",
            story_id="s",
            context=("@entity1", "won", "@entity0", "."),
            query=("@placeholder", "won"),
            answer="@entity1",
            candidates=("@entity1", "@entity0"),
            entities={"@entity0": "A", "@entity1": "B"},
        ),
        "y": ClozeExample(
            id="y",
            story_id="t",
            context=("@entity0", "lost"),
            query=("@entity0", "@placeholder"),
            answer="@entity0",
            candidates=("@entity0",),
        ),
    }
    from attentive_reader.models.predictions import BatchPrediction

    probs = torch.zeros(2, 4)
    probs[0, 0], probs[0, 1], probs[1, 0] = 0.25, 0.75, 1.0
    prediction = BatchPrediction(
        ids=["x", "y"],
        logits=probs.log(),
        probs=probs,
        prediction=torch.tensor([1, 0]),
        answer=torch.tensor([1, 0]),
        attention=torch.tensor([[0.1, 0.6, 0.2, 0.1], [0.5, 0.5, 0.0, 0.0]]),
        # k = 3 without replacement: y has only 2 tokens, its empty slot holds -1.
        selected=torch.tensor([[1, 2, 0], [0, 1, -1]]),
        context_lengths=torch.tensor([4, 2]),
        query_lengths=torch.tensor([2, 2]),
    )
    a, b = heatmap_examples(prediction, rows)
    assert a.probabilities == {"@entity1": 0.75, "@entity0": 0.25}
    assert a.prediction == "@entity1" and a.correct and a.selected == (0, 1, 2)
    assert b.selected == (0, 1)
    assert b.context == ("@entity0", "lost") and b.attention == (0.5, 0.5)
    assert not b.truncated


def test_soft_reader_weights_in_the_sidecar_sum_to_one(tmp_path):
    """A real (untrained) Attentive Reader on a padded batch: each sidecar's weights cover
    exactly the example's own context and sum to 1."""
    torch = pytest.importorskip("torch")
    from attentive_reader.corpus.synthetic.toy import write_toy_dataset
    from attentive_reader.data.datamodule import ClozeDataModule
    from attentive_reader.eval.inference import iterate_predictions
    from attentive_reader.models import AttentiveReader

    data = write_toy_dataset(tmp_path / "toy", num_train=6, num_validation=2, num_test=6)
    datamodule = ClozeDataModule(str(data), num_entities=8)
    torch.manual_seed(0)
    reader = AttentiveReader(
        vocab_size=datamodule.vocab_size,
        num_entities=datamodule.num_entities,
        embedding_dim=8,
        hidden_dim=8,
    )
    rows = {r["id"]: ClozeExample.from_row(r) for r in datamodule.examples("test")}
    lengths = set()
    for batch, output in iterate_predictions(reader, datamodule, "test", batch_size=6):
        assert not bool(batch.context_mask.all())  # the batch is padded
        for ex in heatmap_examples(output, rows):
            sidecar = json.loads(json.dumps(ex.to_json()))
            assert len(sidecar["attention"]) == len(rows[ex.id].context)
            assert sum(sidecar["attention"]) == pytest.approx(1.0, abs=1e-5)
            assert sum(sidecar["probabilities"].values()) == pytest.approx(1.0, abs=1e-5)
            lengths.add(len(sidecar["context"]))
    assert len(lengths) > 1


# --------------------------------------------------------------------------- faults while writing


def _three() -> list[HeatmapExample]:
    return [make_example(id=f"s{i}:0:0", prediction=f"@entity{i}") for i in range(3)]


def _folder(out) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory):
    out = tmp_path_factory.mktemp("undisturbed") / "heatmaps"
    write_heatmaps(_three(), out)
    return _folder(out)


def test_heatmaps_refuse_a_second_run(tmp_path, lock_holder, capsys):
    from attentive_reader.cli import main as cli_main
    from attentive_reader.common.locking import OutputInUse

    out = tmp_path / "heatmaps"
    first = lock_holder(out, "heatmap")
    with pytest.raises(OutputInUse, match=f"in use by process {first.pid}"):
        write_heatmaps(_three(), out)
    # The command stops before it loads anything.
    argv = ["heatmap", "--ckpt", "none.ckpt", "--data", "none", "--out", str(out)]
    assert cli_main(argv) == 2
    assert f"in use by process {first.pid} (attentive-reader heatmap)" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("code", [28, 13])  # ENOSPC, EACCES
def test_a_fault_while_writing_heatmaps_never_looks_complete(
    tmp_path, monkeypatch, undisturbed, code
):
    import os
    from pathlib import Path

    from attentive_reader.common.faults import OutputError

    out = tmp_path / "heatmaps"
    write_heatmaps(_three(), out)  # an older run's index is there: it must go
    calls = []
    write_text = Path.write_text

    def failing(self, *args, **kwargs):
        calls.append(self)
        if len(calls) == 4:  # the second example's page
            raise OSError(code, os.strerror(code), str(self))
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", failing)
    with pytest.raises(OutputError, match="is full|no permission"):
        write_heatmaps(_three(), out)
    assert not (out / "index.html").exists() and not (out / "index.json").exists()
    assert not [p for p in out.iterdir() if ".tmp-" in p.name]
    monkeypatch.undo()
    write_heatmaps(_three(), out)
    assert _folder(out) == undisturbed


def test_heatmaps_on_a_real_full_disk_then_more_space(small_disk, undisturbed):
    from attentive_reader.common.faults import OutputError

    out = small_disk.path / "heatmaps"
    with pytest.raises(OutputError, match="is full: "):
        write_heatmaps(_three(), out)
    assert not (out / "index.html").exists()
    small_disk.resize("8m")
    write_heatmaps(_three(), out)
    assert _folder(out) == undisturbed

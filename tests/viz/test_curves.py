"""The learning-curve picture of ``scripts/learning_curves.py --plot``, on a hand-made record."""

from __future__ import annotations

import pytest

from attentive_reader.viz.curves import learning_curves_figure, write_learning_curves

READERS = {"attentive_reader": [0.25, 0.5, 0.9], "impatient_reader": [0.2, 0.7]}
PLATEAU = {"answer_layer=tied, query_match=true": [0.3, 0.8, 0.99]}
BASELINES = {"maximum_frequency": 0.15, "exclusive_frequency": 0.2, "word_distance": 0.4}


def _curves(ax) -> dict[str, tuple[list, list]]:
    return {
        line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
        for line in ax.get_lines()
    }


def test_one_panel_per_table_one_line_per_run_and_the_baselines_across():
    panels = {"Shipped configs": READERS, "Answer layers": PLATEAU, "empty": {}}
    figure = learning_curves_figure(panels, BASELINES, title="corpus X")
    axes = figure.get_axes()
    assert [ax.get_title() for ax in axes] == ["Shipped configs", "Answer layers"]
    assert figure.get_suptitle() == "corpus X"
    readers = _curves(axes[0])
    # Each run's validation accuracy at epochs 1, 2, ... (a shorter run stops earlier).
    assert readers["attentive_reader"] == ([1, 2, 3], [0.25, 0.5, 0.9])
    assert readers["impatient_reader"] == ([1, 2], [0.2, 0.7])
    assert _curves(axes[1])["answer_layer=tied, query_match=true"][1] == [0.3, 0.8, 0.99]
    for ax in axes:  # every baseline in every panel: a flat line at its accuracy
        lines = _curves(ax)
        for name, value in BASELINES.items():
            _, ys = lines[f"{name.replace('_', ' ')} (baseline)"]
            assert ys == [value, value]
        legend = [text.get_text() for text in ax.get_legend().get_texts()]
        assert set(legend) == set(lines)
        assert ax.get_ylim() == (0.0, 1.02) and ax.get_xlabel() == "epoch"


def test_the_png_is_written_whole(tmp_path):
    path = write_learning_curves(tmp_path / "curves.png", {"configs": READERS}, BASELINES)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (880, 484)  # 8 x 4.4 inches at 110 dpi, one panel
    assert [p.name for p in tmp_path.iterdir()] == ["curves.png"]  # no temporary left


def test_nothing_to_draw_is_an_error():
    with pytest.raises(ValueError, match="every run is empty"):
        learning_curves_figure({"configs": {"a": []}, "other": {}}, BASELINES)


@pytest.mark.slow  # the script imports the benchmark's stack (Lightning): seconds alone
def test_the_script_draws_what_an_earlier_run_saved(tmp_path, monkeypatch, capsys):
    """``learning_curves.py --from-json RECORD --plot FILE``: no training, the saved curves."""
    import importlib.util
    import json
    import sys
    from pathlib import Path

    scripts = Path(__file__).resolve().parents[2] / "scripts"
    monkeypatch.syspath_prepend(str(scripts))  # the script imports its neighbour benchmark.py
    spec = importlib.util.spec_from_file_location("learning_curves", scripts / "learning_curves.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    record = {
        "cpu": "a CPU",
        "threads": 1,
        "data": None,
        "generated": {"stories": 40, "shape": "compact", "seed": 3},
        "num_entities": 50,
        "epochs": 3,
        "baselines": BASELINES,
        "readers": {name: {"val_acc": acc, "seconds": 1.0} for name, acc in READERS.items()},
        "plateau": {},
    }
    # A glimpse reader's run also holds the tokens it read per validation example.
    record["readers"]["glimpse"] = {
        "val_acc": [0.2, 0.4, 0.7],
        "seconds": 2.0,
        "val_tokens_read": [20.0, 18.0, 17.25],
        "val_tokens_pooled": [30.0, 27.0, 26.0],
        "val_doc_tokens": [70.0, 70.0, 70.0],
        "val_answer_read": [0.5, 0.6, 0.875],
    }
    saved, png = tmp_path / "curves.json", tmp_path / "curves.png"
    saved.write_text(json.dumps(record))
    assert script.main(["--from-json", str(saved), "--plot", str(png)]) == 0
    printed = capsys.readouterr().out
    assert "| attentive_reader | 0.250 | 0.500 | 0.900 | 1 s |  |" in printed
    # The last epoch's tokens read at full resolution, of the document, beside accuracy.
    assert (
        "| glimpse | 0.200 | 0.400 | 0.700 | 2 s | 17.2 of 70.0 (+26.0 pooled), "
        "answer read in 88% |" in printed
    )
    assert f"plot written to {png}" in printed and png.read_bytes()[:4] == b"\x89PNG"
    assert script.corpus_title(record) == (
        "40 compact synthetic stories (seed 3), 50 permuted entity ids"
    )
    assert "learning_curves" not in sys.modules  # loaded from its file, not imported

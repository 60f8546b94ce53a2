"""The curves' pictures (``attentive-reader curves``), on hand-made records."""

from __future__ import annotations

import pytest

from attentive_reader.viz.curves import CurveSet, learning_curves_figure, size_curve_figure

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
    curves = CurveSet([], lambda: learning_curves_figure({"configs": READERS}, BASELINES), [])
    path = curves.write_png(tmp_path / "curves.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (880, 484)  # 8 x 4.4 inches at 110 dpi, one panel
    assert [p.name for p in tmp_path.iterdir()] == ["curves.png"]  # no temporary left


def test_the_size_curve_has_a_point_per_share_on_doubling_axes():
    readers = {"A": [(0.25, 0.5, 0.45, 0.54), (1.0, 0.625, 0.575, 0.665)]}
    figure = size_curve_figure(readers, BASELINES, title="sizes")
    (ax,) = figure.get_axes()
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "share of the training stories"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["25%", "100%"]
    (bars,) = ax.containers  # one reader: its line and its intervals
    assert bars.get_label() == "A" and list(bars.lines[0].get_ydata()) == [0.5, 0.625]


def test_nothing_to_draw_is_an_error():
    with pytest.raises(ValueError, match="every run is empty"):
        learning_curves_figure({"configs": {"a": []}, "other": {}}, BASELINES)

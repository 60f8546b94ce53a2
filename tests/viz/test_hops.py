"""The Gated-Attention Reader's hops on a heatmap page, from plain data (hand-computed)."""

import dataclasses
import json

import pytest

from attentive_reader.viz.heatmap import HeatmapExample
from attentive_reader.viz.html import render_html
from attentive_reader.viz.png import render_png
from tests.viz.pages import NASTY, assert_self_contained, audit, make_example

N, M = 16, 5  # make_example's context and query lengths


def one_hot_hop() -> tuple[tuple[float, ...], ...]:
    """Context token t puts all of its attention on query token t mod 5."""
    return tuple(tuple(1.0 if i == t % M else 0.0 for i in range(M)) for t in range(N))


def uniform_hop() -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(1.0 / M for _ in range(M)) for _ in range(N))


def hop_example(**overrides) -> HeatmapExample:
    return make_example(hop_attention=(one_hot_hop(), uniform_hop()), **overrides)


def test_query_attention_per_hop_by_hand():
    ex = hop_example()
    # Hop 1: tokens 0, 5, 10, 15 attend to query token 0; three tokens to each other one.
    first, second = ex.hop_query_attention
    assert first == pytest.approx((4 / 16, 3 / 16, 3 / 16, 3 / 16, 3 / 16))
    assert second == pytest.approx((0.2,) * 5)
    assert make_example().hop_query_attention == []


def test_the_page_has_one_row_per_hop():
    ex = hop_example()
    page = render_html(ex)
    a = assert_self_contained(page)
    text = " ".join(a.text)
    assert "Gated-Attention hops" in text and "The reader reads the document 3 times" in text
    # The grid: a header row of query tokens, then one row per hop with its mean weights.
    assert page.count("<th>hop 1</th>") == 1 and page.count("<th>hop 2</th>") == 1
    assert ">0.25</td>" in page and page.count(">0.19</td>") == 4 and page.count(">0.20</td>") == 5
    # The document rows: one token span per context token and hop, its most attended query
    # token in the tooltip, shaded by that weight (1.0 at hop 1, 0.2 at hop 2).
    hop1 = [t for t in a.titles if " hop 1: most on " in t]
    hop2 = [t for t in a.titles if " hop 2: most on " in t]
    assert len(hop1) == len(hop2) == N
    assert hop1[0].startswith("#0 hop 1: most on @placeholder (1.000)")
    assert hop1[2].startswith("#2 hop 1: most on @entity1 (1.000)")
    assert "(0.200)" in hop2[7]
    assert page.count("rgba(245,130,32,0.200)") >= N
    assert "hop 3" not in text


def test_hop_rows_escape_query_tokens():
    ex = hop_example(query=("@placeholder", NASTY, "@entity1", "in", "@entity2"))
    page = render_html(ex)
    a = assert_self_contained(page)
    assert NASTY not in page
    assert any(f"hop 1: most on {NASTY}" in t for t in a.titles)


def test_hops_in_the_json_sidecar_round_trip():
    ex = hop_example()
    sidecar = json.loads(json.dumps(ex.to_json()))
    assert len(sidecar["hop_attention"]) == 2 and len(sidecar["hop_attention"][0]) == N
    assert sidecar["hop_query_attention"][0] == pytest.approx([0.25] + [0.1875] * 4)
    assert HeatmapExample.from_json(sidecar) == ex
    assert make_example().to_json()["hop_attention"] is None


def test_hop_attention_must_match_the_tokens():
    with pytest.raises(ValueError, match=r"one row of 2 query weights per context token \(16\)"):
        hop_example(query=("@placeholder", "met"))
    with pytest.raises(ValueError, match="per context token"):
        make_example(hop_attention=(one_hot_hop()[:-1],))


def test_the_png_gets_a_panel_of_hop_rows(tmp_path):
    ex = hop_example()
    render_png(ex, tmp_path / "hops.png")
    render_png(dataclasses.replace(ex, hop_attention=None), tmp_path / "plain.png")

    def height(path) -> int:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        return int.from_bytes(data[20:24], "big")

    assert height(tmp_path / "hops.png") > height(tmp_path / "plain.png")


def test_audit_sees_no_hop_section_without_hops():
    assert "Gated-Attention hops" not in " ".join(audit(render_html(make_example())).text)

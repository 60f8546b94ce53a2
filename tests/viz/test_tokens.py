"""One token classification and one set of templates (``viz/tokens.py``, ``viz/render.py``):
the static page and the local page of ``serve`` mark, shade and escape tokens alike."""

from __future__ import annotations

import re

import pytest

from attentive_reader.api import Answer, Candidate
from attentive_reader.viz.html import render_html
from attentive_reader.viz.render import render
from attentive_reader.viz.tokens import OUTLINES, TokenView, context_views, query_views, shading
from tests.viz.pages import audit, make_example

# Breaks out of an attribute and out of an element; an entity that must stay text.
HOSTILE = "\"'><img src=x onerror=alert(1)></span><script>alert(2)</script>&amp;"


def _answer() -> Answer:
    context = ("@entity0", "met", HOSTILE, "@entity1", ".")
    return Answer(
        id="document",
        query=f"___ met {HOSTILE}",
        filled=f"Ann met {HOSTILE}",
        candidates=(Candidate("@entity0", f"Ann {HOSTILE}", 0.7), Candidate("@entity1", "Bo", 0.3)),
        context=context,
        question=("@placeholder", "met", HOSTILE),
        entities={"@entity0": f"Ann {HOSTILE}", "@entity1": "Bo"},
        attention=(0.1, 0.2, 0.4, 0.2, 0.1),
        selected=(2,),
        context_length=5,
    )


def _serve_page(answer: Answer) -> str:
    pytest.importorskip("starlette")
    from attentive_reader.serve.app import token_views

    names, markers = token_views(answer, names=True), token_views(answer, names=False)
    return render("_result.html", answer=answer, names=names, markers=markers)


def test_the_views_mark_tokens_once_for_every_output():
    ex = make_example(selected=(12,))
    _, alphas = shading(ex)
    views = context_views(ex, alphas, names=False)
    assert views[0].marks == ("cand", "gold") and views[10].marks == ("cand", "pred")
    assert views[12].marks == ("cand", "gold", "sel") and views[1].marks == ()
    assert views[12].outline == OUTLINES["sel"] and views[0].outline == OUTLINES["gold"]
    assert views[1].outline is None and views[1].css_class == "t"
    assert views[-1].alpha == 1.0 and views[-1].background == "rgba(245,130,32,1.000)"
    blank = query_views(ex, names=True, blank="___")[0]
    assert (blank.text, blank.css_class) == ("___", "ph")
    assert TokenView("x", "x").background is None


def test_a_hostile_token_is_text_in_the_static_page_and_the_local_page():
    answer = _answer()
    for page in (render_html(answer.heatmap()), _serve_page(answer)):
        a = audit(page)
        assert "img" not in a.tags and "script" not in a.tags, a.tags
        assert HOSTILE in " ".join(a.text)  # every character comes back as it was
        assert any(HOSTILE in title for title in a.titles)  # the query token's tooltip
        assert "<img" not in page and "<script" not in page and "&amp;amp;" in page


def test_both_pages_shade_and_mark_the_same_tokens():
    answer = _answer()
    static, local = render_html(answer.heatmap()), _serve_page(answer)
    for page in (static, local):
        spans = re.findall(r'<span class="(t[^"]*)" style="background-color:([^"]+)"', page)
        shaded = [s for s in spans if s[0].startswith("t")][:5]
        assert [c for c, _ in shaded] == ["t cand pred", "t", "t sel", "t cand", "t"]
        assert shaded[2][1] == "rgba(245,130,32,1.000)"  # the largest weight, full colour

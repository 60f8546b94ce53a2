"""Heatmap examples and an audit of the pages made from them, for the viz tests
(``test_heatmap.py``, ``test_hops.py``, ``test_tokens.py``, ``test_browser.py``)."""

from __future__ import annotations

import math
from html.parser import HTMLParser

from attentive_reader.viz.heatmap import HeatmapExample

NASTY = '<script>alert("x")</script>'


def softmax(scores):
    """The softmax of ``scores`` (a list of floats)."""
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    return [e / sum(exps) for e in exps]


def make_example(**overrides) -> HeatmapExample:
    """A small example whose text holds markup, an ampersand, quotes and non-ASCII."""
    context = (
        "@entity0", "said", NASTY, "&", "Tom's", '"quoted"', "café", "Zürich", "—", "東京",
        "@entity1", "met", "@entity0", "in", "@entity2", ".",
    )  # fmt: skip
    values = dict(
        id='s1:0:0 <b>&"',
        context=context,
        query=("@placeholder", "met", "@entity1", "in", "@entity2"),
        attention=tuple(softmax([0.1 * i for i in range(len(context))])),
        answer="@entity0",
        prediction="@entity1",
        probabilities={"@entity0": 0.3, "@entity1": 0.6, "@entity2": 0.1},
        candidates=("@entity0", "@entity1", "@entity2"),
        entities={"@entity0": "Ann <O'Neil> & Co", "@entity1": "Zoë", "@entity2": "Paris"},
        context_length=40,
        model="toy.ckpt",
    )
    values.update(overrides)
    return HeatmapExample(**values)


class PageAudit(HTMLParser):
    """Collects what matters for safety: elements, URL attributes, text, inline CSS."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.urls: list[str] = []
        self.text: list[str] = []
        self.titles: list[str] = []
        self.css: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_style = tag == "style"
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset", "data", "poster", "formaction"):
                self.urls.append(value or "")
            if name == "style":
                self.css.append(value or "")
            if name == "title":
                self.titles.append(value or "")
            assert not name.startswith("on"), f"event handler attribute {name}"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        (self.css if self._in_style else self.text).append(data)


def audit(page: str) -> PageAudit:
    """What ``page`` holds (its elements, URLs, text, CSS)."""
    parser = PageAudit()
    parser.feed(page)
    parser.close()
    return parser


def assert_self_contained(page: str) -> PageAudit:
    """Assert that ``page`` runs no script and loads nothing from elsewhere; its audit."""
    a = audit(page)
    assert "script" not in a.tags
    for tag in ("iframe", "object", "embed", "link", "img", "base", "form"):
        assert tag not in a.tags
    for url in a.urls:
        lowered = url.strip().lower()
        assert not lowered.startswith(("http:", "https:", "//", "javascript:", "data:")), url
        assert ":" not in lowered.split("/")[0], url  # no scheme at all: relative links only
    for css in a.css:
        assert "@import" not in css and "url(" not in css.lower(), css
    return a

"""One token classification for every view of a heatmap: the static pages (``viz/html.py``),
the PNG (``viz/png.py``) and the local page of ``attentive-reader serve``.

A token is a word, an entity marker or the query's blank; a context token is also marked as
a candidate (``cand``), the gold answer (``gold``), the prediction (``pred``) and selected by
hard attention (``sel``). The marks are the CSS classes of the templates and, through
``OUTLINES``, the outline of a token in the PNG; the shading is ``heatmap.colour``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attentive_reader.common.markers import PLACEHOLDER
from attentive_reader.viz.heatmap import HeatmapExample, Scale, colour, intensities

# The outline of each mark (colour, width in points), strongest first: a token with several
# marks is outlined by the first (the templates' CSS draws them from the same colours).
OUTLINES: dict[str, tuple[str, float]] = {
    "sel": ("#8250df", 2.0),
    "gold": ("#1a7f37", 1.4),
    "pred": ("#cf222e", 1.4),
    "cand": ("#6e7781", 0.6),
}


@dataclass(frozen=True)
class TokenView:
    """One token as every view shows it.

    Attributes:
        text: what is shown (a word, a marker, or an entity's name).
        title: the tooltip.
        alpha: the shading strength in [0, 1], or ``None`` for an unshaded token.
        marks: the token's marks (``cand``, ``gold``, ``pred``, ``sel``; ``ph`` for the blank).
    """

    text: str
    title: str
    alpha: float | None = None
    marks: tuple[str, ...] = ()

    @property
    def css_class(self) -> str:
        """The HTML class: ``ph`` for the blank, else ``t`` and the marks."""
        return "ph" if "ph" in self.marks else " ".join(["t", *self.marks])

    @property
    def background(self) -> str | None:
        """The CSS background colour, or ``None`` when the token is not shaded."""
        return None if self.alpha is None else colour(self.alpha)

    @property
    def outline(self) -> tuple[str, float] | None:
        """The PNG outline (colour, width) of the token's strongest mark, or ``None``."""
        return next((OUTLINES[m] for m in OUTLINES if m in self.marks), None)


def shading(
    ex: HeatmapExample, scale: Scale = "linear", clip: float = 10.0
) -> tuple[float, list[float] | None]:
    """The largest weight of the example (every row) and each context token's shading
    strength, ``None`` without attention."""
    top = max((max(r) for r in ex.attention_rows if r), default=0.0)
    weights = ex.weights
    return top, None if weights is None else intensities(weights, scale, top=top, clip=clip)


def context_views(
    ex: HeatmapExample,
    alphas: Sequence[float] | None,
    *,
    names: bool,
    outline: bool = True,
) -> list[TokenView]:
    """The context tokens of ``ex``, shaded by ``alphas``, with real names or markers.

    Args:
        ex: the example.
        alphas: each token's shading strength (``shading``), or ``None``.
        names: show each entity's name instead of its marker.
        outline: mark candidates, the gold answer and the prediction.
    """
    n = len(ex.context)
    candidates, selected, weights = set(ex.candidates), set(ex.selected), ex.weights
    views = []
    for i, token in enumerate(ex.context):
        marks = []
        if outline and token in candidates:
            marks.append("cand")
        if outline and ex.answer is not None and token == ex.answer:
            marks.append("gold")
        if outline and token == ex.prediction:
            marks.append("pred")
        if i in selected:
            marks.append("sel")
        title = [f"#{i}"]
        if token in ex.entities or token in candidates:
            title.append(f"{token} = {ex.name(token)}")
        if weights is not None:
            title.append(weight_title(weights[i], n))
        if i in selected:
            title.append("selected by hard attention")
        text = ex.name(token) if names else token
        alpha = None if alphas is None else alphas[i]
        views.append(TokenView(text, " | ".join(title), alpha, tuple(marks)))
    return views


def query_views(ex: HeatmapExample, *, names: bool, blank: str = PLACEHOLDER) -> list[TokenView]:
    """The query tokens of ``ex``, with real names or markers; the blank shown as ``blank``."""
    views = []
    for token in ex.query:
        if token == PLACEHOLDER:
            views.append(TokenView(blank, "the blank to fill", marks=("ph",)))
            continue
        text = ex.name(token) if names else token
        title = f"{token} = {ex.name(token)}" if token in ex.entities else token
        views.append(TokenView(text, title))
    return views


def weight_title(w: float, n: int) -> str:
    """The tooltip of a weight among ``n`` tokens."""
    return f"weight {w:.4f} ({w * n:.2f}x uniform)"

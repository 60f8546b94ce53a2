"""Per-token attention heatmaps: self-contained HTML pages, PNG figures and JSON sidecars.

The rendering works on plain data (``HeatmapExample``: tokens, weights, prediction, answer,
probabilities, entity map), so it is tested without a model. ``heatmap_examples`` turns a
reader's prediction batch into that plain data, and ``HeatmapWriter`` is the same writer as a
Lightning prediction-writer callback, for ``attentive-reader predict``.

Every page is one file with inline CSS only: no JavaScript, no external URL, every token and
name HTML-escaped (the text is untrusted news text). Tooltips are ``title`` attributes.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import unicodedata
import urllib.parse
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytorch_lightning.callbacks import BasePredictionWriter

from attentive_reader.corpus.records import PLACEHOLDER, ClozeExample, entity_index, entity_marker
from attentive_reader.faults import writing

if TYPE_CHECKING:
    from attentive_reader.data.batching import ClozeBatch

Scale = Literal["linear", "normalized"]
SCALES: tuple[Scale, ...] = ("linear", "normalized")

# The shading colour (an orange that keeps black text readable at full strength).
_RGB = (245, 130, 32)


# --------------------------------------------------------------------------------------------
# Plain data


@dataclass(frozen=True)
class HeatmapExample:
    """Everything one heatmap page shows, as plain data.

    Attributes:
        id: the example id.
        context: the context tokens the reader read (after any truncation).
        query: the query tokens, with ``@placeholder``.
        answer: the gold marker.
        prediction: the predicted marker.
        probabilities: marker -> the reader's probability, for every candidate.
        candidates: the candidate markers (entities in the context).
        entities: marker -> real name (the entity map); markers without a name show as is.
        attention: the weights over ``context``: one list (one attention, e.g. the Attentive
            Reader), a list of lists with one row per query token (the Impatient Reader), or
            ``None`` for a reader without attention.
        selected: context positions a hard-attention reader selected.
        context_length: the stored context length; more than ``len(context)`` marks a
            truncated context.
        model: what made the prediction (checkpoint path or reader name), for the page header.
    """

    id: str
    context: tuple[str, ...]
    query: tuple[str, ...]
    answer: str
    prediction: str
    probabilities: dict[str, float] = field(default_factory=dict)
    candidates: tuple[str, ...] = ()
    entities: dict[str, str] = field(default_factory=dict)
    attention: tuple[float, ...] | tuple[tuple[float, ...], ...] | None = None
    selected: tuple[int, ...] = ()
    context_length: int | None = None
    model: str = ""

    def __post_init__(self) -> None:
        n = len(self.context)
        if self.attention is not None:
            rows = self.attention_rows
            if any(len(row) != n for row in rows):
                raise ValueError(
                    f"example {self.id}: attention rows must have one weight per context "
                    f"token ({n}); got lengths {sorted({len(r) for r in rows})}"
                )
            if self.per_query_token and len(rows) != len(self.query):
                raise ValueError(
                    f"example {self.id}: {len(rows)} attention rows for a query of "
                    f"{len(self.query)} tokens; give one row per query token"
                )
        bad = [i for i in self.selected if not 0 <= i < n]
        if bad:
            raise ValueError(f"example {self.id}: selected positions {bad} outside 0..{n - 1}")
        if self.context_length is not None and self.context_length < n:
            raise ValueError(
                f"example {self.id}: context_length {self.context_length} < {n} tokens shown"
            )

    @property
    def per_query_token(self) -> bool:
        """True for one attention row per query token (Impatient Reader)."""
        return bool(self.attention) and isinstance(self.attention[0], (tuple, list))

    @property
    def attention_rows(self) -> list[tuple[float, ...]]:
        """The attention as a list of rows (one row for a single attention)."""
        if self.attention is None:
            return []
        if self.per_query_token:
            return [tuple(r) for r in self.attention]  # type: ignore[arg-type]
        return [tuple(self.attention)]  # type: ignore[arg-type]

    @property
    def weights(self) -> tuple[float, ...] | None:
        """The weights of the main view: the single attention, or the Impatient Reader's
        last row (its attention after reading the whole query)."""
        rows = self.attention_rows
        return rows[-1] if rows else None

    @property
    def correct(self) -> bool:
        return self.prediction == self.answer

    @property
    def truncated(self) -> bool:
        return self.context_length is not None and self.context_length > len(self.context)

    def name(self, marker: str) -> str:
        """The real name of a marker (the marker itself when the map has none)."""
        return self.entities.get(marker, marker)

    def to_json(self) -> dict:
        """The JSON sidecar: raw weights, tokens, prediction, probabilities."""
        return {
            "id": self.id,
            "model": self.model,
            "context": list(self.context),
            "query": list(self.query),
            "attention": (
                None
                if self.attention is None
                else [list(r) for r in self.attention_rows]
                if self.per_query_token
                else list(self.attention)  # type: ignore[arg-type]
            ),
            "attention_kind": (
                "none"
                if self.attention is None
                else "per_query_token"
                if self.per_query_token
                else "single"
            ),
            "selected": list(self.selected),
            "prediction": self.prediction,
            "answer": self.answer,
            "correct": self.correct,
            "probabilities": dict(self.probabilities),
            "candidates": list(self.candidates),
            "entities": dict(self.entities),
            "context_length": self.context_length
            if self.context_length is not None
            else len(self.context),
            "truncated": self.truncated,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HeatmapExample:
        """Inverse of ``to_json``."""
        attention = data.get("attention")
        if attention is not None:
            attention = (
                tuple(tuple(r) for r in attention)
                if data.get("attention_kind") == "per_query_token"
                else tuple(attention)
            )
        return cls(
            id=data["id"],
            model=data.get("model", ""),
            context=tuple(data["context"]),
            query=tuple(data["query"]),
            attention=attention,
            selected=tuple(data.get("selected", ())),
            prediction=data["prediction"],
            answer=data["answer"],
            probabilities=dict(data.get("probabilities", {})),
            candidates=tuple(data.get("candidates", ())),
            entities=dict(data.get("entities", {})),
            context_length=data.get("context_length"),
        )


def heatmap_examples(
    prediction: Mapping[str, Any],
    rows: Mapping[str, ClozeExample],
    batch: ClozeBatch | None = None,
    model: str = "",
) -> list[HeatmapExample]:
    """Plain heatmap data for one prediction batch of a reader.

    Args:
        prediction: a reader's ``predict_step`` output: ``ids``, ``probs`` (b, e),
            ``prediction`` (b,), ``answer`` (b,), ``attention`` ((b, n), (b, m, n) or None),
            ``selected`` ((b, k) or None); tensors on any device.
        rows: example id -> stored example (its tokens and entity map).
        batch: the batch, when at hand: its masks give the real lengths. Without it the
            lengths come from the stored example and the width of the attention.
        model: shown in the page header.

    Raises:
        KeyError: if an id of the batch is not in ``rows``.
    """
    ids = list(prediction["ids"])
    probs = _as_list(prediction["probs"])  # (b, e)
    predicted = _as_list(prediction["prediction"])  # (b,)
    answers = _as_list(prediction["answer"])  # (b,)
    attention = prediction.get("attention")
    attention = None if attention is None else _as_list(attention)  # (b, n) or (b, m, n)
    selected = prediction.get("selected")
    selected = None if selected is None else _as_list(selected)  # (b, k)
    context_len = None if batch is None else _as_list(batch.context_mask.sum(-1))
    query_len = None if batch is None else _as_list(batch.query_mask.sum(-1))
    out = []
    for i, example_id in enumerate(ids):
        row = rows[example_id]
        if entity_marker(int(answers[i])) != row.answer:
            raise ValueError(
                f"example {example_id}: the batch's answer @entity{int(answers[i])} is not the "
                f"stored {row.answer}; heatmaps need data without entity permutation"
            )
        weights = None if attention is None else attention[i]  # (n,) or (m, n)
        per_query_token = bool(weights) and isinstance(weights[0], list)
        if context_len is not None:
            n = int(context_len[i])
        else:  # the stored length, cut to the width the reader saw
            width = len(weights[0] if per_query_token else weights) if weights else None
            n = len(row.context) if width is None else min(len(row.context), width)
        m = int(query_len[i]) if query_len is not None else len(row.query)
        if weights is not None and per_query_token:
            weights = tuple(tuple(float(w) for w in r[:n]) for r in weights[:m])
        elif weights is not None:
            weights = tuple(float(w) for w in weights[:n])
        # A hard reader marks empty slots (context shorter than k) with -1.
        picks = (
            () if selected is None else tuple(sorted({int(p) for p in selected[i] if 0 <= p < n}))
        )
        out.append(
            HeatmapExample(
                id=example_id,
                model=model,
                context=tuple(row.context[:n]),
                query=tuple(row.query[:m]),
                attention=weights,
                selected=picks,
                prediction=entity_marker(int(predicted[i])),
                answer=entity_marker(int(answers[i])),
                probabilities={c: float(probs[i][entity_index(c)]) for c in row.candidates},
                candidates=tuple(row.candidates),
                entities=dict(row.entities),
                context_length=len(row.context),
            )
        )
    return out


def _as_list(value: Any) -> list:
    """A tensor (any device) or a sequence as nested Python lists."""
    if hasattr(value, "detach"):
        return value.detach().cpu().tolist()
    return list(value)


# --------------------------------------------------------------------------------------------
# Shading


def intensities(
    weights: Sequence[float],
    scale: Scale = "linear",
    *,
    top: float | None = None,
    clip: float = 10.0,
) -> list[float]:
    """Colour strengths in [0, 1] for ``weights``.

    Args:
        weights: attention weights over the real context tokens.
        scale: ``"linear"``: ``w / top`` (the strongest token is full colour);
            ``"normalized"``: ``min(w * n, clip) / clip`` with ``n = len(weights)``, i.e. in
            multiples of the uniform weight ``1 / n``, so documents of different lengths
            compare (a token at the uniform weight is ``1 / clip`` strong).
        top: the weight shown at full colour on the linear scale (default: the largest).
        clip: the multiple of the uniform weight shown at full colour (normalized scale).

    Raises:
        ValueError: for an unknown scale or a non-positive ``clip``.
    """
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    if clip <= 0:
        raise ValueError(f"clip must be positive, got {clip}")
    if not weights:
        return []
    if scale == "linear":
        top = max(weights) if top is None else top
        return [0.0 if top <= 0 else min(1.0, max(0.0, w / top)) for w in weights]
    n = len(weights)
    return [min(1.0, max(0.0, w * n / clip)) for w in weights]


def _colour(alpha: float) -> str:
    r, g, b = _RGB
    return f"rgba({r},{g},{b},{alpha:.3f})"


# --------------------------------------------------------------------------------------------
# HTML

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:20px auto;
max-width:1100px;padding:0 16px;color:#1f2328;background:#fff}
h1{font-size:20px;margin:0 0 4px;word-break:break-all}
h2{font-size:15px;margin:22px 0 6px;border-bottom:1px solid #d0d7de;padding-bottom:3px}
.meta{color:#57606a;font-size:13px}
.verdict{display:inline-block;padding:2px 8px;border-radius:10px;font-weight:600;font-size:13px}
.ok{background:#dafbe1;color:#116329}.bad{background:#ffebe9;color:#a40e26}
.doc{line-height:2.1;font-size:15px}
.t{padding:2px 1px;border-radius:3px}
.cand{box-shadow:inset 0 0 0 1px #6e7781}
.gold{box-shadow:inset 0 0 0 2px #1a7f37}
.pred{box-shadow:inset 0 0 0 2px #cf222e}
.gold.pred{box-shadow:inset 0 0 0 2px #1a7f37,0 0 0 2px #1a7f37}
.ph{background:#0969da;color:#fff;padding:2px 4px;border-radius:3px;font-weight:600}
.sel{outline:3px solid #8250df;outline-offset:1px;font-weight:700}
.trunc{color:#a40e26;font-style:italic;white-space:nowrap;border:1px dashed #a40e26;
padding:1px 4px;border-radius:3px}
.legend{display:flex;align-items:center;gap:8px;font-size:13px;flex-wrap:wrap}
.bar{display:inline-block;width:220px;height:14px;border:1px solid #d0d7de;border-radius:2px}
.key{display:inline-block;padding:1px 6px;margin-right:6px;border-radius:3px}
table{border-collapse:collapse;font-size:14px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.pbar{display:inline-block;height:10px;background:#0969da;vertical-align:middle}
.rows{overflow-x:auto;border:1px solid #d0d7de;padding:4px}
.row{white-space:nowrap;line-height:1.9;font-size:13px}
.rowlabel{display:inline-block;min-width:120px;font-weight:600;color:#57606a}
"""


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _fmt_p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.3f}"


def _token_span(
    text: str,
    *,
    title: str,
    alpha: float | None,
    classes: Sequence[str] = (),
) -> str:
    cls = " ".join(["t", *classes])
    style = "" if alpha is None else f' style="background-color:{_colour(alpha)}"'
    return f'<span class="{cls}"{style} title="{_esc(title)}">{_esc(text)}</span>'


def _weight_title(w: float, n: int) -> str:
    return f"weight {w:.4f} ({w * n:.2f}x uniform)"


def _context_html(
    ex: HeatmapExample,
    weights: Sequence[float] | None,
    alphas: Sequence[float] | None,
    *,
    names: bool,
    outline: bool = True,
) -> str:
    n = len(ex.context)
    candidates = set(ex.candidates)
    selected = set(ex.selected)
    parts = []
    for i, token in enumerate(ex.context):
        classes = []
        if outline and token in candidates:
            classes.append("cand")
        if outline and token == ex.answer:
            classes.append("gold")
        if outline and token == ex.prediction:
            classes.append("pred")
        if i in selected:
            classes.append("sel")
        title = [f"#{i}"]
        if token in ex.entities or token in candidates:
            title.append(f"{token} = {ex.name(token)}")
        if weights is not None:
            title.append(_weight_title(weights[i], n))
        if i in selected:
            title.append("selected by hard attention")
        text = ex.name(token) if names else token
        parts.append(
            _token_span(
                text,
                title=" | ".join(title),
                alpha=None if alphas is None else alphas[i],
                classes=classes,
            )
        )
    if ex.truncated:
        parts.append(
            f'<span class="trunc" title="the reader saw the first {n} of '
            f'{ex.context_length} tokens">[truncated: {ex.context_length - n} more tokens '
            "not read]</span>"
        )
    return " ".join(parts)


def _query_html(ex: HeatmapExample, *, names: bool) -> str:
    parts = []
    for token in ex.query:
        if token == PLACEHOLDER:
            parts.append(f'<span class="ph" title="the blank to fill">{_esc(PLACEHOLDER)}</span>')
            continue
        text = ex.name(token) if names else token
        title = f"{token} = {ex.name(token)}" if token in ex.entities else token
        parts.append(_token_span(text, title=title, alpha=None))
    return " ".join(parts)


def _legend_html(scale: Scale, top: float, n: int, clip: float, hard: bool) -> str:
    bar = f"background:linear-gradient(to right,{_colour(0.0)},{_colour(1.0)})"
    if scale == "linear":
        right = f"{top:.4f}"
        what = "linear scale: full colour = the largest weight"
    else:
        right = f"&ge;{clip:g}x uniform"
        what = f"length-normalised scale: weight x {n} tokens (1 = uniform), clipped at {clip:g}"
    keys = (
        '<span class="key cand">candidate</span>'
        '<span class="key gold">gold answer</span>'
        '<span class="key pred">prediction</span>'
        f'<span class="ph">{_esc(PLACEHOLDER)}</span>'
    )
    if hard:
        keys += '<span class="key sel">selected (hard attention)</span>'
    return (
        '<div class="legend"><span>0</span>'
        f'<span class="bar" style="{bar}" title="{_esc(what)}"></span>'
        f'<span>{right}</span><span class="meta">({_esc(what)})</span></div>'
        f'<div class="legend" style="margin-top:6px">{keys}</div>'
    )


def _probabilities_html(ex: HeatmapExample) -> str:
    if not ex.probabilities:
        return ""
    ranked = sorted(ex.probabilities.items(), key=lambda kv: -kv[1])
    body = []
    for marker, p in ranked:
        tags = []
        if marker == ex.answer:
            tags.append("gold")
        if marker == ex.prediction:
            tags.append("prediction")
        body.append(
            f"<tr><td>{_esc(marker)}</td><td>{_esc(ex.name(marker))}</td>"
            f'<td class="num">{p:.4f}</td>'
            f'<td><span class="pbar" style="width:{max(1, round(200 * p))}px"></span></td>'
            f"<td>{_esc(', '.join(tags))}</td></tr>"
        )
    return (
        "<h2>Candidates</h2><table><tr><th>marker</th><th>name</th><th>probability</th>"
        "<th></th><th></th></tr>" + "".join(body) + "</table>"
    )


def _rows_html(ex: HeatmapExample, scale: Scale, top: float, clip: float) -> str:
    """Impatient Reader: one line of context weights per query token."""
    lines = []
    for j, (q, row) in enumerate(zip(ex.query, ex.attention_rows)):
        alphas = intensities(row, scale, top=top, clip=clip)
        tokens = " ".join(
            _token_span(t, title=f"#{i} after {q}: {w:.4f}", alpha=a)
            for i, (t, w, a) in enumerate(zip(ex.context, row, alphas))
        )
        lines.append(
            f'<div class="row"><span class="rowlabel" title="query token {j}">'
            f"{j}: {_esc(q)}</span> {tokens}</div>"
        )
    return (
        "<h2>Attention after each query token</h2>"
        '<p class="meta">The Impatient Reader re-reads the document after every query token; '
        "row j shows its attention after token j (the last row is the view above).</p>"
        f'<div class="rows">{"".join(lines)}</div>'
    )


def render_html(ex: HeatmapExample, *, scale: Scale = "linear", clip: float = 10.0) -> str:
    """One self-contained HTML page for one example.

    Args:
        ex: the example.
        scale: ``"linear"`` or ``"normalized"`` (see ``intensities``).
        clip: the full-colour multiple of the uniform weight on the normalized scale.

    Returns:
        The page: inline CSS only, no script, no external reference, every text escaped.
    """
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    n = len(ex.context)
    weights = ex.weights
    rows = ex.attention_rows
    top = max((max(r) for r in rows if r), default=0.0)
    alphas = None if weights is None else intensities(weights, scale, top=top, clip=clip)
    p_pred = ex.probabilities.get(ex.prediction)
    p_gold = ex.probabilities.get(ex.answer)
    verdict = (
        '<span class="verdict ok">correct</span>'
        if ex.correct
        else '<span class="verdict bad">wrong</span>'
    )
    head = (
        f"<h1>{_esc(ex.id)}</h1>"
        f'<p class="meta">{verdict} &nbsp; prediction '
        f'<span class="key pred">{_esc(ex.prediction)}</span> {_esc(ex.name(ex.prediction))} '
        f"(p = {_fmt_p(p_pred)}) &nbsp; gold "
        f'<span class="key gold">{_esc(ex.answer)}</span> {_esc(ex.name(ex.answer))} '
        f"(p = {_fmt_p(p_gold)})</p>"
        f'<p class="meta">{n} context tokens'
        + (f" (of {ex.context_length}; truncated)" if ex.truncated else "")
        + f", {len(ex.candidates)} candidates"
        + (f", model {_esc(ex.model)}" if ex.model else "")
        + "</p>"
    )
    if weights is None:
        attention_note = '<p class="meta">This reader has no attention over the context.</p>'
    else:
        attention_note = _legend_html(scale, top, n, clip, hard=bool(ex.selected))
    if ex.selected:
        chosen = ", ".join(f"#{i} &ldquo;{_esc(ex.context[i])}&rdquo;" for i in ex.selected)
        attention_note += f'<p class="meta">Selected by hard attention: {chosen}</p>'
    view = "last row of the per-query-token attention" if ex.per_query_token else "attention"
    body = [
        head,
        attention_note,
        "<h2>Query</h2>",
        f'<div class="doc">{_query_html(ex, names=False)}</div>',
        f"<h2>Context ({_esc(view)})</h2>",
        f'<div class="doc">{_context_html(ex, weights, alphas, names=False)}</div>',
        _probabilities_html(ex),
    ]
    if ex.per_query_token:
        body.append(_rows_html(ex, scale, top, clip))
    body += [
        "<h2>With real names</h2>",
        '<p class="meta">The same weights with the entity map applied: each marker replaced '
        "by the entity's name.</p>",
        f'<div class="doc"><b>Query:</b> {_query_html(ex, names=True)}</div>',
        f'<div class="doc">{_context_html(ex, weights, alphas, names=True)}</div>',
    ]
    return _page(f"attention: {ex.id}", "\n".join(body))


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )


@dataclass(frozen=True)
class IndexEntry:
    """One line of ``index.html``: an example and the file names of its outputs."""

    id: str
    page: str
    correct: bool
    prediction: str
    answer: str
    confidence: float | None
    gold_probability: float | None
    png: str | None = None
    sidecar: str | None = None


def render_index(entries: Sequence[IndexEntry], *, title: str = "Attention heatmaps") -> str:
    """``index.html``: the examples (correct / wrong, confidence) with links to their pages."""
    right = sum(e.correct for e in entries)
    body = [
        f"<h1>{_esc(title)}</h1>",
        f'<p class="meta">{len(entries)} examples, {right} answered correctly.</p>',
        "<table><tr><th>#</th><th>example</th><th>result</th><th>prediction</th>"
        "<th>confidence</th><th>gold</th><th>p(gold)</th><th>files</th></tr>",
    ]
    for k, e in enumerate(entries):
        verdict = (
            '<span class="verdict ok">correct</span>'
            if e.correct
            else '<span class="verdict bad">wrong</span>'
        )
        files = [f'<a href="{_href(e.page)}">html</a>']
        if e.png:
            files.append(f'<a href="{_href(e.png)}">png</a>')
        if e.sidecar:
            files.append(f'<a href="{_href(e.sidecar)}">json</a>')
        body.append(
            f'<tr><td class="num">{k + 1}</td><td><a href="{_href(e.page)}">{_esc(e.id)}</a></td>'
            f"<td>{verdict}</td><td>{_esc(e.prediction)}</td>"
            f'<td class="num">{_fmt_p(e.confidence)}</td><td>{_esc(e.answer)}</td>'
            f'<td class="num">{_fmt_p(e.gold_probability)}</td><td>{" ".join(files)}</td></tr>'
        )
    body.append("</table>")
    return _page(title, "\n".join(body))


def _href(file_name: str) -> str:
    """A relative link to a file in the same folder (never a scheme or a host)."""
    return _esc("./" + urllib.parse.quote(file_name))


def file_stem(example_id: str) -> str:
    """A safe, unique file name stem for an example id (ids may hold ``:`` or ``/``)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", example_id).strip("._")[:60] or "example"
    return f"{slug}-{hashlib.sha1(example_id.encode()).hexdigest()[:8]}"


# --------------------------------------------------------------------------------------------
# PNG


def render_png(
    ex: HeatmapExample,
    path: str | Path,
    *,
    scale: Scale = "linear",
    clip: float = 10.0,
    width_chars: int = 110,
    dpi: int = 110,
) -> None:
    """A PNG figure of the example: the query, then the context shaded by attention.

    For the Impatient Reader a second panel shows the weights as an image, one row per
    query token. Uses matplotlib's Agg canvas directly (no global pyplot state).

    Args:
        ex: the example.
        path: the output file.
        scale: as in ``render_html``.
        clip: as in ``render_html``.
        width_chars: the line width of the text, in characters.
        dpi: resolution.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import PatchCollection
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    weights = ex.weights
    rows = ex.attention_rows
    top = max((max(r) for r in rows if r), default=0.0)
    alphas = (
        [0.0] * len(ex.context)
        if weights is None
        else intensities(weights, scale, top=top, clip=clip)
    )
    # Lay the tokens out in lines of at most width_chars characters (monospace units).
    layout: list[tuple[int, int, str]] = []  # (line, column, text) per context token
    line, col = 0, 0
    spans: list[int] = []  # columns each token takes (wide CJK characters take two)
    for token in ex.context:
        text = token if len(token) <= width_chars // 2 else token[: width_chars // 2 - 1] + "~"
        span = _columns(text)
        if col and col + span > width_chars:
            line, col = line + 1, 0
        layout.append((line, col, text))
        spans.append(span)
        col += span + 1
    n_lines = line + 1 + int(ex.truncated)  # one more line for the truncation marker
    header = 3
    char_w, line_h = 0.075, 0.21  # inches per character / per line at 9 pt
    text_h = (n_lines + header) * line_h + 0.3
    panel_h = 0.18 * len(rows) + 0.8 if ex.per_query_token else 0.0
    fig = Figure(figsize=(width_chars * char_w + 0.4, text_h + panel_h), dpi=dpi)
    FigureCanvasAgg(fig)
    top_frac = text_h / (text_h + panel_h)
    ax = fig.add_axes((0.02, 1 - top_frac, 0.96, top_frac * 0.98))
    ax.set_xlim(-0.5, width_chars + 0.5)
    ax.set_ylim(n_lines + header, 0)
    ax.axis("off")
    kw = {"family": "monospace", "fontsize": 9, "va": "center", "ha": "left", "parse_math": False}
    verdict = "correct" if ex.correct else "wrong"
    p_pred = ex.probabilities.get(ex.prediction)
    p_gold = ex.probabilities.get(ex.answer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing glyphs for rare scripts are not fatal
        ax.text(0, 0.5, f"{ex.id}  [{verdict}]", weight="bold", **kw)
        ax.text(
            0,
            1.5,
            f"prediction {ex.prediction} ({ex.name(ex.prediction)}) p={_fmt_p(p_pred)}   "
            f"gold {ex.answer} ({ex.name(ex.answer)}) p={_fmt_p(p_gold)}",
            **kw,
        )
        ax.text(0, 2.5, "query: " + " ".join(ex.query)[: width_chars - 7], **kw)
        patches, faces, edges, widths = [], [], [], []
        for i, ((ln, c, text), alpha) in enumerate(zip(layout, alphas)):
            token = ex.context[i]
            edge, lw = "none", 0.0
            if token == ex.answer:
                edge, lw = "#1a7f37", 1.4
            elif token == ex.prediction:
                edge, lw = "#cf222e", 1.4
            elif token in ex.candidates:
                edge, lw = "#6e7781", 0.6
            if i in ex.selected:
                edge, lw = "#8250df", 2.0
            patches.append(Rectangle((c - 0.1, ln + header + 0.5 - 0.42), spans[i] + 0.2, 0.84))
            faces.append(tuple(v / 255 for v in _RGB) + (alpha,))
            edges.append(edge)
            widths.append(lw)
            ax.text(c, ln + header + 0.5, text, **kw)
        ax.add_collection(
            PatchCollection(patches, facecolors=faces, edgecolors=edges, linewidths=widths)
        )
        if ex.truncated:
            ax.text(
                0,
                n_lines + header - 0.5,
                f"[truncated: the reader saw {len(ex.context)} of {ex.context_length} tokens]",
                color="#a40e26",
                **kw,
            )
        if ex.per_query_token:
            bottom = 0.45 / (text_h + panel_h)
            pax = fig.add_axes((0.14, bottom, 0.84, (panel_h - 0.75) / (text_h + panel_h)))
            pax.imshow(rows, aspect="auto", cmap="Oranges", interpolation="nearest")
            pax.set_yticks(range(len(ex.query)))
            pax.set_yticklabels(ex.query, fontsize=7)
            for label in pax.get_yticklabels():
                label.set_parse_math(False)
            pax.set_xlabel("context position", fontsize=8)
            pax.tick_params(axis="x", labelsize=7)
        fig.savefig(str(path), dpi=dpi)


def _columns(text: str) -> int:
    """Monospace columns of ``text``: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


# --------------------------------------------------------------------------------------------
# Writing a folder

INDEX_FILES = ("index.html", "index.json")


@contextmanager
def _replacing(path: Path) -> Iterator[Path]:
    """A temporary file beside ``path`` (same suffix) that becomes ``path`` when the block
    ends without an error, so that a full disk never leaves a truncated page."""
    tmp = path.with_name(f".{path.stem}.partial{path.suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def write_example(
    ex: HeatmapExample,
    out_dir: str | Path,
    *,
    scale: Scale = "linear",
    clip: float = 10.0,
    png: bool = True,
) -> IndexEntry:
    """Write the HTML page, JSON sidecar and (optionally) PNG of one example.

    Returns:
        The example's ``index.html`` entry.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = file_stem(ex.id)
    with _replacing(out / f"{stem}.html") as tmp:
        tmp.write_text(render_html(ex, scale=scale, clip=clip), encoding="utf-8")
    with _replacing(out / f"{stem}.json") as tmp:
        tmp.write_text(json.dumps(ex.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
    if png:
        with _replacing(out / f"{stem}.png") as tmp:
            render_png(ex, tmp, scale=scale, clip=clip)
    return IndexEntry(
        id=ex.id,
        page=f"{stem}.html",
        correct=ex.correct,
        prediction=ex.prediction,
        answer=ex.answer,
        confidence=ex.probabilities.get(ex.prediction),
        gold_probability=ex.probabilities.get(ex.answer),
        png=f"{stem}.png" if png else None,
        sidecar=f"{stem}.json",
    )


def write_index(entries: Sequence[IndexEntry], out_dir: str | Path, *, title: str = "") -> Path:
    """Write ``index.json`` (the list as data), then ``index.html``, into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with _replacing(out / "index.json") as tmp:
        tmp.write_text(
            json.dumps([e.__dict__ for e in entries], ensure_ascii=False, indent=1),
            encoding="utf-8",
        )
    path = out / "index.html"
    with _replacing(path) as tmp:
        tmp.write_text(render_index(entries, title=title or "Attention heatmaps"), encoding="utf-8")
    return path


def write_heatmaps(
    examples: Iterable[HeatmapExample],
    out_dir: str | Path,
    *,
    scale: Scale = "linear",
    clip: float = 10.0,
    png: bool = True,
    title: str = "",
) -> list[IndexEntry]:
    """Write every example's files and, last, ``index.html`` into ``out_dir``.

    Holds the folder's lock (a second run on it fails at once). A previous index is removed
    first, so that a run that fails (a full disk, a read-only folder) never looks complete;
    the same call then writes the whole folder again.

    Raises:
        OutputInUse: another run writes ``out_dir``.
        OutputError: the disk is full, the folder read-only, ...
    """
    with writing(out_dir, "heatmap"):
        for name in INDEX_FILES:
            (Path(out_dir) / name).unlink(missing_ok=True)
        entries = [write_example(ex, out_dir, scale=scale, clip=clip, png=png) for ex in examples]
        write_index(entries, out_dir, title=title)
    return entries


# --------------------------------------------------------------------------------------------
# Lightning prediction writer


class HeatmapWriter(BasePredictionWriter):
    """Writes heatmaps while ``predict`` runs (a Lightning ``BasePredictionWriter``).

    Use from a config::

        trainer:
          callbacks:
            - class_path: attentive_reader.viz.heatmap.HeatmapWriter
              init_args: {output_dir: heatmaps, split: test, limit: 50}

    The reader's ``predict_step`` output (``ids``, ``probs``, ``prediction``, ``answer``,
    ``attention``, ``selected``) is joined with the stored examples of ``split`` (from the
    trainer's data module, ``examples(split)``) for their tokens and entity maps.

    Args:
        output_dir: folder for the pages, PNGs, JSON sidecars and ``index.html``.
        split: the split ``predict`` runs on (its stored rows give tokens and names);
            default: the data module's ``predict_split``.
        scale: ``"linear"`` or ``"normalized"`` shading.
        clip: full-colour multiple of the uniform weight on the normalized scale.
        png: also write a PNG per example.
        limit: write at most this many examples (per process); ``None`` writes all.
    """

    def __init__(
        self,
        output_dir: str,
        split: Literal["train", "validation", "test"] | None = None,
        scale: Scale = "linear",
        clip: float = 10.0,
        png: bool = True,
        limit: int | None = None,
    ) -> None:
        super().__init__(write_interval="batch")
        if scale not in SCALES:
            raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be a positive number of examples or None, got {limit}")
        if clip <= 0:
            raise ValueError(f"clip must be positive, got {clip}")
        self.output_dir = output_dir
        self.split = split
        self.scale: Scale = scale
        self.clip = clip
        self.png = png
        self.limit = limit
        self.entries: list[IndexEntry] = []
        self._dataset: Any = None
        self._row_of: dict[str, int] = {}

    def _rows(self, trainer: Any, ids: Sequence[str]) -> dict[str, ClozeExample]:
        if self._dataset is None:
            dm = getattr(trainer, "datamodule", None)
            if dm is None or not hasattr(dm, "examples"):
                raise RuntimeError(
                    "HeatmapWriter needs the trainer's data module (ClozeDataModule) to look "
                    "up the stored examples; run it from 'attentive-reader predict' with --data"
                )
            if self.split is None:
                self.split = getattr(dm, "predict_split", "test")
            self._dataset = dm.examples(self.split)
            self._row_of = {example_id: i for i, example_id in enumerate(self._dataset["id"])}
        missing = [i for i in ids if i not in self._row_of]
        if missing:
            raise KeyError(
                f"HeatmapWriter: example ids {missing[:3]} are not in the {self.split!r} split; "
                "set the writer's split to the one predict runs on"
            )
        return {i: ClozeExample.from_row(self._dataset[self._row_of[i]]) for i in ids}

    def write_on_batch_end(
        self,
        trainer: Any,
        pl_module: Any,
        prediction: Any,
        batch_indices: Sequence[int] | None,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        if self.limit is not None and len(self.entries) >= self.limit:
            return
        rows = self._rows(trainer, list(prediction["ids"]))
        model = type(pl_module).__name__
        for ex in heatmap_examples(prediction, rows, batch=_as_batch(batch), model=model):
            if self.limit is not None and len(self.entries) >= self.limit:
                break
            self.entries.append(
                write_example(ex, self.output_dir, scale=self.scale, clip=self.clip, png=self.png)
            )

    def on_predict_end(self, trainer: Any, pl_module: Any) -> None:
        entries = self.entries
        world = getattr(trainer, "world_size", 1)
        if world > 1:
            import torch.distributed as dist

            gathered: list[list[IndexEntry]] = [[] for _ in range(world)]
            dist.all_gather_object(gathered, entries)
            entries = [e for part in gathered for e in part]
        if getattr(trainer, "is_global_zero", True):
            write_index(entries, self.output_dir, title=f"Attention heatmaps ({self.split})")


def _as_batch(batch: Any) -> ClozeBatch | None:
    """The batch if it carries masks (a ``ClozeBatch``), else ``None``."""
    return batch if hasattr(batch, "context_mask") and hasattr(batch, "query_mask") else None

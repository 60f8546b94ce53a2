"""HTML: one self-contained page per example, and ``index.html`` linking them.

Every page is one file with inline CSS only: no JavaScript, no external URL, every token and
name HTML-escaped (the text is untrusted news text). Tooltips are ``title`` attributes.
"""

from __future__ import annotations

import html
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from attentive_reader.corpus.records import PLACEHOLDER
from attentive_reader.viz.heatmap import (
    SCALES,
    HeatmapExample,
    Scale,
    colour,
    format_probability,
    intensities,
)

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
td.w{text-align:center;font-variant-numeric:tabular-nums;min-width:44px}
"""


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _token_span(
    text: str,
    *,
    title: str,
    alpha: float | None,
    classes: Sequence[str] = (),
) -> str:
    cls = " ".join(["t", *classes])
    style = "" if alpha is None else f' style="background-color:{colour(alpha)}"'
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
        if outline and ex.answer is not None and token == ex.answer:
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
    bar = f"background:linear-gradient(to right,{colour(0.0)},{colour(1.0)})"
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


def _hops_html(ex: HeatmapExample) -> str:
    """Gated-Attention Reader: one row per gated hop (a query grid and a document row)."""
    grid = ex.hop_query_attention  # (K - 1, m)
    top = max((max(r) for r in grid if r), default=0.0)
    head = "".join(f'<th title="query token {i}">{_esc(q)}</th>' for i, q in enumerate(ex.query))
    body = []
    for k, row in enumerate(grid):
        cells = "".join(
            f'<td class="w" style="background-color:{colour(a)}" '
            f'title="{_esc(f"hop {k + 1}: {q} {w:.4f}")}">{w:.2f}</td>'
            for q, w, a in zip(ex.query, row, intensities(row, "linear", top=top))
        )
        body.append(f"<tr><th>hop {k + 1}</th>{cells}</tr>")
    lines = []
    for k, hop in enumerate(ex.hop_attention or ()):
        spans = []
        for t, (token, weights) in enumerate(zip(ex.context, hop)):
            ranked = sorted(zip(weights, ex.query), key=lambda wq: -wq[0])
            best, best_token = ranked[0] if ranked else (0.0, "")
            shown = ", ".join(f"{q} {w:.2f}" for w, q in ranked[:3])
            title = f"#{t} hop {k + 1}: most on {best_token} ({best:.3f}) | {shown}"
            spans.append(_token_span(token, title=title, alpha=min(1.0, max(0.0, best))))
        lines.append(
            f'<div class="row"><span class="rowlabel">hop {k + 1}</span> {" ".join(spans)}</div>'
        )
    hops = len(grid)
    return (
        "<h2>Gated-Attention hops: what each hop read of the query</h2>"
        f'<p class="meta">The reader reads the document {hops + 1} times. Between two readings '
        "(a hop) every document token attends over the query tokens and is gated by the query "
        "it attended to. The grid shows, for each hop, the attention each query token received, "
        "averaged over the document tokens (each row sums to 1). Below it, one row per hop: "
        "each document token is shaded by the largest weight it gave a single query token "
        "(full colour: all of its attention on one query token; pale: spread over the query). "
        "Hover a token for the query tokens it attended to most.</p>"
        f"<table><tr><th>hop</th>{head}</tr>{''.join(body)}</table>"
        f'<div class="rows" style="margin-top:8px">{"".join(lines)}</div>'
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
    verdict = _verdict(ex.correct)
    gold = (
        ""
        if ex.answer is None
        else (
            f' &nbsp; gold <span class="key gold">{_esc(ex.answer)}</span> '
            f"{_esc(ex.name(ex.answer))} (p = {format_probability(p_gold)})"
        )
    )
    head = (
        f"<h1>{_esc(ex.id)}</h1>"
        f'<p class="meta">{verdict} &nbsp; prediction '
        f'<span class="key pred">{_esc(ex.prediction)}</span> {_esc(ex.name(ex.prediction))} '
        f"(p = {format_probability(p_pred)}){gold}</p>"
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
    if ex.hop_attention:
        body.append(_hops_html(ex))
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


def _verdict(correct: bool | None) -> str:
    """The correct / wrong badge; a question without a gold answer gets "no gold answer"."""
    if correct is None:
        return '<span class="verdict">no gold answer</span>'
    if correct:
        return '<span class="verdict ok">correct</span>'
    return '<span class="verdict bad">wrong</span>'


@dataclass(frozen=True)
class IndexEntry:
    """One line of ``index.html``: an example and the file names of its outputs."""

    id: str
    page: str
    correct: bool | None
    prediction: str
    answer: str | None
    confidence: float | None
    gold_probability: float | None
    png: str | None = None
    sidecar: str | None = None


def render_index(entries: Sequence[IndexEntry], *, title: str = "Attention heatmaps") -> str:
    """``index.html``: the examples (correct / wrong, confidence) with links to their pages."""
    graded = [e for e in entries if e.correct is not None]
    right = sum(bool(e.correct) for e in graded)
    summary = f"{len(entries)} examples"
    if graded:
        summary += f", {right} of {len(graded)} answered correctly"
    body = [
        f"<h1>{_esc(title)}</h1>",
        f'<p class="meta">{summary}.</p>',
        "<table><tr><th>#</th><th>example</th><th>result</th><th>prediction</th>"
        "<th>confidence</th><th>gold</th><th>p(gold)</th><th>files</th></tr>",
    ]
    for k, e in enumerate(entries):
        verdict = _verdict(e.correct)
        files = [f'<a href="{_href(e.page)}">html</a>']
        if e.png:
            files.append(f'<a href="{_href(e.png)}">png</a>')
        if e.sidecar:
            files.append(f'<a href="{_href(e.sidecar)}">json</a>')
        body.append(
            f'<tr><td class="num">{k + 1}</td><td><a href="{_href(e.page)}">{_esc(e.id)}</a></td>'
            f"<td>{verdict}</td><td>{_esc(e.prediction)}</td>"
            f'<td class="num">{format_probability(e.confidence)}</td><td>{_esc(e.answer or "")}</td>'
            f'<td class="num">{format_probability(e.gold_probability)}</td><td>{" ".join(files)}</td></tr>'
        )
    body.append("</table>")
    return _page(title, "\n".join(body))


def _href(file_name: str) -> str:
    """A relative link to a file in the same folder (never a scheme or a host)."""
    return _esc("./" + urllib.parse.quote(file_name))

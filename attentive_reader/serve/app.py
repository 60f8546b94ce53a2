"""The web app of ``attentive-reader serve``: paste an article and a query, see the answer.

Pages:

* ``GET /``: the form (a document and a query with one blank);
* ``POST /answer``: the answer: ranked candidates, the filled-in query, and the attention
  heatmap over the document, with a real-names view and a markers view (switched by two
  radio buttons and CSS: no script);
* ``GET /examples`` and ``GET /examples/{split}/{index}`` (with a dataset): its stored
  examples, answered by the reader.

Safe by default: every token and name is HTML-escaped by the templates (``autoescape``), a
request body over ``max_bytes`` is refused (413) before it is read whole, the client never
names a file (a dataset is chosen by the server's operator; the client sends a split name
from ``SPLITS`` and a row number), and responses forbid scripts and framing
(``Content-Security-Policy``).
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from attentive_reader.corpus.records import PLACEHOLDER, SPLITS, ClozeExample, is_entity_marker
from attentive_reader.errors import UserError
from attentive_reader.viz.heatmap import intensities

if TYPE_CHECKING:
    import datasets

    from attentive_reader.api import Answer, Reader

MAX_BYTES = 1_000_000
EXAMPLES_PER_PAGE = 50
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "img-src data:; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class BodyTooLarge(Exception):
    """The request body is over the cap."""


@dataclass(frozen=True)
class TokenView:
    """One shaded token of a heatmap view.

    Attributes:
        text: what is shown (a word, a marker, or an entity's name).
        alpha: the colour strength in [0, 1].
        weight: the attention weight (``None`` without attention).
        kind: ``word``, ``entity``, ``prediction`` or ``blank``.
        selected: a hard-attention reader selected it.
    """

    text: str
    alpha: float
    weight: float | None
    kind: str
    selected: bool = False


def token_views(answer: Answer, *, names: bool) -> tuple[list[TokenView], list[TokenView]]:
    """The query and context of ``answer`` as shaded tokens, with names or markers."""
    page = answer.heatmap()
    weights = page.weights
    alphas = intensities(weights) if weights is not None else [0.0] * len(page.context)
    predicted = answer.prediction.marker
    chosen = set(page.selected)

    def shown(token: str) -> tuple[str, str]:
        if token == PLACEHOLDER:
            return ("___" if names else token), "blank"
        if is_entity_marker(token):
            kind = "prediction" if token == predicted else "entity"
            return (answer.entities.get(token, token) if names else token), kind
        return token, "word"

    context = []
    for i, token in enumerate(page.context):
        text, kind = shown(token)
        weight = None if weights is None else weights[i]
        context.append(TokenView(text, alphas[i], weight, kind, i in chosen))
    query = []
    for token in page.query:
        text, kind = shown(token)
        query.append(TokenView(text, 0.0, None, kind))
    return query, context


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("attentive_reader.serve", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


async def read_form(request: Request, max_bytes: int) -> dict[str, str]:
    """The fields of an ``application/x-www-form-urlencoded`` body of at most
    ``max_bytes`` (checked on the header and while reading)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise BodyTooLarge
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise BodyTooLarge
    fields = urllib.parse.parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {key: values[0] for key, values in fields.items()}


def create_app(
    reader: Reader,
    *,
    data: str | Path | None = None,
    max_bytes: int = MAX_BYTES,
    title: str = "attentive-reader",
) -> Starlette:
    """The app for ``reader``.

    Args:
        reader: the reader that answers.
        data: a processed dataset directory whose examples can be browsed (optional).
        max_bytes: the largest request body accepted.
        title: shown in the page header.
    """
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    env = _environment()
    splits: dict[str, datasets.Dataset] = _load_splits(data) if data is not None else {}

    def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(template).render(
            title=title,
            model=Path(reader.path).name,  # never the server's folders
            provenance=reader.provenance.describe(folder=False),
            caution=reader.provenance.warning(),
            browse=bool(splits),
            max_bytes=max_bytes,
            **context,
        )
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def result(answer: Answer, **context: Any) -> dict[str, Any]:
        names = token_views(answer, names=True)
        markers = token_views(answer, names=False)
        return {"answer": answer, "names": names, "markers": markers, **context}

    async def home(request: Request) -> Response:
        return page("index.html", document="", query="")

    async def ask(request: Request) -> Response:
        try:
            form = await read_form(request, max_bytes)
        except BodyTooLarge:
            return page(
                "index.html",
                413,
                document="",
                query="",
                error=f"the request is over {max_bytes:,} bytes; send a shorter document",
            )
        document, query = form.get("document", ""), form.get("query", "")
        try:
            answer = reader.answer(document, query)
        except UserError as error:
            return page("index.html", 400, document=document, query=query, error=str(error))
        return page("index.html", document=document, query=query, **result(answer))

    async def examples(request: Request) -> Response:
        if not splits:
            return page("index.html", 404, document="", query="", error="no dataset is served")
        split = request.query_params.get("split", next(iter(splits)))
        if split not in splits:
            return page("index.html", 404, document="", query="", error="no such split")
        number = request.query_params.get("page", "0")
        start = int(number) * EXAMPLES_PER_PAGE if number.isdigit() else 0
        rows = splits[split]
        stop = min(start + EXAMPLES_PER_PAGE, len(rows))
        listed = [(i, ClozeExample.from_row(rows[i])) for i in range(min(start, len(rows)), stop)]
        return page(
            "examples.html",
            split=split,
            splits=list(splits),
            listed=listed,
            start=start,
            total=len(rows),
            per_page=EXAMPLES_PER_PAGE,
        )

    async def example(request: Request) -> Response:
        split, index = request.path_params["split"], request.path_params["index"]
        if split not in splits or not 0 <= index < len(splits[split]):
            return page("index.html", 404, document="", query="", error="no such example")
        stored = ClozeExample.from_row(splits[split][index])
        answer = reader.answer_example(stored)
        return page(
            "example.html",
            split=split,
            index=index,
            gold=stored.answer,
            gold_name=stored.entities.get(stored.answer, stored.answer),
            **result(answer),
        )

    routes = [
        Route("/", home, methods=["GET"]),
        Route("/answer", ask, methods=["POST"]),
        Route("/examples", examples, methods=["GET"]),
        Route("/examples/{split}/{index:int}", example, methods=["GET"]),
    ]
    return Starlette(routes=routes)


def _load_splits(data: str | Path) -> dict[str, datasets.Dataset]:
    import datasets

    path = Path(data)
    if not (path / "dataset_dict.json").is_file():
        raise UserError(
            f"{path} is not a processed dataset directory (no dataset_dict.json); pass the "
            "output of 'attentive-reader preprocess' as --data"
        )
    loaded = datasets.load_from_disk(str(path))
    return {split: loaded[split] for split in SPLITS if split in loaded}

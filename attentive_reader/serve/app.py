"""The web app of ``attentive-reader serve``: paste an article and a query, see the answer.

Pages:

* ``GET /``: the form (a document and a query with one blank);
* ``POST /answer``: the answer: ranked candidates, the filled-in query, and the attention
  heatmap over the document, with a real-names view and a markers view (switched by two
  radio buttons and CSS: no script);
* ``GET /examples`` and ``GET /examples/{split}/{index}`` (with a dataset): its stored
  examples, answered by the reader;

and the JSON API under ``/api/`` (``json_api``). Questions are answered by an ``AnswerPool``
(``pool``), off the event loop and bounded: the page answers at once while they are being
answered, and a full queue is a 503 with ``Retry-After``.

Safe by default: every token and name is HTML-escaped by the templates (``autoescape``), a
request body over ``max_bytes`` is refused (413) before it is read whole and one that does
not arrive in time (408), the client never names a file (a dataset is chosen by the
server's operator; the client sends a split name from ``SPLITS`` and a row number), and
every response, errors included, forbids scripts and framing (``headers.SecurityHeaders``).
Refusals are ``problems.Problem``: JSON under ``/api/``, the page with its message elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from attentive_reader.common.errors import UserError
from attentive_reader.common.markers import PLACEHOLDER
from attentive_reader.corpus.records import SPLITS, ClozeExample, check_dataset_dir
from attentive_reader.serve.body import read_form
from attentive_reader.serve.headers import SecuredStarlette
from attentive_reader.serve.info import model_info, reader_record
from attentive_reader.serve.json_api import api_routes, error_response
from attentive_reader.serve.pool import AnswerPool
from attentive_reader.serve.problems import Problem
from attentive_reader.viz.render import environment
from attentive_reader.viz.tokens import TokenView, context_views, query_views, shading

if TYPE_CHECKING:
    import datasets

    from attentive_reader.api import Answer, Reader

MAX_BYTES = 1_000_000
EXAMPLES_PER_PAGE = 50
_STATUS_CODES = {404: "not_found", 405: "method_not_allowed"}


def token_views(answer: Answer, *, names: bool) -> tuple[list[TokenView], list[TokenView]]:
    """The query and context of ``answer`` as shaded tokens, with names or markers (the
    static pages' classification, ``viz/tokens.py``; the blank is ``___`` among names)."""
    page = answer.heatmap()
    _, alphas = shading(page)
    query = query_views(page, names=names, blank="___" if names else PLACEHOLDER)
    return query, context_views(page, alphas or [0.0] * len(page.context), names=names)


def create_app(
    reader: Reader,
    *,
    data: str | Path | None = None,
    max_bytes: int = MAX_BYTES,
    title: str = "attentive-reader",
    pool: AnswerPool | None = None,
) -> Starlette:
    """The app for ``reader``.

    Args:
        reader: the reader (the page header and the health check describe it; it answers
            too unless ``pool`` has readers of its own).
        data: a processed dataset directory whose examples can be browsed (optional).
        max_bytes: the largest request body accepted.
        title: shown in the page header.
        pool: where questions are answered (default: ``AnswerPool.threads(reader)``); its
            ``timeout`` also limits the time to receive a request body.
    """
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    pool = pool or AnswerPool.threads(reader)
    info = model_info(reader)
    splits = _load_splits(data) if data is not None else {}
    site = _Site(pool, info, splits, max_bytes=max_bytes, title=title)
    routes = [
        Route("/", site.home, methods=["GET"]),
        Route("/answer", site.ask, methods=["POST"]),
        Route("/examples", site.examples, methods=["GET"]),
        Route("/examples/{split}/{index}", site.example, methods=["GET"]),
        *api_routes(pool, max_bytes=max_bytes, info=info, reader=reader_record(reader)),
    ]
    handlers = {Problem: site.refused, HTTPException: site.http_error, Exception: site.failed}
    return SecuredStarlette(routes=routes, exception_handlers=handlers)


class _Site:
    """The pages' endpoints and the app's error responses (JSON under ``/api/``)."""

    def __init__(
        self,
        pool: AnswerPool,
        info: dict[str, Any],
        splits: dict[str, datasets.Dataset],
        *,
        max_bytes: int,
        title: str,
    ) -> None:
        self.pool = pool
        self.info = info
        self.splits = splits
        self.max_bytes = max_bytes
        self.title = title
        self.env = environment()

    def page(
        self, template: str, status: int = 200, headers: dict | None = None, **context: Any
    ) -> HTMLResponse:
        html = self.env.get_template(template).render(
            title=self.title,
            info=self.info,
            browse=bool(self.splits),
            max_bytes=self.max_bytes,
            **{"document": "", "query": "", **context},
        )
        return HTMLResponse(html, status_code=status, headers=headers)

    async def home(self, request: Request) -> Response:
        return self.page("index.html")

    async def ask(self, request: Request) -> Response:
        form = await read_form(request, self.max_bytes, self.pool.timeout)
        asked = {"document": form.get("document", ""), "query": form.get("query", "")}
        try:
            answer = await self.pool.run("answer", asked["document"], asked["query"])
        except UserError as error:  # the form keeps what was sent
            return self.page("index.html", 400, error=str(error), **asked)
        except Problem as problem:  # busy or too slow: the same, to send again
            return self.page(
                "index.html", problem.status, problem.headers, error=str(problem), **asked
            )
        return self.page("index.html", **asked, **_result(answer))

    async def examples(self, request: Request) -> Response:
        if not self.splits:
            raise Problem(404, "not_found", "no dataset is served")
        split = request.query_params.get("split", next(iter(self.splits)))
        if split not in self.splits:
            raise Problem(404, "not_found", "no such split")
        rows = self.splits[split]
        start = _number(request.query_params.get("page", "0"), 0) * EXAMPLES_PER_PAGE
        stop = min(start + EXAMPLES_PER_PAGE, len(rows))
        listed = [(i, ClozeExample.from_row(rows[i])) for i in range(min(start, len(rows)), stop)]
        return self.page(
            "examples.html",
            split=split,
            splits=list(self.splits),
            listed=listed,
            start=start,
            total=len(rows),
            per_page=EXAMPLES_PER_PAGE,
        )

    async def example(self, request: Request) -> Response:
        split, index = request.path_params["split"], _number(request.path_params["index"], -1)
        if split not in self.splits or not 0 <= index < len(self.splits[split]):
            raise Problem(404, "not_found", "no such example")
        stored = ClozeExample.from_row(self.splits[split][index])
        answer = await self.pool.run("answer_example", stored)
        return self.page(
            "example.html",
            split=split,
            index=index,
            gold=stored.answer,
            gold_name=stored.entities.get(stored.answer, stored.answer),
            **_result(answer),
        )

    async def refused(self, request: Request, problem: Exception) -> Response:
        """A ``Problem``: JSON under ``/api/``, the page with its message elsewhere."""
        assert isinstance(problem, Problem)
        if request.url.path.startswith("/api/"):
            return error_response(problem)
        return self.page("index.html", problem.status, problem.headers, error=problem.message)

    async def http_error(self, request: Request, error: Exception) -> Response:
        """Starlette's own refusals (no such route, a wrong method) as ``Problem``s."""
        assert isinstance(error, HTTPException)
        status = error.status_code
        messages = {
            404: f"no page at {request.url.path}",
            405: f"{request.method} is not allowed here",
        }
        code = _STATUS_CODES.get(status, "bad_request")
        problem = Problem(status, code, messages.get(status, error.detail), error.headers)
        return await self.refused(request, problem)

    async def failed(self, request: Request, error: Exception) -> Response:
        """A 500 that says nothing of the server's insides (Starlette logs the traceback)."""
        problem = Problem(500, "internal", "the server failed on this request; its log says why")
        return await self.refused(request, problem)


def _result(answer: Answer) -> dict[str, Any]:
    """The template context of an answer: it and its two views."""
    names = token_views(answer, names=True)
    markers = token_views(answer, names=False)
    return {"answer": answer, "names": names, "markers": markers}


def _number(text: str, default: int) -> int:
    """``text`` as a row or page number (decimal digits, not absurdly many), else ``default``."""
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else default


def _load_splits(data: str | Path) -> dict[str, datasets.Dataset]:
    import datasets

    loaded = datasets.load_from_disk(str(check_dataset_dir(data)))
    return {split: loaded[split] for split in SPLITS if split in loaded}

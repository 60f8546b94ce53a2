"""The JSON API of ``attentive-reader serve``, beside the page.

* ``POST /api/answer``: ``{"document": TEXT, "query": TEXT, "top": N, "heatmap": BOOL}`` ->
  the JSON of ``attentive-reader answer --json`` (``top``: 5 unless given), its ``reader``
  block included (what the reader was trained on and the caution about it, naming the
  dataset folder's last part only), with the tokens and attention weights under
  ``heatmap`` when asked;
* ``POST /api/answer_many``: ``{"questions": [{"document": ..., "query": ...}, ...],
  "top": N, "heatmap": BOOL}`` (at most ``MAX_QUESTIONS``) -> ``{"answers": [...],
  "reader": {...}}``, the answers in the same order, a question the reader refuses as its
  error object in its place;
* ``GET /api/health``: the model, its pipeline, the toolkit's version, the workers (live,
  restarted, given up: ``pool.AnswerPool.state``) and the queue; a 503 when no worker is left.

A request is checked whole before any work (``parse_request``): a JSON object in UTF-8 with
exactly the fields above, of the right types. Anything else is a 4xx with a stable ``error``
code and a one-line message (``problems.Problem``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from attentive_reader.common.errors import UserError
from attentive_reader.serve.body import read_body
from attentive_reader.serve.problems import Problem, from_user_error

if TYPE_CHECKING:
    from attentive_reader.api import Answer
    from attentive_reader.serve.pool import AnswerPool

Endpoint = Literal["answer", "answer_many"]

MAX_QUESTIONS = 32
DEFAULT_TOP = 5
_FIELDS: dict[Endpoint, tuple[set[str], set[str]]] = {  # required, optional
    "answer": ({"document", "query"}, {"top", "heatmap"}),
    "answer_many": ({"questions"}, {"top", "heatmap"}),
}


@dataclass(frozen=True)
class Asked:
    """A checked JSON request.

    Attributes:
        questions: ``(document, query)`` pairs (one for ``/api/answer``).
        top: candidates shown per answer.
        heatmap: whether the tokens and attention weights are sent.
    """

    questions: tuple[tuple[str, str], ...]
    top: int = DEFAULT_TOP
    heatmap: bool = False


def _bad(code: str, message: str) -> Problem:
    return Problem(400, code, message)


def parse_request(body: bytes, content_type: str | None, endpoint: Endpoint) -> Asked:
    """The request to ``/api/<endpoint>``, checked.

    Raises:
        Problem: 415 ``bad_content_type``; 400 ``bad_json``, ``not_object``,
            ``unknown_field``, ``bad_field`` or ``too_many_questions``.
    """
    media = (content_type or "").split(";")[0].strip().lower()
    if media != "application/json":
        raise Problem(
            415,
            "bad_content_type",
            f"send the request as JSON (Content-Type: application/json), not {media or 'none'}",
        )
    item = _json(body)
    _check_fields(item, *_FIELDS[endpoint], where="the request")
    top, heatmap = item.get("top", DEFAULT_TOP), item.get("heatmap", False)
    if not isinstance(top, int) or isinstance(top, bool) or top < 1:
        raise _bad("bad_field", f"top must be a positive whole number, got {_shown(top)}")
    if not isinstance(heatmap, bool):
        raise _bad("bad_field", f"heatmap must be true or false, got {_shown(heatmap)}")
    if endpoint == "answer":
        return Asked((_question(item, "the request"),), top, heatmap)
    questions = item["questions"]
    if not isinstance(questions, list) or not questions:
        raise _bad("bad_field", "questions must be a list of {document, query} objects")
    if len(questions) > MAX_QUESTIONS:
        raise _bad(
            "too_many_questions",
            f"{len(questions)} questions in one request; send at most {MAX_QUESTIONS}",
        )
    pairs = []
    for index, question in enumerate(questions):
        where = f"questions[{index}]"
        _check_fields(question, {"document", "query"}, set(), where=where)
        pairs.append(_question(question, where))
    return Asked(tuple(pairs), top, heatmap)


def _json(body: bytes) -> Any:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _bad("bad_json", f"the body is not UTF-8 (byte {error.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise _bad(
            "bad_json",
            f"the body is not JSON ({error.msg} at line {error.lineno} column {error.colno})",
        ) from None
    except RecursionError:
        raise _bad("bad_json", "the JSON is nested too deeply") from None
    except ValueError as error:  # e.g. a number of more digits than Python converts
        raise _bad("bad_json", f"the body is not usable JSON ({error})") from None


def _check_fields(item: Any, required: set[str], optional: set[str], *, where: str) -> None:
    if not isinstance(item, dict):
        raise _bad("not_object", f"{where} must be a JSON object, got {type(item).__name__}")
    unknown = sorted(set(item) - required - optional)
    if unknown:
        allowed = ", ".join(sorted(required | optional))
        raise _bad(
            "unknown_field", f"{where} has unknown fields {_shown(unknown)}; it takes {allowed}"
        )
    missing = sorted(required - set(item))
    if missing:
        raise _bad("bad_field", f"{where} has no {' and no '.join(missing)}")


def _question(item: dict, where: str) -> tuple[str, str]:
    for name in ("document", "query"):
        value = item[name]
        if not isinstance(value, str):
            raise _bad("bad_field", f"{where}: {name} must be text, got {type(value).__name__}")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _bad(
                "bad_field", f"{where}: {name} holds an unpaired surrogate (\\ud800-\\udfff)"
            ) from None
    return item["document"], item["query"]


def _shown(value: Any, size: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= size else text[: size - 3] + "..."


def answer_json(answer: Answer, asked: Asked) -> dict[str, Any]:
    """One answer as the JSON API sends it."""
    out = answer.to_json(asked.top)
    if asked.heatmap:
        out["heatmap"] = {
            "context": list(answer.context),
            "query": list(answer.question),
            "entities": dict(answer.entities),
            "attention": answer.attention,
            "selected": list(answer.selected),
        }
    return out


def api_routes(
    pool: AnswerPool, *, max_bytes: int, info: dict[str, Any], reader: dict[str, Any]
) -> list[Route]:
    """The routes of the JSON API, answering with ``pool``.

    Args:
        pool: the answering pool.
        max_bytes: the largest request body.
        info: the model's description for the health check (``info.model_info``).
        reader: the answers' ``reader`` block (``info.reader_record``).
    """

    async def asked(request: Request, endpoint: Endpoint) -> Asked:
        body = await read_body(request, max_bytes, pool.timeout)
        return parse_request(body, request.headers.get("content-type"), endpoint)

    async def answer(request: Request) -> Response:
        question = await asked(request, "answer")
        try:
            result = await pool.run("answer", *question.questions[0])
        except UserError as error:
            raise from_user_error(error) from None
        return JSONResponse({**answer_json(result, question), "reader": reader})

    async def answer_many(request: Request) -> Response:
        question = await asked(request, "answer_many")
        results = await pool.run("answer_many", list(question.questions), errors="return")
        answers = [
            from_user_error(r).to_json() if isinstance(r, UserError) else answer_json(r, question)
            for r in results
        ]
        return JSONResponse({"answers": answers, "reader": reader})

    async def health(request: Request) -> Response:
        state = pool.state()  # a 503 when no worker is left, for a load balancer's check
        status = 503 if state["status"] == "down" else 200
        return JSONResponse({"status": state["status"], **info, **state}, status_code=status)

    return [
        Route("/api/answer", answer, methods=["POST"]),
        Route("/api/answer_many", answer_many, methods=["POST"]),
        Route("/api/health", health, methods=["GET"]),
    ]


def error_response(problem: Problem) -> Response:
    """A ``Problem`` as the JSON API's error response."""
    return JSONResponse(problem.to_json(), status_code=problem.status, headers=problem.headers)

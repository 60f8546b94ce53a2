"""One article, however it arrives, is anonymized the same (issue 36 item 3): a ``.story`` file
and a Hugging Face row through ``preprocess``, and plain text (with a caption that ends no
sentence, Windows line ends and indentation, as pasted) through ``Reader.answer``, the
``answer`` command and ``serve``'s JSON API."""

from __future__ import annotations

import json

import datasets
import pytest

from attentive_reader.api_prepare import document_text
from attentive_reader.cli import main as cli
from attentive_reader.corpus.sources import parse_story
from tests.serve.live import call, running

pytestmark = pytest.mark.slow

# The first paragraph, a caption, ends no sentence: joined to the next one without a stop it
# would read as one sentence with it.
PARAGRAPHS = [
    "Susan Kennedy in Lisbon",
    "Shares in Greystone Bank rose after Susan Kennedy flew to Lisbon.",
    "Kennedy smiled. Greystone Bank said the deal was done.",
]
HIGHLIGHT = "Susan Kennedy smiled"
QUERY = "@placeholder smiled"
PASTED = "\r\n".join(f"  {p}  \r\n" for p in PARAGRAPHS)  # a blank line between, CRLF, spaces


def preprocessed(trained, tmp_path) -> dict[str, list[str]]:
    """The context (by story id) of the example asked about ``HIGHLIGHT`` from a ``.story`` file
    and from a JSON Lines row, preprocessed as the tiny reader's data was."""
    stories = tmp_path / "stories"
    stories.mkdir()
    story = "\n\n".join([*PARAGRAPHS, "@highlight", HIGHLIGHT]) + "\n"
    (stories / "kennedy.story").write_text(story, encoding="utf-8")
    rows = tmp_path / "rows.jsonl"
    row = {"id": "kennedy-row", "article": "\n".join(PARAGRAPHS), "highlights": HIGHLIGHT}
    rows.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "data"
    argv = ["preprocess", str(stories), str(rows), "--output", str(out), "--quiet"]
    argv += ["--spacy-model", str(trained.ruler), "--max-context-tokens", "300"]
    assert cli([*argv, "--split-fractions", "1", "0", "0"]) == 0
    return {
        example["story_id"]: list(example["context"])
        for split in datasets.load_from_disk(str(out)).values()
        for example in split
        if example["query"] == ["@placeholder", "smiled"]
    }


def test_every_way_in_gives_the_same_anonymized_text(trained, reader, tmp_path, capsys):
    from attentive_reader.serve.app import create_app

    story = "\n\n".join([*PARAGRAPHS, "@highlight", HIGHLIGHT])
    article = parse_story(story, story_id="kennedy", source="").article
    assert document_text(PASTED) == document_text(story) == article
    assert article.startswith("Susan Kennedy in Lisbon .\n\n")

    contexts = preprocessed(trained, tmp_path)
    assert sorted(contexts) == ["kennedy", "kennedy-row"]
    story_context = contexts["kennedy"]
    assert contexts["kennedy-row"] == story_context
    assert story_context.index(".") < story_context.index("shares")  # the caption's stop

    answer = reader.answer(PASTED, QUERY)
    assert list(answer.context) == story_context
    assert list(reader.answer(story, QUERY).context) == story_context

    pasted = tmp_path / "article.txt"
    pasted.write_bytes(PASTED.encode("utf-8"))
    argv = ["answer", "--ckpt", str(trained.ckpt), "--document", str(pasted), "--json"]
    assert cli([*argv, "--query", QUERY]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed.pop("reader") and printed == json.loads(json.dumps(answer.to_json(5)))

    with running(create_app(reader)) as url:
        asked = {"document": PASTED, "query": QUERY, "heatmap": True}
        status, _, served = call(url, "/api/answer", asked)
    assert status == 200 and served["heatmap"]["context"] == story_context

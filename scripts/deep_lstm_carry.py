"""Can the Deep LSTM Reader carry a relabelled entity to its end, and over how many tokens?

Under the per-example entity permutation an attention-free reader can only answer by holding
the answer marker's embedding in its state until the end and matching it through the tied
answer layer. This isolates that: each context is ``--length`` random words with 6 entities
(ids drawn afresh for every example from ``--num-entities``), a cue word right before the
answer, and the cue in the query (so the query-match bit marks it). Query first, as the
shipped config reads. Every batch is new, so nothing can be memorised; the accuracy on 256
fresh examples is printed every 100 updates.

    python scripts/deep_lstm_carry.py --length 60 --steps 1500 --forget-bias 1.0
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import torch.nn.functional as F

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models import DeepLSTMReader

PAD, PLACEHOLDER, ENTITY_OFFSET = 0, 2, 3  # the vocabulary's layout (data/vocab.py)
ENTITIES_PER_CONTEXT, QUERY_LENGTH = 6, 6


def cue_batch(
    size: int, length: int, num_entities: int, vocab_size: int, generator: torch.Generator
) -> ClozeBatch:
    """``size`` contexts of ``length`` tokens: the answer is the entity after the cue word."""
    cue = ENTITY_OFFSET + num_entities  # the first word id
    words = (cue + 1, vocab_size)
    context = torch.randint(*words, (size, length), generator=generator)
    query = torch.randint(*words, (size, QUERY_LENGTH), generator=generator)
    query[:, 0], query[:, QUERY_LENGTH // 2] = PLACEHOLDER, cue
    candidates = torch.zeros(size, num_entities, dtype=torch.bool)
    answer = torch.empty(size, dtype=torch.long)
    for i in range(size):
        entities = torch.randperm(num_entities, generator=generator)[:ENTITIES_PER_CONTEXT]
        slots = torch.randperm(length - 1, generator=generator)[:ENTITIES_PER_CONTEXT] + 1
        context[i, slots] = ENTITY_OFFSET + entities
        context[i, slots[0] - 1] = cue  # may overwrite an entity: then it is not a candidate
        present = context[i] - ENTITY_OFFSET
        candidates[i, present[(present >= 0) & (present < num_entities)]] = True
        answer[i] = entities[0]
    return ClozeBatch(
        context=context,
        context_mask=context != PAD,
        query=query,
        query_mask=query != PAD,
        candidates=candidates,
        answer=answer,
        ids=[f"cue{i}" for i in range(size)],
        truncated=torch.zeros(size, dtype=torch.bool),
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--length", type=int, default=60, help="context tokens")
    parser.add_argument("--steps", type=int, default=1000, help="updates of 32 examples")
    parser.add_argument("--forget-bias", type=float, default=None)
    parser.add_argument("--hidden-dim", type=int, default=128)
    parser.add_argument("--num-entities", type=int, default=100)
    parser.add_argument("--order", choices=("query_first", "document_first"), default="query_first")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def carry_curve(args: argparse.Namespace, report=print) -> list[float]:
    """Train a fresh reader on cue batches; the held-out accuracy every 100 updates."""
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    vocab_size = ENTITY_OFFSET + args.num_entities + 300
    reader = DeepLSTMReader(
        vocab_size=vocab_size,
        num_entities=args.num_entities,
        embedding_dim=64,
        hidden_dim=args.hidden_dim,
        dropout=0.0,
        query_match=True,
        answer_layer="tied",
        order=args.order,
        forget_bias=args.forget_bias,
    )
    optimizer = torch.optim.Adam(reader.parameters(), args.lr)
    started, curve = time.perf_counter(), []
    for step in range(1, args.steps + 1):
        batch = cue_batch(32, args.length, args.num_entities, vocab_size, generator)
        loss = F.cross_entropy(reader(batch).logits, batch.answer)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(reader.parameters(), 10.0)
        optimizer.step()
        if step % 100 == 0:
            with torch.no_grad():
                held = cue_batch(256, args.length, args.num_entities, vocab_size, generator)
                curve.append(float((reader(held).logits.argmax(1) == held.answer).float().mean()))
            seconds = time.perf_counter() - started
            report(
                f"step {step}: loss {loss.item():.3f}, accuracy {curve[-1]:.3f} ({seconds:.0f} s)"
            )
    return curve


def main(argv: list[str] | None = None) -> int:
    carry_curve(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())

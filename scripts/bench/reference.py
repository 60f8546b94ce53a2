"""The plain reference: the Attentive Reader as a plain loop writes it, its batches, its
training and inference timings, and the dense limit's examples."""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bench.measure import Timed, sync
from bench.settings import WHERE, Settings


class ReferenceReader(nn.Module):
    """The Attentive Reader with the bilinear scorer as a plain implementation writes it.

    Embedding, dropout, a BiLSTM over the padded document, a BiLSTM over the padded query
    whose last hidden states are ``u``, ``softmax(y_d W u)`` over real tokens, ``r = y_d^T s``,
    a linear layer to entity ids restricted to the candidates. (Its BiLSTMs read the padding:
    the backward direction of every shorter sequence starts in it. That costs nothing in speed
    and favours the reference.)
    """

    def __init__(self, vocab_size: int, num_entities: int, embedding_dim: int, hidden_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.dropout = nn.Dropout(0.2)
        self.document_rnn = nn.LSTM(embedding_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.query_rnn = nn.LSTM(embedding_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.bilinear = nn.Linear(2 * hidden_dim, 2 * hidden_dim, bias=False)
        self.output = nn.Linear(2 * hidden_dim, num_entities)

    def forward(self, context: Tensor, context_mask: Tensor, query: Tensor, candidates: Tensor):
        y_d, _ = self.document_rnn(self.dropout(self.embedding(context)))  # (b, n, 2h)
        _, (h_n, _) = self.query_rnn(self.dropout(self.embedding(query)))
        u = torch.cat([h_n[0], h_n[1]], dim=-1)  # (b, 2h)
        scores = torch.bmm(y_d, self.bilinear(u).unsqueeze(-1)).squeeze(-1)  # (b, n)
        s = torch.softmax(scores.masked_fill(~context_mask, float("-inf")), dim=-1)  # (b, n)
        r = torch.bmm(s.unsqueeze(1), y_d).squeeze(1)  # (b, 2h)
        return self.output(r).masked_fill(~candidates, float("-inf"))  # (b, e)


def reference_batches(examples: list, batch_size: int, num_entities: int, seed: int) -> list:
    """Random batches padded to their longest context: (context, mask, query, candidates, y)."""
    order = np.random.default_rng(seed).permutation(len(examples))
    batches = []
    for start in range(0, len(order), batch_size):
        chunk = [examples[i] for i in order[start : start + batch_size]]
        context = nn.utils.rnn.pad_sequence(
            [torch.as_tensor(ex.context, dtype=torch.long) for ex in chunk], batch_first=True
        )
        query = nn.utils.rnn.pad_sequence(
            [torch.as_tensor(ex.query, dtype=torch.long) for ex in chunk], batch_first=True
        )
        candidates = torch.zeros(len(chunk), num_entities, dtype=torch.bool)
        for i, ex in enumerate(chunk):
            candidates[i, torch.as_tensor(ex.candidates, dtype=torch.long)] = True
        answer = torch.tensor([ex.answer for ex in chunk])
        batches.append((context, context != 0, query, candidates, answer))
    return batches


def time_reference(
    settings: Settings, examples: list, seed: int, precision: str = "32-true"
) -> Timed:
    """The plain reference loop over the epoch's batches twice: a warm-up, then timed.
    ``precision`` ``bf16-mixed``: the forward pass under bfloat16 autocast, as Lightning's
    ``bf16-mixed`` runs it."""
    torch.manual_seed(seed)
    model = ReferenceReader(
        settings.vocab_size, settings.num_entities, settings.embedding_dim, settings.hidden_dim
    )
    model = model.to(WHERE.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = reference_batches(examples, settings.batch_size, settings.num_entities, seed)
    for _warm_up_then_timed in range(2):
        sync()
        start, cpu, count, tokens, padded = time.perf_counter(), time.process_time(), 0, 0, 0
        for batch in batches:
            context, mask, query, candidates, answer = (t.to(WHERE.device) for t in batch)
            with torch.autocast(
                WHERE.device, dtype=torch.bfloat16, enabled=precision == "bf16-mixed"
            ):
                loss = F.cross_entropy(model(context, mask, query, candidates), answer)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 10.0)
            optimizer.step()
            count += len(answer)
            tokens += int(mask.sum())
            padded += mask.numel()
        sync()
    return Timed(
        time.perf_counter() - start, time.process_time() - cpu, count, tokens, padded_tokens=padded
    )


def dense_examples(examples: list) -> list:
    """The examples with every context cut or tiled to one length (their mean): batches of
    them have no padding at all, the dense limit of the same maths."""
    from attentive_reader.data.batching import EncodedExample

    length = round(statistics.mean(len(ex.context) for ex in examples))
    return [
        EncodedExample(
            id=ex.id,
            context=np.resize(np.asarray(ex.context), length),
            query=ex.query,
            answer=ex.answer,
            candidates=ex.candidates,
        )
        for ex in examples
    ]


def reference_inference(settings: Settings, examples: list) -> Timed:
    """The reference's forward passes over ``examples`` (eval mode, no gradients)."""
    torch.manual_seed(0)
    model = ReferenceReader(
        settings.vocab_size, settings.num_entities, settings.embedding_dim, settings.hidden_dim
    ).eval()
    model = model.to(WHERE.device)
    start, cpu = time.perf_counter(), time.process_time()
    batches = reference_batches(examples, settings.batch_size, settings.num_entities, 0)
    with torch.no_grad():
        for batch in batches:
            context, mask, query, candidates, _answer = (t.to(WHERE.device) for t in batch)
            model(context, mask, query, candidates).argmax(dim=-1)
    sync()
    tokens = sum(len(ex.context) for ex in examples)
    return Timed(time.perf_counter() - start, time.process_time() - cpu, len(examples), tokens)

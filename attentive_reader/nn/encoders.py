"""Recurrent sequence encoders over embeddings, and GloVe-format word-vector loading.

Letters: ``b`` batch, ``n`` sequence length, ``d`` input (embedding) size, ``h`` hidden size
per direction.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

RnnName = Literal["lstm", "gru"]


class SequenceEncoder(nn.Module):
    """A (bi)directional LSTM or GRU that reads only the real tokens of each sequence.

    Sequences are packed, so padding never enters the recurrence (in particular the backward
    direction starts at each sequence's last real token, not at the end of the padding).

    Args:
        input_dim: size ``d`` of each input vector.
        hidden_dim: size ``h`` of the hidden state of each direction.
        num_layers: stacked recurrent layers.
        rnn: ``lstm`` or ``gru``.
        dropout: dropout between stacked layers (ignored with one layer).
        bidirectional: read in both directions (outputs ``2h``) or forwards only (``h``).
    """

    def __init__(
        self,
        input_dim: int,
        hidden_dim: int,
        num_layers: int = 1,
        rnn: RnnName = "lstm",
        dropout: float = 0.0,
        bidirectional: bool = True,
    ) -> None:
        super().__init__()
        for name, value in (("input_dim", input_dim), ("hidden_dim", hidden_dim)):
            if value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}")
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1, got {num_layers}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        if rnn not in ("lstm", "gru"):
            raise ValueError(f"rnn must be 'lstm' or 'gru', got {rnn!r}")
        cell = nn.LSTM if rnn == "lstm" else nn.GRU
        self.rnn = cell(
            input_dim,
            hidden_dim,
            num_layers=num_layers,
            batch_first=True,
            dropout=dropout if num_layers > 1 else 0.0,
            bidirectional=bidirectional,
        )
        self.hidden_dim = hidden_dim
        self.bidirectional = bidirectional
        self.output_dim = hidden_dim * (2 if bidirectional else 1)

    def forward(self, inputs: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Encode a padded batch.

        Args:
            inputs: (b, n, d) vectors; real tokens first, padding after them.
            mask: (b, n) bool, True on real tokens.

        Returns:
            ``states`` (b, n, o) with ``o = 2h`` (bidirectional) or ``h``, exactly 0 on padding;
            ``final`` (b, o): the concatenation of the forward state at the last real token
            and the backward state at the first token (top layer). Sequences without any real
            token get zeros in both.
        """
        b, n, _ = inputs.shape
        lengths = mask.sum(dim=1)  # (b,)
        # pack_padded_sequence rejects length 0; encode one (masked) step and zero it below.
        packed = pack_padded_sequence(
            inputs, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False
        )
        packed_states, hidden = self.rnn(packed)
        states, _ = pad_packed_sequence(packed_states, batch_first=True, total_length=n)
        if isinstance(hidden, tuple):  # LSTM: (h_n, c_n)
            hidden = hidden[0]
        # hidden: (layers * directions, b, h), already in the original batch order
        if self.bidirectional:
            final = torch.cat([hidden[-2], hidden[-1]], dim=-1)  # (b, 2h)
        else:
            final = hidden[-1]  # (b, h)
        nonempty = (lengths > 0).unsqueeze(-1)  # (b, 1)
        states = states * mask.unsqueeze(-1).to(states.dtype)  # (b, n, o)
        final = final * nonempty.to(final.dtype)  # (b, o)
        return states, final


def load_word_vectors(
    path: str | Path, vocab_tokens: Sequence[str], embedding: nn.Embedding
) -> int:
    """Copy pretrained word vectors from a GloVe-format text file into ``embedding``.

    File format: one word per line, ``word v1 v2 ... vd`` separated by single spaces (GloVe,
    and word2vec/fastText ``.vec`` text files, whose optional ``count dim`` header line is
    skipped). Every vector must have ``d == embedding.embedding_dim`` values. UTF-8.

    Token ``i`` of ``vocab_tokens`` (row ``i`` of the embedding) takes the vector of the same
    word, or, when the file has no such word, of its lower-cased form. Rows whose token is in
    neither form, and the embedding's ``padding_idx`` row, keep their values.

    Args:
        path: the vector file.
        vocab_tokens: the token of each embedding row, in id order.
        embedding: the layer to fill; modified in place.

    Returns:
        The number of rows that received a vector.

    Raises:
        ValueError: a line with the wrong number of values, a non-number, bad UTF-8, or more
            tokens than embedding rows; the message names the file and line.
    """
    path = Path(path)
    if len(vocab_tokens) > embedding.num_embeddings:
        raise ValueError(
            f"{len(vocab_tokens)} vocabulary tokens but the embedding has only "
            f"{embedding.num_embeddings} rows"
        )
    dim = embedding.embedding_dim
    wanted = set(vocab_tokens) | {token.lower() for token in vocab_tokens}
    vectors: dict[str, list[float]] = {}
    with path.open("rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            where = f"{path}, line {line_number}"
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as error:
                raise ValueError(f"{where}: not UTF-8 ({error}); re-encode the file") from None
            if not line.strip():
                continue
            fields = line.rstrip(" ").split(" ")
            if line_number == 1 and len(fields) == 2 and all(f.isdigit() for f in fields):
                continue  # word2vec/fastText header: "count dim"
            if len(fields) - 1 != dim and not _is_spaced_word(fields, dim):
                raise ValueError(
                    f"{where}: {len(fields) - 1} values but the embedding size is {dim}; "
                    "set embedding_dim to the file's vector size or use a matching file"
                )
            word = " ".join(fields[:-dim])
            if word not in wanted or word in vectors:
                continue
            try:
                vectors[word] = [float(value) for value in fields[-dim:]]
            except ValueError:
                raise ValueError(f"{where}: a value of {word!r} is not a number") from None
    found = 0
    with torch.no_grad():
        for index, token in enumerate(vocab_tokens):
            if index == embedding.padding_idx:
                continue
            vector = vectors.get(token, vectors.get(token.lower()))
            if vector is not None:
                embedding.weight[index] = torch.tensor(vector, dtype=embedding.weight.dtype)
                found += 1
    return found


def _is_spaced_word(fields: list[str], dim: int) -> bool:
    """True for a line whose word itself contains spaces (a few exist in GloVe 840B).

    Such a line has more than ``dim + 1`` fields and its second field is not a number; a line
    of a file with larger vectors has a number there.
    """
    if len(fields) <= dim + 1:
        return False
    try:
        float(fields[1])
    except ValueError:
        return True
    return False

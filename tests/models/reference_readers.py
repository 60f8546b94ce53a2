"""Reference outputs of every reader variant, kept to prove that refactors change no maths.

``VARIANTS`` holds each shipped config's model section (``configs/*.yaml``, with tiny sizes)
and further variants (every answer layer a reader accepts, every Impatient scorer, ...).
``python -m tests.models.reference_readers`` writes ``data/reference_readers.pt.gz``: for each
variant the seeded initial state dict, the logits in evaluation mode and the loss in training
mode (seeded dropout and sampling) on one fixed batch. ``test_reference_readers.py`` rebuilds
every variant with today's code and checks that the same init gives the same state dict, and
that the stored state dict gives the same logits and loss, to the bit.

Regenerate only when a change is *meant* to change the maths, and say so in the commit;
``--missing`` adds a new config's variant and leaves the stored ones as they were.
"""

from __future__ import annotations

import copy
import gzip
import io
import sys
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
import yaml

import attentive_reader.models as models

from .batches import random_batch

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "data" / "reference_readers.pt.gz"
VOCAB, ENTITIES = 16, 5
# Tiny sizes replace the configs' own (the maths does not depend on them).
TINY = {"embedding_dim": 4, "hidden_dim": 3, "num_filters": 3}


def _config_variants() -> dict[str, tuple[str, dict[str, Any]]]:
    variants = {}
    for path in sorted((ROOT / "configs").glob("*.yaml")):
        model = yaml.safe_load(path.read_text())["model"]
        class_name = model["class_path"].rsplit(".", 1)[1]
        init = dict(model.get("init_args") or {})
        for key, value in TINY.items():
            if key in init:
                init[key] = value
        init.setdefault("embedding_dim", TINY["embedding_dim"])
        init.setdefault("hidden_dim", TINY["hidden_dim"])
        variants[f"config:{path.stem}"] = (class_name, init)
    return variants


_SMALL = {"embedding_dim": 4, "hidden_dim": 3, "dropout": 0.1}
_ALL = ("output", "tied", "pointer")
_NO_POINTER = ("output", "tied")
_EXTRA: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {
    "attentive-additive-paper": ("AttentiveReader", {"scorer": "additive", "readout": "paper"}, _ALL),
    "attentive-dot-gru": ("AttentiveReader", {"scorer": "dot", "rnn": "gru"}, _ALL),
    "attentive-cosine-2-layers": ("AttentiveReader", {"scorer": "cosine", "num_layers": 2}, _ALL),
    "impatient-additive": ("ImpatientReader", {"scorer": "additive", "attention_dim": 5}, _ALL),
    "impatient-dot": ("ImpatientReader", {"scorer": "dot"}, _ALL),
    "impatient-cosine": ("ImpatientReader", {"scorer": "cosine"}, _ALL),
    "impatient-bilinear-match": ("ImpatientReader", {"scorer": "bilinear", "query_match": True}, _ALL),
    "uniform-linear": ("UniformReader", {"readout": "linear"}, _NO_POINTER),
    "deep-lstm-query-first": ("DeepLSTMReader", {"order": "query_first"}, _NO_POINTER),
    "hard-learned-paper": ("HardAttentionReader", {"baseline": "learned", "readout": "paper", "num_samples": 2}, _NO_POINTER),
    "hard-gumbel-k2": ("HardAttentionReader", {"selection": "gumbel", "baseline": "none", "k": 2, "num_samples": 1}, _NO_POINTER),
    "gaussian-2-glimpses-additive-paper": ("GaussianGlimpseReader", {"num_glimpses": 2, "scorer": "additive", "readout": "paper", "num_filters": 3}, _ALL),
    "gaussian-flatten-intensity": ("GaussianGlimpseReader", {"glimpse_readout": "flatten", "intensity": True, "num_filters": 3}, _NO_POINTER),
    "transformer-3-glimpses-dot": ("TransformerGlimpseReader", {"num_glimpses": 3, "scorer": "dot", "num_filters": 3}, _ALL),
    "gated-mul": ("GatedAttentionReader", {}, _ALL),
    "gated-concat-2-hops": ("GatedAttentionReader", {"gate": "concat", "num_hops": 2}, _ALL),
    "gated-sum-1-hop": ("GatedAttentionReader", {"gate": "sum", "num_hops": 1}, ("pointer",)),
}  # fmt: skip


def variants() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every variant: name -> (reader class name, init arguments without the two sizes)."""
    result = _config_variants()
    for name, (class_name, options, layers) in _EXTRA.items():
        for layer in layers:
            result[f"{name}-{layer}"] = (class_name, {**_SMALL, **options, "answer_layer": layer})
    return result


def build(class_name: str, init: dict[str, Any]) -> models.ClozeReader:
    """The reader, initialised from seed 0."""
    torch.manual_seed(0)
    return getattr(models, class_name)(
        vocab_size=VOCAB, num_entities=ENTITIES, **copy.deepcopy(init)
    )


def round_to_half(reader: models.ClozeReader) -> None:
    """Round every parameter to a float16 value, so the fixture stores them in half the bytes
    and still exactly."""
    with torch.no_grad():
        for value in reader.state_dict().values():
            if value.is_floating_point():
                value.copy_(value.half().float())


def batch():
    """The fixed batch: padding in contexts and queries."""
    return random_batch(num_examples=4, vocab_size=VOCAB, num_entities=ENTITIES, seed=11)


def outputs(reader: models.ClozeReader) -> dict[str, torch.Tensor]:
    """Logits (b, e) in evaluation mode and the loss in training mode (seeded)."""
    data = batch()
    reader.eval()
    with torch.no_grad():
        logits = reader(data).logits  # (b, e)
    reader.train()
    torch.manual_seed(1)  # the readers' dropout is torch's, as on the day of the reference
    loss = F.cross_entropy(reader(data).logits.float(), data.answer)
    return {"logits": logits, "loss": loss.detach()}


# The fixture was written before the readers were composed of parts (``models/parts.py``):
# its parameter names by prefix, and their names now.
FIXTURE_NAMES = {
    "document_encoder.": "encoders.document.",
    "query_encoder.": "encoders.query.",
    "read_proj.": "readout.read_proj.",
    "query_proj.": "readout.query_proj.",
}


def keys(entry: dict[str, Any], stored: bool = False) -> list[str]:
    """The parameter names of one reference ``entry``: today's, or as stored (``stored``)."""
    if stored:
        return list(entry["keys"])
    return [_renamed(key) for key in entry["keys"]]


def _renamed(key: str) -> str:
    for old, new in FIXTURE_NAMES.items():
        if key.startswith(old):
            return new + key[len(old) :]
    return key


def state_dict(entry: dict[str, Any], stored: bool = False) -> dict[str, torch.Tensor]:
    """The stored state dict of one reference ``entry``, under today's names (or as stored)."""
    sizes = [int(torch.Size(shape).numel()) for shape in entry["shapes"]]
    values = entry["flat"].split(sizes)
    return {
        key: value.float().view(shape)
        for key, value, shape in zip(keys(entry, stored), values, entry["shapes"])
    }


def load() -> dict[str, dict[str, Any]]:
    """The stored reference (``weights_only``: plain tensors and values)."""
    return torch.load(io.BytesIO(gzip.decompress(FIXTURE.read_bytes())), weights_only=True)


def entry(class_name: str, init: dict[str, Any]) -> dict[str, Any]:
    """One variant's stored record: its seeded init, rounded weights and outputs."""
    reader = build(class_name, init)
    initial = {key: value.clone() for key, value in reader.state_dict().items()}
    round_to_half(reader)
    state = reader.state_dict()
    return {
        "class": class_name,
        "init": init,
        # One flat tensor per reader keeps the file small (torch.save pads every tensor).
        "keys": list(state),
        "shapes": [list(value.shape) for value in state.values()],
        "flat": torch.cat([value.detach().half().flatten() for value in state.values()]),
        # The seeded init's sum per tensor: today's code must create the same parameters.
        "initial_sums": torch.stack([value.double().sum() for value in initial.values()]),
        **outputs(reader),
    }


def main(argv: list[str] | None = None) -> None:
    """Write every variant; with ``--missing``, add only the variants not stored yet (a new
    config), leaving the stored ones as they were made."""
    missing = "--missing" in (sys.argv[1:] if argv is None else argv)
    reference = load() if missing and FIXTURE.is_file() else {}
    for name, (class_name, init) in variants().items():
        if name not in reference:
            reference[name] = entry(class_name, init)
    FIXTURE.parent.mkdir(exist_ok=True)
    buffer = io.BytesIO()
    torch.save(reference, buffer)
    FIXTURE.write_bytes(gzip.compress(buffer.getvalue(), compresslevel=9, mtime=0))
    print(f"{len(reference)} variants -> {FIXTURE} ({FIXTURE.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()

"""The readers: each a ``ClozeReader`` (LightningModule) whose ``forward`` returns a ``ReaderOutput``."""

from attentive_reader.models.attentive import AttentiveReader
from attentive_reader.models.base import ClozeReader
from attentive_reader.models.deep_lstm import DeepLSTMReader
from attentive_reader.models.gated import GatedAttentionReader
from attentive_reader.models.glimpse import GaussianGlimpseReader, TransformerGlimpseReader
from attentive_reader.models.hard import HardAttentionReader
from attentive_reader.models.impatient import ImpatientReader
from attentive_reader.models.output import ReaderOutput
from attentive_reader.models.uniform import UniformReader

__all__ = [
    "AttentiveReader",
    "ClozeReader",
    "DeepLSTMReader",
    "GatedAttentionReader",
    "HardAttentionReader",
    "ImpatientReader",
    "ReaderOutput",
    "UniformReader",
    "GaussianGlimpseReader",
    "TransformerGlimpseReader",
]

"""Today's readers against the stored reference outputs (``reference_readers.py``): the same
seeded init creates the same parameters under the same state-dict keys (their sums to the
bit), and the stored weights give the same logits and loss to float32 rounding. Not to the
bit: another CPU's kernels round otherwise (the reference was made on an AMD EPYC; on an
Intel Xeon, 2 Dec 2026, the logits differ by at most 1.9e-6, relative 2e-5), and the
additive scorer computes tanh through the sigmoid. A refactor that changes the maths, the
parameter creation order or a key name fails here."""

from __future__ import annotations

import pytest
import torch

from attentive_reader.models.base import upgrade_state_dict
from attentive_reader.models.loading import load_reader

from . import reference_readers as ref

pytestmark = pytest.mark.usefixtures("one_thread")
REFERENCE = ref.load() if ref.FIXTURE.is_file() else {}


def test_every_variant_is_stored():
    assert set(REFERENCE) == set(ref.variants())
    # Every shipped reader config is among them.
    assert {name for name in REFERENCE if name.startswith("config:")} == {
        f"config:{path.stem}" for path in (ref.ROOT / "configs").glob("*.yaml")
    }


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_same_parameters_and_outputs(name):
    entry = REFERENCE[name]
    reader = ref.build(entry["class"], entry["init"])
    # The stored keys are the names of the day the reference was made: today's loading
    # renames them (upgrade_state_dict), as it does for old checkpoints.
    initial_sums = dict(zip(entry["keys"], entry["initial_sums"]))
    upgrade_state_dict(initial_sums)
    sums = {key: value.double().sum() for key, value in reader.state_dict().items()}
    assert sorted(sums) == sorted(initial_sums)  # the same names
    for key, value in sums.items():  # from the same seeded init (same creation order)
        assert torch.equal(value, initial_sums[key]), key
    stored = ref.state_dict(entry)
    upgrade_state_dict(stored)
    reader.load_state_dict(stored)  # strict: every key known, none missing
    if getattr(reader, "fused", None) is not None:
        # The Impatient Reader trains on its batch sorted by query length, so each example
        # gets another row's dropout mask than on the day of the reference: read it step by
        # step, unsorted (the fused steps are the same maths, tests/models/test_impatient_fused.py).
        reader.fused = None
    outputs = ref.outputs(reader)
    # float32 rounding (module docstring); a change of the maths moves logits by far more.
    assert torch.allclose(outputs["logits"], entry["logits"], rtol=1e-4, atol=1e-5)
    assert torch.allclose(outputs["loss"], entry["loss"], rtol=1e-4, atol=1e-5)


CONFIGS = sorted(name for name in REFERENCE if name.startswith("config:"))


@pytest.mark.parametrize("name", CONFIGS)
def test_old_checkpoint_files_load(name, tmp_path):
    """A checkpoint file of the day the reference was made (the parameter names from before
    the readers were composed of parts) loads with ``load_reader`` and reads the same."""
    entry = REFERENCE[name]
    class_path = f"attentive_reader.models.{entry['class']}"
    hyper_parameters = {"vocab_size": ref.VOCAB, "num_entities": ref.ENTITIES, **entry["init"]}
    checkpoint = {
        "state_dict": ref.state_dict(entry),  # the old names
        "hyper_parameters": {**hyper_parameters, "_class_path": class_path},
    }
    path = tmp_path / "old.ckpt"
    torch.save(checkpoint, path)
    reader = load_reader(path)
    assert type(reader).__name__ == entry["class"]
    assert torch.allclose(ref.outputs(reader)["logits"], entry["logits"], rtol=1e-5, atol=1e-6)


def test_checkpoints_from_before_answer_layers_load_as_the_output_layer(tmp_path):
    """No ``answer_layer`` hyperparameter and ``output.*`` weights: the paper's output matrix."""
    entry = REFERENCE["attentive-additive-paper-output"]
    state = ref.state_dict(entry)
    state = {key.replace("answer.", "output.", 1): value for key, value in state.items()}
    init = {key: value for key, value in entry["init"].items() if key != "answer_layer"}
    checkpoint = {
        "state_dict": state,
        "hyper_parameters": {"vocab_size": ref.VOCAB, "num_entities": ref.ENTITIES, **init},
        "reader_class": "attentive_reader.models.attentive.AttentiveReader",
    }
    torch.save(checkpoint, tmp_path / "old.ckpt")
    reader = load_reader(tmp_path / "old.ckpt")
    assert reader.answer_layer == "output"
    assert torch.allclose(ref.outputs(reader)["logits"], entry["logits"], rtol=1e-5, atol=1e-6)

"""Today's readers against the stored reference outputs (``reference_readers.py``): the same
seeded init creates the same parameters under the same state-dict keys (their sums to the
bit), and the stored weights give the same logits and loss to float32 rounding. Not to the
bit: another CPU's kernels round otherwise (the reference was made on an AMD EPYC; on an
Intel Xeon, 2 Dec 2026, the logits differ by at most 1.9e-6, relative 2e-5), and the
additive scorer computes tanh through the sigmoid. A refactor that changes the maths, the
parameter creation order or a key name fails here.
The training-mode loss draws torch's own dropout masks (``reference_readers.outputs``)."""

from __future__ import annotations

import pytest
import torch

from attentive_reader.common.errors import UserError
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
    initial_sums = dict(zip(ref.keys(entry), entry["initial_sums"]))  # by today's names
    sums = {key: value.double().sum() for key, value in reader.state_dict().items()}
    assert sorted(sums) == sorted(initial_sums)  # the same names
    for key, value in sums.items():  # from the same seeded init (same creation order)
        assert torch.equal(value, initial_sums[key]), key
    reader.load_state_dict(ref.state_dict(entry))  # strict: every key known, none missing
    outputs = ref.outputs(reader)
    # float32 rounding (module docstring); a change of the maths moves logits by far more.
    assert torch.allclose(outputs["logits"], entry["logits"], rtol=1e-4, atol=1e-5)
    assert torch.allclose(outputs["loss"], entry["loss"], rtol=1e-4, atol=1e-5)


CONFIGS = sorted(name for name in REFERENCE if name.startswith("config:"))


def _checkpoint(path, entry, state_dict, **hyper_parameters):
    init = {"vocab_size": ref.VOCAB, "num_entities": ref.ENTITIES, **entry["init"]}
    class_path = f"attentive_reader.models.{entry['class']}"
    init |= {"_class_path": class_path, **hyper_parameters}
    torch.save({"state_dict": state_dict, "hyper_parameters": init}, path)
    return path


@pytest.mark.parametrize("name", CONFIGS)
def test_checkpoint_files_load_and_read_the_same(name, tmp_path):
    entry = REFERENCE[name]
    reader = load_reader(_checkpoint(tmp_path / "a.ckpt", entry, ref.state_dict(entry)))
    assert type(reader).__name__ == entry["class"]
    assert torch.allclose(ref.outputs(reader)["logits"], entry["logits"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["config:attentive_reader", "impatient-dot-tied"])
def test_a_pre_release_checkpoint_is_one_line_naming_what_to_do(name, tmp_path):
    """The fixture's own names are those of a pre-release (before the readers were composed
    of parts): such a file is refused in one line, not renamed."""
    entry = REFERENCE[name]
    path = _checkpoint(tmp_path / "old.ckpt", entry, ref.state_dict(entry, stored=True))
    with pytest.raises(UserError) as info:
        load_reader(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path} does not fit this")
    assert "retrain the reader with this version" in message and "document_encoder." in message


def test_a_checkpoint_from_before_answer_layers_is_refused(tmp_path):
    """No ``answer_layer`` hyperparameter and ``output.*`` weights (the first checkpoints)."""
    entry = REFERENCE["attentive-additive-paper-output"]
    state = {k.replace("answer.", "output.", 1): v for k, v in ref.state_dict(entry).items()}
    entry = {**entry, "init": {k: v for k, v in entry["init"].items() if k != "answer_layer"}}
    with pytest.raises(UserError, match="retrain the reader with this version"):
        load_reader(_checkpoint(tmp_path / "old.ckpt", entry, state))


def test_a_run_resumed_from_one_is_refused_in_the_same_line():
    """``--ckpt_path`` goes through ``on_load_checkpoint`` before Lightning loads weights."""
    entry = REFERENCE["config:attentive_reader"]
    reader = ref.build(entry["class"], entry["init"])
    checkpoint = {"state_dict": ref.state_dict(entry, stored=True), "hyper_parameters": {}}
    with pytest.raises(UserError, match="^the checkpoint does not fit this AttentiveReader"):
        reader.on_load_checkpoint(checkpoint)
    reader.on_load_checkpoint({**checkpoint, "state_dict": ref.state_dict(entry)})  # today's

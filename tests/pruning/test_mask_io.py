"""Mask files: bit-exact round trips, metadata, and checks against the model they are loaded for."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch.nn.utils import parametrize
from transformers import AutoModelForSequenceClassification

from conftest import tiny_classifier
from srnet.errors import SrnetError
from srnet.models import find_prunable, load_classifier
from srnet.sparsity.fingerprint import model_fingerprint
from srnet.sparsity.mask_io import MASKS_FILENAME, MaskMetadata, load_masks, save_masks

Q0 = "bert.encoder.layer.0.attention.self.query"
VOCAB = 100
"""The vocabulary of this file's in-memory tiny models (small: the tests use their encoders)."""


def _random_masks(model, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {
        w.name: torch.rand(w.module.weight.shape, generator=gen) > 0.5 for w in find_prunable(model)
    }


def _meta(model, masks, **extra) -> MaskMetadata:
    return MaskMetadata(
        method="omp", base_model="tiny", base_model_fingerprint=model_fingerprint(model, masks),
        **extra,
    )


def test_round_trip_is_bit_exact_and_metadata_is_measured(tmp_path):
    masks = {
        "a": torch.tensor([[True, False], [False, False]]),
        "b": torch.ones(3, dtype=torch.bool),
    }
    meta = MaskMetadata(
        method="mask_train", base_model="m", base_model_fingerprint="f" * 16,
        recipe_hash="abc", granularity="unstructured", target_sparsity=0.5,
    )
    written = save_masks(tmp_path / "m.safetensors", masks, meta)
    loaded, back = load_masks(tmp_path / "m.safetensors")
    assert list(loaded) == ["a", "b"]
    for name, mask in masks.items():
        assert loaded[name].dtype == torch.bool
        assert torch.equal(loaded[name], mask)
    assert back == written
    assert back.sparsity == pytest.approx(3 / 7)
    assert back.per_matrix == {"a": 0.75, "b": 0.0}
    assert back.target_sparsity == 0.5
    assert back.recipe_hash == "abc"
    assert back.format_version == "1"
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]  # no temp file left


def test_file_stores_uint8_and_string_metadata(tmp_path):
    masks = {"x": torch.tensor([1.0, 0.0, 1.0])}  # 0/1 floats are accepted
    save_masks(tmp_path, masks, MaskMetadata(method="omp", base_model="m", base_model_fingerprint="f"))
    with safe_open(str(tmp_path / MASKS_FILENAME), framework="pt") as handle:
        header = handle.metadata()
        stored = handle.get_tensor("x")
    assert stored.dtype == torch.uint8
    assert stored.tolist() == [1, 0, 1]
    assert header["srnet_masks"] == "1"
    assert header["method"] == "omp"
    assert header["target_sparsity"] == "null"
    assert json.loads(header["per_matrix"]) == {"x": pytest.approx(1 / 3)}
    assert all(isinstance(v, str) for v in header.values())
    masks_back, _ = load_masks(tmp_path)  # a folder resolves to masks.safetensors
    assert masks_back["x"].tolist() == [True, False, True]


def test_save_rejects_non_binary_and_empty_masks(tmp_path):
    meta = MaskMetadata(method="omp", base_model="m", base_model_fingerprint="f")
    with pytest.raises(SrnetError, match="mask 'w' has entries other than 0 and 1"):
        save_masks(tmp_path / "m.safetensors", {"w": torch.tensor([0.5, 1.0])}, meta)
    with pytest.raises(SrnetError, match="no masks to save"):
        save_masks(tmp_path / "m.safetensors", {}, meta)
    assert not (tmp_path / "m.safetensors").exists()


def test_load_checks_keys_shapes_and_fingerprint(tmp_path):
    model = tiny_classifier(vocab_size=VOCAB)
    masks = _random_masks(model)
    path = tmp_path / "m.safetensors"
    save_masks(path, masks, _meta(model, masks))
    loaded, _ = load_masks(path, model)
    assert all(torch.equal(loaded[k], masks[k]) for k in masks)

    bad_key = {**masks, "bert.encoder.layer.9.attention.self.query": masks[Q0]}
    save_masks(tmp_path / "k.safetensors", bad_key, _meta(model, masks))
    with pytest.raises(SrnetError, match=r"k\.safetensors: mask key 'bert\.encoder\.layer\.9"):
        load_masks(tmp_path / "k.safetensors", model)

    bad_shape = {**masks, Q0: torch.ones(32, 16, dtype=torch.bool)}
    save_masks(tmp_path / "s.safetensors", bad_shape, _meta(model, masks))
    with pytest.raises(SrnetError, match=r"mask '.*query' has shape \(32, 16\) .* \(32, 32\)"):
        load_masks(tmp_path / "s.safetensors", model)

    other = tiny_classifier(vocab_size=VOCAB, heads=4)  # same shapes, different model
    with pytest.raises(SrnetError, match=r"masks were made for 'tiny' .* but this is a bert model"):
        load_masks(path, other)


def test_fingerprint_ignores_load_settings_but_not_architecture(tiny_model_dir, tmp_path):
    first = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
    copy_dir = shutil.copytree(tiny_model_dir, tmp_path / "elsewhere")
    moved = load_classifier(str(copy_dir), ["yes", "no"])
    encoder = [w.name for w in find_prunable(first) if w.role != "classifier"]
    assert model_fingerprint(first, encoder) == model_fingerprint(moved, encoder)
    assert len(model_fingerprint(first, encoder)) == 16
    assert model_fingerprint(first, encoder) != model_fingerprint(first, encoder[:1])
    two_heads, four_heads = tiny_classifier(vocab_size=VOCAB), tiny_classifier(vocab_size=VOCAB, heads=4)
    assert model_fingerprint(two_heads, encoder) != model_fingerprint(four_heads, encoder)


def test_load_reports_bad_files(tmp_path):
    with pytest.raises(SrnetError, match="mask file not found"):
        load_masks(tmp_path / "none.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(SrnetError, match=r"junk\.safetensors: not a readable safetensors file"):
        load_masks(tmp_path / "junk.safetensors")
    save_file({"w": torch.ones(2, dtype=torch.uint8)}, str(tmp_path / "plain.safetensors"))
    with pytest.raises(SrnetError, match="not an srnet mask file"):
        load_masks(tmp_path / "plain.safetensors")
    save_file(
        {"w": torch.ones(2, dtype=torch.uint8)}, str(tmp_path / "v9.safetensors"),
        metadata={"srnet_masks": "9"},
    )
    with pytest.raises(SrnetError, match="format version '9' is not supported"):
        load_masks(tmp_path / "v9.safetensors")


class _MustNotRun(torch.nn.Module):
    """A parametrization that fails if evaluated (like a sampling mask consuming the RNG)."""

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        raise AssertionError("parametrization evaluated")


def test_checks_do_not_evaluate_parametrizations(tmp_path):
    model = tiny_classifier(vocab_size=VOCAB)
    masks = _random_masks(model)
    meta = _meta(model, masks)
    save_masks(tmp_path, masks, meta)
    for name in masks:
        parametrize.register_parametrization(
            model.get_submodule(name), "weight", _MustNotRun(), unsafe=True
        )
    assert model_fingerprint(model, masks) == meta.base_model_fingerprint
    loaded, _ = load_masks(tmp_path, model)
    assert set(loaded) == set(masks)
